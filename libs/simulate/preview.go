package simulate

import (
	"sort"

	"github.com/queen-mq/gate/libs/wire"
)

// Second is one recorded second: the items forwarded in it and their cost.
type Second struct {
	// T is the start of the second (Unix ms, a multiple of 1000).
	T     int64
	Items int64
	Cost  int64
}

// Allowance is one global counter as the limiter enforces it: Count cost
// units per window of Seconds, first-charge anchored.
type Allowance struct {
	// Count is the sub-window count (count_sub); Seconds its TTL.
	Count   int64
	Seconds int64
	// CostPerItem is the node's fixed cost.
	CostPerItem int64
	// Admitted, when set, is told the items admitted in each second of
	// the range (VendorCompare reads the replay through it).
	Admitted func(t, items int64)
}

// PreviewResult is the replay of one node's traffic. DrainSeconds is how
// long the backlog left at the end (Remaining) takes to clear: 0 when none
// is left, however many items were delayed on the way. LongestWaitSeconds
// is the longest any item waited between the second it arrived and the
// second it was admitted (an item still waiting at the end counts the wait
// it had reached by then).
type PreviewResult struct {
	Items, Delayed, Peak, Remaining, DrainSeconds, LongestWaitSeconds int64
	Series                                                            []wire.BacklogPoint
}

// Preview replays samples (any order; seconds outside [start, end) are
// ignored) against one allowance over [start, end), both whole seconds:
// the queue is empty at start, arrivals of a second are simultaneous,
// admission is FIFO, and a window opens at the first admission after the
// previous one ended. The series has one point per minute (its last
// second) plus the last second of the range.
func Preview(samples []Second, start, end int64, a Allowance) PreviewResult {
	var out PreviewResult
	if end <= start || a.Count < 1 || a.CostPerItem < 1 {
		out.Series = []wire.BacklogPoint{}
		return out
	}
	s := append([]Second(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i].T < s[j].T })
	i := 0
	for i < len(s) && s[i].T < start {
		i++
	}
	var used, backlog, minutePeak int64
	expires := start
	// waiting is the backlog by arrival second, oldest first (FIFO).
	type arrival struct{ t, n int64 }
	var waiting []arrival
	out.Series = make([]wire.BacklogPoint, 0, (end-start)/60000+2)
	for t := start; t < end; t += 1000 {
		if t >= expires {
			used = 0
		}
		var arrived int64
		for i < len(s) && s[i].T <= t {
			if s[i].T == t {
				arrived += s[i].Items
			}
			i++
		}
		out.Items += arrived
		available := (a.Count - used) / a.CostPerItem
		out.Delayed += max(0, arrived-max(0, available-backlog))
		backlog += arrived
		if arrived > 0 {
			waiting = append(waiting, arrival{t, arrived})
		}
		admitted := min(backlog, available)
		for left := admitted; left > 0 && len(waiting) > 0; {
			head := &waiting[0]
			out.LongestWaitSeconds = max(out.LongestWaitSeconds, (t-head.t)/1000)
			take := min(left, head.n)
			head.n -= take
			left -= take
			if head.n == 0 {
				waiting = waiting[1:]
			}
		}
		if admitted > 0 && used == 0 {
			expires = t + a.Seconds*1000
		}
		used += admitted * a.CostPerItem
		backlog -= admitted
		if a.Admitted != nil {
			a.Admitted(t, admitted)
		}
		out.Peak = max(out.Peak, backlog)
		minutePeak = max(minutePeak, backlog)
		if mod(t, 60000) == 59000 || t+1000 >= end {
			out.Series = append(out.Series, wire.BacklogPoint{T: t, Backlog: backlog, Peak: minutePeak})
			minutePeak = 0
		}
	}
	out.Remaining = backlog
	if len(waiting) > 0 {
		out.LongestWaitSeconds = max(out.LongestWaitSeconds, (end-waiting[0].t)/1000)
	}
	if backlog > 0 {
		perWindow := a.Count / a.CostPerItem
		out.DrainSeconds = ceilDiv(max(0, expires-end), 1000) + (backlog-1)/perWindow*a.Seconds
	}
	return out
}

// Recorder is one recording's span: Started (ms) to Through (ms, the end
// of the seconds it has handed over), and the items it dropped.
type Recorder struct {
	Started, Through, Lost int64
}

// CoverageResult is the part of [since, until) the recorders cover.
type CoverageResult struct {
	// Start and End are the replayed range (whole seconds).
	Start, End int64
	// GapSeconds is the uncovered time in [Start, End); LostItems the
	// items the recorders dropped.
	GapSeconds, LostItems int64
}

// Coverage computes the replayed range of recorders over [since, until):
// recorders with Through before Started are ignored; Start is the later of
// since and the earliest start, rounded down to the second; End the earlier
// of until and the latest Through, rounded up to the second (never before
// Start); gaps are the time in [Start, End) no recorder span covers (span
// starts rounded down, ends up, to the second). With no recorder the whole
// range is a gap.
//
// A recorder's samples are whole seconds: the items of the second it
// started in are recorded under that second's start, and a recorder that
// stops mid-second (its Watch ended) has handed over the items of that
// second too. Rounding the start down and the end up therefore replays
// every recorded item; rounding the start up (as the ranges once did)
// dropped the recorder's first second, and with it every item of a short
// Watch.
func Coverage(recs []Recorder, since, until int64) CoverageResult {
	var spans [][2]int64
	var lost int64
	minStarted, maxThrough := int64(0), int64(0)
	for _, r := range recs {
		if r.Through < r.Started {
			continue
		}
		if len(spans) == 0 || r.Started < minStarted {
			minStarted = r.Started
		}
		if len(spans) == 0 || r.Through > maxThrough {
			maxThrough = r.Through
		}
		spans = append(spans, [2]int64{floorTo(r.Started, 1000), ceilTo(r.Through, 1000)})
		lost += r.Lost
	}
	if len(spans) == 0 {
		start := floorTo(since, 1000)
		end := max(ceilTo(until, 1000), start)
		return CoverageResult{Start: start, End: end, GapSeconds: (end - start) / 1000}
	}
	start := floorTo(max(minStarted, since), 1000)
	end := max(ceilTo(min(maxThrough, until), 1000), start)
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var covered int64
	cur := start
	for _, sp := range spans {
		lo, hi := max(sp[0], cur), min(sp[1], end)
		if hi > lo {
			covered += hi - lo
			cur = hi
		}
	}
	gapMs := (end - start) - covered
	return CoverageResult{Start: start, End: end, GapSeconds: ceilDiv(gapMs, 1000), LostItems: lost}
}

func mod(a, m int64) int64 { return ((a % m) + m) % m }

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

func ceilTo(v, step int64) int64 { return -floorTo(-v, step) }

func floorTo(v, step int64) int64 { return v - mod(v, step) }
