package window

import (
	"testing"

	"github.com/queen-mq/gate/libs/plan"
)

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"empty is zero", nil, 50, 0},
		{"one sample", []float64{7}, 99, 7},
		{"median of odd", []float64{5, 1, 3}, 50, 3},
		{"median of even takes the lower middle", []float64{4, 1, 3, 2}, 50, 2},
		{"p90 of ten", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
		{"p99 of ten is the max", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"p100 is the max", []float64{3, 9, 1}, 100, 9},
		{"p0 is the min", []float64{3, 9, 1}, 0, 1},
		{"p99.9 of a thousand", seq(1000), 99.9, 999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := append([]float64(nil), tc.xs...)
			if got := Percentile(tc.xs, tc.p); got != tc.want {
				t.Fatalf("Percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.xs[i] {
					t.Fatalf("Percentile modified its input")
				}
			}
		})
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestWorstSlidingFindsTheLargestRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		samples   []int64
		n         int
		wantSum   int64
		wantStart int
	}{
		{"empty", nil, 10, 0, -1},
		{"n below one", []int64{1, 2}, 0, 0, -1},
		{"shorter than the window sums everything", []int64{50, 50, 50}, 10, 150, 0},
		{"steady rate", []int64{50, 50, 50, 50, 50}, 2, 100, 0},
		{"burst in the middle", []int64{10, 10, 90, 80, 10}, 2, 170, 2},
		{"burst at the end", []int64{0, 0, 0, 5, 9}, 2, 14, 3},
		{"ties keep the earliest", []int64{5, 5, 5, 5}, 2, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum, start := WorstSliding(tc.samples, tc.n)
			if sum != tc.wantSum || start != tc.wantStart {
				t.Fatalf("WorstSliding(%v, %d) = (%d, %d), want (%d, %d)", tc.samples, tc.n, sum, start, tc.wantSum, tc.wantStart)
			}
		})
	}
}

func TestWorstSpanCountsAHalfOpenInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		stamps    []int64
		span      int64
		wantCount int
		wantStart int64
	}{
		{"empty", nil, 1000, 0, 0},
		{"one", []int64{42}, 1000, 1, 42},
		{"the end is excluded", []int64{0, 1000}, 1000, 1, 0},
		{"just inside", []int64{0, 999}, 1000, 2, 0},
		{"unsorted input", []int64{3000, 100, 2500, 2600, 2700}, 1000, 4, 2500},
		// Eleven bursts of 50 at the start of eleven one-second windows whose
		// starts drift: the continuous 10 s span can hold all eleven only
		// when the eleventh opened less than 10 s after the first.
		{"eleven windows within ten seconds", bursts(11, 999, 50), 10_000, 550, 0},
		{"eleven windows over ten seconds", bursts(11, 1000, 50), 10_000, 500, 0},
		{"a second's end is excluded", []int64{0, 999, 1000}, 1000, 2, 0},
		{"unsorted, busiest second later", []int64{5000, 0, 100, 200, 1100}, 1000, 3, 0},
		{"repeated stamps count each", []int64{0, 0, 0, 2000}, 1000, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, s := WorstSpan(tc.stamps, tc.span)
			if c != tc.wantCount || s != tc.wantStart {
				t.Fatalf("WorstSpan = (%d, %d), want (%d, %d)", c, s, tc.wantCount, tc.wantStart)
			}
		})
	}
}

// bursts returns n bursts of size items, burst i at i×period ms.
func bursts(n int, period int64, size int) []int64 {
	var out []int64
	for i := 0; i < n; i++ {
		for j := 0; j < size; j++ {
			out = append(out, int64(i)*period)
		}
	}
	return out
}

func TestSlidingBoundIsNPlusOneSubWindows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		count, n, want int64
	}{
		{500, 10, 550},  // 110% of 500: the e2e default
		{2000, 1, 4000}, // one window: a sliding observer can see two
		{100, 4, 125},
		{7, 10, 11}, // count_sub floors at 1
		{20000, 10, 22000},
		{1000, 4, 1250},
		{2000, 0, 4000}, // zero sub-windows count as one
	} {
		countSub := plan.Subdivide(tc.count, 1000*max(tc.n, 1), ptr(uint32(tc.n))).CountSub
		if got := SlidingBound(countSub, tc.n); got != tc.want {
			t.Errorf("SlidingBound(count %d, N %d) = %d, want %d", tc.count, tc.n, got, tc.want)
		}
	}
}

func TestBucketsIgnoreStampsOutsideTheSpan(t *testing.T) {
	t.Parallel()
	got := Buckets([]int64{999, 1000, 1500, 1999, 2000, 3999, 4000}, 1000, 1000, 3)
	want := []int64{3, 1, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Buckets = %v, want %v", got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
