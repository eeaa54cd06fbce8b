package insight_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

func timelineOf(h *apitest.Harness, t *testing.T, graph, minutes string) (wire.Timeline, apitest.Answer) {
	t.Helper()
	a := h.Do("GET", "/api/apps/"+h.App+"/graphs/"+graph+"/timeline?minutes="+minutes, nil)
	var tl wire.Timeline
	if a.Status == 200 {
		if err := json.Unmarshal(a.Raw, &tl); err != nil {
			t.Fatal(err)
		}
	}
	return tl, a
}

func snapBody(t *testing.T, before int64, positions map[string]int64) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(wire.Snapshot{Available: true, Before: &before, Positions: positions, Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Snapshots appear per node per minute with gaps kept as gaps, incoming
// estimates only where positions can be attributed, roll-ups per minute,
// and annotations newest first: one per changing declare, none for a
// declare that changes nothing.
func TestTimeline(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	if _, a := timelineOf(h, t, "nope", "60"); a.Status != 404 {
		t.Fatalf("unknown graph: %d", a.Status)
	}
	h.Expect(h.Do("PUT", h.GraphURL("shop"), h.Airbnb(1)), 200)
	if _, a := timelineOf(h, t, "shop", "60"); a.Status != 503 {
		t.Fatalf("no history: %d %s", a.Status, a.Raw)
	}
	db := h.WithHistory(t)

	doc := h.Airbnb(2)
	doc["counters"] = map[string]any{"windowSeconds": 60}
	h.Expect(h.Do("PUT", h.GraphURL("shop"), doc), 200) // created (history was not there for version 1's declare)
	h.Expect(h.Do("PUT", h.GraphURL("shop"), doc), 200) // unchanged: no annotation
	doc["version"] = 3
	h.Expect(h.Do("PUT", h.GraphURL("shop"), doc), 200) // updated

	now := time.Now().UnixMilli()
	m := now - now%60000
	ctx := context.Background()
	src := h.Ingress("shop", "prices") + "/gate." + h.App + ".shop.prices.prices/p0"
	snaps := []history.Snapshot{
		{App: h.App, Graph: "shop", Node: "prices", Minute: m - 4*60000, At: m - 4*60000 + 10, Body: snapBody(t, 5, map[string]int64{src: 100})},
		{App: h.App, Graph: "shop", Node: "prices", Minute: m - 3*60000, At: m - 3*60000 + 10, Body: snapBody(t, 7, map[string]int64{src: 160})},
		// m-2 is missing: a gap.
		{App: h.App, Graph: "shop", Node: "prices", Minute: m - 60000, At: m - 60000 + 10, Body: snapBody(t, 1, map[string]int64{src: 300})},
		{App: h.App, Graph: "shop", Node: "prices", Minute: m, At: m + 10, Body: snapBody(t, 0, map[string]int64{src: 330})},
		{App: h.App, Graph: "shop", Node: "ip", Minute: m, At: m + 10, Body: json.RawMessage(`{"available":false}`)},
		{App: h.App, Graph: "shop", Node: "prices", Minute: m - 90*60000, At: m - 90*60000, Body: snapBody(t, 9, nil)},
	}
	if err := db.PutSnapshots(ctx, snaps); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, history.Batch{Rollups: []history.RollupCount{
		{Recorder: "r", App: h.App, Target: "shop.ip", Lane: "prices", Minute: m - 60000, Admitted: 50, Cost: 50},
		{Recorder: "r", App: h.App, Target: "shop.ip", Lane: "photos", Minute: m - 60000, Admitted: 20, Cost: 20},
	}}); err != nil {
		t.Fatal(err)
	}

	tl, a := timelineOf(h, t, "shop", "5")
	h.Expect(a, 200)
	if tl.Minutes != 5 || tl.ResolutionSeconds != 60 || !tl.Enabled || tl.Until != m+60000 {
		t.Fatalf("timeline frame: %+v", tl)
	}
	var prices []int64
	for _, s := range tl.Samples {
		if s.Node == "prices" {
			prices = append(prices, s.T)
		}
	}
	if len(prices) != 4 || prices[0] != m-4*60000 || prices[2] != m-60000 {
		t.Fatalf("prices minutes %v: four snapshots in the last five minutes, the missing one left out", prices)
	}
	in := tl.Incoming["prices"]
	if !in.Attributable || len(in.Points) != 4 || in.Points[0].Items != nil || *in.Points[1].Items != 60 || in.Points[2].Items != nil || *in.Points[3].Items != 30 {
		t.Fatalf("incoming at prices %+v: unknown first, 60, unknown after the gap, 30", in)
	}
	if ip := tl.Incoming["ip"]; ip.Attributable || ip.Reason == "" {
		t.Fatalf("ip is an interior node shared by two paths: unknown, with the reason: %+v", ip)
	}
	if r := tl.Relayed["ip"]; len(r) != 1 || r[0].Total.Admitted != 70 || r[0].Lanes["photos"].Admitted != 20 {
		t.Fatalf("relayed at ip: %+v", r)
	}
	if len(tl.Events) != 2 || tl.Events[0].Change.Label != history.LabelUpdated || tl.Events[0].Change.Version != 3 ||
		tl.Events[1].Change.Label != history.LabelUpdated || tl.Events[1].Change.Version != 2 || tl.Events[0].At < tl.Events[1].At {
		t.Fatalf("events %+v: version 3 then version 2 updated, nothing for the unchanged declare", tl.Events)
	}

	// minutes is clamped to [5, 1440]: 1 shows five minutes, 99999 a day
	// (which includes the 90-minute-old snapshot).
	if tl, _ := timelineOf(h, t, "shop", "1"); tl.Minutes != 5 {
		t.Fatalf("minutes=1 → %d", tl.Minutes)
	}
	tl, _ = timelineOf(h, t, "shop", "99999")
	if tl.Minutes != 1440 || len(tl.Samples) != 6 {
		t.Fatalf("minutes=99999 → %d minutes, %d samples", tl.Minutes, len(tl.Samples))
	}
	if _, a := timelineOf(h, t, "shop", "soon"); a.Status != 422 {
		t.Fatalf("minutes=soon: %d", a.Status)
	}

	// A watch declare of a new graph is "Created" in watch mode.
	w := h.Target("fresh", 10)
	w["watch"] = map[string]any{"durationSeconds": 600}
	h.Expect(h.Do("PUT", h.GraphURL("fresh"), w), 200)
	tl, _ = timelineOf(h, t, "fresh", "60")
	if len(tl.Events) != 1 || tl.Events[0].Change.Label != history.LabelCreated || tl.Events[0].Change.Mode != history.ModeWatch {
		t.Fatalf("fresh: %+v", tl.Events)
	}
}

// A history that fails to read answers 502.
func TestTimelineReadError(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do("PUT", h.GraphURL("shop"), h.Airbnb(1)), 200)
	db := h.WithHistory(t)
	db.Close()
	_, a := timelineOf(h, t, "shop", "60")
	if a.Status != 502 || h.ErrorBody(a) == "" {
		t.Fatalf("closed history: %d %s", a.Status, a.Raw)
	}
}
