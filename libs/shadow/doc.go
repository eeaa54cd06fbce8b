// Package shadow runs a candidate set of budgets beside a graph's
// enforced document on its live traffic (issue 27, "shadow limits"). It
// never touches the broker and never refuses anything: it replays the
// per-second items each node forwarded through the candidate's budgets,
// with the relay's own admission (budget.Table.AdmitRuns: Admit's charge
// → refund → prefix loop of budget.AdmitRound over runs of identical
// items), and reports per minute the items
// the candidate would have delayed, its backlog and the delay it would
// have added. The virtual backlog and the counters' open windows are
// carried from one minute to the next (State).
//
// A candidate is the document's own budget syntax per node:
//
//	{"nodes": {"photos": {"budgets": [{"id": "photos-1m", "count": 150, "timeMs": 60000}]}}}
//
// Merge puts it in place of those nodes' budgets in the stored document,
// so libs/declare compiles and validates it exactly as a document's
// budgets (a refusal names the field, e.g. /nodes/photos/budgets/0/count).
//
// A scoped (scopeBy) or op-filtered (whenOp) candidate needs each item's
// values: Needs says which a node's recording must keep, AppendScope is
// how the relay records an item's scope (cost.Scope at each field, the
// relay's own key derivation), and a Second's Keys carry the counts per
// recorded scope and op. The evaluator then keeps a lane per scope and op
// (a value's wait holds only its own items) whose counters are those the
// relay's stage would charge (plan.ScopedKey, the document's per-key
// counts); items recorded without values (the relay's overflow) are
// judged on the budgets that charge every item and counted as
// Approximate. An unkeyed candidate keeps one lane per stage, as before.
package shadow
