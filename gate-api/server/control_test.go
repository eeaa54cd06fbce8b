package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// Backoff writes every unscoped counter of the node to its ceiling with a
// TTL of the Retry-After and a fleet-wide breaker record; DELETE removes
// them all.
func TestBackoff(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mini := h.broker.RequireMini(t, "reading kv expiries")
	h.expect(h.do(http.MethodPut, h.graphURL("airbnb"), h.airbnb(3)), http.StatusOK)
	url := h.graphURL("airbnb") + "/nodes/photos/backoff"

	a := h.expect(h.do(http.MethodPost, url, map[string]any{"retryAfterSeconds": 42, "by": "vendor 429", "refundCost": 2}), http.StatusOK)
	want := map[string]int64{"b:" + h.app + ":airbnb:photos:photos-1m": 5}
	if keys, _ := a.body["keys"].([]any); len(keys) != len(want) || a.num("retryAfterSeconds") != 42 || a.num("refunded") != 2 {
		t.Fatalf("backoff answer: %s", a.raw)
	}
	for key, ceiling := range want {
		e, ok := mini.KV(h.ns, key)
		if !ok || e.Int != ceiling {
			t.Fatalf("%s = %+v, want the ceiling %d", key, e, ceiling)
		}
		if ttl := e.ExpiresAt.Sub(e.UpdatedAt); ttl != 42*time.Second {
			t.Fatalf("%s TTL %v, want 42s", key, ttl)
		}
	}
	brk, ok := mini.KV(h.ns, plan.BreakerKey(h.app, "airbnb", "photos"))
	var rec store.Breaker
	if !ok || json.Unmarshal(brk.Value, &rec) != nil || rec.RetryAfterSeconds != 42 || rec.By != "vendor 429" || rec.Node != "photos" || brk.ExpiresAt.Sub(brk.UpdatedAt) != 42*time.Second {
		t.Fatalf("breaker record: %+v %s", brk, brk.Value)
	}
	v := h.expect(h.do(http.MethodGet, h.graphURL("airbnb"), nil), http.StatusOK)
	if !strings.Contains(string(v.raw), `"retryAfterSeconds":42`) {
		t.Fatalf("the graph view does not show the breaker: %.600s", v.raw)
	}

	// The scoped counter is never touched; the clamp holds at 3600.
	h.expect(h.do(http.MethodPost, h.graphURL("airbnb")+"/nodes/ip/backoff", map[string]any{"retryAfterSeconds": 99999}), http.StatusOK)
	if e, _ := mini.KV(h.ns, "b:"+h.app+":shared:egress-ip"); e.ExpiresAt.Sub(e.UpdatedAt) != time.Hour || e.Int != 150 {
		t.Fatalf("clamped backoff: %+v", e)
	}

	d := h.expect(h.do(http.MethodDelete, url, nil), http.StatusOK)
	if cleared, _ := d.body["cleared"].([]any); len(cleared) != 2 {
		t.Fatalf("cleared: %s", d.raw)
	}
	for key := range want {
		if _, ok := mini.KV(h.ns, key); ok {
			t.Fatalf("%s survived the lift", key)
		}
	}
	if _, ok := mini.KV(h.ns, plan.BreakerKey(h.app, "airbnb", "photos")); ok {
		t.Fatalf("the breaker record survived the lift")
	}

	// A node without an unscoped counter (here: a graph in watch) has no
	// window to spend.
	withHistory(t, h)
	watching := h.target("w", 10)
	watching["watch"] = map[string]any{"durationSeconds": 3600}
	h.expect(h.do(http.MethodPut, h.graphURL("w"), watching), http.StatusOK)
	if r := h.expect(h.do(http.MethodPost, h.graphURL("w")+"/nodes/limit/backoff", map[string]any{"retryAfterSeconds": 5}), http.StatusUnprocessableEntity); r.str("field") != "node" {
		t.Fatalf("backoff without counters: %s", r.raw)
	}

	refusals := []struct {
		name, path string
		body       any
		want       int
		field      string
	}{
		{"missing retryAfterSeconds", url, map[string]any{"by": "x"}, 422, "retryAfterSeconds"},
		{"retryAfterSeconds a string", url, map[string]any{"retryAfterSeconds": "5"}, 422, "retryAfterSeconds"},
		{"unknown field", url, map[string]any{"retryAfterSeconds": 5, "seconds": 5}, 422, "seconds"},
		{"negative refund", url, map[string]any{"retryAfterSeconds": 5, "refundCost": -1}, 422, "refundCost"},
		{"10 kB by", url, map[string]any{"retryAfterSeconds": 5, "by": strings.Repeat("b", 10240)}, 422, "by"},
		{"unknown node", h.graphURL("airbnb") + "/nodes/nope/backoff", map[string]any{"retryAfterSeconds": 5}, 404, "node"},
		{"node name with a space", h.graphURL("airbnb") + "/nodes/a%20b/backoff", map[string]any{"retryAfterSeconds": 5}, 400, "node"},
		{"unparseable JSON", url, `{"retryAfterSeconds":`, 400, ""},
	}
	for _, c := range refusals {
		r := h.do(http.MethodPost, c.path, c.body)
		if r.status != c.want || r.str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %s", c.name, r.status, r.str("field"), c.want, c.field, r.raw)
		}
		h.errorBody(r)
	}
	if _, ok := mini.KV(h.ns, plan.BreakerKey(h.app, "airbnb", "photos")); ok {
		t.Fatalf("a refused backoff wrote the breaker record")
	}
}

// Re-entry goes back to the ingress of the path's first node; the attempt
// rides in the derived transaction id, so a repeated report collapses.
func TestReenter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("airbnb"), h.airbnb(3)), http.StatusOK)
	url := h.graphURL("airbnb") + "/reenter"
	item := map[string]any{"rooms": 2, "_gate": map[string]any{"graph": "airbnb", "path": "prices", "hop": 1, "node": "ip", "attempt": 1}}
	body := map[string]any{"payload": item, "txn": "orig-1", "partition": "listing-9"}

	h.expect(h.do(http.MethodPost, url, body), http.StatusServiceUnavailable)
	h.run("relay-1", "airbnb", 3)

	a := h.expect(h.do(http.MethodPost, url, body), http.StatusOK)
	b := h.expect(h.do(http.MethodPost, url, body), http.StatusOK)
	wantTxn := plan.DeriveTransactionID("orig-1", plan.ReentryLabel(2))
	queue := h.ingress("airbnb", "prices")
	if a.str("queue") != queue || a.str("node") != "prices" || a.num("attempt") != 2 || a.num("maxAttempts") != 3 || a.str("transactionId") != wantTxn || a.num("pushed") != 1 || b.num("pushed") != 0 {
		t.Fatalf("re-entry answers: %s / %s", a.raw, b.raw)
	}
	msgs := h.partition(queue, "listing-9")
	if len(msgs) != 1 || msgs[0].TransactionID != wantTxn {
		t.Fatalf("%d messages on the ingress, want 1 with txn %s", len(msgs), wantTxn)
	}
	var data struct {
		Rooms int `json:"rooms"`
		Gate  struct {
			Path    string `json:"path"`
			Node    string `json:"node"`
			Hop     int    `json:"hop"`
			Attempt int    `json:"attempt"`
		} `json:"_gate"`
	}
	if err := json.Unmarshal(msgs[0].Data, &data); err != nil || data.Rooms != 2 || data.Gate.Path != "prices" || data.Gate.Node != "prices" || data.Gate.Hop != 0 || data.Gate.Attempt != 2 {
		t.Fatalf("restamped item: %s", msgs[0].Data)
	}

	refusals := []struct {
		name  string
		body  map[string]any
		want  int
		field string
	}{
		{"beyond maxAttempts", map[string]any{"payload": item, "txn": "orig-1", "attempt": 4}, 422, "attempt"},
		{"missing txn", map[string]any{"payload": item}, 422, "txn"},
		{"no path anywhere", map[string]any{"payload": map[string]any{}, "txn": "t"}, 422, "path"},
		{"unknown path", map[string]any{"payload": item, "txn": "t", "path": "nope"}, 404, "path"},
		{"negative attempt", map[string]any{"payload": item, "txn": "t", "attempt": -1}, 422, "attempt"},
		{"unknown field", map[string]any{"payload": item, "txn": "t", "node": "ip"}, 422, "node"},
	}
	for _, c := range refusals {
		r := h.do(http.MethodPost, url, c.body)
		if r.status != c.want || r.str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %s", c.name, r.status, r.str("field"), c.want, c.field, r.raw)
		}
		h.errorBody(r)
	}
	if n := len(h.messages(queue)); n != 1 {
		t.Fatalf("refused re-entries queued messages: %d on the ingress", n)
	}
}

// The ETA keeps the two backlogs apart, names the binding budget and says
// what it assumes.
func TestETA(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("airbnb"), h.airbnb(3)), http.StatusOK)
	url := h.graphURL("airbnb") + "/nodes/prices/eta"
	h.expect(h.do(http.MethodGet, url, nil), http.StatusServiceUnavailable)
	h.run("relay-1", "airbnb", 3)

	items := make([]queen.PushItem, 250)
	for i := range items {
		items[i] = queen.PushItem{Queue: h.ingress("airbnb", "prices"), Partition: "p0", Payload: json.RawMessage(`{}`)}
	}
	if _, err := h.client.Push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	a := h.expect(h.do(http.MethodGet, url+"?path=prices", nil), http.StatusOK)
	// 250 items at cost 1 against 100 per 1 s window, empty counter: 100 now,
	// the rest in the next two windows → no earlier than 1 s from now.
	if a.num("waitingForBudget") != 250 || a.num("waitingForWorkers") != 0 || a.str("state") != "waiting-budget" ||
		a.str("boundBy") != "prices-1s" || a.num("etaSeconds") != 1 || a.num("aheadCost") != 250 || a.str("target") != "airbnb.prices" {
		t.Fatalf("eta: %s", a.raw)
	}
	if !strings.HasPrefix(a.str("assumes"), "no earlier than") {
		t.Fatalf("assumes: %q", a.str("assumes"))
	}
	ip := h.expect(h.do(http.MethodGet, h.graphURL("airbnb")+"/nodes/ip/eta", nil), http.StatusOK)
	if ip.str("path") != "prices" || !strings.Contains(ip.str("assumes"), "shared") {
		t.Fatalf("ip eta: %s", ip.raw)
	}
	photos := h.expect(h.do(http.MethodGet, h.graphURL("airbnb")+"/nodes/ip/eta?lane=photos", nil), http.StatusOK)
	if photos.str("path") != "photos" || !strings.Contains(photos.str("assumes"), "larger share") {
		t.Fatalf("photos eta: %s", photos.raw)
	}
	r := h.expect(h.do(http.MethodGet, url+"?path=photos", nil), http.StatusNotFound)
	if r.str("field") != "path" {
		t.Fatalf("unknown path at node: %s", r.raw)
	}
	h.expect(h.do(http.MethodGet, h.graphURL("airbnb")+"/nodes/zzz/eta", nil), http.StatusNotFound)
	h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/t", h.target("t", 10)), http.StatusOK)
	h.run("relay-2", "t", 1)
	if te := h.expect(h.do(http.MethodGet, "/v1/apps/"+h.app+"/targets/t/eta", nil), http.StatusOK); te.str("node") != "limit" {
		t.Fatalf("target eta: %s", te.raw)
	}
}

// The graph view sums stage counters across replicas and says whether the
// stored version runs.
func TestGraphViewAcrossReplicas(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/t", h.target("t", 10)), http.StatusOK)
	stage := func(admitted int64) store.StageStatus {
		return store.StageStatus{Path: "main", Node: "limit", Hop: 0, Counters: store.Counters{Admitted: admitted, Forwarded: admitted, Commits: 1}, LastRefusal: &store.Refusal{Budget: "global", At: admitted}}
	}
	h.run("relay-a", "t", 0, stage(3))
	v := h.expect(h.do(http.MethodGet, "/v1/apps/"+h.app+"/targets/t", nil), http.StatusOK)
	if v.body["running"] != false {
		t.Fatalf("a replica on another version counts as running the stored one: %.300s", v.raw)
	}
	h.run("relay-b", "t", 1, stage(4))
	v = h.expect(h.do(http.MethodGet, "/v1/apps/"+h.app+"/targets/t", nil), http.StatusOK)
	var view struct {
		Running    bool   `json:"running"`
		At         int64  `json:"at"`
		CountersAt *int64 `json:"countersAt"`
		Replicas   []struct {
			At int64 `json:"at"`
		} `json:"replicas"`
		Stages []struct {
			Counters    store.Counters `json:"counters"`
			LastRefusal *store.Refusal `json:"lastRefusal"`
			Lag         *int64         `json:"lag"`
		} `json:"stages"`
	}
	if err := json.Unmarshal(v.raw, &view); err != nil {
		t.Fatal(err)
	}
	if !view.Running || len(view.Stages) != 1 || view.Stages[0].Counters.Admitted != 7 || view.Stages[0].Counters.Commits != 2 || view.Stages[0].LastRefusal == nil || view.Stages[0].LastRefusal.At != 4 {
		t.Fatalf("view: %.600s", v.raw)
	}
	// The counters are as old as the oldest status summed into them.
	oldest := view.Replicas[0].At
	for _, r := range view.Replicas {
		oldest = min(oldest, r.At)
	}
	if len(view.Replicas) != 2 || view.CountersAt == nil || *view.CountersAt != oldest || view.At < oldest {
		t.Fatalf("countersAt %v, at %d, replicas %+v: want the oldest replica publish, at or before at", view.CountersAt, view.At, view.Replicas)
	}
}

// GET …/next and the lease routes are gone, naming what to consume.
func TestGoneRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("airbnb"), h.airbnb(3)), http.StatusOK)
	a := h.expect(h.do(http.MethodGet, h.graphURL("airbnb")+"/nodes/ip/next", nil), http.StatusGone)
	if !strings.Contains(h.errorBody(a), h.app+".airbnb.out") || !strings.Contains(a.str("error"), "channel-workers") {
		t.Fatalf("410 does not name the egress: %s", a.raw)
	}
	h.errorBody(h.expect(h.do(http.MethodGet, "/v1/graphs/nothing/nodes/x/next", nil), http.StatusGone))
	h.errorBody(h.expect(h.do(http.MethodGet, "/v1/apps/"+h.app+"/targets/nothing/lanes/l/next", nil), http.StatusGone))
	for _, op := range []string{"ack", "nack", "renew"} {
		r := h.expect(h.do(http.MethodPost, "/v1/leases/"+op, "{}"), http.StatusGone)
		if !strings.Contains(h.errorBody(r), "backoff") {
			t.Fatalf("lease 410: %s", r.raw)
		}
	}
}

// The product metrics name each node's state and binding budget.
func TestProductMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("airbnb"), h.airbnb(3)), http.StatusOK)
	h.expect(h.do(http.MethodPost, h.graphURL("airbnb")+"/nodes/ip/backoff", map[string]any{"retryAfterSeconds": 60}), http.StatusOK)
	if _, err := h.client.Push(context.Background(), []queen.PushItem{{Queue: h.ingress("airbnb", "prices"), Partition: "p0", Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	a := h.expect(h.do(http.MethodGet, "/v1/apps/"+h.app+"/metrics", nil), http.StatusOK)
	var m struct {
		Targets []struct {
			Name          string `json:"name"`
			State         string `json:"state"`
			Waiting       int64  `json:"waiting_for_budget"`
			BindingBudget *struct {
				ID          string  `json:"id"`
				Utilisation float64 `json:"utilisation"`
			} `json:"binding_budget"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(a.raw, &m); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, tg := range m.Targets {
		states[tg.Name] = tg.State
		if tg.Name == "airbnb.ip" && (tg.BindingBudget == nil || tg.BindingBudget.ID != "ip-10s" || tg.BindingBudget.Utilisation != 1) {
			t.Fatalf("ip binding budget: %s", a.raw)
		}
	}
	if states["airbnb.ip"] != "breached" || states["airbnb.prices"] != "pacing" || states["airbnb.photos"] != "flowing" {
		t.Fatalf("states %v: %.600s", states, a.raw)
	}
	h.expect(h.do(http.MethodGet, "/v1/apps/nobody/metrics", nil), http.StatusNotFound)
}
