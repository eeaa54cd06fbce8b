package server

import (
	"encoding/json"
	"net/http"
	"testing"

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
		t.Errorf("overview = %+v; want 2 graphs, admitted 40+10 at first hops, denied 3+1+2", ov)
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
	bad := h.expect(h.do(http.MethodGet, "/api/breaches/recent?limit=zero", nil), http.StatusBadRequest)
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
