package simulate

import (
	"testing"

	"github.com/queen-mq/gate/libs/plan"
)

// The two worked checks of gate-runtime §6.3.
func TestPreviewWorkedChecks(t *testing.T) {
	t.Parallel()
	w := plan.Subdivide(10, 1000, nil)
	got := Preview([]Second{{T: 0, Items: 25, Cost: 25}}, 0, 3000, Allowance{Count: w.CountSub, Seconds: w.TTLSeconds, CostPerItem: 1})
	if got.Items != 25 || got.Delayed != 15 || got.Peak != 15 || got.Remaining != 0 || got.DrainSeconds != 0 {
		t.Fatalf("25 items at t=0, 10 per 1 s, cost 1, over 3 s: %+v; want delayed 15, peak 15, remaining 0, drain 0", got)
	}
	if len(got.Series) != 1 || got.Series[0].T != 2000 || got.Series[0].Peak != 15 || got.Series[0].Backlog != 0 {
		t.Fatalf("series %+v: one point at the last second with the minute's peak", got.Series)
	}

	one := uint32(1)
	w = plan.Subdivide(10, 10000, &one)
	if w.CountSub != 10 || w.TTLSeconds != 10 {
		t.Fatalf("subdivision of 10 per 10 s in one window: %+v", w)
	}
	got = Preview([]Second{{T: 5000, Items: 5, Cost: 15}}, 0, 6000, Allowance{Count: w.CountSub, Seconds: w.TTLSeconds, CostPerItem: 3})
	if got.Delayed != 2 || got.Remaining != 2 || got.DrainSeconds != 9 || got.Peak != 2 {
		t.Fatalf("5 items of cost 3 at t=5 s, 10 per 10 s, range 0–6 s: %+v; want delayed 2, remaining 2, drain 9", got)
	}
}

func TestPreviewWindowsAnchorOnTheFirstCharge(t *testing.T) {
	t.Parallel()
	// 10 per 10 s: a window opened at t=3 s refills at t=13 s, not t=10 s.
	a := Allowance{Count: 10, Seconds: 10, CostPerItem: 1}
	got := Preview([]Second{{T: 3000, Items: 10}, {T: 10000, Items: 5}, {T: 70000, Items: 1}}, 0, 14000, a)
	if got.Delayed != 5 || got.Remaining != 0 || got.Items != 15 {
		t.Fatalf("%+v: the 5 items at 10 s wait for 13 s, the item at 70 s is outside the range", got)
	}
	if len(got.Series) != 1 || got.Series[0].Peak != 5 {
		t.Fatalf("series %+v", got.Series)
	}
	// Over two minutes the series has a point per minute.
	got = Preview([]Second{{T: 0, Items: 30}}, 0, 120000, Allowance{Count: 1, Seconds: 1, CostPerItem: 1})
	if len(got.Series) != 2 || got.Series[0].T != 59000 || got.Series[0].Peak != 29 || got.Series[1].T != 119000 || got.Series[1].Peak != 0 {
		t.Fatalf("series per minute: %+v", got.Series)
	}
}

func TestCoverageGapsAndLostItems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                  string
		recs                  []Recorder
		since, until          int64
		start, end, gap, lost int64
	}{
		{"one recorder covers all", []Recorder{{Started: 0, Through: 60000}}, 0, 60000, 0, 60000, 0, 0},
		{"a restart leaves a gap (the restart's own second is covered)", []Recorder{{Started: 0, Through: 20000, Lost: 3}, {Started: 30500, Through: 60000, Lost: 4}}, 0, 60000, 0, 60000, 10, 7},
		{"the recorder's first second counts", []Recorder{{Started: 1200, Through: 10000}}, 0, 60000, 1000, 10000, 0, 0},
		{"a recorder stopped mid-second covers that second", []Recorder{{Started: 0, Through: 4300}}, 0, 60000, 0, 5000, 0, 0},
		{"since mid-second counts its second", []Recorder{{Started: 0, Through: 60000}}, 30500, 50000, 30000, 50000, 0, 0},
		{"a restart mid-second leaves no gap in its own second", []Recorder{{Started: 0, Through: 20000}, {Started: 20400, Through: 60000}}, 0, 60000, 0, 60000, 0, 0},
		{"since after the start", []Recorder{{Started: 0, Through: 60000}}, 30000, 50000, 30000, 50000, 0, 0},
		{"overlapping replicas", []Recorder{{Started: 0, Through: 40000}, {Started: 10000, Through: 60000}}, 0, 60000, 0, 60000, 0, 0},
		{"a recorder with through before started is ignored", []Recorder{{Started: 0, Through: 60000}, {Started: 5000, Through: 1000, Lost: 9}}, 0, 60000, 0, 60000, 0, 0},
		{"no recorder: all gap", nil, 0, 10000, 0, 10000, 10, 0},
	}
	for _, c := range cases {
		got := Coverage(c.recs, c.since, c.until)
		if got.Start != c.start || got.End != c.end || got.GapSeconds != c.gap || got.LostItems != c.lost {
			t.Errorf("%s: %+v, want start %d end %d gap %d lost %d", c.name, got, c.start, c.end, c.gap, c.lost)
		}
	}
}

// Items delayed with nothing left at the end drain in 0 s, which says
// nothing of how long they waited: the longest wait does (25 items at t=0,
// 10 per second: the last ten wait 2 s), and an item still waiting at the
// end counts the wait it had reached.
func TestPreviewLongestWait(t *testing.T) {
	t.Parallel()
	got := Preview([]Second{{T: 0, Items: 25, Cost: 25}}, 0, 3000, Allowance{Count: 10, Seconds: 1, CostPerItem: 1})
	if got.Delayed != 15 || got.Remaining != 0 || got.DrainSeconds != 0 || got.LongestWaitSeconds != 2 {
		t.Fatalf("25 at t=0, 10 per 1 s: %+v; want 15 delayed, none left, drain 0, the longest wait 2 s", got)
	}
	got = Preview([]Second{{T: 0, Items: 3}, {T: 5000, Items: 1}}, 0, 10000, Allowance{Count: 10, Seconds: 1, CostPerItem: 1})
	if got.Delayed != 0 || got.LongestWaitSeconds != 0 {
		t.Fatalf("nothing over the allowance: %+v; want no wait", got)
	}
	// 1 per 10 s: items at 0, 1, 2 s are admitted at 0, 10 and 20 s; over
	// 0–15 s the third is still waiting at 15 s, 13 s after it came.
	got = Preview([]Second{{T: 0, Items: 1}, {T: 1000, Items: 1}, {T: 2000, Items: 1}}, 0, 15000, Allowance{Count: 1, Seconds: 10, CostPerItem: 1})
	if got.Remaining != 1 || got.LongestWaitSeconds != 13 {
		t.Fatalf("1 per 10 s: %+v; want 1 left at the end and the longest wait 13 s (the one still waiting)", got)
	}
}
