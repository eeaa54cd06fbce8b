package stats

import "slices"

// CounterSample is one read of a fixed-window kv counter: when it was read,
// its value, and when its row expires (which names the sub-window).
type CounterSample struct {
	AtMs, Value, ExpiresAtMs int64
}

// SubWindow is one fixed sub-window of a counter as the samples saw it.
type SubWindow struct {
	// ExpiresAtMs is the row's expiry, the window's identity.
	ExpiresAtMs int64
	// Peak is the largest value read in the window; Last is the value of
	// the latest read (lower than Peak when charges were handed back).
	Peak, Last int64
	// Reads is how many samples fell in the window.
	Reads int
}

// SubWindows groups samples by expiry into windows in expiry order. A
// sample with no expiry (0) is ignored: a fixed-window row always has one.
func SubWindows(samples []CounterSample) []SubWindow {
	byExp := map[int64]*SubWindow{}
	lastAt := map[int64]int64{}
	for _, s := range samples {
		if s.ExpiresAtMs == 0 {
			continue
		}
		w, ok := byExp[s.ExpiresAtMs]
		if !ok {
			w = &SubWindow{ExpiresAtMs: s.ExpiresAtMs, Peak: s.Value, Last: s.Value}
			byExp[s.ExpiresAtMs] = w
			lastAt[s.ExpiresAtMs] = s.AtMs
		}
		w.Reads++
		w.Peak = max(w.Peak, s.Value)
		if s.AtMs >= lastAt[s.ExpiresAtMs] {
			lastAt[s.ExpiresAtMs] = s.AtMs
			w.Last = s.Value
		}
	}
	out := make([]SubWindow, 0, len(byExp))
	for _, w := range byExp {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b SubWindow) int { return int(a.ExpiresAtMs - b.ExpiresAtMs) })
	return out
}

// WorstPeak is the largest Peak of windows (0 for none).
func WorstPeak(windows []SubWindow) int64 {
	var p int64
	for _, w := range windows {
		p = max(p, w.Peak)
	}
	return p
}

// WindowsSpanned is how many whole windows of windowMs the stamps span,
// counted from the first stamp: (last − first) / windowMs + 1. It is 0 for
// no stamps or windowMs ≤ 0.
func WindowsSpanned(stamps []int64, windowMs int64) int64 {
	if len(stamps) == 0 || windowMs <= 0 {
		return 0
	}
	return (slices.Max(stamps)-slices.Min(stamps))/windowMs + 1
}

// Utilisation is the share (0..1) of the capacity the stamps' span offered
// that was used: events ÷ (WindowsSpanned × perWindow). Counting whole
// windows means a fixed-window limiter that fills each window in a burst is
// not credited with more than 1. It is 0 for no stamps or perWindow ≤ 0.
func Utilisation(stamps []int64, perWindow, windowMs int64) float64 {
	n := WindowsSpanned(stamps, windowMs)
	if n == 0 || perWindow <= 0 {
		return 0
	}
	return float64(len(stamps)) / float64(n*perWindow)
}
