package plan

import (
	"math"
	"math/big"
)

// Window is the subdivision of one budget.
type Window struct {
	// N is the effective number of sub-windows (≥ 1).
	N int64
	// CountSub is the count per sub-window (≥ 1).
	CountSub int64
	// TTLSeconds is the kv TTL of one sub-window in whole seconds (≥ 1),
	// derived from CountSub and rounded up, so CountSub/TTLSeconds never
	// exceeds count per second.
	TTLSeconds int64
}

// DefaultSubWindows is the N of a budget that declares no subWindows:
// 1 below 2000 ms, else clamp(timeMs div 1000, 1, max(count, 1)).
func DefaultSubWindows(count, timeMs int64) int64 {
	if timeMs < 2000 {
		return 1
	}
	return min(max(timeMs/1000, 1), max(count, 1))
}

// Subdivide computes N, count_sub and the TTL of a budget of count per
// timeMs. subWindows is the declared N; nil means derived.
func Subdivide(count, timeMs int64, subWindows *uint32) Window {
	var n int64
	if subWindows != nil {
		n = int64(*subWindows)
	} else {
		n = DefaultSubWindows(count, timeMs)
	}
	n = max(n, 1)
	countSub := max(1, count/n)
	return Window{N: n, CountSub: countSub, TTLSeconds: ttl(countSub, count, timeMs)}
}

// ttl is max(1, ceil(countSub × timeMs / (max(count,1) × 1000))), exact.
func ttl(countSub, count, timeMs int64) int64 {
	if timeMs <= 0 {
		return 1
	}
	count = max(count, 1)
	const small = 1 << 31
	if countSub < small && timeMs < small && count < small {
		num := countSub * timeMs
		den := count * 1000
		return max(1, (num+den-1)/den)
	}
	num := new(big.Int).Mul(big.NewInt(countSub), big.NewInt(timeMs))
	den := new(big.Int).Mul(big.NewInt(count), big.NewInt(1000))
	num.Add(num, den)
	num.Sub(num, big.NewInt(1))
	num.Quo(num, den)
	if !num.IsInt64() {
		return math.MaxInt64
	}
	return max(1, num.Int64())
}

// Ceiling is a path's max on a counter: round(countSub × share), half away
// from zero, never below 0 (NaN gives 0).
func Ceiling(countSub int64, share float64) int64 {
	f := math.Round(float64(countSub) * share)
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

// DefaultShare is the share of the path at priority rank r (0 = smallest
// priority number) among k distinct priorities: (k − r) / k.
func DefaultShare(rank, k int) float64 {
	if k <= 0 {
		return 1
	}
	return float64(k-rank) / float64(k)
}
