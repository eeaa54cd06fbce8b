package insight_test

import (
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

func watchTarget(h *apitest.Harness, name string, version int, seconds int) map[string]any {
	d := h.Target(name, 100)
	d["version"] = version
	d["watch"] = map[string]any{"durationSeconds": seconds, "startedAt": 1}
	d["nodes"].(map[string]any)["limit"].(map[string]any)["budgets"] = []any{}
	return d
}

// Declaring Watch on a gate-api without history is refused by the named
// rule, whose message says to set PG_HOST; the summary answers 503 there.
func TestWatchRefusedWithoutHistory(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	a := h.Expect(h.Do("PUT", h.GraphURL("w"), watchTarget(h, "w", 1, 600)), 422)
	if a.Str("rule") != "watch-history" || !strings.Contains(h.ErrorBody(a), "set PG_HOST") {
		t.Fatalf("refusal %s, want rule watch-history naming PG_HOST", a.Raw)
	}
	h.Expect(h.Do("PUT", h.GraphURL("e"), h.Target("e", 100)), 200)
	h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/e/watch", nil), 409)
	for _, p := range []string{"/api/rollups?target=e.limit", "/api/flow"} {
		a := h.Expect(h.Do("GET", p, nil), 200)
		if p == "/api/flow" && (a.Body["durable"] != false || !strings.Contains(string(a.Raw), `"minutes":[]`)) {
			t.Fatalf("flow without history %s, want empty and not durable", a.Raw)
		}
	}
}

// With history: the server stamps watch.startedAt (a client value is
// ignored) and keeps it across re-declarations; every successful declare
// that changes the document leaves one annotation, labelled for what
// changed, and an unchanged one leaves none; the summary answers per node.
func TestWatchDeclareAnnotationsAndSummary(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	before := time.Now().UnixMilli()
	h.Expect(h.Do("PUT", h.GraphURL("w"), watchTarget(h, "w", 1, 600)), 200)
	doc, _, err := h.Store.Get(t.Context(), h.App, "w")
	if err != nil {
		t.Fatal(err)
	}
	stamped := apitest.StartedAt(t, doc.Body)
	if stamped < before {
		t.Fatalf("watch.startedAt %d: the client's 1 was kept, want the server's clock (≥ %d)", stamped, before)
	}
	h.Expect(h.Do("PUT", h.GraphURL("w"), watchTarget(h, "w", 1, 600)), 200) // unchanged
	h.Expect(h.Do("PUT", h.GraphURL("w"), watchTarget(h, "w", 1, 900)), 200) // longer watch
	doc, _, _ = h.Store.Get(t.Context(), h.App, "w")
	if got := apitest.StartedAt(t, doc.Body); got != stamped {
		t.Fatalf("re-declaring moved watch.startedAt from %d to %d", stamped, got)
	}
	a := h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/w/watch", nil), 200)
	if a.Num("startedAt") != float64(stamped) || a.Num("endsAt") != float64(stamped+900000) || a.Body["ready"] != false || a.Num("resolutionSeconds") != 60 {
		t.Fatalf("summary %s", a.Raw)
	}
	nodes, _ := a.Body["nodes"].([]any)
	if len(nodes) != 1 || !strings.Contains(string(a.Raw), `"averageCostPerSecond":null`) {
		t.Fatalf("summary %s: want node limit with null averages before a complete minute", a.Raw)
	}
	h.Expect(h.Do("GET", "/api/graphs/w/watch", nil), 200)
	// Limits need a higher version; then they are activated.
	h.Expect(h.Do("PUT", h.GraphURL("w"), h.Target("w", 100)), 409)
	enforce := h.Target("w", 100)
	enforce["version"] = 2
	activated := time.Now().UnixMilli()
	h.Expect(h.Do("PUT", h.GraphURL("w"), enforce), 200)
	// The finished session's summary stays readable after Configure limits
	// (it was 409): read back from the change history, ended when the
	// enforcing revision was stored.
	ended := h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/w/watch", nil), 200)
	if ended.Num("startedAt") != float64(stamped) || ended.Num("endsAt") != float64(stamped+900000) || ended.Num("endedAt") < float64(activated) || ended.Num("endedAt") > float64(time.Now().UnixMilli()) {
		t.Fatalf("the finished session's summary: %s", ended.Raw)
	}
	h.Expect(h.Do("GET", "/api/graphs/w/watch", nil), 200)
	// A graph that never watched has no session to read.
	h.Expect(h.Do("PUT", h.GraphURL("never"), h.Target("never", 10)), 200)
	if r := h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/never/watch", nil), 409); r.Str("code") != "not-watching" {
		t.Fatalf("a graph that never watched: %s", r.Raw)
	}
	ev, err := db.ConfigEvents(t.Context(), h.App, "w", 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, e := range ev {
		labels = append(labels, e.Change.Label+"/"+e.Change.Mode)
	}
	want := "Limits activated/enforce,Configuration updated/watch,Created/watch"
	if strings.Join(labels, ",") != want {
		t.Fatalf("annotations %v, want %s (newest first; none for the unchanged declare)", labels, want)
	}
}

// A declare never fails because history is down: the annotation is
// skipped.
func TestDeclareSucceedsWithHistoryDown(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	db.Close()
	h.Expect(h.Do("PUT", h.GraphURL("x"), h.Target("x", 100)), 200)
	// Whether x ever watched is in the history, which is down: said so, not guessed.
	h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/x/watch", nil), 502)
	w := watchTarget(h, "y", 1, 600)
	h.Expect(h.Do("PUT", h.GraphURL("y"), w), 200)
	h.Expect(h.Do("GET", "/api/rollups?target=y.limit", nil), 502)
}

// Malformed history queries name the field.
func TestHistoryRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	for path, field := range map[string]string{
		"/api/rollups":                            "target",
		"/api/rollups?target=nodot":               "target",
		"/api/rollups?target=g.n&minutes=abc":     "minutes",
		"/api/flow?minutes=1.5":                   "minutes",
		"/api/flow?minutes=1&minutes=2":           "minutes",
		"/api/traces?limit=0":                     "limit",
		"/api/traces?outcome=admitted":            "outcome",
		"/api/rollups?target=a/g.n&application=b": "application",
	} {
		a := h.Expect(h.Do("GET", path, nil), 422)
		if a.Str("field") != field {
			t.Errorf("%s: field %q, want %q (%s)", path, a.Str("field"), field, a.Raw)
		}
	}
	h.Expect(h.Do("GET", "/api/graphs/nope/watch", nil), 404)
}

// /api/flow measures each target's minute against the items per minute its
// tightest unconditional budget admits at the node's widest share: at ip,
// the prices path's 150 per 1 s sub-window (9000 a minute), not the photos
// path's 75; scoped budgets (photos' per-listing) are not a ceiling.
func TestFlowMeasuresAMinuteAgainstTheWidestShare(t *testing.T) {
	t.Parallel()
	minute := time.Date(2026, 3, 2, 12, 34, 0, 0, time.UTC)
	h := apitest.NewWith(t, apitest.Setup{Clock: clock.NewVirtual(minute.Add(20 * time.Second))})
	db := h.WithHistory(t)
	h.Expect(h.Do("PUT", h.GraphURL("airbnb"), h.Airbnb(2)), 200)
	var rollups []history.RollupCount
	for target, admitted := range map[string]int64{"airbnb.ip": 900, "airbnb.prices": 1200, "airbnb.photos": 30} {
		rollups = append(rollups, history.RollupCount{Recorder: "r", App: h.App, Target: target, Lane: "prices", Minute: minute.UnixMilli(), Admitted: admitted})
	}
	if err := db.Write(t.Context(), history.Batch{Rollups: rollups}); err != nil {
		t.Fatal(err)
	}
	flow := apitest.DecodeAs[wire.Flow](t, h.Expect(h.Do("GET", "/api/flow?minutes=2", nil), 200))
	if len(flow.Applications) != 1 || len(flow.Applications[0].Points) != 3 {
		t.Fatalf("flow %+v, want one application with three points", flow)
	}
	// ip: 1500 per 10 s in 10 sub-windows is 150 per 1 s at share 1.0;
	// prices: 100 per 1 s; photos: 300 per minute in 60 sub-windows of 1 s.
	want := map[string][2]float64{"airbnb.ip": {9000, 0.1}, "airbnb.prices": {6000, 0.2}, "airbnb.photos": {300, 0.1}}
	for _, p := range flow.Applications[0].Points {
		w := want[p.Target]
		if p.T != minute.UnixMilli() || p.TotalAdmitted != 2130 || p.Ceiling == nil || *p.Ceiling != w[0] || p.Utilisation == nil || *p.Utilisation != w[1] {
			t.Errorf("%s: %+v (ceiling %v, utilisation %v), want %v a minute, utilisation %v", p.Target, p, apitest.Deref(p.Ceiling), apitest.Deref(p.Utilisation), w[0], w[1])
		}
	}
}

// A target whose tightest budget no path has a share of admits 0 a
// minute: the flow shows that ceiling and no utilisation (null, never a
// division by 0 that fails the whole apitest.Answer).
func TestFlowShowsAZeroCeilingWithoutUtilisation(t *testing.T) {
	t.Parallel()
	minute := time.Date(2026, 3, 2, 12, 34, 0, 0, time.UTC)
	h := apitest.NewWith(t, apitest.Setup{Clock: clock.NewVirtual(minute.Add(20 * time.Second))})
	db := h.WithHistory(t)
	h.ZeroShare(t)
	if err := db.Write(t.Context(), history.Batch{Rollups: []history.RollupCount{
		{Recorder: "r", App: h.App, Target: "trickle.limit", Lane: "main", Minute: minute.UnixMilli(), Admitted: 12},
	}}); err != nil {
		t.Fatal(err)
	}
	flow := apitest.DecodeAs[wire.Flow](t, h.Expect(h.Do("GET", "/api/flow?minutes=2", nil), 200))
	if len(flow.Applications) != 1 || len(flow.Applications[0].Points) != 1 {
		t.Fatalf("flow %+v, want one point", flow)
	}
	if p := flow.Applications[0].Points[0]; p.Admitted != 12 || p.Ceiling == nil || *p.Ceiling != 0 || p.Utilisation != nil {
		t.Errorf("point %+v (ceiling %v, utilisation %v), want 12 admitted against a ceiling of 0 and no utilisation", p, apitest.Deref(p.Ceiling), apitest.Deref(p.Utilisation))
	}
}
