package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

// A running relay holds each scope value at its own limit — a runtime row
// (12), the document's keys (8), the budget's count (5) — for an hour's
// window, and applies a limit raised at runtime to claims it already holds
// within seconds, not when the hour ends.
func TestARelayHoldsEachKeyAtItsOwnLimitAndFollowsARuntimeChange(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "tiers"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,
		"budgets":[{"id":"all","count":1000,"timeMs":1000},
		           {"id":"per-key","count":5,"timeMs":3600000,"subWindows":1,"scopeBy":"payload.listingId","keys":{"doc":8}}],
		"egress":%q}},"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue()))
	per := &plan.Budget{ID: "per-key", Key: plan.BudgetKey(e.app, graph, "n", "per-key"), ScopeBy: "payload.listingId"}
	ctx := context.Background()
	if _, err := budget.PutKeyLimit(ctx, e.client, e.store.Namespace(), per, "gold", 12, time.Now()); err != nil {
		t.Fatal(err)
	}
	in := plan.IngressQueue(e.app, graph, "n")
	r := e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 10*time.Second, func() bool { _, ok := stageStatus(r, e.app, graph, "main", "n"); return ok })
	for part, key := range map[string]string{"G": "gold", "D": "doc", "P": "plain"} {
		e.partitionItems(in, part, 0, 20, func(int) item { return item{List: key} })
	}
	want := map[string]int{"G": 12, "D": 8, "P": 5}
	within(t, 15*time.Second, "each key at its own limit", func() bool {
		for part, n := range want {
			if e.partitionCount(e.egressQueue(), part) != n {
				return false
			}
		}
		return true
	})
	consistently(t, time.Second, func() bool {
		return e.partitionCount(e.egressQueue(), "G") == 12 && e.partitionCount(e.egressQueue(), "D") == 8 && e.partitionCount(e.egressQueue(), "P") == 5
	})
	if c, ok := e.mini.KV(e.b.Namespace(), plan.ScopedKey(per.Key, "gold")); !ok || c.Int != 12 {
		t.Errorf("gold's counter %+v, want 12 = forwarded", c)
	}
	// Raised at runtime while P's claim is held for the hour: it goes on.
	if _, err := budget.PutKeyLimit(ctx, e.client, e.store.Namespace(), per, "plain", 9, time.Now()); err != nil {
		t.Fatal(err)
	}
	took := within(t, 10*time.Second, "plain raised to 9 while its claim is held", func() bool { return e.partitionCount(e.egressQueue(), "P") == 9 })
	t.Logf("a raised limit applied %v after the write", took.Round(time.Millisecond))
	consistently(t, time.Second, func() bool { return e.partitionCount(e.egressQueue(), "P") == 9 })
}
