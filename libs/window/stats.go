package window

import (
	"math"
	"slices"
	"sort"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of xs by the
// nearest-rank method: the smallest sample with at least p% of the samples
// at or below it. It is 0 for no samples. xs is not modified.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if p <= 0 {
		return s[0]
	}
	rank := int(math.Ceil(p/100*float64(len(s)) - 1e-9))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// Median is Percentile(xs, 50).
func Median(xs []float64) float64 { return Percentile(xs, 50) }

// WorstSliding returns the largest sum of n consecutive samples and the
// index where that run starts. With fewer than n samples the whole series is
// the only window. It returns (0, -1) for no samples or n < 1.
func WorstSliding(samples []int64, n int) (sum int64, start int) {
	if len(samples) == 0 || n < 1 {
		return 0, -1
	}
	if n > len(samples) {
		n = len(samples)
	}
	var cur int64
	for i := 0; i < n; i++ {
		cur += samples[i]
	}
	sum, start = cur, 0
	for i := n; i < len(samples); i++ {
		cur += samples[i] - samples[i-n]
		if cur > sum {
			sum, start = cur, i-n+1
		}
	}
	return sum, start
}

// WorstSpan returns the largest number of timestamps (milliseconds, any
// order) inside one half-open interval [t, t+spanMs) and the t where it
// starts (the earliest timestamp of that interval). It is the continuous
// sliding window a vendor's own counter would apply. (0, 0) for no stamps.
func WorstSpan(stamps []int64, spanMs int64) (count int, startMs int64) {
	if len(stamps) == 0 || spanMs <= 0 {
		return 0, 0
	}
	s := slices.Clone(stamps)
	slices.Sort(s)
	j := 0
	for i := range s {
		for s[i]-s[j] >= spanMs {
			j++
		}
		if n := i - j + 1; n > count {
			count, startMs = n, s[j]
		}
	}
	return count, startMs
}

// SlidingBound is the most fixed sub-windows can admit inside any sliding
// window of the declared length: a window of N sub-windows can overlap N+1
// of them, each admitting countSub, so the bound is countSub × (N+1) —
// (N+1)/N of the declared count when countSub × N = count (110% for ten
// sub-windows).
// subWindows < 1 counts as one window.
func SlidingBound(countSub, subWindows int64) int64 {
	return countSub * (max(subWindows, 1) + 1)
}

// Buckets counts stamps per fixed bucket of widthMs starting at originMs:
// bucket i covers [origin + i×width, origin + (i+1)×width). Stamps before
// origin or at/after origin + n×width are ignored.
func Buckets(stamps []int64, originMs, widthMs int64, n int) []int64 {
	out := make([]int64, n)
	if widthMs <= 0 {
		return out
	}
	for _, t := range stamps {
		if t < originMs {
			continue
		}
		i := (t - originMs) / widthMs
		if i < int64(n) {
			out[i]++
		}
	}
	return out
}

// searchInt64 is sort.Search over a sorted slice: the first index with
// s[i] >= v.
func searchInt64(s []int64, v int64) int {
	return sort.Search(len(s), func(i int) bool { return s[i] >= v })
}
