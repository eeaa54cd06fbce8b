package load

import (
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/window"
)

var params = Params{Rate: 50, WindowS: 10, Count: 500, CountSub: 50, TTLMs: 1000, FastCeiling: 50, BulkCeiling: 25}

// paced builds an observation of a paced run: every second from start a
// window opens, bulk takes bulkPer then fast takes fastPer, each stamped a
// few ms after the window opened; the counter is read every 100 ms.
func paced(seconds int, fastPer, bulkPer int, pushedFast, pushedBulk int) Observation {
	const start = int64(1_000_000)
	o := Observation{StartMs: start, EndMs: start + int64(seconds)*1000}
	for i := 0; i < pushedFast; i++ {
		o.Pushed = append(o.Pushed, Pushed{ID: "f" + strconv.Itoa(i), Path: PathFast, AtMs: start})
	}
	for i := 0; i < pushedBulk; i++ {
		o.Pushed = append(o.Pushed, Pushed{ID: "b" + strconv.Itoa(i), Path: PathBulk, AtMs: start})
	}
	fi, bi := 0, 0
	for s := 0; s < seconds; s++ {
		open := start + int64(s)*1000 + 10
		val := int64(0)
		for k := 0; k < bulkPer && bi < pushedBulk; k++ {
			o.Items = append(o.Items, Item{ID: "b" + strconv.Itoa(bi), Path: PathBulk, AtMs: open + 2, RecvMs: open + 30})
			bi++
			val++
		}
		for k := 0; k < fastPer && fi < pushedFast; k++ {
			o.Items = append(o.Items, Item{ID: "f" + strconv.Itoa(fi), Path: PathFast, AtMs: open + 4, RecvMs: open + 30})
			fi++
			val++
		}
		for at := open + 5; at < open+1000; at += 100 {
			o.KV = append(o.KV, window.Sample{AtMs: at, Value: val, ExpiresAtMs: open + 1000})
		}
	}
	return o
}

func gateByName(t *testing.T, r Report, name string) Gate {
	t.Helper()
	for _, g := range r.Gates {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no gate %q in %+v", name, r.Gates)
	return Gate{}
}

func TestJudgeAPacedRunPassesEveryGate(t *testing.T) {
	t.Parallel()
	r := Judge(paced(20, 25, 25, 600, 2400), params)
	if !r.Pass {
		t.Fatalf("a run paced at the ceiling failed: %+v", r.Gates)
	}
	if r.AdmittedP50 != 50 {
		t.Fatalf("p50 = %v, want 50", r.AdmittedP50)
	}
	if r.DrainedTotal != int64(r.AdmittedTotal) || r.DrainedP50 != 50 || r.Rows[3].Drained != 50 {
		t.Fatalf("drained total %d p50 %v row %d; want every admitted item drained, 50 a second", r.DrainedTotal, r.DrainedP50, r.Rows[3].Drained)
	}
	if r.WorstWindow != 500 {
		t.Fatalf("worst window = %d, want 500 (ten one-second windows of 50)", r.WorstWindow)
	}
	if a := r.Accounting; a.Judged < 18 || a.Exact != a.Judged {
		t.Fatalf("accounting %+v: want every judged window exact", a)
	}
	if g := gateByName(t, r, "reserve held"); g.Status != "PASS" || r.BulkRefusedSeconds == 0 {
		t.Fatalf("reserve: %+v with %d refused seconds", g, r.BulkRefusedSeconds)
	}
}

func TestJudgeCatchesAnUnchargedItem(t *testing.T) {
	t.Parallel()
	o := paced(20, 25, 25, 600, 2400)
	// One extra item leaves in second 5 without the counter moving.
	o.Items = append(o.Items, Item{ID: "x", Path: PathFast, AtMs: o.StartMs + 5*1000 + 300})
	r := Judge(o, params)
	g := gateByName(t, r, "ceiling held")
	if g.Pass || r.Accounting.Uncharged != 1 {
		t.Fatalf("an uncharged item passed the ceiling gate: %+v, accounting %+v", g, r.Accounting)
	}
}

func TestJudgeFailsAWindowOverTheSlidingBound(t *testing.T) {
	t.Parallel()
	o := paced(20, 25, 25, 600, 2400)
	// The counter reads a legal 50 but 60 items leave in one second.
	for i := 0; i < 10; i++ {
		o.Items = append(o.Items, Item{Path: PathBulk, AtMs: o.StartMs + 7*1000 + 20})
	}
	r := Judge(o, params)
	if g := gateByName(t, r, "ceiling held"); g.Pass {
		t.Fatalf("60 items in a 50 sub-window passed: %+v", g)
	}
	if r.Accounting.OverCeiling == 0 {
		t.Fatalf("over-ceiling window not counted: %+v", r.Accounting)
	}
}

func TestJudgeThroughputNeedsNinetyPercent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fast, bulk int
		pass       bool
	}{
		{25, 25, true},  // 50/s
		{20, 25, true},  // 45/s is exactly 90%
		{19, 25, false}, // 44/s
	} {
		r := Judge(paced(20, tc.fast, tc.bulk, 1000, 1000), params)
		if g := gateByName(t, r, "throughput reached"); g.Pass != tc.pass {
			t.Errorf("fast %d + bulk %d per second: throughput pass = %v, want %v (%s)", tc.fast, tc.bulk, g.Pass, tc.pass, g.Detail)
		}
	}
}

func TestJudgeThroughputOnlyCountsSecondsWithAFastBacklog(t *testing.T) {
	t.Parallel()
	// Only 100 fast items: after four seconds the 1.0 path is empty and only
	// bulk's 25/s flows, which must not count against the declared rate.
	r := Judge(paced(20, 25, 25, 100, 2400), params)
	g := gateByName(t, r, "throughput reached")
	if g.Status != "NOT EXERCISED" && !g.Pass {
		t.Fatalf("bulk-only seconds were judged: %+v", g)
	}
}

func TestJudgeReserveFailsWhenFastStarves(t *testing.T) {
	t.Parallel()
	o := paced(20, 0, 25, 600, 2400)
	r := Judge(o, params)
	g := gateByName(t, r, "reserve held")
	if g.Pass {
		t.Fatalf("fast admitted nothing while bulk was refused, yet the reserve held: %+v", g)
	}
}

func TestJudgeExactlyOnceFindsMissingAndDuplicates(t *testing.T) {
	t.Parallel()
	o := paced(10, 25, 25, 100, 100)
	o.ExpectAll = true
	o.Items = append(o.Items, o.Items[0])
	o.Pushed = append(o.Pushed, Pushed{ID: "never", Path: PathBulk, AtMs: o.StartMs})
	r := Judge(o, params)
	g := gateByName(t, r, "delivered exactly once")
	if g.Pass || r.Duplicates != 1 || r.Missing != 1 {
		t.Fatalf("exactly-once gate %+v with %d duplicates %d missing; want a failure naming 1 and 1", g, r.Duplicates, r.Missing)
	}
}

func TestJudgeBackoffStopsThenRecovers(t *testing.T) {
	t.Parallel()
	o := paced(20, 25, 25, 1000, 2000)
	from := o.StartMs + 6*1000
	o.Backoff = &Event{AtMs: from, What: "backoff", UntilMs: from + 4000}
	// Remove what a breaker would have stopped.
	kept := o.Items[:0]
	for _, it := range o.Items {
		if it.AtMs < from || it.AtMs >= from+4000 {
			kept = append(kept, it)
		}
	}
	o.Items = kept
	r := Judge(o, params)
	if g := gateByName(t, r, "backoff held"); !g.Pass {
		t.Fatalf("backoff held failed: %+v", g)
	}
	if g := gateByName(t, r, "rate recovered"); !g.Pass {
		t.Fatalf("rate recovered failed: %+v", g)
	}
	// An item inside the backoff fails the gate.
	o.Items = append(o.Items, Item{Path: PathFast, AtMs: from + 2000})
	if g := gateByName(t, Judge(o, params), "backoff held"); g.Pass || !strings.Contains(g.Detail, "1 items") {
		t.Fatalf("an admission during the backoff passed: %+v", g)
	}
}

func TestJudgeReserveIgnoresSecondsWithNothingFastWaiting(t *testing.T) {
	t.Parallel()
	// 60 fast items drain in the first seconds; afterwards bulk is refused
	// at its share every second while fast has nothing to send, which is not
	// a reserve failure.
	r := Judge(paced(20, 25, 25, 60, 2400), params)
	if g := gateByName(t, r, "reserve held"); !g.Pass {
		t.Fatalf("seconds without fast work counted against the reserve: %+v", g)
	}
}

// A run passes only when every one of its gates does; a run with no gates
// has nothing that failed.
func TestAllPassNeedsEveryGate(t *testing.T) {
	t.Parallel()
	ok, bad := gate("a", true, ""), gate("b", false, "")
	for _, tc := range []struct {
		gates []Gate
		want  bool
	}{{nil, true}, {[]Gate{ok}, true}, {[]Gate{ok, ok}, true}, {[]Gate{ok, bad}, false}, {[]Gate{bad, ok}, false}} {
		if got := allPass(tc.gates); got != tc.want {
			t.Errorf("allPass(%+v) = %v, want %v", tc.gates, got, tc.want)
		}
	}
}
