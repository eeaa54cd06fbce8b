package live

import (
	"sync"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/plan"
)

// enforcingPlans keeps, per graph, the plan its stored document compiles
// to as if it enforced (plan.Enforcing), for graphs in Watch: observe
// follows the vendor's meter of the budgets a Watch declares but does not
// charge. One plan per graph, rebuilt when the catalogue's entry changes
// (a new stored revision is a new entry).
type enforcingPlans struct {
	mu    sync.Mutex
	plans map[string]enforcingPlan
}

type enforcingPlan struct {
	entry *plane.Entry
	plan  *plan.Plan
}

// nodeBudgets is the node of e's plan whose budgets observe reads: the
// entry's own node, or for a graph in Watch the same node of its
// enforcing plan.
func (l *Live) nodeBudgets(e *plane.Entry, n *plan.Node) *plan.Node {
	if !e.Plan.Watching || e.Doc == nil {
		return n
	}
	c := &l.enforcing
	key := e.App + "\x00" + e.Graph
	c.mu.Lock()
	defer c.mu.Unlock()
	got, ok := c.plans[key]
	if !ok || got.entry != e {
		if c.plans == nil {
			c.plans = map[string]enforcingPlan{}
		}
		got = enforcingPlan{entry: e, plan: plan.Enforcing(e.Doc, l.p.Cfg.PlanOptions())}
		c.plans[key] = got
	}
	if vn := got.plan.Node(n.Name); vn != nil {
		return vn
	}
	return n
}
