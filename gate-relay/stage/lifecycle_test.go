package stage

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/miniqueen"
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
