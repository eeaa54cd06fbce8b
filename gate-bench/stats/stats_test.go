package stats

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	thousand := make([]time.Duration, 1000)
	for i := range thousand {
		thousand[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(4), 99.9, 4 * time.Millisecond},
		{"p50 of four", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p90 of ten", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{"p99 of a thousand", thousand, 99, 990 * time.Millisecond},
		{"p99.9 of a thousand", thousand, 99.9, 999 * time.Millisecond},
		{"p100 is the max", thousand, 100, 1000 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Percentile(tc.sorted, tc.p); got != tc.want {
				t.Fatalf("Percentile(p%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarizeSortsAndAverages(t *testing.T) {
	t.Parallel()
	s := Summarize(ms(9, 1, 5, 3, 7))
	if s.N != 5 || s.P50 != 5*time.Millisecond || s.Max != 9*time.Millisecond || s.Mean != 5*time.Millisecond {
		t.Fatalf("Summarize = %+v", s)
	}
	if (Summarize(nil) != Summary{}) {
		t.Fatal("an empty summary is not zero")
	}
}

func TestClosedLoopCountsOnlyAfterTheWarmUp(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	call := func(ctx context.Context) (int, int) {
		calls.Add(1)
		time.Sleep(time.Millisecond)
		return 200, 3
	}
	r := ClosedLoop(context.Background(), "c=2", 2, 50*time.Millisecond, 100*time.Millisecond, call)
	if r.Requests == 0 || int64(r.Requests) >= calls.Load() {
		t.Fatalf("recorded %d of %d calls; want some, and fewer than all (the warm-up is excluded)", r.Requests, calls.Load())
	}
	if r.Units != 3*r.Requests || r.Statuses[200] != r.Requests || r.OK() != 1 {
		t.Fatalf("units %d statuses %v for %d requests", r.Units, r.Statuses, r.Requests)
	}
}

func TestOpenLoopMeasuresFromTheDueTimeAndCapsInFlight(t *testing.T) {
	t.Parallel()
	// One slot, calls that take 30 ms, sends due every 5 ms: most sends find
	// the slot busy and are skipped, and the ones that run cannot be faster
	// than the call.
	call := func(ctx context.Context) (int, int) {
		time.Sleep(30 * time.Millisecond)
		return 200, 1
	}
	r := OpenLoop(context.Background(), "open", 200, 1, 0, 300*time.Millisecond, call)
	if r.Capped == 0 {
		t.Fatalf("no send was capped: %+v", r)
	}
	if r.Requests == 0 || r.Latency.P50 < 30*time.Millisecond {
		t.Fatalf("latency %v over %d requests; want ≥ 30 ms measured from the due time", r.Latency.P50, r.Requests)
	}
}

func TestTableWritesAlignedRowsAndNotes(t *testing.T) {
	t.Parallel()
	tb := Table{Title: "t", Header: []string{"a", "bb"}}
	tb.Add("1", "22222")
	tb.Note("n %d", 7)
	var buf bytes.Buffer
	tb.Write(&buf)
	out := buf.String()
	for _, want := range []string{"== t", "22222", "n 7"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table output %q lacks %q", out, want)
		}
	}
	if got := Statuses(map[int]int{429: 2, 200: 5, 0: 1}); got != "err×1 200×5 429×2" {
		t.Fatalf("Statuses = %q", got)
	}
}

func TestClosedLoopUntilStopsWhenTheWorkIsDone(t *testing.T) {
	t.Parallel()
	const conc = 2
	var n atomic.Int64
	call := func(ctx context.Context) (int, int) { time.Sleep(time.Millisecond); n.Add(1); return 200, 1 }
	t0 := time.Now()
	r := ClosedLoopUntil(context.Background(), "until", conc, 0, 10*time.Second, call, func() bool { return n.Load() >= 20 })
	// The loop stops measuring the moment done() is true: the calls in
	// flight then (at most conc) finish unrecorded.
	if time.Since(t0) > 5*time.Second || r.Seconds > 5 || r.Requests < 20-conc || n.Load() < 20 {
		t.Fatalf("ran %v for %d recorded requests (%d completed); want it to stop once 20 were done", time.Since(t0), r.Requests, n.Load())
	}
}
