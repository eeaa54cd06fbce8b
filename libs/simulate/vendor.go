package simulate

import "math/bits"

// VendorLimit is one limit a vendor stated for a budget that mirrors its
// meter: Limit per TimeMs (the budget's window) over [From, To) ms.
type VendorLimit struct {
	From, To      int64
	Limit, TimeMs int64
}

// VendorResult compares a candidate allowance with what the vendor
// allowed over a replayed range.
type VendorResult struct {
	// Seconds is the seconds of the range in which some vendor limit held.
	Seconds int64
	// ExceededSeconds is, of those, the seconds in which the candidate
	// allows more than the vendor did (count per timeMs above the lowest
	// limit holding, compared as rates).
	ExceededSeconds int64
	// OverSeconds is, of those, the seconds in which the replay of the
	// recorded traffic under the candidate admits more items than the
	// vendor's limit per second (its limit spread evenly over its window:
	// exact for a one-second window, the average for longer ones); Over
	// the items above it in those seconds.
	OverSeconds, Over int64
	// Lowest is the lowest limit that held, and LowestTimeMs its window
	// (0 when none held).
	Lowest, LowestTimeMs int64
}

// VendorCompare replays samples over [start, end) (whole seconds) against
// the allowance a, as Preview does, and compares it second by second with
// the vendor limits that held: a limit holds in second t when [From, To)
// overlaps [t, t+1000); where several hold, the lowest rate counts. The
// preview's result comes back too.
func VendorCompare(samples []Second, start, end int64, a Allowance, count, timeMs int64, limits []VendorLimit) (PreviewResult, VendorResult) {
	var out VendorResult
	for _, l := range limits {
		if l.Limit <= 0 || l.TimeMs <= 0 || l.To <= l.From {
			continue
		}
		if out.LowestTimeMs == 0 || less(l.Limit, l.TimeMs, out.Lowest, out.LowestTimeMs) {
			out.Lowest, out.LowestTimeMs = l.Limit, l.TimeMs
		}
	}
	a.Admitted = func(t, items int64) {
		var lim, win int64
		for _, l := range limits {
			if l.Limit <= 0 || l.TimeMs <= 0 || l.From >= t+1000 || l.To <= t {
				continue
			}
			if win == 0 || less(l.Limit, l.TimeMs, lim, win) {
				lim, win = l.Limit, l.TimeMs
			}
		}
		if win == 0 {
			return
		}
		out.Seconds++
		if less(lim, win, count, timeMs) {
			out.ExceededSeconds++
		}
		// items > lim × 1000 / win  ⇔  items × win > lim × 1000.
		if cmp128(items, win, lim, 1000) > 0 {
			out.OverSeconds++
			out.Over += items - lim*1000/win
		}
	}
	return Preview(samples, start, end, a), out
}

// less reports a/b < c/d for non-negative a, c and positive b, d, exactly.
func less(a, b, c, d int64) bool { return cmp128(a, d, c, b) < 0 }

// cmp128 compares x1×y1 with x2×y2 (non-negative) without overflow.
func cmp128(x1, y1, x2, y2 int64) int {
	h1, l1 := bits.Mul64(uint64(max(x1, 0)), uint64(max(y1, 0)))
	h2, l2 := bits.Mul64(uint64(max(x2, 0)), uint64(max(y2, 0)))
	switch {
	case h1 != h2:
		if h1 < h2 {
			return -1
		}
		return 1
	case l1 < l2:
		return -1
	case l1 > l2:
		return 1
	}
	return 0
}
