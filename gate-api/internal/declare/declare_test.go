package declare_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// The seed's airbnb document: declared, provisioned, read back, re-declared
// hot at the same version, refused at the same version when a node goes,
// accepted with a bump, deleted with its queues kept.
func TestAirbnbLifecycle(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	url := h.GraphURL("airbnb")

	a := h.Expect(h.Do(http.MethodPut, url, h.Airbnb(3)), http.StatusOK)
	if a.Body["ok"] != true || a.Str("application") != h.App || a.Str("graph") != "airbnb" || a.Num("version") != 3 {
		t.Fatalf("declare answer: %.400s", a.Raw)
	}
	var resp plan.Response
	if err := json.Unmarshal(a.Raw, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Trust != plan.Trust || len(resp.Resolved.Stages) != 4 || len(resp.Resolved.Nodes) != 3 {
		t.Fatalf("resolved plan: %+v", resp.Resolved)
	}
	for _, n := range resp.Resolved.Nodes {
		if n.Node == "ip" && (n.Budgets[0].Key != "b:"+h.App+":shared:egress-ip" || n.Budgets[0].Ceilings["photos"] != 75 || n.Budgets[0].Ceilings["prices"] != 150) {
			t.Fatalf("ip budget: %+v", n.Budgets[0])
		}
	}

	// Provisioning: Gate-owned queues carry the retention policy; the
	// application's ingress is untouched; the egress exists.
	for _, q := range []string{h.Ingress("airbnb", "prices"), plan.InteriorQueue(h.App, "airbnb", "ip")} {
		qi, err := h.Client.Queue(context.Background(), q)
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
		if detail.Queue.Namespace != "gate."+h.App || c["retentionEnabled"] != true || c["completedRetentionSeconds"] != float64(2592000) ||
			c["retentionSeconds"] != float64(0) || c["maxWaitTimeSeconds"] != float64(0) || c["leaseTime"] != float64(10) || c["retryLimit"] != float64(3) {
			t.Fatalf("queue %s options: namespace %q config %v", q, detail.Queue.Namespace, c)
		}
	}
	if h.QueueExists(h.App + ".airbnb.photos.in") {
		t.Fatalf("the application-owned ingress queue was created or configured")
	}
	if !h.QueueExists(h.App + ".airbnb.out") {
		t.Fatalf("the egress queue was not created")
	}
	if !h.Stored(h.App, "airbnb") {
		t.Fatalf("document not stored")
	}

	v := h.Expect(h.Do(http.MethodGet, url, nil), http.StatusOK)
	if v.Num("version") != 3 || v.Body["persisted"] != true || v.Body["running"] != false || v.Body["spec"] == nil {
		t.Fatalf("graph view: %.400s", v.Raw)
	}

	// Hot change at the same version: a count.
	doc := h.Airbnb(3)
	doc["nodes"].(map[string]any)["prices"].(map[string]any)["budgets"].([]any)[0].(map[string]any)["count"] = 80
	h.Expect(h.Do(http.MethodPut, url, doc), http.StatusOK)

	// Removing a node at the same version needs a bump: 409, nothing changes.
	cut := h.Airbnb(3)
	delete(cut["nodes"].(map[string]any), "photos")
	cut["paths"] = cut["paths"].([]any)[:1]
	r := h.Expect(h.Do(http.MethodPut, url, cut), http.StatusConflict)
	if r.Str("rule") != "version-bump" || !strings.Contains(h.ErrorBody(r), "bump version above 3") {
		t.Fatalf("version refusal: %.400s", r.Raw)
	}
	got, _, _ := h.Store.Get(context.Background(), h.App, "airbnb")
	if !strings.Contains(string(got.Body), "photos") {
		t.Fatalf("a refused declare changed the stored document: %s", got.Body)
	}
	cut["version"] = 4
	h.Expect(h.Do(http.MethodPut, url, cut), http.StatusOK)

	d := h.Expect(h.Do(http.MethodDelete, url, nil), http.StatusOK)
	if d.Body["ok"] != true || d.Body["deleted"] != true || d.Body["registered"] != false {
		t.Fatalf("delete answer: %.400s", d.Raw)
	}
	if h.Stored(h.App, "airbnb") {
		t.Fatalf("document still stored after DELETE")
	}
	if !h.QueueExists(h.Ingress("airbnb", "prices")) {
		t.Fatalf("DELETE removed a queue")
	}
	h.Expect(h.Do(http.MethodGet, url, nil), http.StatusNotFound)
	h.Expect(h.Do(http.MethodDelete, url, nil), http.StatusNotFound)
}

// Two graphs of one application cannot read one ingress queue; shared keys
// of two graphs are one counter.
func TestCrossGraphRules(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	named := func(version int) map[string]any {
		d := h.Target("x", 10)
		n := d["nodes"].(map[string]any)["limit"].(map[string]any)
		n["ingress"] = map[string]any{"queue": h.App + ".shared.in"}
		n["budgets"] = []any{map[string]any{"id": "g", "count": 10, "timeMs": 1000, "sharedKey": "vendor"}}
		d["version"] = version
		return d
	}
	a := h.Expect(h.Do(http.MethodPut, h.GraphURL("one"), named(1)), http.StatusOK)
	r := h.Expect(h.Do(http.MethodPut, h.GraphURL("two"), named(1)), http.StatusConflict)
	if r.Str("rule") != "ingress-owner" || !strings.Contains(h.ErrorBody(r), "declared on another replica") {
		t.Fatalf("ingress-owner refusal: %.400s", r.Raw)
	}
	if h.Stored(h.App, "two") {
		t.Fatalf("the refused graph was stored")
	}
	b := h.Expect(h.Do(http.MethodPut, h.GraphURL("three"), withShared(h, h.Target("y", 5), "vendor")), http.StatusOK)
	key := func(a apitest.Answer) string {
		var resp plan.Response
		_ = json.Unmarshal(a.Raw, &resp)
		return resp.Resolved.Nodes[0].Budgets[0].Key
	}
	if key(a) != "b:"+h.App+":shared:vendor" || key(a) != key(b) {
		t.Fatalf("shared keys differ: %q vs %q", key(a), key(b))
	}
}

func withShared(h *apitest.Harness, d map[string]any, shared string) map[string]any {
	n := d["nodes"].(map[string]any)["limit"].(map[string]any)
	n["budgets"].([]any)[0].(map[string]any)["sharedKey"] = shared
	return d
}

// A v1 target is mapped, answered with its migration warnings, and stored
// in v2 shape.
func TestDeclareV1(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	v1 := `{"application":"demo","name":"notifications","version":3,
	  "budgets":[{"id":"global","cap":100,"periodSeconds":1,"alignment":"calendar","confidence":"assumed"}],
	  "cost":{"field":"units","default":1,"max":1}}`
	a := h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/notifications", v1), http.StatusOK)
	if a.Body["migrated"] != true {
		t.Fatalf("not marked migrated: %.300s", a.Raw)
	}
	if m, _ := a.Body["migration"].([]any); len(m) == 0 {
		t.Fatalf("no migration warnings: %.300s", a.Raw)
	}
	d, found, err := h.Store.Get(context.Background(), h.App, "notifications")
	if err != nil || !found {
		t.Fatalf("not stored: %v", err)
	}
	doc, err := graph.Parse(d.Body)
	if err != nil {
		t.Fatalf("stored document is not v2: %v: %s", err, d.Body)
	}
	if doc.Application != h.App || doc.Graph != "notifications" || doc.Version != 3 {
		t.Fatalf("stored identity: %s/%s v%d", doc.Application, doc.Graph, doc.Version)
	}
}

// Provisioning and storing failures answer 502 and say what still serves.
func TestDeclareBrokerFailures(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "fault injection")
	url := h.GraphURL("t")

	mini.SetError("configure", http.StatusInternalServerError)
	r := h.Expect(h.Do(http.MethodPut, url, h.Target("t", 10)), http.StatusBadGateway)
	if msg := h.ErrorBody(r); !strings.Contains(msg, "provisioning failed") || !strings.Contains(msg, "nothing is stored under") {
		t.Fatalf("message: %s", msg)
	}
	if h.Stored(h.App, "t") {
		t.Fatalf("stored after a failed provisioning")
	}
	mini.ClearError("configure")
	h.Expect(h.Do(http.MethodPut, url, h.Target("t", 10)), http.StatusOK)

	mini.SetError("configure", http.StatusInternalServerError)
	r = h.Expect(h.Do(http.MethodPut, url, h.Target("t", 20)), http.StatusBadGateway)
	if msg := h.ErrorBody(r); !strings.Contains(msg, "unchanged at version 1") {
		t.Fatalf("message: %s", msg)
	}
	mini.ClearError("configure")

	// With kv failing the stored version cannot be read, so nothing is
	// provisioned or stored (a declaration is never stored unchecked
	// against the stored version: version-order).
	mini.SetError("kv", http.StatusInternalServerError)
	r = h.Expect(h.Do(http.MethodPut, url, h.Target("t", 30)), http.StatusBadGateway)
	if msg := h.ErrorBody(r); !strings.Contains(msg, "could not be read") || !strings.Contains(msg, "nothing was provisioned or stored") || r.Str("code") != "broker-failed" {
		t.Fatalf("message: %s", r.Raw)
	}
	h.Expect(h.Do(http.MethodDelete, url, nil), http.StatusBadGateway)
	mini.ClearError("kv")
	got, _, _ := h.Store.Get(context.Background(), h.App, "t")
	if !strings.Contains(string(got.Body), `"count":10`) {
		t.Fatalf("a failed declare changed the stored document: %s", got.Body)
	}
}

// Flat routes pin PUT to "default" and resolve reads across applications.
func TestFlatRoutes(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	name := "f" + apitest.RandomHex(3)
	a := h.Expect(h.Do(http.MethodPut, "/v1/graphs/"+name, h.Target(name, 10)), http.StatusOK)
	if a.Str("application") != "default" {
		t.Fatalf("flat PUT application: %q", a.Str("application"))
	}
	h.Expect(h.Do(http.MethodGet, "/v1/graphs/"+name, nil), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL(name), h.Target(name+"b", 10)), http.StatusOK)
	r := h.Expect(h.Do(http.MethodGet, "/v1/targets/"+name, nil), http.StatusConflict)
	if !strings.Contains(h.ErrorBody(r), h.App) {
		t.Fatalf("ambiguity not named: %s", r.Raw)
	}
	h.Expect(h.Do(http.MethodDelete, "/v1/graphs/"+name, nil), http.StatusOK)
	if h.Stored("default", name) || !h.Stored(h.App, name) {
		t.Fatalf("flat DELETE removed the wrong document")
	}
	h.Expect(h.Do(http.MethodGet, "/v1/graphs/"+name, nil), http.StatusOK)
}

// Sync declares every target named in the array, then reaps the
// application's other one-node graphs — only when nothing was refused.
func TestSyncTargets(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	url := "/v1/apps/" + h.App + "/targets"
	named := func(name string) map[string]any { d := h.Target(name, 10); d["graph"] = name; return d }
	a := h.Expect(h.Do(http.MethodPut, url, []any{named("one"), named("two")}), http.StatusOK)
	if a.Body["ok"] != true || len(a.Body["applied"].([]any)) != 2 {
		t.Fatalf("sync: %.400s", a.Raw)
	}
	r := h.Expect(h.Do(http.MethodPut, url, []any{named("one"), h.Target("nameless", 5)}), http.StatusOK)
	if r.Body["ok"] != false || len(r.Body["refused"].([]any)) != 1 || len(r.Body["removed"].([]any)) != 0 || !h.Stored(h.App, "two") {
		t.Fatalf("a refusal must stop the reaping: %.400s", r.Raw)
	}
	r = h.Expect(h.Do(http.MethodPut, url, []any{named("one")}), http.StatusOK)
	if r.Body["ok"] != true || len(r.Body["removed"].([]any)) != 1 || h.Stored(h.App, "two") || !h.Stored(h.App, "one") {
		t.Fatalf("reap: %.400s", r.Raw)
	}
	h.Expect(h.Do(http.MethodPut, url, map[string]any{"graph": "x"}), http.StatusUnprocessableEntity)
}

// Watch's startedAt belongs to the server and survives re-declarations.
func TestWatchStartedAtKept(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	doc := h.Target("w", 10)
	doc["watch"] = map[string]any{"durationSeconds": 3600, "startedAt": 5}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("w"), doc), http.StatusOK)
	first, _, _ := h.Store.Get(context.Background(), h.App, "w")
	d1, err := graph.Parse(first.Body)
	if err != nil || d1.Watch == nil || d1.Watch.StartedAt == nil || *d1.Watch.StartedAt < 1_000_000_000_000 {
		t.Fatalf("startedAt not set by the server: %s", first.Body)
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("w"), doc), http.StatusOK)
	second, _, _ := h.Store.Get(context.Background(), h.App, "w")
	d2, _ := graph.Parse(second.Body)
	if *d2.Watch.StartedAt != *d1.Watch.StartedAt {
		t.Fatalf("startedAt moved: %d → %d", *d1.Watch.StartedAt, *d2.Watch.StartedAt)
	}
}
