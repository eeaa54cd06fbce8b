package server

import (
	"strings"

	"github.com/queen-mq/gate/libs/miniqueen"
	"net/http"
	"testing"
)

// The regression suite of issue 14 (hardening): each test reproduces one
// report from trying Gate as a user, an operator or an attacker.

// A push retried with the same txn and no partition must collapse on the
// broker's dedup: it lands on the partition the txn picks, every time.
func TestPushTxnWithoutPartitionIsStoredOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	h.run("relay-1", "shop", 1)
	push := h.graphURL("shop") + "/nodes/entry/push"
	parts := map[string]bool{}
	pushed := 0
	for range 3 {
		a := h.expect(h.do(http.MethodPost, push, map[string]any{"txn": "order-42", "payload": map[string]any{"units": 1}}), http.StatusOK)
		parts[a.str("partition")] = true
		pushed += int(a.num("pushed"))
	}
	if n := len(h.messages(h.ingress("shop", "entry"))); n != 1 || pushed != 1 || len(parts) != 1 {
		t.Fatalf("three pushes of txn order-42: %d stored, pushed sum %d, partitions %v; want 1, 1, one partition", n, pushed, parts)
	}
	// Different txns still spread over the width.
	for i := range 16 {
		h.expect(h.do(http.MethodPost, push, map[string]any{"txn": "spread-" + string(rune('a'+i))}), http.StatusOK)
	}
	if n := len(h.mini.Partitions(h.ingress("shop", "entry"))); n < 2 {
		t.Fatalf("16 distinct txns landed on %d partition(s)", n)
	}
}

// A declare that fails after the read of the stored documents failed must
// not claim nothing serves: the previous version is stored and may run.
func TestDeclareFailureAfterUnreadableStoreSaysThePreviousVersionMayServe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	h.broker.RequireMini(t, "failing the kv route").SetError(miniqueen.RouteKV, http.StatusServiceUnavailable)
	doc := h.shop()
	doc["version"] = 2
	r := h.expect(h.do(http.MethodPut, h.graphURL("shop"), doc), http.StatusBadGateway)
	msg := h.errorBody(r)
	if strings.Contains(msg, "nothing was stored") || !strings.Contains(msg, "may still serve") || !strings.Contains(msg, "could not be read") {
		t.Fatalf("the 502 after an unreadable store must say the previous version may still serve: %s", msg)
	}
	h.mini.ClearError(miniqueen.RouteKV)
	got := h.expect(h.do(http.MethodGet, h.graphURL("shop"), nil), http.StatusOK)
	if v := got.num("version"); v != 1 {
		t.Fatalf("stored version %v after the failed declare, want 1 (unchanged)", v)
	}
}

// A v1 body as users send it names nothing: the route names it.
func TestV1DocumentWithoutNameTakesTheRoutesName(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := `{"version":1,"budgets":[{"id":"g","cap":5,"periodSeconds":1,"alignment":"rolling","confidence":"assumed"}],"cost":{"field":"units"}}`
	r := h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/mail", body), http.StatusOK)
	if r.str("graph") != "mail" || !h.stored(h.app, "mail") {
		t.Fatalf("v1 target without name: %.400s", r.raw)
	}
}

// One application cannot name another application's queues silently: a
// Gate-owned queue of another graph is refused by rule, and a queue another
// graph uses is named in a warning — egress-owner included, which gate-api
// must feed with the other stored graphs.
func TestCrossApplicationQueuesAreRefusedOrWarnedByRule(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	other := "/v1/apps/" + h.app + "x/graphs/"
	entry := func(d map[string]any) map[string]any { return d["nodes"].(map[string]any)["limit"].(map[string]any) }
	warned := func(a answer, rule string) bool {
		ws, _ := a.body["warnings"].([]any)
		for _, w := range ws {
			if s, _ := w.(string); strings.HasPrefix(s, "["+rule+"] ") {
				return true
			}
		}
		return false
	}

	// Consuming shop's Gate-owned ingress: refused by name.
	d := h.target("thief", 10)
	entry(d)["ingress"] = map[string]any{"queue": h.ingress("shop", "entry")}
	r := h.expect(h.do(http.MethodPut, other+"thief", d), http.StatusUnprocessableEntity)
	if r.str("rule") != "gate-queue" {
		t.Fatalf("ingress on another application's Gate-owned queue: rule %q, want gate-queue: %s", r.str("rule"), r.raw)
	}
	// Pushing into shop's Gate-owned ingress, past its budgets: refused.
	d = h.target("pusher", 10)
	entry(d)["egress"] = h.ingress("shop", "entry")
	if r := h.expect(h.do(http.MethodPut, other+"pusher", d), http.StatusUnprocessableEntity); r.str("rule") != "gate-queue" {
		t.Fatalf("egress onto another application's Gate-owned queue: %s", r.raw)
	}
	// Sharing shop's egress: accepted with egress-owner.
	d = h.target("twin", 10)
	entry(d)["egress"] = h.app + ".shop.out"
	if r := h.expect(h.do(http.MethodPut, other+"twin", d), http.StatusOK); !warned(r, "egress-owner") {
		t.Fatalf("two graphs sharing an egress: no egress-owner warning: %s", r.raw)
	}
	// Consuming shop's egress: accepted with queue-cross-graph.
	d = h.target("copier", 10)
	entry(d)["ingress"] = map[string]any{"queue": h.app + ".shop.out"}
	if r := h.expect(h.do(http.MethodPut, other+"copier", d), http.StatusOK); !warned(r, "queue-cross-graph") {
		t.Fatalf("an ingress on another graph's egress: no queue-cross-graph warning: %s", r.raw)
	}
}
