package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Backoff writes every unscoped counter of the node to its ceiling with a
// TTL of the Retry-After and a fleet-wide breaker record; DELETE removes
// them all.
func TestBackoff(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading kv expiries")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	url := h.GraphURL("airbnb") + "/nodes/photos/backoff"

	a := h.Expect(h.Do(http.MethodPost, url, map[string]any{"retryAfterSeconds": 42, "by": "vendor 429", "refundCost": 2}), http.StatusOK)
	want := map[string]int64{"b:" + h.App + ":airbnb:photos:photos-1m": 5}
	if keys, _ := a.Body["keys"].([]any); len(keys) != len(want) || a.Num("retryAfterSeconds") != 42 || a.Num("refunded") != 2 {
		t.Fatalf("backoff answer: %s", a.Raw)
	}
	for key, ceiling := range want {
		e, ok := mini.KV(h.NS, key)
		if !ok || e.Int != ceiling {
			t.Fatalf("%s = %+v, want the ceiling %d", key, e, ceiling)
		}
		if ttl := e.ExpiresAt.Sub(e.UpdatedAt); ttl != 42*time.Second {
			t.Fatalf("%s TTL %v, want 42s", key, ttl)
		}
	}
	brk, ok := mini.KV(h.NS, plan.BreakerKey(h.App, "airbnb", "photos"))
	var rec store.Breaker
	if !ok || json.Unmarshal(brk.Value, &rec) != nil || rec.RetryAfterSeconds != 42 || rec.By != "vendor 429" || rec.Node != "photos" || brk.ExpiresAt.Sub(brk.UpdatedAt) != 42*time.Second {
		t.Fatalf("breaker record: %+v %s", brk, brk.Value)
	}
	v := h.Expect(h.Do(http.MethodGet, h.GraphURL("airbnb"), nil), http.StatusOK)
	if !strings.Contains(string(v.Raw), `"retryAfterSeconds":42`) {
		t.Fatalf("the graph view does not show the breaker: %.600s", v.Raw)
	}

	// The scoped counter is never touched; the clamp holds at 3600.
	h.Expect(h.Do(http.MethodPost, h.GraphURL("airbnb")+"/nodes/ip/backoff", map[string]any{"retryAfterSeconds": 99999}), http.StatusOK)
	if e, _ := mini.KV(h.NS, "b:"+h.App+":shared:egress-ip"); e.ExpiresAt.Sub(e.UpdatedAt) != time.Hour || e.Int != 150 {
		t.Fatalf("clamped backoff: %+v", e)
	}

	d := h.Expect(h.Do(http.MethodDelete, url, nil), http.StatusOK)
	if cleared, _ := d.Body["cleared"].([]any); len(cleared) != 2 {
		t.Fatalf("cleared: %s", d.Raw)
	}
	for key := range want {
		if _, ok := mini.KV(h.NS, key); ok {
			t.Fatalf("%s survived the lift", key)
		}
	}
	if _, ok := mini.KV(h.NS, plan.BreakerKey(h.App, "airbnb", "photos")); ok {
		t.Fatalf("the breaker record survived the lift")
	}

	// A node without an unscoped counter (here: a graph in watch) has no
	// window to spend.
	h.WithHistory(t)
	watching := h.Target("w", 10)
	watching["watch"] = map[string]any{"durationSeconds": 3600}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("w"), watching), http.StatusOK)
	if r := h.Expect(h.Do(http.MethodPost, h.GraphURL("w")+"/nodes/limit/backoff", map[string]any{"retryAfterSeconds": 5}), http.StatusUnprocessableEntity); r.Str("field") != "node" {
		t.Fatalf("backoff without counters: %s", r.Raw)
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
		{"unknown node", h.GraphURL("airbnb") + "/nodes/nope/backoff", map[string]any{"retryAfterSeconds": 5}, 404, "node"},
		{"node name with a space", h.GraphURL("airbnb") + "/nodes/a%20b/backoff", map[string]any{"retryAfterSeconds": 5}, 400, "node"},
		{"unparseable JSON", url, `{"retryAfterSeconds":`, 400, ""},
	}
	for _, c := range refusals {
		r := h.Do(http.MethodPost, c.path, c.body)
		if r.Status != c.want || r.Str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %s", c.name, r.Status, r.Str("field"), c.want, c.field, r.Raw)
		}
		h.ErrorBody(r)
	}
	if _, ok := mini.KV(h.NS, plan.BreakerKey(h.App, "airbnb", "photos")); ok {
		t.Fatalf("a refused backoff wrote the breaker record")
	}
}

// The ETA keeps the two backlogs apart, names the binding budget and says
// what it assumes.
func TestETA(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	url := h.GraphURL("airbnb") + "/nodes/prices/eta"
	h.Expect(h.Do(http.MethodGet, url, nil), http.StatusServiceUnavailable)
	h.Run("relay-1", "airbnb", 3)

	items := make([]queen.PushItem, 250)
	for i := range items {
		items[i] = queen.PushItem{Queue: h.Ingress("airbnb", "prices"), Partition: "p0", Payload: json.RawMessage(`{}`)}
	}
	if _, err := h.Client.Push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	a := h.Expect(h.Do(http.MethodGet, url+"?path=prices", nil), http.StatusOK)
	// 250 items at cost 1 against 100 per 1 s window, empty counter: 100 now,
	// the rest in the next two windows → no earlier than 1 s from now.
	if a.Num("waitingForBudget") != 250 || a.Num("waitingForWorkers") != 0 || a.Str("state") != "waiting-budget" ||
		a.Str("boundBy") != "prices-1s" || a.Num("etaSeconds") != 1 || a.Num("aheadCost") != 250 || a.Str("target") != "airbnb.prices" {
		t.Fatalf("eta: %s", a.Raw)
	}
	if !strings.HasPrefix(a.Str("assumes"), "no earlier than") {
		t.Fatalf("assumes: %q", a.Str("assumes"))
	}
	ip := h.Expect(h.Do(http.MethodGet, h.GraphURL("airbnb")+"/nodes/ip/eta", nil), http.StatusOK)
	if ip.Str("path") != "prices" || !strings.Contains(ip.Str("assumes"), "shared") {
		t.Fatalf("ip eta: %s", ip.Raw)
	}
	photos := h.Expect(h.Do(http.MethodGet, h.GraphURL("airbnb")+"/nodes/ip/eta?lane=photos", nil), http.StatusOK)
	if photos.Str("path") != "photos" || !strings.Contains(photos.Str("assumes"), "larger share") {
		t.Fatalf("photos eta: %s", photos.Raw)
	}
	r := h.Expect(h.Do(http.MethodGet, url+"?path=photos", nil), http.StatusNotFound)
	if r.Str("field") != "path" {
		t.Fatalf("unknown path at node: %s", r.Raw)
	}
	h.Expect(h.Do(http.MethodGet, h.GraphURL("airbnb")+"/nodes/zzz/eta", nil), http.StatusNotFound)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/t", h.Target("t", 10)), http.StatusOK)
	h.Run("relay-2", "t", 1)
	if te := h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/targets/t/eta", nil), http.StatusOK); te.Str("node") != "limit" {
		t.Fatalf("target eta: %s", te.Raw)
	}
}

// The graph view sums stage counters across replicas and says whether the
// stored version runs.
func TestGraphViewAcrossReplicas(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/t", h.Target("t", 10)), http.StatusOK)
	stage := func(admitted int64) store.StageStatus {
		return store.StageStatus{Path: "main", Node: "limit", Hop: 0, Counters: store.Counters{Admitted: admitted, Forwarded: admitted, Commits: 1}, LastRefusal: &store.Refusal{Budget: "global", At: admitted}}
	}
	h.Run("relay-a", "t", 0, stage(3))
	v := h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/targets/t", nil), http.StatusOK)
	if v.Body["running"] != false {
		t.Fatalf("a replica on another version counts as running the stored one: %.300s", v.Raw)
	}
	h.Run("relay-b", "t", 1, stage(4))
	v = h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/targets/t", nil), http.StatusOK)
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
	if err := json.Unmarshal(v.Raw, &view); err != nil {
		t.Fatal(err)
	}
	if !view.Running || len(view.Stages) != 1 || view.Stages[0].Counters.Admitted != 7 || view.Stages[0].Counters.Commits != 2 || view.Stages[0].LastRefusal == nil || view.Stages[0].LastRefusal.At != 4 {
		t.Fatalf("view: %.600s", v.Raw)
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

// The product metrics name each node's state and binding budget.
func TestProductMetrics(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	h.Expect(h.Do(http.MethodPost, h.GraphURL("airbnb")+"/nodes/ip/backoff", map[string]any{"retryAfterSeconds": 60}), http.StatusOK)
	if _, err := h.Client.Push(context.Background(), []queen.PushItem{{Queue: h.Ingress("airbnb", "prices"), Partition: "p0", Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	a := h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/metrics", nil), http.StatusOK)
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
	if err := json.Unmarshal(a.Raw, &m); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, tg := range m.Targets {
		states[tg.Name] = tg.State
		if tg.Name == "airbnb.ip" && (tg.BindingBudget == nil || tg.BindingBudget.ID != "ip-10s" || tg.BindingBudget.Utilisation != 1) {
			t.Fatalf("ip binding budget: %s", a.Raw)
		}
	}
	if states["airbnb.ip"] != "breached" || states["airbnb.prices"] != "pacing" || states["airbnb.photos"] != "flowing" {
		t.Fatalf("states %v: %.600s", states, a.Raw)
	}
	h.Expect(h.Do(http.MethodGet, "/v1/apps/nobody/metrics", nil), http.StatusNotFound)
}

// Who held or lifted a node by hand, and why, is recorded in the graph's
// annotations (the markers of Traffic over time); a reason that is too long
// or not text is refused before anything is held, and a lift without a
// body still lifts.
func TestBackoffReasonIsAnnotated(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	url := h.GraphURL("airbnb") + "/nodes/photos/backoff"

	if r := h.Do(http.MethodPost, url, map[string]any{"retryAfterSeconds": 5, "reason": strings.Repeat("r", 600)}); r.Status != http.StatusUnprocessableEntity || r.Str("field") != "reason" {
		t.Fatalf("a 600-byte reason: %d %s", r.Status, r.Raw)
	}
	if r := h.Do(http.MethodDelete, url, map[string]any{"reason": "x", "why": "y"}); r.Status != http.StatusUnprocessableEntity || r.Str("field") != "why" {
		t.Fatalf("a lift body with an unknown field: %d %s", r.Status, r.Raw)
	}
	h.Expect(h.Do(http.MethodPost, url, map[string]any{"retryAfterSeconds": 30, "by": "ann@example.com", "reason": " vendor 429 storm, INC-42 "}), http.StatusOK)
	h.Expect(h.Do(http.MethodDelete, url, map[string]any{"by": "bob@example.com", "reason": "vendor recovered"}), http.StatusOK)
	h.Expect(h.Do(http.MethodPost, url, map[string]any{"retryAfterSeconds": 5}), http.StatusOK)
	h.Expect(h.Do(http.MethodDelete, url, nil), http.StatusOK)

	events, err := db.ConfigEvents(t.Context(), h.App, "airbnb", 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.Change.Node != "" {
			got = append(got, fmt.Sprintf("%s|%s|%s|%s|%d", e.Change.Label, e.Change.Node, e.Change.By, e.Change.Reason, e.Change.Seconds))
		}
	}
	want := []string{ // newest first
		"Backoff lifted|photos|||0",
		"Backoff applied|photos|||5",
		"Backoff lifted|photos|bob@example.com|vendor recovered|0",
		"Backoff applied|photos|ann@example.com|vendor 429 storm, INC-42|30",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("backoff annotations:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	tl := apitest.DecodeAs[wire.Timeline](t, h.Expect(h.Do(http.MethodGet, "/api/apps/"+h.App+"/graphs/airbnb/timeline?minutes=60", nil), http.StatusOK))
	found := false
	for _, e := range tl.Events {
		found = found || (e.Change.Label == "Backoff applied" && e.Change.Reason == "vendor 429 storm, INC-42" && e.Change.By == "ann@example.com" && e.Change.Node == "photos")
	}
	if !found {
		t.Fatalf("the timeline does not carry the backoff annotation: %+v", tl.Events)
	}
}
