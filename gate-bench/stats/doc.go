// Package stats is gate-bench's measuring kit: latency percentiles
// (p50/p90/p99/p99.9/max), closed-loop and open-loop drivers that keep API
// latency honest, the worst sliding window over event timestamps, and the
// aligned table every scenario prints.
package stats
