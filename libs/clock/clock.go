package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes the timers that wait on it. Real is the
// wall clock; Virtual is a clock that moves only when a test moves it.
type Clock interface {
	// Now is the current time on this clock.
	Now() time.Time
	// Since is Now().Sub(t).
	Since(t time.Time) time.Duration
	// NewTimer is time.NewTimer on this clock: the channel receives the
	// time once, d from now.
	NewTimer(d time.Duration) Timer
	// NewTicker is time.NewTicker on this clock (d must be positive).
	NewTicker(d time.Duration) Ticker
	// AfterFunc is time.AfterFunc on this clock: f runs in its own
	// goroutine d from now, unless the timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending wake-up made by a Clock. Its methods mean what
// time.Timer's do; C is nil for a timer made by AfterFunc.
type Timer interface {
	// C receives the time the timer fired (nil for AfterFunc).
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether the timer
	// was still pending.
	Reset(d time.Duration) bool
}

// Ticker delivers the time every period until stopped.
type Ticker interface {
	// C receives a tick every period; a slow reader misses ticks, as with
	// time.Ticker.
	C() <-chan time.Time
	// Stop ends the ticks.
	Stop()
	// Reset changes the period (d must be positive).
	Reset(d time.Duration)
}

// Real returns the wall clock.
func Real() Clock { return realClock{} }

// Or returns c, or the wall clock when c is nil: the default of every
// Clock field in a Config.
func Or(c Clock) Clock {
	if c == nil {
		return realClock{}
	}
	return c
}

// Sleep waits d on c, or until ctx ends (then it returns ctx's cause).
// A non-positive d returns at once with ctx's state.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }
