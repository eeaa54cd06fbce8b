package stage

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
)

// roleRig is a rig whose stage runs on a virtual clock with the role
// standby from its start, Fed (an interior source woken by its upstream)
// or not.
func roleRig(t *testing.T, fed, standby bool) (*rig, *Stage, *clock.Virtual) {
	t.Helper()
	return virtualRig(t, func(c *Config) { c.Fed, c.Standby = fed, standby })
}

// nextCheck waits for the doze's check on the stage's clock and returns
// how far from now it is.
func nextCheck(t *testing.T, v *clock.Virtual) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if !v.WaitForPending(1, ctx.Done()) {
		t.Fatalf("%d waits on the stage's clock, want the doze's check", v.Pending())
	}
	next, _ := v.Next()
	return next.Sub(v.Now())
}

// A standby's ingress stage with no traffic holds no parked long-poll:
// it starts quiet and dozes. Items pushed behind it (its primary is dead,
// or missed them) are claimed by its check within PollTimeout, each
// forwarded once; the claim wakes the stage, which then long-polls (a new
// item goes through at once) until quiet for DozeAfter, when it dozes
// again.
func TestAStandbyIngressStageDozesAndItsCheckForwardsWhatWasPushedOnce(t *testing.T) {
	t.Parallel()
	r, s, v := roleRig(t, false, true)
	start := v.Now()
	eventually(t, "the standby stage dozes with no poll parked", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
	if !v.Now().Equal(start) {
		t.Fatalf("the stage's clock moved %s before it dozed", v.Now().Sub(start))
	}
	r.fill("q", seqs(3)...)
	in := nextCheck(t, v)
	if in < s.cfg.PollTimeout/2 || in > s.cfg.PollTimeout {
		t.Fatalf("the standby checks its source %s from now, want within PollTimeout (%s) and not before half of it", in, s.cfg.PollTimeout)
	}
	time.Sleep(50 * time.Millisecond)
	if got := r.forwarded("q"); len(got) != 0 {
		t.Fatalf("forwarded %v before the check", got)
	}
	v.Advance(in)
	eventually(t, "the check forwards what was pushed", func() bool { return len(r.forwarded("q")) == 3 })
	eventually(t, "the claim wakes the stage: its poll parks", func() bool { return !s.Dozing() && r.mini.Parked() == 1 })

	// Awake, it long-polls: a new item goes through with the clock still.
	at := v.Now()
	r.fill("w", seqs(2)...)
	eventually(t, "the parked poll forwards the new items", func() bool { return len(r.forwarded("w")) == 2 })
	if !v.Now().Equal(at) {
		t.Fatalf("the stage's clock moved %s", v.Now().Sub(at))
	}
	v.Advance(s.cfg.DozeAfter())
	eventually(t, "quiet for DozeAfter, the standby dozes again", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
	if got := r.forwarded("q"); len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("partition q forwarded %v, want [0 1 2] once each", got)
	}
	if c := s.Counters(); c.Forwarded != 5 || c.Popped != 5 {
		t.Fatalf("counters %+v, want 5 popped and 5 forwarded", c)
	}
}

// A standby's Fed stage dozes with no check at all (its upstream in the
// same process wakes it; what a dead primary left waits for the
// promotion): no wait on its clock, no parked poll, and an item left in
// its source with no Wake stays there. A promotion wakes it at once: the
// item goes through with the clock standing still and its poll parks.
// A standby's ingress stage, promoted while dozing, forwards what waits
// at once too (not at its check) and never dozes again.
func TestAPromotionWakesADozingStandbyStageAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fed  bool
	}{{"fed", true}, {"ingress", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, s, v := roleRig(t, tc.fed, true)
			eventually(t, "the standby stage dozes", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
			if !s.Standby() {
				t.Fatal("the stage does not report its standby role")
			}
			r.fill("left", seqs(2)...)
			if tc.fed {
				deadline := time.Now().Add(300 * time.Millisecond)
				for time.Now().Before(deadline) {
					if n := v.Pending(); n != 0 {
						t.Fatalf("a standby's Fed stage waits on %d timers while it dozes, want none (no check)", n)
					}
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				nextCheck(t, v)
			}
			if got := r.forwarded("left"); len(got) != 0 {
				t.Fatalf("forwarded %v while dozing with no wake", got)
			}
			at := v.Now()
			s.SetStandby(false)
			if s.Standby() {
				t.Fatal("the promoted stage still reports standby")
			}
			eventually(t, "the promoted stage forwards what was left", func() bool { return len(r.forwarded("left")) == 2 })
			if !v.Now().Equal(at) {
				t.Fatalf("the stage's clock moved %s", v.Now().Sub(at))
			}
			eventually(t, "the promoted stage parks its poll", func() bool { return !s.Dozing() && r.mini.Parked() == 1 })
			if !tc.fed {
				v.Advance(time.Hour)
				eventually(t, "the primary's ingress poll parks again", func() bool { return r.mini.Parked() == 1 })
				if s.Dozing() {
					t.Fatal("a primary's ingress stage dozes")
				}
			}
			if c := s.Counters(); c.Forwarded != 2 {
				t.Fatalf("counters %+v, want 2 forwarded", c)
			}
		})
	}
}

// A primary's ingress stage demoted while its poll is parked loses
// nothing: the poll in flight claims what is pushed and forwards it once,
// and the claim keeps the stage awake (parked) until quiet for DozeAfter;
// then it dozes, and what comes next is found by its check.
func TestADemotedIngressStageForwardsWhatItClaimsThenDozes(t *testing.T) {
	t.Parallel()
	r, s, v := roleRig(t, false, false)
	eventually(t, "the primary's poll parks", func() bool { return r.mini.Parked() == 1 })
	s.SetStandby(true)
	at := v.Now()
	r.fill("p", seqs(4)...)
	eventually(t, "the poll in flight forwards the items", func() bool { return len(r.forwarded("p")) == 4 })
	if !v.Now().Equal(at) {
		t.Fatalf("the stage's clock moved %s", v.Now().Sub(at))
	}
	// Longer than the broker's poll timeout: the stage re-parks, awake.
	time.Sleep(s.cfg.PollTimeout + 200*time.Millisecond)
	if s.Dozing() || r.mini.Parked() != 1 {
		t.Fatalf("dozing %v with %d polls parked right after a claim, want awake and parked", s.Dozing(), r.mini.Parked())
	}
	v.Advance(s.cfg.DozeAfter())
	eventually(t, "quiet for DozeAfter, the demoted stage dozes", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
	r.fill("q", seqs(1)...)
	v.Advance(nextCheck(t, v))
	eventually(t, "its check forwards the next item", func() bool { return len(r.forwarded("q")) == 1 })
	if c := s.Counters(); c.Forwarded != 5 || c.Popped != 5 {
		t.Fatalf("counters %+v, want 5 popped and 5 forwarded, each once", c)
	}
}

// A standby's ingress stage checks its source every DozeCheck, not
// every poll timeout: its first check of a doze comes in the second half
// of the poll timeout, the next a whole DozeCheck later, and what was
// pushed behind it is forwarded by the check, once. A primary's Fed stage
// checks the same way.
func TestADozingStageChecksEveryDozeCheck(t *testing.T) {
	t.Parallel()
	r, s, v := virtualRig(t, func(c *Config) { c.Standby, c.DozeCheck = true, 8*time.Second })
	cfg := s.cfg
	eventually(t, "the standby stage dozes", func() bool { return s.Dozing() && r.mini.Parked() == 0 })
	in := nextCheck(t, v)
	if in < cfg.PollTimeout/2 || in > cfg.PollTimeout {
		t.Fatalf("the standby's first check is %s away, want within the poll timeout (%s) and not before half of it", in, cfg.PollTimeout)
	}
	v.Advance(in)
	eventually(t, "the empty check leaves the stage dozing with its next check armed", func() bool { return s.Dozing() && v.Pending() == 1 })
	if next := nextCheck(t, v); next != 8*time.Second {
		t.Fatalf("the next check is %s away, want DozeCheck (8 s)", next)
	}
	r.fill("q", seqs(2)...)
	v.Advance(7 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if got := r.forwarded("q"); len(got) != 0 {
		t.Fatalf("forwarded %v before the check", got)
	}
	v.Advance(time.Second)
	eventually(t, "the check forwards what was pushed", func() bool { return len(r.forwarded("q")) == 2 })
	// The stage counts a settle once the broker's answer is read, a moment
	// after the egress shows the items.
	eventually(t, "the stage counts 2 popped and 2 forwarded", func() bool { c := s.Counters(); return c.Forwarded == 2 && c.Popped == 2 })
	if got := r.forwarded("q"); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("partition q forwarded %v, want [0 1] once each", got)
	}

	fr, fed, fv := virtualRig(t, func(c *Config) { c.Fed, c.DozeCheck = true, 8*c.PollTimeout })
	fcfg := fed.cfg
	eventually(t, "the Fed stage dozes", func() bool { return fed.Dozing() && fr.mini.Parked() == 0 })
	in = nextCheck(t, fv)
	if in < fcfg.PollTimeout/2 || in > fcfg.PollTimeout {
		t.Fatalf("a primary's Fed stage's first check is %s away, want within the poll timeout (%s) and not before half of it", in, fcfg.PollTimeout)
	}
	fv.Advance(in)
	eventually(t, "the Fed stage's empty check leaves it dozing with its next check armed", func() bool { return fed.Dozing() && fv.Pending() == 1 })
	if next := nextCheck(t, fv); next != fcfg.DozeCheck {
		t.Fatalf("the Fed stage's next check is %s away, want DozeCheck (%s), not the poll timeout (%s)", next, fcfg.DozeCheck, fcfg.PollTimeout)
	}
}
