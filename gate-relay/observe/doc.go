// Package observe is the relay's memory for history: per-second Watch
// samples per node and path, per-stage minute counts (admitted and cost
// from every committed settle, denied from the stage counters' deferred +
// released deltas) for graphs with counters on, and the denials of the
// ring. It sits behind the stage Observer hook, never on PostgreSQL: every
// flush period it hands what it holds to gate-recorder through Queen kv
// (package libs/handover) and forgets a row only once gate-recorder has
// committed and deleted it. Buffers are bounded: at most an hour of
// distinct seconds per stage (older seconds are dropped and their items
// counted as lost), an hour of minutes per stage, 500 pending denials per
// node.
package observe
