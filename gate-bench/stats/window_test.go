package stats

import (
	"slices"
	"testing"
)

func TestSubWindowsGroupsByExpiry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		samples []CounterSample
		want    []SubWindow
	}{
		{"none", nil, []SubWindow{}},
		{"rows without expiry are ignored", []CounterSample{{AtMs: 1, Value: 5}}, []SubWindow{}},
		{"one window rising", []CounterSample{{10, 200, 1000}, {20, 400, 1000}, {30, 2000, 1000}},
			[]SubWindow{{ExpiresAtMs: 1000, Peak: 2000, Last: 2000, Reads: 3}}},
		{"a hand-back lowers Last, not Peak", []CounterSample{{10, 2000, 1000}, {20, 1850, 1000}},
			[]SubWindow{{ExpiresAtMs: 1000, Peak: 2000, Last: 1850, Reads: 2}}},
		{"out-of-order reads, two windows in expiry order", []CounterSample{{1100, 300, 2050}, {900, 1990, 1000}, {800, 1500, 1000}, {1500, 800, 2050}},
			[]SubWindow{{ExpiresAtMs: 1000, Peak: 1990, Last: 1990, Reads: 2}, {ExpiresAtMs: 2050, Peak: 800, Last: 800, Reads: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := SubWindows(tc.samples); !slices.Equal(got, tc.want) {
				t.Fatalf("SubWindows = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWorstPeakIsTheFullestWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ws   []SubWindow
		want int64
	}{
		{"none", nil, 0},
		{"the largest peak", []SubWindow{{Peak: 1200}, {Peak: 2001}, {Peak: 2000}}, 2001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := WorstPeak(tc.ws); got != tc.want {
				t.Fatalf("WorstPeak = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestUtilisationCountsWholeWindows(t *testing.T) {
	t.Parallel()
	burst := func(n int, at ...int64) []int64 { // n stamps at each instant
		var s []int64
		for _, a := range at {
			for range n {
				s = append(s, a)
			}
		}
		return s
	}
	even := make([]int64, 10000) // 2000/s for 5 s
	for i := range even {
		even[i] = int64(i) / 2
	}
	for _, tc := range []struct {
		name    string
		stamps  []int64
		spanned int64
		want    float64
	}{
		{"none", nil, 0, 0},
		{"one stamp is one window", []int64{5}, 1, 1.0 / 2000},
		{"even pace fills five windows", even, 5, 1},
		{"fixed-window bursts are not over 100%", burst(2000, 0, 1000, 2000, 3000, 4000), 5, 1},
		{"windows are counted from the first stamp, not from a clock", burst(2000, 990, 1010), 1, 2},
		{"a gap costs its window", burst(2000, 0, 2000), 3, 4000.0 / 6000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := WindowsSpanned(tc.stamps, 1000); got != tc.spanned {
				t.Fatalf("WindowsSpanned = %d, want %d", got, tc.spanned)
			}
			if got := Utilisation(tc.stamps, 2000, 1000); got != tc.want {
				t.Fatalf("Utilisation = %v, want %v", got, tc.want)
			}
		})
	}
}
