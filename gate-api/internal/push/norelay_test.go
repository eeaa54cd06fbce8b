package push_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/wire"
)

// Ingest never depends on a relay: a graph declared while no gate-relay
// replica runs it takes pushes on every push route and re-entries, queues
// them in its ingress queue (a durable buffer: waiting is not failing),
// and says in the body and the Gate-Relay header that no relay runs it
// right now. Once a relay reports running it, the answers say so.
func TestIngestQueuesWhenNoRelayRunsTheGraph(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/one", h.Target("one", 10)), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	item := map[string]any{"rooms": 2, "_gate": map[string]any{"graph": "airbnb", "path": "prices", "hop": 1, "node": "ip"}}
	routes := []struct {
		name, path, graph, queue string
		body                     map[string]any
	}{
		{"push", h.GraphURL("shop") + "/nodes/entry/push", "shop", h.Ingress("shop", "entry"), map[string]any{"partition": "p-1", "payload": map[string]any{"units": 1}}},
		{"flat push", "/v1/graphs/shop/nodes/entry/push", "shop", h.Ingress("shop", "entry"), map[string]any{"partition": "p-2"}},
		{"target push", "/v1/apps/" + h.App + "/targets/one/lanes/main/push", "one", h.Ingress("one", "limit"), map[string]any{"partition": "p-1"}},
		{"re-entry", h.GraphURL("airbnb") + "/reenter", "airbnb", h.Ingress("airbnb", "prices"), map[string]any{"payload": item, "txn": "orig-1", "partition": "p-1"}},
	}
	for _, rt := range routes {
		before := len(h.Messages(rt.queue))
		a := h.Do(http.MethodPost, rt.path, rt.body)
		if a.Status != http.StatusOK {
			t.Fatalf("%s to a graph no relay runs: %d %s, want 200", rt.name, a.Status, a.Raw)
		}
		if a.Body["running"] != false || a.Str("runningNote") != wire.NoRelayNote || a.Num("pushed") != 1 {
			t.Errorf("%s: %s, want pushed 1, running false and runningNote %q", rt.name, a.Raw, wire.NoRelayNote)
		}
		if got := a.Header.Get(wire.RelayHeader); got != wire.RelayNone {
			t.Errorf("%s: %s: %q, want %q", rt.name, wire.RelayHeader, got, wire.RelayNone)
		}
		if n := len(h.Messages(rt.queue)) - before; n != 1 {
			t.Errorf("%s: %d new items in the ingress queue %s, want the one pushed", rt.name, n, rt.queue)
		}
	}
	// The diagnostics say the same words.
	d := apitest.DecodeAs[wire.Diagnostics](t, h.Expect(h.Do(http.MethodGet, "/api/apps/"+h.App+"/graphs/shop/diagnostics", nil), http.StatusOK))
	if len(d.Issues) == 0 || d.Issues[0].Kind != wire.FindingStopped || !strings.Contains(d.Issues[0].Title, wire.NoRelayNote) {
		t.Errorf("diagnostics of a graph no relay runs: %+v, want a stopped finding saying %q", d.Issues, wire.NoRelayNote)
	}
	// A relay reports running them: the same routes say so.
	h.Run("relay-1", "shop", 1)
	h.Run("relay-2", "one", 1)
	h.Run("relay-3", "airbnb", 3)
	for i, rt := range routes {
		body := rt.body
		if rt.name == "re-entry" {
			body = map[string]any{"payload": item, "txn": "orig-" + strconv.Itoa(i+2)}
		}
		a := h.Expect(h.Do(http.MethodPost, rt.path, body), http.StatusOK)
		if a.Body["running"] != true || a.Body["runningNote"] != nil || a.Header.Get(wire.RelayHeader) != wire.RelayRunning {
			t.Errorf("%s to a graph a relay runs: %s (%s %q), want running true, no note, %q", rt.name, a.Raw, wire.RelayHeader, a.Header.Get(wire.RelayHeader), wire.RelayRunning)
		}
	}
}

// 503 is for a broker that cannot take the item: a push or re-entry whose
// broker call fails (a server error, unavailable, rate-limited) answers 503
// push-unavailable with Retry-After and queues nothing, whether or not a
// relay runs the graph; a broker that refuses the item as bad input
// answers 502 push-failed (the same item would be refused again).
func TestABrokerThatCannotTakeTheItemAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "failing the push route")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	queue := h.Ingress("shop", "entry")
	item := map[string]any{"rooms": 2, "_gate": map[string]any{"graph": "airbnb", "path": "prices", "hop": 1, "node": "ip"}}
	cases := []struct {
		broker int
		want   int
		code   wire.Code
	}{
		{http.StatusInternalServerError, http.StatusServiceUnavailable, wire.CodePushUnavailable},
		{http.StatusServiceUnavailable, http.StatusServiceUnavailable, wire.CodePushUnavailable},
		{http.StatusTooManyRequests, http.StatusServiceUnavailable, wire.CodePushUnavailable},
		{http.StatusBadRequest, http.StatusBadGateway, wire.CodePushFailed},
	}
	for _, c := range cases {
		mini.SetError(miniqueen.RoutePush, c.broker)
		for _, rt := range []struct {
			name, path string
			body       map[string]any
		}{
			{"push", h.GraphURL("shop") + "/nodes/entry/push", map[string]any{"partition": "x", "txn": "t-" + strconv.Itoa(c.broker)}},
			{"re-entry", h.GraphURL("airbnb") + "/reenter", map[string]any{"payload": item, "txn": "r-" + strconv.Itoa(c.broker), "partition": "x"}},
		} {
			a := h.Do(http.MethodPost, rt.path, rt.body)
			if a.Status != c.want || wire.Code(a.Str("code")) != c.code {
				t.Errorf("%s with the broker answering %d: %d %s, want %d %s", rt.name, c.broker, a.Status, a.Raw, c.want, c.code)
			}
			if c.want == http.StatusServiceUnavailable && a.Header.Get("Retry-After") == "" {
				t.Errorf("%s with the broker answering %d: 503 without Retry-After", rt.name, c.broker)
			}
		}
		mini.ClearError(miniqueen.RoutePush)
	}
	if n := len(h.Messages(queue)) + len(h.Messages(h.Ingress("airbnb", "prices"))); n != 0 {
		t.Fatalf("the broker refused every call, yet %d items are queued", n)
	}
	// The broker takes items again: so does the door, with no relay.
	h.Expect(h.Do(http.MethodPost, h.GraphURL("shop")+"/nodes/entry/push", map[string]any{"partition": "x"}), http.StatusOK)
}
