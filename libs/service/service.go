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
	// Stopped is closed when the work ended (by Stop, or by the end of
	// Start's context) and every goroutine of it returned.
	Stopped() <-chan struct{}
}

// ErrStopped is the cause of the context a Base hands its goroutines once
// Stop was called.
var ErrStopped = errors.New("service stopped")

// Base is the state every Service shares; embed it. Its zero value is a
// service that has never started. A Base may be started again after it
// stopped.
type Base struct {
	mu      sync.Mutex
	running bool
	cancel  context.CancelCauseFunc
	started chan struct{}
	stopped chan struct{}
	wg      sync.WaitGroup
}

// StartInit begins a start. It returns the context the service's work runs
// under (ended by Stop or by ctx) and true; or ctx and false when the
// service already runs, in which case Start should return at once.
// After a true StartInit the caller starts its goroutines with Go and then
// calls Ready (or Fail when it cannot start after all).
func (b *Base) StartInit(ctx context.Context) (context.Context, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running {
		return ctx, false
	}
	b.running = true
	// A channel handed out before this start (Started or Stopped called
	// on a service not yet running) is the one this start closes.
	if b.started == nil || isClosed(b.started) {
		b.started = make(chan struct{})
	}
	if b.stopped == nil || isClosed(b.stopped) {
		b.stopped = make(chan struct{})
	}
	wctx, cancel := context.WithCancelCause(ctx)
	b.cancel = cancel
	// The work ends with ctx too: Stopped closes once every goroutine
	// returned, whoever ended it.
	stopped := b.stopped
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		<-wctx.Done()
	}()
	go func() {
		b.wg.Wait()
		b.mu.Lock()
		if b.stopped == stopped {
			b.running = false
		}
		b.mu.Unlock()
		// A service that never became ready (Fail) is stopped all the
		// same; its Started stays open.
		close(stopped)
	}()
	return wctx, true
}

// Go runs f in a goroutine that Stop and Stopped wait for. Call it only
// between StartInit and the end of the work (from within the work is
// fine: a goroutine started by another tracked goroutine is tracked).
func (b *Base) Go(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// Ready closes Started: the service is under way.
func (b *Base) Ready() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		return
	}
	select {
	case <-b.started:
	default:
		close(b.started)
	}
}

// Fail undoes a start that cannot go on: it cancels what StartInit began,
// waits for the goroutines already started, and returns err for Start to
// return.
func (b *Base) Fail(err error) error {
	b.stopAndWait(err)
	return err
}

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
func (b *Base) Stop() { b.stopAndWait(ErrStopped) }

func (b *Base) stopAndWait(cause error) {
	b.mu.Lock()
	if !b.running {
		b.mu.Unlock()
		return
	}
	cancel, stopped := b.cancel, b.stopped
	b.mu.Unlock()
	cancel(cause)
	<-stopped
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
