package stage

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
)

// virtualRig is a rig whose stage runs on a virtual clock (the broker's
// time at the start), its config as the rig's with set applied.
func virtualRig(t *testing.T, set func(*Config)) (*rig, *Stage, *clock.Virtual) {
	t.Helper()
	r := newRig(t, rigOpts{ceiling: 100, riders: true})
	v := clock.NewVirtual(r.mini.Now())
	cfg := r.s.cfg
	cfg.Clock = v
	set(&cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return r, s, v
}

// eventually polls cond in real time (the broker answers in real time)
// without moving the stage's clock.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15 s of real time", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Fed stage starts dozing, and dozes again once quiet for DozeAfter: it
// holds no parked long-poll on the broker. A Wake (its upstream settled
// into its source) ends the doze at once: the new item is forwarded with
// no time passing on the stage's clock; the woken stage parks its poll
// until it has been quiet for DozeAfter. An item that arrives with no Wake
// (left by a replica that stopped) is found by the check pop one
// PollTimeout into the doze, not before: that is the bound.
func TestAQuietFedStageDozesAndAWakeForwardsANewItemAtOnce(t *testing.T) {
	t.Parallel()
	r, s, v := roleRig(t, true, false)
	after := s.cfg.DozeAfter()
	if after != 20*time.Second {
		t.Fatalf("DozeAfter is %s with a 1 s poll and a 10 s lease, want 20 s (twice the lease)", after)
	}
	start := v.Now()
	eventually(t, "the new Fed stage dozes with no poll parked", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
	if !v.Now().Equal(start) {
		t.Fatalf("the stage's clock moved %s before it dozed", v.Now().Sub(start))
	}

	// Woken: the item goes through with the stage's clock standing still.
	r.fill("w", seqs(1)...)
	s.Wake()
	eventually(t, "the woken stage forwards the new item", func() bool { return len(r.forwarded("w")) == 1 })
	eventually(t, "the woken stage parks its long-poll", func() bool { return !s.Dozing() && r.mini.Parked() == 1 })
	v.Advance(after / 2)
	time.Sleep(50 * time.Millisecond)
	if s.Dozing() {
		t.Fatal("the stage dozes before it was quiet for DozeAfter")
	}
	v.Advance(after / 2)
	eventually(t, "the quiet stage dozes with no poll parked", func() bool { return s.Dozing() && r.mini.Parked() == 0 })

	// Woken: the item goes through with the stage's clock standing still.
	at := v.Now()
	r.fill("p", seqs(3)...)
	s.Wake()
	eventually(t, "the woken stage forwards the new items", func() bool { return len(r.forwarded("p")) == 3 })
	if !v.Now().Equal(at) {
		t.Fatalf("the stage's clock moved %s", v.Now().Sub(at))
	}
	eventually(t, "the woken stage parks its long-poll again", func() bool { return !s.Dozing() && r.mini.Parked() == 1 })

	// Quiet again, then an item with no Wake: the check one PollTimeout
	// into the doze claims it.
	v.Advance(after)
	eventually(t, "the stage dozes again", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
	r.fill("q", seqs(2)...)
	// The doze's only wait on the clock is its check, in the second half
	// of PollTimeout (spread, so a fleet's stages do not check at once).
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if !v.WaitForPending(1, ctx.Done()) {
		t.Fatalf("%d waits on the stage's clock, want the doze's check", v.Pending())
	}
	next, _ := v.Next()
	if in := next.Sub(v.Now()); in < s.cfg.PollTimeout/2 || in > s.cfg.PollTimeout {
		t.Fatalf("the doze checks its source %s from now, want within PollTimeout (%s) and not before half of it", in, s.cfg.PollTimeout)
	}
	if got := r.forwarded("q"); len(got) != 0 {
		t.Fatalf("forwarded %v before the check", got)
	}
	v.Advance(next.Sub(v.Now()))
	eventually(t, "the check pop forwards the items left with no wake", func() bool { return len(r.forwarded("q")) == 2 })
	eventually(t, "the stage is awake after the check found items", func() bool { return !s.Dozing() && r.mini.Parked() == 1 })
	if c := s.Counters(); c.Forwarded != 6 {
		t.Fatalf("counters %+v, want 6 forwarded", c)
	}
}

// A stage that is not Fed (an ingress source: the push door and other
// producers wake nothing in the relay) never dozes: after an hour of
// quiet its long-poll is parked and a new item goes through at once.
func TestAnIngressStageNeverDozes(t *testing.T) {
	t.Parallel()
	r, s, v := roleRig(t, false, false)
	v.Advance(time.Hour)
	eventually(t, "the stage's long-poll parks", func() bool { return r.mini.Parked() == 1 })
	if s.Dozing() {
		t.Fatal("an ingress stage dozes")
	}
	r.fill("p", seqs(2)...)
	eventually(t, "the parked poll forwards the new items", func() bool { return len(r.forwarded("p")) == 2 })
}

// A doze's first check comes within the poll timeout, spread over its
// second half (so stages started together do not check together, and
// what a restarted stage's predecessor held is found soon after its
// lease lapses); a check after a check that found nothing comes a whole
// DozeCheck later. With a DozeCheck shorter than the poll timeout, the
// first check spreads over that.
func TestDozeChecksAreSpreadFirstWithinThePollTimeoutThenEveryDozeCheck(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for range 2000 {
		d := checkIn(30*time.Second, 120*time.Second, false, rnd)
		if d < 15*time.Second || d > 30*time.Second {
			t.Fatalf("a first check %s into the doze, want 15 s to 30 s", d)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo > 16*time.Second || hi < 29*time.Second {
		t.Fatalf("first checks spread over %s..%s, want most of 15 s..30 s", lo, hi)
	}
	if d := checkIn(30*time.Second, 120*time.Second, true, rnd); d != 120*time.Second {
		t.Fatalf("a check after a check %s later, want DozeCheck (120 s)", d)
	}
	for range 200 {
		if d := checkIn(30*time.Second, 10*time.Second, false, rnd); d < 5*time.Second || d > 10*time.Second {
			t.Fatalf("with DozeCheck 10 s a first check %s into the doze, want 5 s to 10 s", d)
		}
	}
}

// A Fed stage's first pop does not wait: items an earlier owner left in
// its source (a replica that stopped, a graph handed over) go through at
// once, with no Wake and no time passing; then the stage dozes.
func TestANewFedStageTakesWhatWasLeftAtOnceThenDozes(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, riders: true})
	r.fill("left", seqs(4)...)
	v := clock.NewVirtual(r.mini.Now())
	cfg := r.s.cfg
	cfg.Clock, cfg.Fed = v, true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := v.Now()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	eventually(t, "the new stage forwards what was left", func() bool { return len(r.forwarded("left")) == 4 })
	if !v.Now().Equal(start) {
		t.Fatalf("the stage's clock moved %s", v.Now().Sub(start))
	}
	// It claimed, so it is awake (a parked poll) until quiet for DozeAfter.
	eventually(t, "the stage parks its poll after claiming", func() bool { return !s.Dozing() && r.mini.Parked() == 1 })
	v.Advance(s.cfg.DozeAfter())
	eventually(t, "then it dozes", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
}
