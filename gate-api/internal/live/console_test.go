package live_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// A budget no path has a share of (a ceiling of 0) has no utilisation,
// whatever its counter holds: the console's worst budget, the product
// metrics' binding budget and the graph view agree that the filling
// budget is the one to watch (budget.Utilisation's rule).
func TestAZeroCeilingIsNeverTheWorstBudget(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	trickle, global := h.ZeroShare(t)
	// Another spender of the keys (a shared key, an older plan) left 3 on
	// trickle and 10 on global.
	for key, v := range map[string]string{trickle: "3", global: "10"} {
		if _, err := h.Client.KV(t.Context(), queen.KVPut(h.NS, key, json.RawMessage(v), queen.PutOpts{TTLSeconds: 60})); err != nil {
			t.Fatal(err)
		}
	}
	targets := apitest.DecodeAs[wire.TargetPage](t, h.Expect(h.Do(http.MethodGet, "/api/targets", nil), http.StatusOK)).Items
	if len(targets) != 1 {
		t.Fatalf("targets %+v, want the one graph", targets)
	}
	if w := targets[0]; w.WorstBudgetID == nil || *w.WorstBudgetID != "global" || *w.WorstUsed != 10 || *w.WorstCap != 100 {
		t.Errorf("worst budget %v at %v of %v, want global at 10 of 100, not trickle's 3 over a ceiling of 0", apitest.Deref(w.WorstBudgetID), apitest.Deref(w.WorstUsed), apitest.Deref(w.WorstCap))
	}
	metrics := apitest.DecodeAs[wire.ProductMetrics](t, h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/metrics", nil), http.StatusOK))
	if len(metrics.Targets) != 1 || metrics.Targets[0].BindingBudget == nil || metrics.Targets[0].BindingBudget.ID != "global" || metrics.Targets[0].BindingBudget.Utilisation != 0.1 {
		t.Errorf("metrics %+v, want global binding at 0.1", metrics.Targets)
	}
	view := apitest.DecodeAs[wire.GraphView](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("trickle"), nil), http.StatusOK))
	n, _ := view.Node("limit")
	if len(n.Budgets) != 2 {
		t.Fatalf("view budgets %+v, want two", n.Budgets)
	}
	if b := n.Budgets[0]; b.Value == nil || *b.Value != 3 || b.Utilisation != nil {
		t.Errorf("trickle in the view: value %v utilisation %v, want 3 and null", apitest.Deref(b.Value), apitest.Deref(b.Utilisation))
	}
	if b := n.Budgets[1]; b.Utilisation == nil || *b.Utilisation != 0.1 {
		t.Errorf("global in the view: utilisation %v, want 0.1", apitest.Deref(b.Utilisation))
	}
}

// The console read routes of §4.3 on the internal plane: one declared
// graph with published counters and a breaker, and a target sharing the
// egress-ip counter with other numbers.
func TestConsoleReadRoutes(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(2)), http.StatusOK)
	tgt := h.Target("solo", 10)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/solo", tgt), http.StatusOK)
	h.Run("r1", "airbnb", 2,
		store.StageStatus{Path: "prices", Node: "prices", Hop: 0, Counters: store.Counters{Admitted: 40, Deferred: 3, Released: 1}},
		store.StageStatus{Path: "prices", Node: "ip", Hop: 1, Counters: store.Counters{Admitted: 38, Forwarded: 38, Deferred: 2}},
		store.StageStatus{Path: "photos", Node: "photos", Hop: 0, Counters: store.Counters{Admitted: 10}},
		store.StageStatus{Path: "photos", Node: "ip", Hop: 1, Counters: store.Counters{Forwarded: 9}},
	)
	h.Expect(h.Do(http.MethodPost, h.GraphURL("airbnb")+"/nodes/photos/backoff", map[string]any{"retryAfterSeconds": 30, "by": "vendor 429"}), http.StatusOK)

	ov := apitest.DecodeAs[wire.Overview](t, h.Expect(h.Do(http.MethodGet, "/api/overview", nil), http.StatusOK))
	if ov.Graphs != 2 || ov.Targets != 2 || ov.AdmittedTotal != 50 || ov.DeniedTotal != 6 || ov.AdmittedPerSec != nil {
		t.Errorf("overview = %+v; want 2 graphs, admitted 40+10 at first hops, denied 3+1+2, no rate without history", ov)
	}
	if r := ov.AdmittedPerSecReason; r == nil || !strings.Contains(*r, "PG_HOST") {
		t.Errorf("overview without history: admitted_per_sec_reason = %v, want one naming PG_HOST", r)
	}

	appPage := apitest.DecodeAs[wire.AppPage](t, h.Expect(h.Do(http.MethodGet, "/api/apps", nil), http.StatusOK))
	apps := appPage.Items
	if appPage.Next != nil || appPage.Matched != 1 || appPage.Total != 1 {
		t.Errorf("apps page = %+v, want one application on one page", appPage)
	}
	if len(apps) != 1 || apps[0].Application != h.App || apps[0].Targets != 2 || apps[0].Admitted != 50 || apps[0].Denied != 5 {
		t.Errorf("apps = %+v", apps)
	}

	targetPage := apitest.DecodeAs[wire.TargetPage](t, h.Expect(h.Do(http.MethodGet, "/api/targets", nil), http.StatusOK))
	targets := targetPage.Items
	if targetPage.Next != nil || targetPage.Matched != 2 || targetPage.Total != 2 {
		t.Errorf("targets page: next %v, matched %d, total %d, want both graphs on one page", apitest.Deref(targetPage.Next), targetPage.Matched, targetPage.Total)
	}
	if len(targets) != 2 || targets[0].Name != "airbnb" || !targets[0].Running || targets[0].State != "pacing" || len(targets[0].Paths) != 2 || targets[0].WorstBudgetID == nil {
		t.Errorf("targets[0] = %+v", targets[0])
	}
	if targets[1].Name != "solo" || targets[1].Running || targets[1].State != "flowing" || targets[1].BudgetsTotal != 1 {
		t.Errorf("targets[1] = %+v", targets[1])
	}

	graphs := apitest.DecodeAs[wire.GraphPage](t, h.Expect(h.Do(http.MethodGet, "/api/graphs", nil), http.StatusOK)).Items
	if len(graphs) != 2 || graphs[0].Forwarded != 47 || len(graphs[0].Edges) != 2 || len(graphs[0].Nodes) != 3 {
		t.Fatalf("graphs[0] = %+v", graphs[0])
	}
	for _, e := range graphs[0].Edges {
		if e.To != "ip" || (e.From != "prices" && e.From != "photos") {
			t.Errorf("edge %+v: want prices→ip and photos→ip", e)
		}
	}

	topo := apitest.DecodeAs[wire.Topology](t, h.Expect(h.Do(http.MethodGet, "/api/apps/"+h.App+"/graphs/airbnb/topology", nil), http.StatusOK))
	if topo.Version != 2 || len(topo.Nodes) != 3 || len(topo.Paths) != 2 || len(topo.Paths[0].Hops) != 2 {
		t.Errorf("topology = %+v", topo)
	}
	flat := apitest.DecodeAs[wire.Topology](t, h.Expect(h.Do(http.MethodGet, "/api/graphs/airbnb/topology", nil), http.StatusOK))
	if flat.Application != h.App {
		t.Errorf("flat topology resolved %q", flat.Application)
	}

	view := apitest.DecodeAs[wire.GraphView](t, h.Expect(h.Do(http.MethodGet, "/api/apps/"+h.App+"/graphs/airbnb", nil), http.StatusOK))
	if st, ok := view.Stage("prices", "prices"); !ok || st.Counters.Admitted != 40 || !view.Running {
		t.Errorf("graph detail stage = %+v running %v", st, view.Running)
	}
	if n, _ := view.Node("photos"); n.Breaker == nil || n.Breaker.RetryAfterSeconds != 30 {
		t.Errorf("graph detail breaker = %+v", n.Breaker)
	}
	h.Expect(h.Do(http.MethodGet, "/api/targets/solo", nil), http.StatusOK)

	br := apitest.DecodeAs[[]wire.Breach](t, h.Expect(h.Do(http.MethodGet, "/api/breaches/recent?limit=5", nil), http.StatusOK))
	if len(br) != 1 || br[0].Target != "airbnb.photos" || br[0].By != "vendor 429" || br[0].Until != br[0].At+30000 {
		t.Errorf("breaches = %+v", br)
	}
	bad := h.Expect(h.Do(http.MethodGet, "/api/breaches/recent?limit=zero", nil), http.StatusUnprocessableEntity)
	if bad.Str("field") != "limit" {
		t.Errorf("bad limit: %s", bad.Raw)
	}

	budgets := apitest.DecodeAs[[]wire.SharedBudget](t, h.Expect(h.Do(http.MethodGet, "/api/budgets", nil), http.StatusOK))
	if len(budgets) != 1 || budgets[0].Application != h.App || len(budgets[0].Members) != 1 || budgets[0].Members[0] != "airbnb.ip" || budgets[0].Used == nil {
		t.Errorf("budgets = %+v", budgets)
	}

	me := apitest.DecodeAs[wire.Me](t, h.Expect(h.Do(http.MethodGet, "/api/me", nil), http.StatusOK))
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
	// 12:34:30 on a fixed day: the filling minute began 30 s ago.
	filling := time.Date(2026, 3, 2, 12, 34, 0, 0, time.UTC)
	clk := clock.NewVirtual(filling.Add(30 * time.Second))
	h := apitest.NewWith(t, apitest.Setup{Clock: clk})
	db := h.WithHistory(t)
	overview := func() wire.Overview {
		t.Helper()
		return apitest.DecodeAs[wire.Overview](t, h.Expect(h.Do(http.MethodGet, "/api/overview", nil), http.StatusOK))
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
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/quiet", h.Target("quiet", 10)), http.StatusOK)
	ov := overview()
	if ov.AdmittedPerSec != nil || ov.AdmittedPerSecReason == nil || !strings.Contains(*ov.AdmittedPerSecReason, `"counters"`) {
		t.Fatalf("no graph with counters: overview %+v, want a null rate with a reason naming counters", ov)
	}

	withCounters := func(d map[string]any) map[string]any {
		d["counters"] = map[string]any{"windowSeconds": 60}
		return d
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), withCounters(h.Airbnb(2))), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/solo", withCounters(h.Target("solo", 10))), http.StatusOK)
	wantRate(overview(), 0, "counters on, nothing recorded yet")

	last, older := filling.Add(-time.Minute).UnixMilli(), filling.Add(-2*time.Minute).UnixMilli()
	roll := func(rec, target, lane string, minute, admitted int64) history.RollupCount {
		return history.RollupCount{Recorder: rec, App: h.App, Target: target, Lane: lane, Minute: minute, Admitted: admitted}
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
	// The fleet figures are shared by every request for
	// figures_max_age_ms: the new roll-ups show once they are that old.
	if ov := overview(); ov.AdmittedPerSec == nil || *ov.AdmittedPerSec != 0 || ov.FiguresMaxAgeMs != 5000 {
		t.Fatalf("overview right after the roll-ups were written: %+v, want the shared figures (rate 0) for up to 5000 ms", ov)
	}
	clk.Advance(5 * time.Second)
	wantRate(overview(), (120+60)/60.0+45/35.0, "airbnb (120+60)/60 from the last complete minute plus solo 45/35 from the filling one")

	// Two seconds into the minute the filling minute is divided by 5, not 2.
	clk.Set(filling.Add(2 * time.Second))
	wantRate(overview(), (120+60)/60.0+45/5.0, "the filling minute's divisor is at least 5 s")

	// History unreadable: no rate, and the reason says so (once the
	// shared figures are old enough to be recomputed).
	db.Close()
	clk.Advance(5 * time.Second)
	ov = overview()
	if ov.AdmittedPerSec != nil || ov.AdmittedPerSecReason == nil || !strings.Contains(*ov.AdmittedPerSecReason, "could not be read") {
		t.Fatalf("history closed: overview %+v, want a null rate with a reason saying history could not be read", ov)
	}
}
