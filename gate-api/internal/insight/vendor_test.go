package insight_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

// "Try a limit" checked against what the vendor allowed, through the
// route and PostgreSQL, on a hand-worked recording: 30 calls a second for
// 60 s at node call (50/s declared, mirroring the vendor's meter); the
// vendor enforced 10/s over seconds 10–29 and 20/s over seconds 30–39.
// 50/s is above the vendor in all 30 of those seconds and sends 20 calls
// too many in each of the first 20 and 10 in each of the next 10 (500);
// 15/s is above it only while it said 10 (5 over in each of 20 s: 100);
// 10/s never. The timeline lists both limits with their sentence; a node
// that mirrors nothing has no comparison.
func TestTryALimitAgainstTheVendor(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	started := (time.Now().Add(-20*time.Minute).UnixMilli()/1000)*1000 + 400
	s0 := started - 400 + 1000
	doc := watchDoc(h, started)
	nodes := doc["nodes"].(map[string]any)
	nodes["call"] = map[string]any{"ingress": true, "egress": h.App + ".sim.call",
		"budgets": []any{map[string]any{"id": "rps", "count": 50, "timeMs": 1000, "vendorMeter": map[string]any{"headers": "x-ratelimit"}}}}
	doc["paths"] = append(doc["paths"].([]any), map[string]any{"name": "calls", "nodes": []any{"call"}})
	storeDoc(h, t, "w", doc)
	var secs [][3]int64
	for i := int64(0); i < 60; i++ {
		secs = append(secs, [3]int64{s0 + i*1000, 30, 30})
	}
	record(h, t, db, "w", "call", "calls", "r-call", started, s0, s0+60_000, 0, secs...)
	record(h, t, db, "w", "limit", "main", "r-limit", started, s0, s0+60_000, 0, [3]int64{s0, 5, 5})
	span := func(since, until, ended, limit int64) history.VendorSpan {
		return history.VendorSpan{App: h.App, Graph: "w", Node: "call", Budget: "rps", Since: since, Until: until, Ended: ended, Seen: since,
			Limit: limit, Declared: 50, TimeMs: 1000, VendorLimit: limit, Headers: "x-ratelimit"}
	}
	if err := db.PutVendorSpans(context.Background(), []history.VendorSpan{
		span(s0+10_000, s0+70_000, s0+30_000, 10), // replaced by 20 at +30 s
		span(s0+30_000, s0+40_000, 0, 20),         // lapsed at +40 s
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		count                   string
		exceeded, overSec, over int64
		says                    string
	}{
		{"50", 30, 30, 500, "50 per 1 s is above it for 30 s, and the recorded traffic would have gone faster than the vendor allowed in 30 s (500 calls over its limit)"},
		{"15", 20, 20, 100, "15 per 1 s is above it for 20 s"},
		{"10", 0, 0, 0, "10 per 1 s stays within it throughout"},
	}
	for _, c := range cases {
		got := simulation(h, t, simQuery("node", "call", "count", c.count, "timeMs", "1000"))
		v := got.Vendor
		if v == nil {
			t.Fatalf("count %s: no vendor comparison for a mirrored node: %+v", c.count, got)
		}
		if v.Seconds != 30 || v.ExceededSeconds != c.exceeded || v.OverSeconds != c.overSec || v.OverItems != c.over ||
			v.LowestLimit == nil || *v.LowestLimit != 10 || *v.LowestTimeMs != 1000 || len(v.Spans) != 2 || len(v.Budgets) != 1 || v.Budgets[0] != "rps" {
			t.Fatalf("count %s: vendor %+v, want 30 s held, %d exceeded, %d over by %d, lowest 10 per 1000 ms, 2 spans of rps", c.count, v, c.exceeded, c.overSec, c.over)
		}
		if !strings.Contains(v.Sentence, "less than declared for 30 of these 60 s (as low as 10 per 1 s)") || !strings.Contains(v.Sentence, c.says) {
			t.Fatalf("count %s: sentence %q does not say %q", c.count, v.Sentence, c.says)
		}
	}
	if got := simulation(h, t, simQuery("node", "limit", "count", "10", "timeMs", "1000")); got.Vendor != nil {
		t.Fatalf("a node that mirrors nothing has a vendor comparison: %+v", got.Vendor)
	}
	// A limit still holding is said in the present tense.
	now := time.Now().UnixMilli()
	if err := db.PutVendorSpans(context.Background(), []history.VendorSpan{span(now-60_000, now+60_000, 0, 5)}); err != nil {
		t.Fatal(err)
	}
	a := h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/w/timeline?minutes=60", nil), 200)
	var tl wire.Timeline
	if err := json.Unmarshal(a.Raw, &tl); err != nil {
		t.Fatal(err)
	}
	if len(tl.Vendor) != 3 || !strings.HasPrefix(tl.Vendor[2].Sentence, "the vendor enforces 5 where 50 is declared, since ") || !strings.HasSuffix(tl.Vendor[2].Sentence, " unless it says so again)") || tl.Vendor[0].Limit != 10 || !tl.Vendor[0].Ended || tl.Vendor[0].Until != s0+30_000 || tl.Vendor[1].Ended || tl.Vendor[1].Until != s0+40_000 {
		t.Fatalf("timeline vendor spans %+v: want 10 (ended at +30 s), 20 (lapsed at +40 s), then 5 holding now", tl.Vendor)
	}
	if want := "the vendor enforced 10 where 50 is declared, from "; !strings.HasPrefix(tl.Vendor[0].Sentence, want) {
		t.Fatalf("timeline sentence %q, want it to start %q", tl.Vendor[0].Sentence, want)
	}
}
