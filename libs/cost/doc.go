// Package cost reads per-item facts out of a message payload on the hot path:
// the item's cost, its scope value for a scoped budget, and whether its op
// matches a budget's whenOp.
package cost
