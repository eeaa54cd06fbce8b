// Package relay is gate-relay's graph runtime: it reads every stored graph
// document from Queen kv, compiles it, provisions its queues, runs one
// stage per hop of each path, and reconciles against the store (on a
// period, and within about a second of the change signal moving) so that
// added, changed and deleted documents are applied on every replica.
package relay
