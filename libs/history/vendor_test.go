package history_test

import (
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/history"
)

// A span is written once, restated with a later Until, ended early, and
// read back only by a range it overlaps; retention removes it 31 days
// after its end.
func TestVendorSpansUpsertReadAndPrune(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	ctx := t.Context()
	ms := t0.UnixMilli()
	s := history.VendorSpan{App: "a", Graph: "g", Node: "call", Budget: "b0", Since: ms, Until: ms + 60_000, Seen: ms,
		Limit: 10, Declared: 50, TimeMs: 1000, VendorLimit: 10, VendorWindowMs: 1000, Headers: "x-ratelimit"}
	other := s
	other.Node, other.Budget, other.Since, other.Until, other.Limit = "other", "b1", ms+5_000, ms+65_000, 20
	if err := db.PutVendorSpans(ctx, []history.VendorSpan{s, other}); err != nil {
		t.Fatal(err)
	}
	// Restated: Until moves; then the vendor allows the declared count
	// again at +30 s; a later write without Ended keeps that end.
	s.Until, s.Seen = ms+90_000, ms+20_000
	if err := db.PutVendorSpans(ctx, []history.VendorSpan{s}); err != nil {
		t.Fatal(err)
	}
	s.Ended, s.Seen = ms+30_000, ms+29_000
	if err := db.PutVendorSpans(ctx, []history.VendorSpan{s}); err != nil {
		t.Fatal(err)
	}
	s.Ended = 0
	if err := db.PutVendorSpans(ctx, []history.VendorSpan{s}); err != nil {
		t.Fatal(err)
	}
	got, err := db.VendorSpans(ctx, "a", "g", "call", ms, ms+120_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d spans of node call, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Until != ms+90_000 || g.Ended != ms+30_000 || g.End() != ms+30_000 || g.Seen != ms+29_000 || g.Limit != 10 || g.Declared != 50 {
		t.Fatalf("span %+v: want until +90 s, ended and end +30 s, seen +29 s, 10 of 50", g)
	}
	if want := "the vendor enforced 10 where 50 is declared, from 2026-11-01T10:00:00Z to 2026-11-01T10:00:30Z"; g.Sentence() != want {
		t.Fatalf("sentence %q, want %q", g.Sentence(), want)
	}
	// A range after its end does not see it; every node's read sees both.
	if got, err := db.VendorSpans(ctx, "a", "g", "call", ms+30_000, ms+120_000); err != nil || len(got) != 0 {
		t.Fatalf("spans after the end %+v %v, want none", got, err)
	}
	if got, err := db.VendorSpans(ctx, "a", "g", "", ms, ms+120_000); err != nil || len(got) != 2 || got[1].Node != "other" {
		t.Fatalf("every node's spans %+v %v, want call's then other's", got, err)
	}
	n, err := db.PruneVendorSpans(ctx, t0.Add(history.VendorRetention).Add(61*time.Second))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d %v, want 1: call's span ended at +30 s, other's holds to +65 s", n, err)
	}
}
