package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
)

// Bad names and unknown things on the read, delete and action routes.
func TestRouteNames(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 10)), http.StatusOK)
	h.Run("relay-1", "g", 1)
	long := strings.Repeat("y", 10240)
	app := "/v1/apps/" + h.App
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
		r := h.Do(c.method, c.path, body)
		if r.Status != c.want || r.Str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %.300s", c.name, r.Status, r.Str("field"), c.want, c.field, r.Raw)
			continue
		}
		h.ErrorBody(r)
	}
	if !h.Stored(h.App, "g") {
		t.Fatalf("a refused request deleted the graph")
	}
}

// Every route that reads a body refuses broken JSON (400), a missing JSON
// content type (415) and a bad graph name in the URL, and nothing is
// queued or stored.
func TestEveryBodyRoute(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 10)), http.StatusOK)
	h.Run("relay-1", "g", 1)
	app := "/v1/apps/" + h.App
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
		if r := h.Do(rt.method, path, `{"payload": {`); r.Status != 400 {
			t.Errorf("%s %s broken JSON: %d %s", rt.method, path, r.Status, r.Raw)
		}
		if r := h.Do(rt.method, path, `{} trailing`); r.Status != 400 {
			t.Errorf("%s %s trailing data: %d %s", rt.method, path, r.Status, r.Raw)
		}
		if r := h.Do(rt.method, path, `{}`, "Content-Type", "text/plain"); r.Status != 415 {
			t.Errorf("%s %s text/plain: %d %s", rt.method, path, r.Status, r.Raw)
		}
		bad := strings.ReplaceAll(rt.path, "{g}", "a%20b")
		body := map[string]any{"txn": "t", "payload": map[string]any{}}
		if strings.HasPrefix(rt.method, "PUT") {
			body = h.Target("x", 1)
		} else if strings.HasSuffix(rt.path, "/push") {
			body = map[string]any{}
		} else if strings.HasSuffix(rt.path, "/backoff") {
			body = map[string]any{"retryAfterSeconds": 1}
		}
		r := h.Do(rt.method, bad, body)
		if r.Status != rt.badName {
			t.Errorf("%s %s: %d, want %d: %s", rt.method, bad, r.Status, rt.badName, r.Raw)
		}
		h.ErrorBody(r)
	}
	if n := len(h.Messages(h.Ingress("g", "limit"))); n != 0 {
		t.Fatalf("refused requests queued %d messages", n)
	}
	if h.Stored(h.App, "a b") || h.Stored("default", "g") {
		t.Fatalf("a refused declare was stored")
	}
}
