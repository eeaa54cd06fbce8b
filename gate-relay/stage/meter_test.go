package stage

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/vendormeter"
)

// observe writes what a worker's observe would: the vendor's limit, with
// all of it remaining.
func (r *rig) observe(limit int64) {
	r.t.Helper()
	b := &r.s.cfg.Node.Budgets[0]
	rd := vendormeter.Reading{Status: 200, Limit: limit, HasLimit: true}
	if _, err := r.lim.Observe(context.Background(), b, rd, r.clock.Now(), budget.ObserveOptions{}); err != nil {
		r.t.Error(err)
	}
}

// A budget that mirrors the vendor's meter admits no more per window than
// the vendor stated, though 50 are declared.
func TestAStageChargesTheVendorsLimitWhereItIsBelowTheDeclaredOne(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 50, ttl: 1, riders: true, maxPark: 30 * time.Second, mirror: true})
	r.observe(20)
	r.fill("p", seqs(50)...)
	for i := 0; r.claim() && i < 20; i++ {
	}
	if got := r.forwarded("p"); len(got) != 50 {
		t.Fatalf("forwarded %d, want all 50 over three windows", len(got))
	}
	// 20 + 20 + 10: the last window holds the last 10.
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d in the last window, want 10 (20 per window)", v)
	}
	if slept := r.clock.total(); slept < 2*time.Second {
		t.Errorf("all 50 went in %s, want three windows at the vendor's 20", slept)
	}
}

// A claim that waited for a window is charged the ceiling of the window it
// is admitted in: the vendor's lower limit, stated while it waited.
func TestAParkedClaimFollowsALimitStatedWhileItWaited(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 50, ttl: 1, riders: true, maxPark: 30 * time.Second, mirror: true})
	if _, err := r.c.KV(t.Context(), queen.KVIncr(r.ns, r.key, 50, queen.IncrOpts{TTLSeconds: 1})); err != nil {
		t.Fatal(err)
	}
	r.clock.onSleep = func(time.Duration) {
		r.observe(10)
		r.clock.onSleep = nil
	}
	r.fill("p", seqs(30)...)
	for i := 0; r.claim() && i < 20; i++ {
	}
	if got := r.forwarded("p"); len(got) != 30 {
		t.Fatalf("forwarded %d, want all 30", len(got))
	}
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d in the last window, want 10: every window after the answer admits the vendor's 10", v)
	}
	if slept := r.clock.total(); slept < 3*time.Second {
		t.Errorf("30 went in %s, want three windows of 10 after the spent one", slept)
	}
}

// Without a meter row the plan's ceiling holds: the vendor never raises it.
func TestAStageWithoutAStatedLimitChargesThePlansCeiling(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 50, ttl: 1, riders: true, maxPark: 30 * time.Second, mirror: true})
	r.observe(500)
	r.fill("p", seqs(60)...)
	for i := 0; r.claim() && i < 20; i++ {
	}
	if got := r.forwarded("p"); len(got) != 60 {
		t.Fatalf("forwarded %d, want all 60", len(got))
	}
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d in the last window, want 10 (50 then 10: the vendor's 500 raised nothing)", v)
	}
}
