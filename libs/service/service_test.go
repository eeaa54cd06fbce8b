package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// worker is a service with one loop and a helper goroutine per tick.
type worker struct {
	Base
	loops   atomic.Int32
	helpers atomic.Int32
	fail    error
}

func (w *worker) Start(ctx context.Context) error {
	ctx, ok := w.StartInit(ctx)
	if !ok {
		return nil
	}
	w.Go(func() {
		w.loops.Add(1)
		defer w.loops.Add(-1)
		// A goroutine started by the work is waited for too.
		w.Go(func() {
			w.helpers.Add(1)
			defer w.helpers.Add(-1)
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond)
		})
		<-ctx.Done()
	})
	if w.fail != nil {
		return w.Fail(w.fail)
	}
	w.Ready()
	return nil
}

var _ Service = (*worker)(nil)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStopWaitsForEveryGoroutineOfTheWork(t *testing.T) {
	w := &worker{}
	started, stopped := w.Started(), w.Stopped()
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !closed(started) {
		t.Fatal("Started (taken before Start) is not closed after Start")
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatalf("a second Start of a running service: %v", err)
	}
	if closed(stopped) {
		t.Fatal("Stopped is closed while the service runs")
	}
	w.Stop()
	if !closed(stopped) {
		t.Fatal("Stopped (taken before Start) is not closed after Stop")
	}
	if n, h := w.loops.Load(), w.helpers.Load(); n != 0 || h != 0 {
		t.Fatalf("after Stop %d loops and %d helpers still run", n, h)
	}
	w.Stop() // stopping a stopped service does nothing
}

func TestTheEndOfStartsContextStopsTheService(t *testing.T) {
	w := &worker{}
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-w.Stopped():
	case <-time.After(5 * time.Second):
		t.Fatal("the service did not stop when Start's context ended")
	}
	if w.helpers.Load() != 0 {
		t.Fatal("Stopped closed before the helper returned")
	}
}

func TestAServiceStartsAgainAfterItStopped(t *testing.T) {
	w := &worker{}
	for i := range 3 {
		if err := w.Start(context.Background()); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if w.loops.Load() == 0 {
			// The loop goroutine may not have been scheduled yet.
			deadline := time.Now().Add(5 * time.Second)
			for w.loops.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		if !closed(w.Started()) || closed(w.Stopped()) {
			t.Fatalf("start %d: Started/Stopped are %v/%v", i, closed(w.Started()), closed(w.Stopped()))
		}
		w.Stop()
		if !closed(w.Stopped()) {
			t.Fatalf("start %d: not stopped after Stop", i)
		}
	}
}

func TestFailUndoesTheStart(t *testing.T) {
	boom := errors.New("cannot start")
	w := &worker{fail: boom}
	if err := w.Start(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Start returned %v, want the failure", err)
	}
	if closed(w.Started()) {
		t.Fatal("a failed start closed Started")
	}
	if !closed(w.Stopped()) {
		t.Fatal("a failed start left the service running")
	}
	if w.loops.Load() != 0 || w.helpers.Load() != 0 {
		t.Fatal("a failed start left goroutines behind")
	}
	w.fail = nil
	if err := w.Start(context.Background()); err != nil {
		t.Fatalf("a start after a failed one: %v", err)
	}
	w.Stop()
}

func TestStartAllStopsWhatStartedWhenOneFails(t *testing.T) {
	a, b := &worker{}, &worker{fail: errors.New("b cannot start")}
	if err := StartAll(context.Background(), a, b); err == nil {
		t.Fatal("StartAll returned nil with a failing service")
	}
	if !closed(a.Stopped()) {
		t.Fatal("the service started before the failure still runs")
	}
	c, d := &worker{}, &worker{}
	if err := StartAll(context.Background(), c, d); err != nil {
		t.Fatal(err)
	}
	StopAll(c, d)
	if !closed(c.Stopped()) || !closed(d.Stopped()) {
		t.Fatal("StopAll left a service running")
	}
}

// exiter is a service whose work ends by itself, as a child process's
// exit ends its wait.
type exiter struct {
	Base
	exit     chan struct{}
	watchers atomic.Int32
}

func (e *exiter) Start(ctx context.Context) error {
	ctx, ok := e.StartInit(ctx)
	if !ok {
		return nil
	}
	e.Go(func() {
		<-e.exit
		e.End(errors.New("exited"))
	})
	e.Go(func() {
		e.watchers.Add(1)
		defer e.watchers.Add(-1)
		<-ctx.Done()
	})
	e.Ready()
	return nil
}

func TestEndStopsTheWorkFromWithin(t *testing.T) {
	e := &exiter{exit: make(chan struct{})}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(e.exit)
	select {
	case <-e.Stopped():
	case <-time.After(5 * time.Second):
		t.Fatal("the service did not stop after its work ended itself")
	}
	if e.watchers.Load() != 0 {
		t.Fatal("Stopped closed before every goroutine returned")
	}
	if e.Go(func() { t.Error("a goroutine started after the work ended ran") }) {
		t.Fatal("Go after the work ended reported that it started the goroutine")
	}
	e.Stop() // nothing runs: returns at once
}
