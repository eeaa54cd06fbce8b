// Package scenario is gate-bench: each scenario (health, push, drain,
// throughput, contention, throttled, idle, overhead, peers) drives a running
// Gate stack the way an application would and returns aligned tables; Run
// executes a list of them in order, stopping at the first error.
package scenario
