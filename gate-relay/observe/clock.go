package observe

import "time"

// Clock tells the time and makes the flush ticker; tests inject a virtual
// one.
type Clock interface {
	Now() time.Time
	// Tick returns a channel delivering the time every d, and its stop.
	Tick(d time.Duration) (<-chan time.Time, func())
}

// WallClock is the system clock.
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// Tick is a time.Ticker.
func (WallClock) Tick(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
