// Package conformance is the black-box conformance suite for Queen-compatible
// brokers: one test per semantic of queen-wire.md §12 (plus Gate's own
// traffic from its Appendix A), driven through the Go client libs/queen.
//
// The suite has no exported API; it is its tests. `go test` runs it against
// an in-process miniqueen, and against any real broker when
// GATE_TEST_QUEEN_URL is set (see libs/gatetest). README.md maps every
// semantic to its tests.
package conformance
