package service

import (
	"context"
	"errors"
	"sync"
)

// Service is what every long-running piece implements.
type Service interface {
	// Start begins the work and returns once it is under way (an error
	// when it cannot start). Starting a running service does nothing.
	Start(ctx context.Context) error
	// Started is closed once Start succeeded.
	Started() <-chan struct{}
	// Stop ends the work and waits until every goroutine of it returned.
	// Stopping a service that is not running does nothing.
	Stop()
	// Stopped is closed when the work ended (by Stop, by the end of
	// Start's context, or by the service itself through End) and every
	// goroutine of it returned.
	Stopped() <-chan struct{}
}

// ErrStopped is the cause of the context a Base hands its goroutines once
// Stop was called.
var ErrStopped = errors.New("service stopped")

// Base is the state every Service shares; embed it. Its zero value is a
// service that has never started. A Base may be started again after it
// stopped.
type Base struct {
	mu sync.Mutex
	// cur is the current (or last) run; nil before the first Start.
	cur *run
	// started and stopped are the channels Started and Stopped hand out;
	// a run closes the ones it found unclosed at its start.
	started, stopped chan struct{}
}

// run is one start-to-stop of a Base.
type run struct {
	cancel context.CancelCauseFunc
	// active counts the goroutines of the work, plus one that lasts until
	// the work's context ends; the run has ended when it reaches zero.
	active  int
	ended   bool
	stopped chan struct{}
}

// StartInit begins a start. It returns the context the service's work runs
// under (ended by Stop, by End or by ctx) and true; or ctx and false when
// the service already runs, in which case Start should return at once.
// After a true StartInit the caller starts its goroutines with Go and then
// calls Ready (or Fail when it cannot start after all).
func (b *Base) StartInit(ctx context.Context) (context.Context, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur != nil && !b.cur.ended {
		return ctx, false
	}
	// A channel handed out before this start (Started or Stopped called
	// on a service not yet running) is the one this start closes.
	if b.started == nil || isClosed(b.started) {
		b.started = make(chan struct{})
	}
	if b.stopped == nil || isClosed(b.stopped) {
		b.stopped = make(chan struct{})
	}
	wctx, cancel := context.WithCancelCause(ctx)
	r := &run{cancel: cancel, active: 1, stopped: b.stopped}
	b.cur = r
	// The context's end releases the run's first count; AfterFunc holds
	// no goroutine while the work runs (a relay runs thousands of stages,
	// each a service).
	context.AfterFunc(wctx, func() { b.release(r) })
	return wctx, true
}

// Go runs f in a goroutine that Stop and Stopped wait for, and reports
// whether it did: once the work has ended (every goroutine of it returned
// after its context ended) nothing more is started and Go returns false.
func (b *Base) Go(f func()) bool {
	b.mu.Lock()
	r := b.cur
	if r == nil || r.ended {
		b.mu.Unlock()
		return false
	}
	r.active++
	b.mu.Unlock()
	go func() {
		defer b.release(r)
		f()
	}()
	return true
}

// release notes that one goroutine of r returned, and ends r with the
// last.
func (b *Base) release(r *run) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r.active--
	if r.active == 0 {
		r.ended = true
		close(r.stopped)
	}
}

// Ready closes Started: the service is under way.
func (b *Base) Ready() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started != nil && !isClosed(b.started) {
		close(b.started)
	}
}

// Fail undoes a start that cannot go on: it cancels what StartInit began,
// waits for the goroutines already started, and returns err for Start to
// return. Started stays open.
func (b *Base) Fail(err error) error {
	b.end(err, true)
	return err
}

// End ends the work from within (a child process exited, a listener
// failed) with cause as its context's cause, without waiting: Stopped
// closes once every goroutine returned. A goroutine of the work may call
// it; Stop would wait for itself.
func (b *Base) End(cause error) { b.end(cause, false) }

// Started is closed once the service became ready. Before the first
// Start it is a channel that never closes.
func (b *Base) Started() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		b.started = make(chan struct{})
	}
	return b.started
}

// Stopped is closed when the work ended and every goroutine returned.
// Before the first Start it is a channel that never closes.
func (b *Base) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped == nil {
		b.stopped = make(chan struct{})
	}
	return b.stopped
}

// Stop ends the work and waits for every goroutine started with Go.
func (b *Base) Stop() { b.end(ErrStopped, true) }

func (b *Base) end(cause error, wait bool) {
	b.mu.Lock()
	r := b.cur
	b.mu.Unlock()
	if r == nil {
		return
	}
	r.cancel(cause)
	if wait {
		<-r.stopped
	}
}

// StartAll starts each service in order; when one fails it stops those
// already started (in reverse) and returns its error.
func StartAll(ctx context.Context, services ...Service) error {
	for i, s := range services {
		if err := s.Start(ctx); err != nil {
			StopAll(services[:i]...)
			return err
		}
	}
	return nil
}

// StopAll stops the services in reverse order, each after the one started
// after it has stopped.
func StopAll(services ...Service) {
	for i := len(services) - 1; i >= 0; i-- {
		services[i].Stop()
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
