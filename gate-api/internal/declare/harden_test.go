package declare_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/miniqueen"
)

// A declare that fails after the read of the stored documents failed must
// not claim nothing serves: the previous version is stored and may run.
func TestDeclareFailureAfterUnreadableStoreSaysThePreviousVersionMayServe(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Broker.RequireMini(t, "failing the kv route").SetError(miniqueen.RouteKV, http.StatusServiceUnavailable)
	doc := h.Shop()
	doc["version"] = 2
	r := h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), doc), http.StatusBadGateway)
	msg := h.ErrorBody(r)
	if strings.Contains(msg, "nothing was stored") || !strings.Contains(msg, "may still serve") || !strings.Contains(msg, "could not be read") {
		t.Fatalf("the 502 after an unreadable store must say the previous version may still serve: %s", msg)
	}
	h.Mini.ClearError(miniqueen.RouteKV)
	got := h.Expect(h.Do(http.MethodGet, h.GraphURL("shop"), nil), http.StatusOK)
	if v := got.Num("version"); v != 1 {
		t.Fatalf("stored version %v after the failed declare, want 1 (unchanged)", v)
	}
}

// A v1 body as users send it names nothing: the route names it.
func TestV1DocumentWithoutNameTakesTheRoutesName(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	body := `{"version":1,"budgets":[{"id":"g","cap":5,"periodSeconds":1,"alignment":"rolling","confidence":"assumed"}],"cost":{"field":"units"}}`
	r := h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/mail", body), http.StatusOK)
	if r.Str("graph") != "mail" || !h.Stored(h.App, "mail") {
		t.Fatalf("v1 target without name: %.400s", r.Raw)
	}
}

// One application cannot name another application's queues silently: a
// Gate-owned queue of another graph is refused by rule, and a queue another
// graph uses is named in a warning — egress-owner included, which gate-api
// must feed with the other stored graphs.
func TestCrossApplicationQueuesAreRefusedOrWarnedByRule(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	other := "/v1/apps/" + h.App + "x/graphs/"
	entry := func(d map[string]any) map[string]any { return d["nodes"].(map[string]any)["limit"].(map[string]any) }
	warned := func(a apitest.Answer, rule string) bool {
		ws, _ := a.Body["warnings"].([]any)
		for _, w := range ws {
			if s, _ := w.(string); strings.HasPrefix(s, "["+rule+"] ") {
				return true
			}
		}
		return false
	}

	// Consuming shop's Gate-owned ingress: refused by name.
	d := h.Target("thief", 10)
	entry(d)["ingress"] = map[string]any{"queue": h.Ingress("shop", "entry")}
	r := h.Expect(h.Do(http.MethodPut, other+"thief", d), http.StatusUnprocessableEntity)
	if r.Str("rule") != "gate-queue" {
		t.Fatalf("ingress on another application's Gate-owned queue: rule %q, want gate-queue: %s", r.Str("rule"), r.Raw)
	}
	// Pushing into shop's Gate-owned ingress, past its budgets: refused.
	d = h.Target("pusher", 10)
	entry(d)["egress"] = h.Ingress("shop", "entry")
	if r := h.Expect(h.Do(http.MethodPut, other+"pusher", d), http.StatusUnprocessableEntity); r.Str("rule") != "gate-queue" {
		t.Fatalf("egress onto another application's Gate-owned queue: %s", r.Raw)
	}
	// Sharing shop's egress: accepted with egress-owner.
	d = h.Target("twin", 10)
	entry(d)["egress"] = h.App + ".shop.out"
	if r := h.Expect(h.Do(http.MethodPut, other+"twin", d), http.StatusOK); !warned(r, "egress-owner") {
		t.Fatalf("two graphs sharing an egress: no egress-owner warning: %s", r.Raw)
	}
	// Consuming shop's egress: accepted with queue-cross-graph.
	d = h.Target("copier", 10)
	entry(d)["ingress"] = map[string]any{"queue": h.App + ".shop.out"}
	if r := h.Expect(h.Do(http.MethodPut, other+"copier", d), http.StatusOK); !warned(r, "queue-cross-graph") {
		t.Fatalf("an ingress on another graph's egress: no queue-cross-graph warning: %s", r.Raw)
	}
}

// A hostile document — 30,000 paths at one node — is refused by the
// product's own bound (worker-total), and a small PUT sent while it is
// being checked is answered and stored: the check holds no lock.
func TestHostileDocumentDoesNotHoldUpASmallPUT(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	doc := h.Target("huge", 10)
	var paths []any
	for i := range 30_000 {
		paths = append(paths, map[string]any{"name": "p" + strconv.Itoa(i), "priority": i % 7, "share": 1, "nodes": []any{"limit"}})
	}
	doc["paths"] = paths
	big, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	bigDone := make(chan apitest.Answer, 1)
	go func() { bigDone <- h.Do(http.MethodPut, h.GraphURL("huge"), big) }()
	small := h.Expect(h.Do(http.MethodPut, h.GraphURL("small"), h.Target("small", 10)), http.StatusOK)
	if small.Num("version") != 1 || !h.Stored(h.App, "small") {
		t.Fatalf("the small PUT beside the hostile one: %.300s", small.Raw)
	}
	r := <-bigDone
	if r.Status != http.StatusUnprocessableEntity || r.Str("rule") != "worker-total" {
		t.Fatalf("30,000 paths: %d rule %q, want 422 worker-total: %.300s", r.Status, r.Str("rule"), r.Raw)
	}
	if h.Stored(h.App, "huge") {
		t.Fatalf("the refused document was stored")
	}
}

// A refused configure says exactly what failed and what is stored and
// running: the version that was not stored, the queue whose configure the
// broker refused, the version the store still holds and the relay
// replicas running it (in the sentence and as storedVersion and
// runningReplicas) — and, with no relay running it, that nothing moves.
func TestFailedProvisioningSaysWhatIsStoredAndRunning(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "failing the configure route")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("t"), h.Target("t", 10)), http.StatusOK)
	doc := h.Target("t", 20)
	doc["version"] = 2
	mini.SetError(miniqueen.RouteConfigure, http.StatusInternalServerError)
	t.Cleanup(func() { mini.ClearError(miniqueen.RouteConfigure) })

	r := h.Expect(h.Do(http.MethodPut, h.GraphURL("t"), doc), http.StatusBadGateway)
	msg := h.ErrorBody(r)
	ingress := h.Ingress("t", "limit")
	for _, want := range []string{"version 2 was not stored", "provisioning failed at the ingress queue " + ingress, "unchanged at version 1", "no gate-relay replica reports running it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the 502 does not say %q: %s", want, msg)
		}
	}
	if r.Str("queue") != ingress || r.Num("storedVersion") != 1 || r.Body["runningReplicas"] != nil {
		t.Errorf("the 502 names queue %q, storedVersion %v, runningReplicas %v; want %s, 1, none", r.Str("queue"), r.Body["storedVersion"], r.Body["runningReplicas"], ingress)
	}

	h.Run("relay-1", "t", 1)
	r = h.Expect(h.Do(http.MethodPut, h.GraphURL("t"), doc), http.StatusBadGateway)
	if msg := h.ErrorBody(r); !strings.Contains(msg, "unchanged at version 1, and gate-relay replica relay-1 runs it") {
		t.Errorf("with relay-1 running version 1, the 502 says: %s", msg)
	}
	if rr, _ := r.Body["runningReplicas"].([]any); len(rr) != 1 || rr[0] != "relay-1" {
		t.Errorf("runningReplicas %v, want [relay-1]", r.Body["runningReplicas"])
	}
	if got := h.Expect(h.Do(http.MethodGet, h.GraphURL("t"), nil), http.StatusOK); got.Num("version") != 1 {
		t.Fatalf("stored version %v after the failed declare, want 1", got.Num("version"))
	}
}
