// Package simulate replays recorded Watch traffic against limits that are
// not enforced yet, without touching the broker.
//
// Preview is "Try a limit" (gate-runtime §6.3): one global allowance of one
// node, the sub-window from plan.Subdivide, first-charge-anchored windows,
// FIFO, every arrival of a second simultaneous. Coverage computes the part
// of a range the recorders cover, its gaps and lost items.
//
// Graph replays the per-second, per-path arrivals of a Watch session
// through a compiled candidate plan: every unconditional budget of every
// node is a counter in a budget.Table (the broker's kv semantics) and every
// window is judged by budget.Table.Admit, the relay's charge → refund →
// prefix sequence, so combined windows, shares, shared keys across nodes,
// per-path ceilings and cost per item hold exactly as the relay holds
// them. Scoped and operation-filtered budgets need per-value and per-op
// data that Watch does not keep; they are reported as unsupported, never
// guessed.
package simulate
