package stats

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method; 0 for no samples. sorted must be ascending.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p/100*float64(len(sorted)) - 1e-9))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Summary describes a latency distribution.
type Summary struct {
	N                        int
	P50, P90, P99, P999, Max time.Duration
	Mean                     time.Duration
}

// Summarize sorts samples in place and summarises them.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return Summary{
		N: len(samples), P50: Percentile(samples, 50), P90: Percentile(samples, 90),
		P99: Percentile(samples, 99), P999: Percentile(samples, 99.9), Max: samples[len(samples)-1],
		Mean: sum / time.Duration(len(samples)),
	}
}

// Recorder collects latencies and statuses from many goroutines. The zero
// value is ready to use.
type Recorder struct {
	mu       sync.Mutex
	samples  []time.Duration
	statuses map[int]int
	errors   int
}

// Record adds one call's latency and status (0 = transport error).
func (r *Recorder) Record(d time.Duration, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses == nil {
		r.statuses = map[int]int{}
	}
	if status == 0 {
		r.errors++
	}
	r.statuses[status]++
	r.samples = append(r.samples, d)
}

// Take returns the samples and statuses recorded so far and resets.
func (r *Recorder) Take() ([]time.Duration, map[int]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, st, e := r.samples, r.statuses, r.errors
	r.samples, r.statuses, r.errors = nil, nil, 0
	if st == nil {
		st = map[int]int{}
	}
	return s, st, e
}
