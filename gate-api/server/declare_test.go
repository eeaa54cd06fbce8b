package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// The seed's airbnb document: declared, provisioned, read back, re-declared
// hot at the same version, refused at the same version when a node goes,
// accepted with a bump, deleted with its queues kept.
func TestAirbnbLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.graphURL("airbnb")

	a := h.expect(h.do(http.MethodPut, url, h.airbnb(3)), http.StatusOK)
	if a.body["ok"] != true || a.str("application") != h.app || a.str("graph") != "airbnb" || a.num("version") != 3 {
		t.Fatalf("declare answer: %.400s", a.raw)
	}
	var resp plan.Response
	if err := json.Unmarshal(a.raw, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Trust != plan.Trust || len(resp.Resolved.Stages) != 4 || len(resp.Resolved.Nodes) != 3 {
		t.Fatalf("resolved plan: %+v", resp.Resolved)
	}
	for _, n := range resp.Resolved.Nodes {
		if n.Node == "ip" && (n.Budgets[0].Key != "b:"+h.app+":shared:egress-ip" || n.Budgets[0].Ceilings["photos"] != 75 || n.Budgets[0].Ceilings["prices"] != 150) {
			t.Fatalf("ip budget: %+v", n.Budgets[0])
		}
	}

	// Provisioning: Gate-owned queues carry the retention policy; the
	// application's ingress is untouched; the egress exists.
	for _, q := range []string{h.ingress("airbnb", "prices"), plan.InteriorQueue(h.app, "airbnb", "ip")} {
		qi, err := h.client.Queue(context.Background(), q)
		if err != nil {
			t.Fatalf("queue %s not provisioned: %v", q, err)
		}
		var detail struct {
			Queue struct {
				Namespace string         `json:"namespace"`
				Config    map[string]any `json:"config"`
			} `json:"queue"`
		}
		if err := json.Unmarshal(qi.Raw, &detail); err != nil {
			t.Fatal(err)
		}
		c := detail.Queue.Config
		if detail.Queue.Namespace != "gate."+h.app || c["retentionEnabled"] != true || c["completedRetentionSeconds"] != float64(2592000) ||
			c["retentionSeconds"] != float64(0) || c["maxWaitTimeSeconds"] != float64(0) || c["leaseTime"] != float64(10) || c["retryLimit"] != float64(3) {
			t.Fatalf("queue %s options: namespace %q config %v", q, detail.Queue.Namespace, c)
		}
	}
	if h.queueExists(h.app + ".airbnb.photos.in") {
		t.Fatalf("the application-owned ingress queue was created or configured")
	}
	if !h.queueExists(h.app + ".airbnb.out") {
		t.Fatalf("the egress queue was not created")
	}
	if !h.stored(h.app, "airbnb") {
		t.Fatalf("document not stored")
	}

	v := h.expect(h.do(http.MethodGet, url, nil), http.StatusOK)
	if v.num("version") != 3 || v.body["persisted"] != true || v.body["running"] != false || v.body["spec"] == nil {
		t.Fatalf("graph view: %.400s", v.raw)
	}

	// Hot change at the same version: a count.
	doc := h.airbnb(3)
	doc["nodes"].(map[string]any)["prices"].(map[string]any)["budgets"].([]any)[0].(map[string]any)["count"] = 80
	h.expect(h.do(http.MethodPut, url, doc), http.StatusOK)

	// Removing a node at the same version needs a bump: 409, nothing changes.
	cut := h.airbnb(3)
	delete(cut["nodes"].(map[string]any), "photos")
	cut["paths"] = cut["paths"].([]any)[:1]
	r := h.expect(h.do(http.MethodPut, url, cut), http.StatusConflict)
	if r.str("rule") != "version-bump" || !strings.Contains(h.errorBody(r), "bump version above 3") {
		t.Fatalf("version refusal: %.400s", r.raw)
	}
	got, _, _ := h.store.Get(context.Background(), h.app, "airbnb")
	if !strings.Contains(string(got.Body), "photos") {
		t.Fatalf("a refused declare changed the stored document: %s", got.Body)
	}
	cut["version"] = 4
	h.expect(h.do(http.MethodPut, url, cut), http.StatusOK)

	d := h.expect(h.do(http.MethodDelete, url, nil), http.StatusOK)
	if d.body["ok"] != true || d.body["deleted"] != true || d.body["registered"] != false {
		t.Fatalf("delete answer: %.400s", d.raw)
	}
	if h.stored(h.app, "airbnb") {
		t.Fatalf("document still stored after DELETE")
	}
	if !h.queueExists(h.ingress("airbnb", "prices")) {
		t.Fatalf("DELETE removed a queue")
	}
	h.expect(h.do(http.MethodGet, url, nil), http.StatusNotFound)
	h.expect(h.do(http.MethodDelete, url, nil), http.StatusNotFound)
}

// Two graphs of one application cannot read one ingress queue; shared keys
// of two graphs are one counter.
func TestCrossGraphRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	named := func(version int) map[string]any {
		d := h.target("x", 10)
		n := d["nodes"].(map[string]any)["limit"].(map[string]any)
		n["ingress"] = map[string]any{"queue": h.app + ".shared.in"}
		n["budgets"] = []any{map[string]any{"id": "g", "count": 10, "timeMs": 1000, "sharedKey": "vendor"}}
		d["version"] = version
		return d
	}
	a := h.expect(h.do(http.MethodPut, h.graphURL("one"), named(1)), http.StatusOK)
	r := h.expect(h.do(http.MethodPut, h.graphURL("two"), named(1)), http.StatusConflict)
	if r.str("rule") != "ingress-owner" || !strings.Contains(h.errorBody(r), "declared on another replica") {
		t.Fatalf("ingress-owner refusal: %.400s", r.raw)
	}
	if h.stored(h.app, "two") {
		t.Fatalf("the refused graph was stored")
	}
	b := h.expect(h.do(http.MethodPut, h.graphURL("three"), h.withShared(h.target("y", 5), "vendor")), http.StatusOK)
	key := func(a answer) string {
		var resp plan.Response
		_ = json.Unmarshal(a.raw, &resp)
		return resp.Resolved.Nodes[0].Budgets[0].Key
	}
	if key(a) != "b:"+h.app+":shared:vendor" || key(a) != key(b) {
		t.Fatalf("shared keys differ: %q vs %q", key(a), key(b))
	}
}

func (h *harness) withShared(d map[string]any, shared string) map[string]any {
	n := d["nodes"].(map[string]any)["limit"].(map[string]any)
	n["budgets"].([]any)[0].(map[string]any)["sharedKey"] = shared
	return d
}

// A v1 target is mapped, answered with its migration warnings, and stored
// in v2 shape.
func TestDeclareV1(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v1 := `{"application":"demo","name":"notifications","version":3,
	  "budgets":[{"id":"global","cap":100,"periodSeconds":1,"alignment":"calendar","confidence":"assumed"}],
	  "cost":{"field":"units","default":1,"max":1}}`
	a := h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/notifications", v1), http.StatusOK)
	if a.body["migrated"] != true {
		t.Fatalf("not marked migrated: %.300s", a.raw)
	}
	if m, _ := a.body["migration"].([]any); len(m) == 0 {
		t.Fatalf("no migration warnings: %.300s", a.raw)
	}
	d, found, err := h.store.Get(context.Background(), h.app, "notifications")
	if err != nil || !found {
		t.Fatalf("not stored: %v", err)
	}
	doc, err := graph.Parse(d.Body)
	if err != nil {
		t.Fatalf("stored document is not v2: %v: %s", err, d.Body)
	}
	if doc.Application != h.app || doc.Graph != "notifications" || doc.Version != 3 {
		t.Fatalf("stored identity: %s/%s v%d", doc.Application, doc.Graph, doc.Version)
	}
}

// Provisioning and storing failures answer 502 and say what still serves.
func TestDeclareBrokerFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mini := h.broker.RequireMini(t, "fault injection")
	url := h.graphURL("t")

	mini.SetError("configure", http.StatusInternalServerError)
	r := h.expect(h.do(http.MethodPut, url, h.target("t", 10)), http.StatusBadGateway)
	if msg := h.errorBody(r); !strings.Contains(msg, "provisioning failed") || !strings.Contains(msg, "nothing was stored") {
		t.Fatalf("message: %s", msg)
	}
	if h.stored(h.app, "t") {
		t.Fatalf("stored after a failed provisioning")
	}
	mini.ClearError("configure")
	h.expect(h.do(http.MethodPut, url, h.target("t", 10)), http.StatusOK)

	mini.SetError("configure", http.StatusInternalServerError)
	r = h.expect(h.do(http.MethodPut, url, h.target("t", 20)), http.StatusBadGateway)
	if msg := h.errorBody(r); !strings.Contains(msg, "still serving version 1") {
		t.Fatalf("message: %s", msg)
	}
	mini.ClearError("configure")

	mini.SetError("kv", http.StatusInternalServerError)
	r = h.expect(h.do(http.MethodPut, url, h.target("t", 30)), http.StatusBadGateway)
	if msg := h.errorBody(r); !strings.Contains(msg, "storing the document") {
		t.Fatalf("message: %s", msg)
	}
	h.expect(h.do(http.MethodDelete, url, nil), http.StatusBadGateway)
	mini.ClearError("kv")
	got, _, _ := h.store.Get(context.Background(), h.app, "t")
	if !strings.Contains(string(got.Body), `"count":10`) {
		t.Fatalf("a failed declare changed the stored document: %s", got.Body)
	}
}

// Flat routes pin PUT to "default" and resolve reads across applications.
func TestFlatRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	name := "f" + randomHex(3)
	a := h.expect(h.do(http.MethodPut, "/v1/graphs/"+name, h.target(name, 10)), http.StatusOK)
	if a.str("application") != "default" {
		t.Fatalf("flat PUT application: %q", a.str("application"))
	}
	h.expect(h.do(http.MethodGet, "/v1/graphs/"+name, nil), http.StatusOK)
	h.expect(h.do(http.MethodPut, h.graphURL(name), h.target(name+"b", 10)), http.StatusOK)
	r := h.expect(h.do(http.MethodGet, "/v1/targets/"+name, nil), http.StatusConflict)
	if !strings.Contains(h.errorBody(r), h.app) {
		t.Fatalf("ambiguity not named: %s", r.raw)
	}
	h.expect(h.do(http.MethodDelete, "/v1/graphs/"+name, nil), http.StatusOK)
	if h.stored("default", name) || !h.stored(h.app, name) {
		t.Fatalf("flat DELETE removed the wrong document")
	}
	h.expect(h.do(http.MethodGet, "/v1/graphs/"+name, nil), http.StatusOK)
}

// Sync declares every target named in the array, then reaps the
// application's other one-node graphs — only when nothing was refused.
func TestSyncTargets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := "/v1/apps/" + h.app + "/targets"
	named := func(name string) map[string]any { d := h.target(name, 10); d["graph"] = name; return d }
	a := h.expect(h.do(http.MethodPut, url, []any{named("one"), named("two")}), http.StatusOK)
	if a.body["ok"] != true || len(a.body["applied"].([]any)) != 2 {
		t.Fatalf("sync: %.400s", a.raw)
	}
	r := h.expect(h.do(http.MethodPut, url, []any{named("one"), h.target("nameless", 5)}), http.StatusOK)
	if r.body["ok"] != false || len(r.body["refused"].([]any)) != 1 || len(r.body["removed"].([]any)) != 0 || !h.stored(h.app, "two") {
		t.Fatalf("a refusal must stop the reaping: %.400s", r.raw)
	}
	r = h.expect(h.do(http.MethodPut, url, []any{named("one")}), http.StatusOK)
	if r.body["ok"] != true || len(r.body["removed"].([]any)) != 1 || h.stored(h.app, "two") || !h.stored(h.app, "one") {
		t.Fatalf("reap: %.400s", r.raw)
	}
	h.expect(h.do(http.MethodPut, url, map[string]any{"graph": "x"}), http.StatusUnprocessableEntity)
}

// Watch's startedAt belongs to the server and survives re-declarations.
func TestWatchStartedAtKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	withHistory(t, h)
	doc := h.target("w", 10)
	doc["watch"] = map[string]any{"durationSeconds": 3600, "startedAt": 5}
	h.expect(h.do(http.MethodPut, h.graphURL("w"), doc), http.StatusOK)
	first, _, _ := h.store.Get(context.Background(), h.app, "w")
	d1, err := graph.Parse(first.Body)
	if err != nil || d1.Watch == nil || d1.Watch.StartedAt == nil || *d1.Watch.StartedAt < 1_000_000_000_000 {
		t.Fatalf("startedAt not set by the server: %s", first.Body)
	}
	h.expect(h.do(http.MethodPut, h.graphURL("w"), doc), http.StatusOK)
	second, _, _ := h.store.Get(context.Background(), h.app, "w")
	d2, _ := graph.Parse(second.Body)
	if *d2.Watch.StartedAt != *d1.Watch.StartedAt {
		t.Fatalf("startedAt moved: %d → %d", *d1.Watch.StartedAt, *d2.Watch.StartedAt)
	}
}
