package simulate_test

import (
	"testing"

	"github.com/queen-mq/gate/libs/simulate"
)

// A hand-worked replay: 30 items arrive every second for 60 s; the vendor
// enforced 10/s over seconds 10–29 and 20/s over 30–39 (50/s declared).
// A candidate of 50/s admits 30 every second: above both vendor limits in
// all 30 of those seconds, 20 items over in each of the first 20 and 10 in
// each of the next 10. A candidate of 15/s admits 15 a second (the rest
// waits): above the vendor only while it said 10.
func TestVendorCompareHandWorked(t *testing.T) {
	t.Parallel()
	const s0 = 1_000_000
	var secs []simulate.Second
	for i := int64(0); i < 60; i++ {
		secs = append(secs, simulate.Second{T: s0 + i*1000, Items: 30, Cost: 30})
	}
	limits := []simulate.VendorLimit{
		{From: s0 + 10_000, To: s0 + 30_000, Limit: 10, TimeMs: 1000},
		{From: s0 + 30_000, To: s0 + 40_000, Limit: 20, TimeMs: 1000},
	}
	cases := []struct {
		name                    string
		count                   int64
		exceeded, overSec, over int64
	}{
		{"50 per second", 50, 30, 30, 20*20 + 10*10},
		{"15 per second", 15, 20, 20, 20 * 5},
		{"10 per second", 10, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := simulate.Allowance{Count: c.count, Seconds: 1, CostPerItem: 1}
			pr, got := simulate.VendorCompare(secs, s0, s0+60_000, a, c.count, 1000, limits)
			if pr.Items != 1800 {
				t.Fatalf("the replay saw %d items, want 1800", pr.Items)
			}
			want := simulate.VendorResult{Seconds: 30, ExceededSeconds: c.exceeded, OverSeconds: c.overSec, Over: c.over, Lowest: 10, LowestTimeMs: 1000}
			if got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

// Rates compare across windows exactly: 600 per minute is 10 per second,
// not above it; a limit over a minute spreads evenly over its seconds; a
// limit that starts mid-second holds in that second; where two hold the
// lower counts; the preview's figures are the same as Preview's.
func TestVendorCompareAcrossWindows(t *testing.T) {
	t.Parallel()
	const s0 = 5_000_000
	var secs []simulate.Second
	for i := int64(0); i < 10; i++ {
		secs = append(secs, simulate.Second{T: s0 + i*1000, Items: 12, Cost: 12})
	}
	limits := []simulate.VendorLimit{
		{From: s0 + 1_500, To: s0 + 4_000, Limit: 600, TimeMs: 60_000}, // 10/s over seconds 1, 2, 3
		{From: s0 + 3_000, To: s0 + 5_000, Limit: 300, TimeMs: 60_000}, // 5/s over seconds 3, 4
	}
	a := simulate.Allowance{Count: 10, Seconds: 1, CostPerItem: 1}
	pr, got := simulate.VendorCompare(secs, s0, s0+10_000, a, 10, 1000, limits)
	if want := simulate.Preview(secs, s0, s0+10_000, simulate.Allowance{Count: 10, Seconds: 1, CostPerItem: 1}); pr.Items != want.Items || pr.Delayed != want.Delayed || pr.Remaining != want.Remaining {
		t.Fatalf("the preview %+v differs from Preview's %+v", pr, want)
	}
	// Admitted 10 a second. Seconds 1, 2: 10/s is not above 10/s; 3, 4:
	// the lower 5/s holds, 10 is above it by 5.
	want := simulate.VendorResult{Seconds: 4, ExceededSeconds: 2, OverSeconds: 2, Over: 10, Lowest: 300, LowestTimeMs: 60_000}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
