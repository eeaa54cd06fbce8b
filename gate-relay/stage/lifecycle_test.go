package stage

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

// A stage whose pops fail backs off on its clock (200 ms, then 400 ms: a
// growing pause, never a hot loop), resumes relaying once the broker
// answers, and Stop returns only when its worker has returned.
func TestAStageBacksOffOnItsClockAndStopWaitsForItsWorkers(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, riders: true})
	v := clock.NewVirtual(r.mini.Now())
	cfg := r.s.cfg
	cfg.Clock = v
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if !v.WaitForPending(n, ctx.Done()) {
			t.Fatalf("%d waits pending on the stage's clock, want %d", v.Pending(), n)
		}
	}
	backoff := func(want time.Duration) {
		t.Helper()
		waitFor(1)
		if next, _ := v.Next(); next.Sub(v.Now()) != want {
			t.Fatalf("the worker backs off %s, want %s", next.Sub(v.Now()), want)
		}
	}

	r.mini.SetError(miniqueen.RoutePop, 500)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Started():
	default:
		t.Fatal("Started is not closed after Start")
	}
	backoff(200 * time.Millisecond)
	v.Advance(200 * time.Millisecond)
	backoff(400 * time.Millisecond)

	r.mini.ClearError(miniqueen.RoutePop)
	r.fill("p", seqs(5)...)
	v.Advance(400 * time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for len(r.forwarded("p")) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("forwarded %v after the broker answered again, want all 5", r.forwarded("p"))
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The worker is now in a parked long-poll: Stop ends it and waits.
	s.Stop()
	select {
	case <-s.Stopped():
	default:
		t.Fatal("Stop returned before Stopped closed")
	}
	if c := s.Counters(); c.Forwarded != 5 || c.Commits == 0 {
		t.Fatalf("counters %+v, want the 5 items forwarded", c)
	}
}

// A claim's lease is renewed on the stage's clock, every third of the
// lease, for as long as the claim is in hand, and never once its renewal
// has stopped; a lease the broker no longer knows is reported gone and not
// renewed again.
func TestALeaseIsRenewedUntilItsRenewalStops(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100})
	v := clock.NewVirtual(r.mini.Now())
	cfg := r.s.cfg
	cfg.Clock, cfg.Lease = v, 3*time.Second
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.fill("p0", `{}`)
	claim, err := r.c.Pop(t.Context(), queen.PopRequest{Queue: r.src, ConsumerGroup: r.group, Batch: 1, LeaseSeconds: 3, SubscriptionMode: queen.SubscribeAll})
	if err != nil || len(claim.Messages) != 1 || claim.LeaseID == "" {
		t.Fatalf("claiming the item: %v %+v", err, claim)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	renewals := func(want int64, from queen.Calls) {
		t.Helper()
		for r.c.Calls().Sub(from).Lease < want {
			if ctx.Err() != nil {
				t.Fatalf("%d lease renewals, want %d", r.c.Calls().Sub(from).Lease, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	from := r.c.Calls()
	lease := s.renewLease(t.Context(), claim.LeaseID)
	for i := int64(1); i <= 2; i++ {
		if !v.WaitForPending(1, ctx.Done()) {
			t.Fatalf("renewal %d was never armed", i)
		}
		if next, _ := v.Next(); next.Sub(v.Now()) != time.Second {
			t.Fatalf("renewal %d is due in %s, want a third of the 3 s lease", i, next.Sub(v.Now()))
		}
		v.Advance(time.Second)
		renewals(i, from)
	}
	if !v.WaitForPending(1, ctx.Done()) {
		t.Fatal("the third renewal was never armed")
	}
	lease.stop()
	if n := v.Pending(); n != 0 {
		t.Fatalf("%d waits pending after the renewal stopped, want none", n)
	}
	v.Advance(10 * time.Second)
	time.Sleep(20 * time.Millisecond)
	if n := r.c.Calls().Sub(from).Lease; n != 2 || lease.gone() {
		t.Fatalf("after stop: %d renewals (want 2), gone %v (want false)", n, lease.gone())
	}
	lease.stop() // a second stop does nothing

	from = r.c.Calls()
	unknown := s.renewLease(t.Context(), "0198a4b2-0000-7000-8000-000000000000")
	defer unknown.stop()
	if !v.WaitForPending(1, ctx.Done()) {
		t.Fatal("the unknown lease's renewal was never armed")
	}
	v.Advance(time.Second)
	for !unknown.gone() {
		if ctx.Err() != nil {
			t.Fatal("a lease the broker does not know was never reported gone")
		}
		time.Sleep(time.Millisecond)
	}
	if n := v.Pending(); n != 0 {
		t.Fatalf("a gone lease is renewed again: %d waits pending", n)
	}
	if n := r.c.Calls().Sub(from).Lease; n != 1 {
		t.Fatalf("%d renewals of the unknown lease, want 1", n)
	}
}

// Every kv call and transaction of a handler is bounded: by the client's
// own call timeout when it is within the stage's callTimeout, else (a
// client without one, or a longer one) by the call's context; the stop
// signal never cuts a call short.
func TestAHandlersCallsAreAlwaysBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		ctxDue  bool
	}{
		{"the client's default", queen.DefaultCallTimeout, false},
		{"a client without a bound", 0, true},
		{"a client bounding calls longer than the stage", 2 * callTimeout, true},
	} {
		c, err := queen.New("http://127.0.0.1:1", queen.WithCallTimeout(tc.timeout))
		if err != nil {
			t.Fatal(err)
		}
		stop, cancelStop := context.WithCancel(t.Context())
		h := &handler{s: &Stage{cfg: Config{Client: c}}, ctx: stop}
		ctx, cancel := h.call()
		cancelStop()
		dl, ok := ctx.Deadline()
		switch {
		case ctx.Err() != nil:
			t.Errorf("%s: the stop signal ended the call's context", tc.name)
		case ok != tc.ctxDue:
			t.Errorf("%s: the call's context has a deadline %v, want %v", tc.name, ok, tc.ctxDue)
		case ok && time.Until(dl) > callTimeout:
			t.Errorf("%s: the call's deadline is %s away, want at most %s", tc.name, time.Until(dl), callTimeout)
		case !ok && (c.CallTimeout() <= 0 || c.CallTimeout() > callTimeout):
			t.Errorf("%s: neither the context nor the client (%s) bounds the call", tc.name, c.CallTimeout())
		}
		cancel()
	}
}
