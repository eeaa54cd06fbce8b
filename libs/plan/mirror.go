package plan

import "github.com/queen-mq/gate/libs/graph"

// Enforcing is the plan d compiles to as if it enforced its budgets: for a
// document in Watch (whose plan carries no budgets), the budgets it
// declares with their keys, ceilings and vendor meters — what the vendor's
// meter is followed and recorded for while the Watch runs, under the keys
// the relays read once the graph enforces. A document not in Watch is
// Build's plan. d is not changed.
func Enforcing(d *graph.Document, opts Options) *Plan {
	if d == nil {
		return nil
	}
	if !d.Watching() {
		return Build(d, opts)
	}
	c := *d
	c.Watch = nil
	return Build(&c, opts)
}
