package stage

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
)

// stageGoroutines counts the goroutines of this process that run a stage's
// code (a worker, a hold runner, a check): every goroutine with a frame of
// a Stage or hold method.
func stageGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("gate-relay/stage.(*Stage).")) || bytes.Contains(g, []byte("gate-relay/stage.(*hold).")) {
			count++
		}
	}
	return count
}

// checkPops counts the pops without wait the broker served.
func checkPops(r *rig) uint64 {
	var n uint64
	for _, c := range r.mini.Calls() {
		if strings.Contains(c.Pattern, "/pop/") && strings.HasSuffix(c.Pattern, "wait=false") {
			n += c.N
		}
	}
	return n
}

// dozeRig is a rig whose stage runs four workers on a virtual clock,
// with the given Fed flag and role.
func dozeRig(t *testing.T, fed, standby bool) (*rig, *Stage, *clock.Virtual) {
	t.Helper()
	return virtualRig(t, func(c *Config) { c.Fed, c.Standby, c.Stage.Concurrency = fed, standby, 4 })
}

// A dozing stage holds no goroutine: its four workers leave when it dozes
// (a relay at 10,000 graphs dozes most of its stages, and a goroutine
// each was most of its memory), worker 0's check is a timer on the
// stage's clock, not a waiting goroutine, and its check pop runs and
// leaves again. A wake starts all four again at once: each parks a
// long-poll. Not parallel: it counts the process's goroutines.
func TestADozingStageHoldsNoGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fed, standby bool
	}{{"fed", true, false}, {"standby ingress", false, true}, {"standby fed", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			r, s, v := dozeRig(t, tc.fed, tc.standby)
			eventually(t, "all four workers doze", func() bool { return s.dozer.asleep.Load() == 4 && r.mini.Parked() == 0 })
			eventually(t, "the dozing stage holds no goroutine", func() bool { return stageGoroutines() == 0 })
			checks := 1
			if tc.fed && tc.standby {
				checks = 0
			}
			if n := v.Pending(); n != checks {
				t.Fatalf("%d waits on the stage's clock while it dozes, want %d (worker 0's check)", n, checks)
			}
			if checks == 1 {
				// The check pop finds nothing: the worker leaves again, with
				// its next check a whole PollTimeout away.
				before := checkPops(r)
				v.Advance(nextCheck(t, v))
				eventually(t, "the check pops once", func() bool { return checkPops(r) == before+1 })
				eventually(t, "after its check the stage holds no goroutine again", func() bool {
					return s.dozer.asleep.Load() == 4 && stageGoroutines() == 0 && v.Pending() == 1
				})
				if in := nextCheck(t, v); in != s.cfg.PollTimeout {
					t.Fatalf("the next check is %s away, want the poll timeout (%s)", in, s.cfg.PollTimeout)
				}
			}

			// Woken (a Wake, or a promotion for a standby): every worker
			// runs again and parks a long-poll, with the clock still.
			at := v.Now()
			r.fill("p", seqs(3)...)
			if tc.standby {
				s.SetStandby(false)
			} else {
				s.Wake()
			}
			eventually(t, "the woken stage forwards the items", func() bool { return len(r.forwarded("p")) == 3 })
			eventually(t, "all four workers park a long-poll", func() bool {
				return r.mini.Parked() == 4 && !s.Dozing() && stageGoroutines() == 4
			})
			if !v.Now().Equal(at) {
				t.Fatalf("the stage's clock moved %s", v.Now().Sub(at))
			}
			// The stage counts a settle once the broker's answer is read.
			eventually(t, "the stage counts 3 popped and 3 forwarded", func() bool { c := s.Counters(); return c.Forwarded == 3 && c.Popped == 3 })
			if got := r.forwarded("p"); len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
				t.Fatalf("partition p forwarded %v, want [0 1 2] once each", got)
			}
		})
	}
}

// A stage stopped while its workers doze stops at once and leaves no
// check behind on its clock; started again, it runs its workers anew.
func TestADozingStageStopsAndStartsAgain(t *testing.T) {
	r, s, v := dozeRig(t, true, false)
	eventually(t, "all four workers doze", func() bool { return s.dozer.asleep.Load() == 4 })
	s.Stop()
	eventually(t, "the stopped stage's check is gone", func() bool { return v.Pending() == 0 })
	if n := stageGoroutines(); n != 0 {
		t.Fatalf("%d stage goroutines after Stop, want none", n)
	}
	r.fill("p", seqs(2)...)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the started stage forwards what waits", func() bool { return len(r.forwarded("p")) == 2 })
	eventually(t, "and its workers doze again once quiet", func() bool {
		v.Advance(time.Second)
		return s.dozer.asleep.Load() == 4 && stageGoroutines() == 0
	})
}
