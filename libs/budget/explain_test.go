package budget_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
)

// The counters of one item: an op-limited budget only for its op, a
// scoped one keyed by the value (unjudged without one), a shared one so
// named; a value too long for the key room is refused with the room.
func TestItemCountersAreTheStagesCounters(t *testing.T) {
	t.Parallel()
	n := &plan.Node{Budgets: []plan.Budget{
		{ID: "global", Key: "k:g", Ceilings: map[string]int64{"main": 10, "slow": 5}, WindowSubSeconds: 1},
		{ID: "per-listing", Key: "k:l", ScopeBy: "payload.listing", Ceilings: map[string]int64{"main": 100}, WindowSubSeconds: 604800},
		{ID: "deletes", Key: "k:d", WhenOp: []string{"listing.delete"}, Ceilings: map[string]int64{"main": 5}, WindowSubSeconds: 1},
		{ID: "vendor", Key: "shared:v", Shared: true, Ceilings: map[string]int64{"main": 50}, WindowSubSeconds: 60},
	}}
	cs, unjudged, err := budget.ItemCounters(n, "main", "listing.update", "L-1", true)
	if err != nil || len(unjudged) != 0 || len(cs) != 3 || cs[1].Key != plan.ScopedKey("k:l", "L-1") || cs[1].Kind != budget.KindScoped || cs[2].Kind != budget.KindShared || cs[0].Shares["slow"] != 5 {
		t.Fatalf("an update of L-1: %+v unjudged %v err %v", cs, unjudged, err)
	}
	cs, unjudged, _ = budget.ItemCounters(n, "main", "listing.delete", "", false)
	if len(cs) != 3 || cs[1].Budget != "deletes" || len(unjudged) != 1 || unjudged[0] != "per-listing" {
		t.Fatalf("a deletion without a value: %+v unjudged %v", cs, unjudged)
	}
	_, _, err = budget.ItemCounters(n, "main", "", strings.Repeat("x", plan.MaxKVKeyBytes), true)
	var long *budget.ScopeTooLongError
	if !errors.As(err, &long) || long.Budget != "per-listing" || long.Room != plan.ScopeRoom("k:l") {
		t.Fatalf("a value past the key room: %v", err)
	}
}

// JudgeItem: the full scoped counter binds until its window ends; the
// items ahead push the earliest admission through the unscoped counter at
// one ceiling per window; a backoff's deadline bounds it too.
func TestJudgeItemBindsAndBoundsTheEarliestAdmission(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	n := &plan.Node{Budgets: []plan.Budget{
		{ID: "global", Key: "g", Ceilings: map[string]int64{"main": 10}, WindowSubSeconds: 1},
		{ID: "per-listing", Key: "l", ScopeBy: "payload.listing", Ceilings: map[string]int64{"main": 100}, WindowSubSeconds: 604800},
	}}
	cs, _, _ := budget.ItemCounters(n, "main", "", "L", true)
	week := now.Add(72 * time.Hour)
	live := map[string]budget.Reading{
		"g":   {Value: 4, ExpiresAt: now.Add(300 * time.Millisecond), Found: true},
		"l:L": {Value: 100, ExpiresAt: week, Found: true},
	}
	j := budget.JudgeItem(cs, 1, 0, live, time.Time{}, now)
	if j.Binding != 1 || j.Counters[1].Fits || j.Counters[1].Reason != budget.ReasonCeiling || !j.Earliest.Equal(week) || !j.Counters[0].Fits {
		t.Fatalf("a spent listing: %+v", j)
	}
	// Another listing with 25 items ahead: the item is the 26th; 6 fit
	// this window, the next window (from 300 ms) takes 7–16, the one after
	// (from 1.3 s) 17–26.
	cs, _, _ = budget.ItemCounters(n, "main", "", "M", true)
	j = budget.JudgeItem(cs, 1, 25, live, time.Time{}, now)
	if j.Binding != -1 || !j.Earliest.Equal(now.Add(1300*time.Millisecond)) {
		t.Fatalf("25 ahead: binding %d earliest %s", j.Binding, j.Earliest.Sub(now))
	}
	// A backoff until later bounds it.
	j = budget.JudgeItem(cs, 1, 0, live, now.Add(time.Minute), now)
	if !j.Earliest.Equal(now.Add(time.Minute)) {
		t.Fatalf("a backoff: earliest %s", j.Earliest.Sub(now))
	}
}
