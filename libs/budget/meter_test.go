package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/vendormeter"
)

const meterNS = "gate-test"

// mirrored is a 50 per second budget (one sub-window) whose one path has a
// full share, mirroring an X-RateLimit meter.
func mirrored() *plan.Budget {
	key := plan.BudgetKey("app", "g", "call", "global")
	return &plan.Budget{
		ID: "global", Key: key, Count: 50, TimeMs: 1000, SubWindows: 1, CountSub: 50, WindowSubSeconds: 1,
		Ceilings:    map[string]int64{"main": 50, "bulk": 25},
		VendorMeter: &plan.VendorMeter{Headers: "x-ratelimit", Key: plan.MeterKey(key)},
	}
}

func meterRig(t *testing.T) (*budget.Limiter, *miniqueen.Server, *clock.Virtual) {
	t.Helper()
	vc := clock.NewVirtual(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	mq := miniqueen.RunT(t, miniqueen.WithClock(vc))
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	return &budget.Limiter{KV: c, NS: meterNS, Meters: budget.NewMeters(c, meterNS, vc, 0)}, mq, vc
}

func reading(limit, remaining int64) vendormeter.Reading {
	return vendormeter.Reading{Status: 200, Limit: limit, HasLimit: true, Remaining: remaining, HasRemaining: true, Reset: 400 * time.Millisecond, HasReset: true}
}

func TestObserveLowersTheCeilingToTheVendorsLimitForEveryRelay(t *testing.T) {
	t.Parallel()
	l, _, vc := meterRig(t)
	ctx := context.Background()
	b := mirrored()
	// Another relay's cache, read before the observation.
	other := budget.NewMeters(l.KV, meterNS, vc, 0)
	if c := other.Ceiling(ctx, b, 50); c != 50 {
		t.Fatalf("before any answer the ceiling is %d, want the declared 50", c)
	}
	got, err := l.Observe(ctx, b, reading(20, 20), vc.Now(), budget.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Lowered || got.Ceiling != 20 || got.Row == nil || got.Row.Limit != 20 || got.Row.Declared != 50 {
		t.Fatalf("observed %+v", got)
	}
	if got.Note != "the vendor enforces 20 where 50 is declared, since 2026-12-02T12:00:00Z" {
		t.Fatalf("note %q", got.Note)
	}
	// Both paths are lowered in proportion: 50 → 20, 25 → 10.
	if c := l.Meters.Ceiling(ctx, b, 50); c != 20 {
		t.Fatalf("main path ceiling %d, want 20", c)
	}
	if c := l.Meters.Ceiling(ctx, b, 25); c != 10 {
		t.Fatalf("bulk path ceiling %d, want 10", c)
	}
	// The other relay still holds its old copy until MeterRefresh passes.
	if c := other.Ceiling(ctx, b, 50); c != 50 {
		t.Fatalf("a copy read just now was re-read: %d", c)
	}
	vc.Advance(budget.MeterRefresh)
	if c := other.Ceiling(ctx, b, 50); c != 20 {
		t.Fatalf("another relay after %s reads %d, want 20", budget.MeterRefresh, c)
	}
	// The limit holds after the vendor's reset (it restates it on every
	// answer), then lapses after the hold.
	vc.Advance(30 * time.Second)
	if c := l.Meters.Ceiling(ctx, b, 50); c != 20 {
		t.Fatalf("30 s later the ceiling is %d, want 20 still", c)
	}
	vc.Advance(budget.DefaultMeterHold)
	if c := l.Meters.Ceiling(ctx, b, 50); c != 50 {
		t.Fatalf("after the hold the ceiling is %d, want the declared 50", c)
	}
}

func TestObserveNeverRaisesACeilingAboveDeclared(t *testing.T) {
	t.Parallel()
	l, mq, vc := meterRig(t)
	ctx := context.Background()
	b := mirrored()
	if _, err := l.Observe(ctx, b, reading(10, 10), vc.Now(), budget.ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	since := vc.Now()
	vc.Advance(2 * time.Second)
	got, err := l.Observe(ctx, b, reading(10, 10), vc.Now(), budget.ObserveOptions{})
	if err != nil || got.Row.Since != since.UnixMilli() {
		t.Fatalf("a restated limit keeps its since: %+v %v", got.Row, err)
	}
	// The vendor now allows 80: the row goes, Gate is back at 50, not 80.
	got, err = l.Observe(ctx, b, reading(80, 80), vc.Now(), budget.ObserveOptions{})
	if err != nil || !got.Cleared || got.Lowered || got.Ceiling != 50 {
		t.Fatalf("observed %+v %v", got, err)
	}
	if _, ok := mq.KV(meterNS, b.VendorMeter.Key); ok {
		t.Fatal("the meter row outlived a vendor that allows what is declared")
	}
	vc.Advance(budget.MeterRefresh)
	if c := l.Meters.Ceiling(ctx, b, 50); c != 50 {
		t.Fatalf("ceiling %d, want 50", c)
	}
	// A per-minute quota converts to the budget's window: 600 per 60 s is
	// 10 per second.
	r := reading(600, 600)
	r.Window, r.HasWindow = time.Minute, true
	got, err = l.Observe(ctx, b, r, vc.Now(), budget.ObserveOptions{})
	if err != nil || got.Ceiling != 10 || got.Row.VendorWindowMs != 60000 {
		t.Fatalf("per-minute quota: %+v %v", got, err)
	}
}

func TestObserveRaisesTheCounterToWhatTheVendorUsedNeverLowersIt(t *testing.T) {
	t.Parallel()
	l, mq, vc := meterRig(t)
	ctx := context.Background()
	b := mirrored()
	// Gate charged 5 in this window; the vendor says 15 of its 20 are used.
	if _, err := l.KV.KV(ctx, queen.KVIncr(meterNS, b.Key, 5, queen.IncrOpts{TTLSeconds: 1})); err != nil {
		t.Fatal(err)
	}
	got, err := l.Observe(ctx, b, reading(20, 5), vc.Now(), budget.ObserveOptions{})
	if err != nil || got.RaisedTo != 15 || got.Counter != 5 {
		t.Fatalf("observed %+v %v", got, err)
	}
	if e, _ := mq.KV(meterNS, b.Key); e.Int != 15 {
		t.Fatalf("counter %d, want 15", e.Int)
	}
	// An older answer saying 18 remain lowers nothing.
	got, err = l.Observe(ctx, b, reading(20, 18), vc.Now(), budget.ObserveOptions{})
	if err != nil || got.RaisedTo != 0 {
		t.Fatalf("observed %+v %v", got, err)
	}
	if e, _ := mq.KV(meterNS, b.Key); e.Int != 15 {
		t.Fatalf("counter %d after a stale answer, want 15 kept", e.Int)
	}
	// A raise never leaves the counter above the effective ceiling, and a
	// counter already above it stays where it is.
	if _, err := l.KV.KV(ctx, queen.KVIncr(meterNS, b.Key, 30, queen.IncrOpts{TTLSeconds: 1})); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Observe(ctx, b, reading(20, 0), vc.Now(), budget.ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, _ := mq.KV(meterNS, b.Key); e.Int != 45 {
		t.Fatalf("counter %d, want 45 untouched", e.Int)
	}
	// A window that ended: an answer whose vendor window is nearly over
	// starts nothing; one with most of it to go starts a fresh counter at
	// the vendor's used count, with the sub-window's TTL.
	vc.Advance(2 * time.Second)
	if _, err := l.Observe(ctx, b, reading(20, 0), vc.Now(), budget.ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := mq.KV(meterNS, b.Key); ok {
		t.Fatal("an answer 400 ms before the vendor's reset started a one-second window")
	}
	late := reading(20, 0)
	late.Reset = 900 * time.Millisecond
	if _, err := l.Observe(ctx, b, late, vc.Now(), budget.ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	e, ok := mq.KV(meterNS, b.Key)
	if !ok || e.Int != 20 || e.ExpiresAt.Sub(vc.Now()) != time.Second {
		t.Fatalf("fresh counter %+v, want 20 for a second", e)
	}
}

func TestObserveWithoutALimitKeepsWhatWasStated(t *testing.T) {
	t.Parallel()
	l, _, vc := meterRig(t)
	ctx := context.Background()
	b := mirrored()
	got, err := l.Observe(ctx, b, vendormeter.Reading{Status: 429, RetryAfter: time.Second, HasRetryAfter: true}, vc.Now(), budget.ObserveOptions{})
	if err != nil || got.Lowered || got.Ceiling != 50 || got.Note != "the vendor stated no limit; Gate keeps what is declared" {
		t.Fatalf("observed %+v %v", got, err)
	}
	if _, err := l.Observe(ctx, b, reading(10, 3), vc.Now(), budget.ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = l.Observe(ctx, b, vendormeter.Reading{Status: 200, Remaining: 0, HasRemaining: true}, vc.Now(), budget.ObserveOptions{})
	if err != nil || !got.Lowered || got.Ceiling != 10 || got.RaisedTo != 10 {
		t.Fatalf("a remaining alone judged against the stated limit: %+v %v", got, err)
	}
	if _, err := l.Observe(ctx, &plan.Budget{ID: "plain"}, reading(1, 1), vc.Now(), budget.ObserveOptions{}); err == nil {
		t.Fatal("a budget that mirrors nothing was observed")
	}
}

func TestMeterCeilingArithmetic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit, plan, count, want int64
	}{
		{20, 50, 50, 20},
		{10, 25, 50, 5},
		{1, 3, 50, 1},    // never below 1
		{50, 50, 50, 50}, // at declared: unchanged
		{90, 50, 50, 50}, // above declared: never raised
		{0, 50, 50, 50},  // no limit: unchanged
		{999_999_999_999, 1 << 40, 1_000_000_000_000, 1 << 40 / 1_000_000_000_000 * 999_999_999_999},
	} {
		if got := (budget.MeterRow{Limit: tc.limit}).Ceiling(tc.plan, tc.count); got != tc.want || got > tc.plan {
			t.Errorf("limit %d, plan %d, count %d: %d, want %d", tc.limit, tc.plan, tc.count, got, tc.want)
		}
	}
}
