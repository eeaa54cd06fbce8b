package stage

import (
	"strconv"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
)

// scoped fills partition p with n items of scope value acct.
func (r *rig) scoped(p, acct string, n int) {
	r.t.Helper()
	items := make([]string, n)
	for i := range items {
		items[i] = `{"i":` + strconv.Itoa(i) + `,"acct":"` + acct + `"}`
	}
	r.fill(p, items...)
}

// A scoped budget of 10 per window with per-key counts in the document: a
// value with its own count is held at it (higher or lower than the
// budget's), every other value at the budget's. One window (60 s, no park):
// what a value forwards is what its window admitted.
func TestAKeyWithItsOwnCountIsHeldAtItAndEveryOtherValueAtTheBudgets(t *testing.T) {
	t.Parallel()
	keys := map[string]int64{"big": 25, "small": 3}
	for _, tc := range []struct {
		acct    string
		runtime bool
		want    int64
	}{
		{"big", false, 25}, {"small", false, 3}, {"other", false, 10},
		{"big", true, 25}, {"small", true, 3}, {"other", true, 10},
	} {
		t.Run(tc.acct+map[bool]string{true: "/relay-cache", false: "/document"}[tc.runtime], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ceiling: 10, ttl: 60, scopeBy: cost.Root + ".acct", riders: true, keys: keys, runtimeKeys: tc.runtime})
			r.scoped("p", tc.acct, 40)
			for i := 0; i < 5 && r.claim(); i++ {
			}
			if got := len(r.forwarded("p")); int64(got) != tc.want {
				t.Errorf("%s forwarded %d in one window, want %d", tc.acct, got, tc.want)
			}
			if v := r.counter(plan.ScopedKey(r.key, tc.acct)); v != tc.want {
				t.Errorf("%s's counter %d, want %d", tc.acct, v, tc.want)
			}
		})
	}
}

// A runtime key limit wins over the document's count for the same value,
// and a running stage applies a change within one sub-window: the window
// after the change admits the new count.
func TestARuntimeKeyLimitWinsAndARunningStageAppliesAChange(t *testing.T) {
	t.Parallel()
	for _, riders := range []bool{true, false} {
		t.Run(map[bool]string{true: "riders", false: "separate"}[riders], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ceiling: 10, ttl: 1, scopeBy: cost.Root + ".acct", riders: riders, maxPark: 30 * time.Second,
				keys: map[string]int64{"acct-7": 2}, runtimeKeys: true})
			b := &r.s.cfg.Node.Budgets[0]
			if _, err := budget.PutKeyLimit(t.Context(), r.c, r.ns, b, "acct-7", 5, r.clock.Now()); err != nil {
				t.Fatal(err)
			}
			r.clock.onSleep = func(time.Duration) {
				if _, err := budget.PutKeyLimit(t.Context(), r.c, r.ns, b, "acct-7", 20, r.clock.Now()); err != nil {
					t.Error(err)
				}
				r.clock.onSleep = nil
			}
			r.scoped("p", "acct-7", 45)
			for i := 0; i < 20 && r.claim(); i++ {
			}
			if got := r.forwarded("p"); len(got) != 45 {
				t.Fatalf("forwarded %d, want all 45 (5, then 20 and 20)", len(got))
			}
			if v := r.counter(plan.ScopedKey(r.key, "acct-7")); v != 20 {
				t.Errorf("counter %d in the last window, want 20: the window after the change admits the new count", v)
			}
			if slept := r.clock.total(); slept < 2*time.Second || slept > 4*time.Second {
				t.Errorf("45 went in %s, want three windows (5 at the runtime limit over the document's 2, then 20, 20)", slept)
			}
		})
	}
}

// Deleting the runtime row falls back to the document's count.
func TestADeletedKeyLimitFallsBackToTheDocument(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 10, ttl: 60, scopeBy: cost.Root + ".acct", riders: true, keys: map[string]int64{"acct-7": 4}, runtimeKeys: true})
	b := &r.s.cfg.Node.Budgets[0]
	if _, err := budget.PutKeyLimit(t.Context(), r.c, r.ns, b, "acct-7", 30, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if found, err := budget.DeleteKeyLimit(t.Context(), r.c, r.ns, b, "acct-7"); err != nil || !found {
		t.Fatalf("delete: %v %v", found, err)
	}
	r.scoped("p", "acct-7", 10)
	for i := 0; i < 5 && r.claim(); i++ {
	}
	if got := len(r.forwarded("p")); got != 4 {
		t.Errorf("forwarded %d, want the document's 4", got)
	}
}
