// Package cost reads per-item facts out of a message payload on the hot path:
// the item's cost, its scope value for a scoped budget, and whether its op
// matches a budget's whenOp. It owns the `_gate` stamp too: its one encoder
// (GateStamp) and its one splice into a payload (GateStamp.AppendStamped).
// Payloads are read and written with internal/jsonkit.
package cost
