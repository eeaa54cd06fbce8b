package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// Bad input on the declare routes: every refusal is a 4xx naming the field
// or rule, and nothing is stored or provisioned.
func TestDeclareBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	good := func() map[string]any { return h.target("g", 10) }
	limit := func(d map[string]any) map[string]any { return d["nodes"].(map[string]any)["limit"].(map[string]any) }
	long := strings.Repeat("x", 10240)
	withBudgetID := good()
	limit(withBudgetID)["budgets"].([]any)[0].(map[string]any)["id"] = long
	withEgress := good()
	limit(withEgress)["egress"] = long
	withNode := good()
	withNode["nodes"] = map[string]any{long: limit(good())}
	withNode["paths"] = []any{map[string]any{"name": "main", "nodes": []any{long}}}
	wrongType := good()
	wrongType["version"] = "3"
	unknown := good()
	unknown["colour"] = "blue"
	base := "/v1/apps/" + h.app + "/graphs/"
	cases := []struct {
		name, path string
		body       any
		headers    []string
		want       int
		mention    string
	}{
		{"unparseable JSON", base + "g", `{"version": 1,`, nil, 400, "not valid JSON"},
		{"empty body", base + "g", "", nil, 400, "empty"},
		{"wrong type", base + "g", wrongType, nil, 422, "/version"},
		{"unknown field", base + "g", unknown, nil, 422, "colour"},
		{"not JSON content", base + "g", good(), []string{"Content-Type", "text/plain"}, 415, "Content-Type"},
		{"no content type", base + "g", good(), []string{"Content-Type", ""}, 415, "Content-Type"},
		{"oversized body", base + "g", `{"version":1,"pad":"` + strings.Repeat("p", 2<<20) + `"}`, nil, 413, "limit"},
		{"graph name with a slash", base + "a%2Fb", good(), nil, 422, "graph-name"},
		{"graph name ..", base + "..", good(), nil, 422, "graph-name"},
		{"graph name with a space", base + "a%20b", good(), nil, 422, "graph-name"},
		{"graph name with a control character", base + "a%0Ab", good(), nil, 422, "graph-name"},
		{"10 kB graph name", base + long, good(), nil, 422, "graph-name"},
		{"app name with a slash", "/v1/apps/a%2Fb/graphs/g", good(), nil, 422, "application"},
		{"app name with capitals", "/v1/apps/Shop/graphs/g", good(), nil, 422, "application"},
		{"10 kB budget id", base + "g", withBudgetID, nil, 422, "kv-key-length"},
		{"10 kB egress queue", base + "g", withEgress, nil, 422, "queue-name"},
		{"10 kB node name", base + "g", withNode, nil, 422, "node-name"},
		{"sync body not an array", "/v1/apps/" + h.app + "/targets", good(), nil, 422, "array"},
	}
	for _, c := range cases {
		r := h.do(http.MethodPut, c.path, c.body, c.headers...)
		if r.status != c.want {
			t.Errorf("%s: status %d, want %d: %.300s", c.name, r.status, c.want, r.raw)
			continue
		}
		msg := h.errorBody(r)
		if !strings.Contains(msg, c.mention) && r.str("rule") != c.mention && r.str("field") != c.mention {
			t.Errorf("%s: the refusal does not name %q: %.300s", c.name, c.mention, r.raw)
		}
	}
	if keys := h.broker.RequireMini(t, "listing kv keys").KVKeys(h.ns); len(keys) != 0 {
		for _, k := range keys {
			if strings.HasPrefix(k, "graph:") || strings.HasPrefix(k, "spec:") {
				t.Fatalf("a refused declare stored %s", k)
			}
		}
	}
	raw, err := h.client.ListQueues(context.Background(), queenList())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "gate.") || strings.Contains(string(raw), h.app) {
		t.Fatalf("a refused declare provisioned queues: %s", raw)
	}
}

// Bad names and unknown things on the read, delete and action routes.
func TestRouteNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("g"), h.target("g", 10)), http.StatusOK)
	h.run("relay-1", "g", 1)
	long := strings.Repeat("y", 10240)
	app := "/v1/apps/" + h.app
	cases := []struct {
		name, method, path string
		want               int
		field              string
	}{
		{"GET graph name with a slash", "GET", app + "/graphs/a%2Fb", 400, "graph"},
		{"GET graph name ..", "GET", app + "/graphs/..", 400, "graph"},
		{"GET graph name with a space", "GET", app + "/graphs/a%20b", 400, "graph"},
		{"GET graph name with a NUL", "GET", app + "/graphs/a%00b", 400, "graph"},
		{"GET 10 kB graph name", "GET", app + "/graphs/" + long, 400, "graph"},
		{"GET app name with a dot", "GET", "/v1/apps/a.b/graphs/g", 400, "app"},
		{"GET unknown graph", "GET", app + "/graphs/nope", 404, "graph"},
		{"GET unknown app", "GET", "/v1/apps/nobody/graphs/g", 404, "graph"},
		{"GET unknown flat graph", "GET", "/v1/graphs/nope", 404, "graph"},
		{"DELETE graph name with a slash", "DELETE", app + "/graphs/a%2Fb", 400, "graph"},
		{"DELETE unknown graph", "DELETE", app + "/graphs/nope", 404, "graph"},
		{"ETA node name with a control character", "GET", app + "/graphs/g/nodes/a%07/eta", 400, "node"},
		{"ETA unknown node", "GET", app + "/graphs/g/nodes/nope/eta", 404, "node"},
		{"backoff lift unknown node", "DELETE", app + "/graphs/g/nodes/nope/backoff", 404, "node"},
		{"push 10 kB node name", "POST", app + "/graphs/g/nodes/" + long + "/push", 400, "node"},
		{"unknown route", "GET", "/v2/whatever", 404, ""},
		{"wrong method", "PATCH", app + "/graphs/g", 405, ""},
	}
	for _, c := range cases {
		var body any
		if c.method == "POST" {
			body = map[string]any{}
		}
		r := h.do(c.method, c.path, body)
		if r.status != c.want || r.str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %.300s", c.name, r.status, r.str("field"), c.want, c.field, r.raw)
			continue
		}
		h.errorBody(r)
	}
	if !h.stored(h.app, "g") {
		t.Fatalf("a refused request deleted the graph")
	}
}

// The push routes take GATE_MAX_PUSH_BODY_BYTES; the others keep 2 MiB.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("g"), h.target("g", 10)), http.StatusOK)
	h.run("relay-1", "g", 1)
	push := h.graphURL("g") + "/nodes/limit/push"
	body := func(n int) string { return `{"payload":{"pad":"` + strings.Repeat("p", n) + `"}}` }
	h.expect(h.do(http.MethodPost, push, body(3<<20)), http.StatusOK)
	h.expect(h.do(http.MethodPost, h.graphURL("g")+"/reenter", body(3<<20)), http.StatusRequestEntityTooLarge)
	r := h.expect(h.do(http.MethodPost, push, body(8<<20)), http.StatusRequestEntityTooLarge)
	if r.num("limit") != 8<<20 {
		t.Fatalf("413 body: %.300s", r.raw)
	}
	if n := len(h.messages(h.ingress("g", "limit"))); n != 1 {
		t.Fatalf("%d messages queued, want only the one under the limit", n)
	}
}

// Every route that reads a body refuses broken JSON (400), a missing JSON
// content type (415) and a bad graph name in the URL, and nothing is
// queued or stored.
func TestEveryBodyRoute(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("g"), h.target("g", 10)), http.StatusOK)
	h.run("relay-1", "g", 1)
	app := "/v1/apps/" + h.app
	routes := []struct {
		method, path string
		badName      int // status for the graph name "a b"
	}{
		{"PUT", app + "/graphs/{g}", 422},
		{"PUT", app + "/targets/{g}", 422},
		{"PUT", "/v1/graphs/{g}", 422},
		{"POST", app + "/graphs/{g}/nodes/limit/push", 400},
		{"POST", "/v1/graphs/{g}/nodes/limit/push", 400},
		{"POST", app + "/targets/{g}/lanes/x/push", 400},
		{"POST", app + "/graphs/{g}/nodes/limit/backoff", 400},
		{"POST", app + "/graphs/{g}/reenter", 400},
		{"POST", "/v1/graphs/{g}/reenter", 400},
	}
	for _, rt := range routes {
		path := strings.ReplaceAll(rt.path, "{g}", "g")
		if r := h.do(rt.method, path, `{"payload": {`); r.status != 400 {
			t.Errorf("%s %s broken JSON: %d %s", rt.method, path, r.status, r.raw)
		}
		if r := h.do(rt.method, path, `{} trailing`); r.status != 400 {
			t.Errorf("%s %s trailing data: %d %s", rt.method, path, r.status, r.raw)
		}
		if r := h.do(rt.method, path, `{}`, "Content-Type", "text/plain"); r.status != 415 {
			t.Errorf("%s %s text/plain: %d %s", rt.method, path, r.status, r.raw)
		}
		bad := strings.ReplaceAll(rt.path, "{g}", "a%20b")
		body := map[string]any{"txn": "t", "payload": map[string]any{}}
		if strings.HasPrefix(rt.method, "PUT") {
			body = h.target("x", 1)
		} else if strings.HasSuffix(rt.path, "/push") {
			body = map[string]any{}
		} else if strings.HasSuffix(rt.path, "/backoff") {
			body = map[string]any{"retryAfterSeconds": 1}
		}
		r := h.do(rt.method, bad, body)
		if r.status != rt.badName {
			t.Errorf("%s %s: %d, want %d: %s", rt.method, bad, r.status, rt.badName, r.raw)
		}
		h.errorBody(r)
	}
	if n := len(h.messages(h.ingress("g", "limit"))); n != 0 {
		t.Fatalf("refused requests queued %d messages", n)
	}
	if h.stored(h.app, "a b") || h.stored("default", "g") {
		t.Fatalf("a refused declare was stored")
	}
}
