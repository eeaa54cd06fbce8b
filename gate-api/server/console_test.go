package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

func decodeAs[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.raw, &v); err != nil {
		t.Fatalf("decoding %T: %v in %.300s", v, err, a.raw)
	}
	return v
}

// zeroShare declares "trickle", a one-node graph with budgets "trickle"
// (10 per second) and "global" (100 per second) on its one path, then gives
// the served plan a ceiling of 0 on trickle: a counter no path has a share
// of. Declare refuses such a share (share-rounds-out), so the plan is
// edited in place to reach the views' rule for it. It returns the two
// counter keys.
func zeroShare(t *testing.T, h *harness) (trickle, global string) {
	t.Helper()
	doc := map[string]any{
		"version": 1,
		"nodes": map[string]any{"limit": map[string]any{
			"ingress": true,
			"budgets": []any{
				map[string]any{"id": "trickle", "count": 10, "timeMs": 1000},
				map[string]any{"id": "global", "count": 100, "timeMs": 1000},
			},
			"egress": h.app + ".trickle.out",
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"limit"}}},
	}
	h.expect(h.do(http.MethodPut, h.graphURL("trickle"), doc), http.StatusOK)
	e := h.srv.cat.get(t.Context(), h.app, "trickle")
	if e == nil || e.plan == nil || len(e.plan.Nodes) != 1 || len(e.plan.Nodes[0].Budgets) != 2 {
		t.Fatalf("the declared trickle graph is not served as one node with two budgets: %+v", e)
	}
	bs := e.plan.Nodes[0].Budgets
	if bs[0].ID != "trickle" || bs[0].Ceilings["main"] != 10 || bs[1].Ceilings["main"] != 100 {
		t.Fatalf("budgets %+v, want trickle at 10 and global at 100", bs)
	}
	bs[0].Ceilings = map[string]int64{"main": 0}
	return bs[0].Key, bs[1].Key
}

// A budget no path has a share of (a ceiling of 0) has no utilisation,
// whatever its counter holds: the console's worst budget, the product
// metrics' binding budget and the graph view agree that the filling
// budget is the one to watch (budget.Utilisation's rule).
func TestAZeroCeilingIsNeverTheWorstBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	trickle, global := zeroShare(t, h)
	// Another spender of the keys (a shared key, an older plan) left 3 on
	// trickle and 10 on global.
	for key, v := range map[string]string{trickle: "3", global: "10"} {
		if _, err := h.client.KV(t.Context(), queen.KVPut(h.ns, key, json.RawMessage(v), queen.PutOpts{TTLSeconds: 60})); err != nil {
			t.Fatal(err)
		}
	}
	targets := decodeAs[[]wire.TargetRow](t, h.expect(h.do(http.MethodGet, "/api/targets", nil), http.StatusOK))
	if len(targets) != 1 {
		t.Fatalf("targets %+v, want the one graph", targets)
	}
	if w := targets[0]; w.WorstBudgetID == nil || *w.WorstBudgetID != "global" || *w.WorstUsed != 10 || *w.WorstCap != 100 {
		t.Errorf("worst budget %v at %v of %v, want global at 10 of 100, not trickle's 3 over a ceiling of 0", deref(w.WorstBudgetID), deref(w.WorstUsed), deref(w.WorstCap))
	}
	metrics := decodeAs[wire.ProductMetrics](t, h.expect(h.do(http.MethodGet, "/v1/apps/"+h.app+"/metrics", nil), http.StatusOK))
	if len(metrics.Targets) != 1 || metrics.Targets[0].BindingBudget == nil || metrics.Targets[0].BindingBudget.ID != "global" || metrics.Targets[0].BindingBudget.Utilisation != 0.1 {
		t.Errorf("metrics %+v, want global binding at 0.1", metrics.Targets)
	}
	view := decodeAs[wire.GraphView](t, h.expect(h.do(http.MethodGet, h.graphURL("trickle"), nil), http.StatusOK))
	n, _ := view.Node("limit")
	if len(n.Budgets) != 2 {
		t.Fatalf("view budgets %+v, want two", n.Budgets)
	}
	if b := n.Budgets[0]; b.Value == nil || *b.Value != 3 || b.Utilisation != nil {
		t.Errorf("trickle in the view: value %v utilisation %v, want 3 and null", deref(b.Value), deref(b.Utilisation))
	}
	if b := n.Budgets[1]; b.Utilisation == nil || *b.Utilisation != 0.1 {
		t.Errorf("global in the view: utilisation %v, want 0.1", deref(b.Utilisation))
	}
}

// The console read routes of §4.3 on the internal plane: one declared
// graph with published counters and a breaker, and a target sharing the
// egress-ip counter with other numbers.
func TestConsoleReadRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("airbnb"), h.airbnb(2)), http.StatusOK)
	tgt := h.target("solo", 10)
	h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/solo", tgt), http.StatusOK)
	h.run("r1", "airbnb", 2,
		store.StageStatus{Path: "prices", Node: "prices", Hop: 0, Counters: store.Counters{Admitted: 40, Deferred: 3, Released: 1}},
		store.StageStatus{Path: "prices", Node: "ip", Hop: 1, Counters: store.Counters{Admitted: 38, Forwarded: 38, Deferred: 2}},
		store.StageStatus{Path: "photos", Node: "photos", Hop: 0, Counters: store.Counters{Admitted: 10}},
		store.StageStatus{Path: "photos", Node: "ip", Hop: 1, Counters: store.Counters{Forwarded: 9}},
	)
	h.expect(h.do(http.MethodPost, h.graphURL("airbnb")+"/nodes/photos/backoff", map[string]any{"retryAfterSeconds": 30, "by": "vendor 429"}), http.StatusOK)

	ov := decodeAs[wire.Overview](t, h.expect(h.do(http.MethodGet, "/api/overview", nil), http.StatusOK))
	if ov.Graphs != 2 || ov.Targets != 2 || ov.AdmittedTotal != 50 || ov.DeniedTotal != 6 || ov.AdmittedPerSec != nil {
		t.Errorf("overview = %+v; want 2 graphs, admitted 40+10 at first hops, denied 3+1+2, no rate without history", ov)
	}
	if r := ov.AdmittedPerSecReason; r == nil || !strings.Contains(*r, "PG_HOST") {
		t.Errorf("overview without history: admitted_per_sec_reason = %v, want one naming PG_HOST", r)
	}

	apps := decodeAs[[]wire.AppRow](t, h.expect(h.do(http.MethodGet, "/api/apps", nil), http.StatusOK))
	if len(apps) != 1 || apps[0].Application != h.app || apps[0].Targets != 2 || apps[0].Admitted != 50 || apps[0].Denied != 5 {
		t.Errorf("apps = %+v", apps)
	}

	targets := decodeAs[[]wire.TargetRow](t, h.expect(h.do(http.MethodGet, "/api/targets", nil), http.StatusOK))
	if len(targets) != 2 || targets[0].Name != "airbnb" || !targets[0].Running || targets[0].State != "pacing" || len(targets[0].Paths) != 2 || targets[0].WorstBudgetID == nil {
		t.Errorf("targets[0] = %+v", targets[0])
	}
	if targets[1].Name != "solo" || targets[1].Running || targets[1].State != "flowing" || targets[1].BudgetsTotal != 1 {
		t.Errorf("targets[1] = %+v", targets[1])
	}

	graphs := decodeAs[[]wire.GraphRow](t, h.expect(h.do(http.MethodGet, "/api/graphs", nil), http.StatusOK))
	if len(graphs) != 2 || graphs[0].Forwarded != 47 || len(graphs[0].Edges) != 2 || len(graphs[0].Nodes) != 3 {
		t.Fatalf("graphs[0] = %+v", graphs[0])
	}
	for _, e := range graphs[0].Edges {
		if e.To != "ip" || (e.From != "prices" && e.From != "photos") {
			t.Errorf("edge %+v: want prices→ip and photos→ip", e)
		}
	}

	topo := decodeAs[wire.Topology](t, h.expect(h.do(http.MethodGet, "/api/apps/"+h.app+"/graphs/airbnb/topology", nil), http.StatusOK))
	if topo.Version != 2 || len(topo.Nodes) != 3 || len(topo.Paths) != 2 || len(topo.Paths[0].Hops) != 2 {
		t.Errorf("topology = %+v", topo)
	}
	flat := decodeAs[wire.Topology](t, h.expect(h.do(http.MethodGet, "/api/graphs/airbnb/topology", nil), http.StatusOK))
	if flat.Application != h.app {
		t.Errorf("flat topology resolved %q", flat.Application)
	}

	view := decodeAs[wire.GraphView](t, h.expect(h.do(http.MethodGet, "/api/apps/"+h.app+"/graphs/airbnb", nil), http.StatusOK))
	if st, ok := view.Stage("prices", "prices"); !ok || st.Counters.Admitted != 40 || !view.Running {
		t.Errorf("graph detail stage = %+v running %v", st, view.Running)
	}
	if n, _ := view.Node("photos"); n.Breaker == nil || n.Breaker.RetryAfterSeconds != 30 {
		t.Errorf("graph detail breaker = %+v", n.Breaker)
	}
	h.expect(h.do(http.MethodGet, "/api/targets/solo", nil), http.StatusOK)

	br := decodeAs[[]wire.Breach](t, h.expect(h.do(http.MethodGet, "/api/breaches/recent?limit=5", nil), http.StatusOK))
	if len(br) != 1 || br[0].Target != "airbnb.photos" || br[0].By != "vendor 429" || br[0].Until != br[0].At+30000 {
		t.Errorf("breaches = %+v", br)
	}
	bad := h.expect(h.do(http.MethodGet, "/api/breaches/recent?limit=zero", nil), http.StatusUnprocessableEntity)
	if bad.str("field") != "limit" {
		t.Errorf("bad limit: %s", bad.raw)
	}

	budgets := decodeAs[[]wire.SharedBudget](t, h.expect(h.do(http.MethodGet, "/api/budgets", nil), http.StatusOK))
	if len(budgets) != 1 || budgets[0].Application != h.app || len(budgets[0].Members) != 1 || budgets[0].Members[0] != "airbnb.ip" || budgets[0].Used == nil {
		t.Errorf("budgets = %+v", budgets)
	}

	me := decodeAs[wire.Me](t, h.expect(h.do(http.MethodGet, "/api/me", nil), http.StatusOK))
	if me.Actor != "internal" || me.Role != "admin" || me.Email != nil {
		t.Errorf("internal me = %+v", me)
	}
}

// The overview's admitted rate with history (gate-runtime §3.9): per
// first-hop node of a graph with counters, the last complete minute's
// admitted / 60, else the filling minute's / max(5, elapsed seconds);
// second hops, older minutes and graphs without counters do not count.
// Without counters, or with history unreadable, the rate is null and the
// reason says what to do.
func TestOverviewAdmittedRate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// 12:34:30 on a fixed day: the filling minute began 30 s ago.
	filling := time.Date(2026, 3, 2, 12, 34, 0, 0, time.UTC)
	clock := filling.Add(30 * time.Second)
	h.srv.now = func() time.Time { return clock }
	db := withHistory(t, h)
	overview := func() wire.Overview {
		t.Helper()
		return decodeAs[wire.Overview](t, h.expect(h.do(http.MethodGet, "/api/overview", nil), http.StatusOK))
	}
	wantRate := func(ov wire.Overview, want float64, why string) {
		t.Helper()
		if ov.AdmittedPerSec == nil || *ov.AdmittedPerSec != want || ov.AdmittedPerSecReason != nil {
			reason := "<nil>"
			if ov.AdmittedPerSecReason != nil {
				reason = *ov.AdmittedPerSecReason
			}
			var got any = ov.AdmittedPerSec
			if ov.AdmittedPerSec != nil {
				got = *ov.AdmittedPerSec
			}
			t.Fatalf("admitted_per_sec = %v (reason %q), want %v: %s", got, reason, want, why)
		}
	}

	// A graph without counters: history alone gives no rate, and says why.
	h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/quiet", h.target("quiet", 10)), http.StatusOK)
	ov := overview()
	if ov.AdmittedPerSec != nil || ov.AdmittedPerSecReason == nil || !strings.Contains(*ov.AdmittedPerSecReason, `"counters"`) {
		t.Fatalf("no graph with counters: overview %+v, want a null rate with a reason naming counters", ov)
	}

	withCounters := func(d map[string]any) map[string]any {
		d["counters"] = map[string]any{"windowSeconds": 60}
		return d
	}
	h.expect(h.do(http.MethodPut, h.graphURL("airbnb"), withCounters(h.airbnb(2))), http.StatusOK)
	h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/solo", withCounters(h.target("solo", 10))), http.StatusOK)
	wantRate(overview(), 0, "counters on, nothing recorded yet")

	last, older := filling.Add(-time.Minute).UnixMilli(), filling.Add(-2*time.Minute).UnixMilli()
	roll := func(rec, target, lane string, minute, admitted int64) history.RollupCount {
		return history.RollupCount{Recorder: rec, App: h.app, Target: target, Lane: lane, Minute: minute, Admitted: admitted}
	}
	if err := db.Write(t.Context(), history.Batch{Rollups: []history.RollupCount{
		// airbnb: first hops prices (path prices) and photos (path photos)
		// in the last complete minute, 120 + 60; the filling minute's 900
		// is not used while the last minute has rows.
		roll("r-prices", "airbnb.prices", "prices", last, 120),
		roll("r-photos", "airbnb.photos", "photos", last, 60),
		roll("r-prices", "airbnb.prices", "prices", filling.UnixMilli(), 900),
		// The second hop (ip) saw the same items again: never counted.
		roll("r-ip", "airbnb.ip", "prices", last, 500),
		roll("r-ip", "airbnb.ip", "photos", last, 500),
		// solo has only its filling minute, 45 items in 30 s, and an
		// older minute that no rule reads.
		roll("r-solo", "solo.limit", "main", filling.UnixMilli(), 45),
		roll("r-solo", "solo.limit", "main", older, 6000),
		// quiet has no counters now: its rows are not part of the rate.
		roll("r-quiet", "quiet.limit", "main", last, 6000),
	}}); err != nil {
		t.Fatal(err)
	}
	wantRate(overview(), (120+60)/60.0+45/30.0, "airbnb (120+60)/60 from the last complete minute plus solo 45/30 from the filling one")

	// Two seconds into the minute the filling minute is divided by 5, not 2.
	clock = filling.Add(2 * time.Second)
	wantRate(overview(), (120+60)/60.0+45/5.0, "the filling minute's divisor is at least 5 s")

	// History unreadable: no rate, and the reason says so.
	db.Close()
	ov = overview()
	if ov.AdmittedPerSec != nil || ov.AdmittedPerSecReason == nil || !strings.Contains(*ov.AdmittedPerSecReason, "could not be read") {
		t.Fatalf("history closed: overview %+v, want a null rate with a reason saying history could not be read", ov)
	}
}
