package declare_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
)

// Bad input on the declare routes: every refusal is a 4xx naming the field
// or rule, and nothing is stored or provisioned.
func TestDeclareBadInput(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	good := func() map[string]any { return h.Target("g", 10) }
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
	base := "/v1/apps/" + h.App + "/graphs/"
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
		{"sync body not an array", "/v1/apps/" + h.App + "/targets", good(), nil, 422, "array"},
	}
	for _, c := range cases {
		r := h.Do(http.MethodPut, c.path, c.body, c.headers...)
		if r.Status != c.want {
			t.Errorf("%s: status %d, want %d: %.300s", c.name, r.Status, c.want, r.Raw)
			continue
		}
		msg := h.ErrorBody(r)
		if !strings.Contains(msg, c.mention) && r.Str("rule") != c.mention && r.Str("field") != c.mention {
			t.Errorf("%s: the refusal does not name %q: %.300s", c.name, c.mention, r.Raw)
		}
	}
	if keys := h.Broker.RequireMini(t, "listing kv keys").KVKeys(h.NS); len(keys) != 0 {
		for _, k := range keys {
			if strings.HasPrefix(k, "graph:") || strings.HasPrefix(k, "spec:") {
				t.Fatalf("a refused declare stored %s", k)
			}
		}
	}
	raw, err := h.Client.ListQueues(context.Background(), apitest.QueenList())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "gate.") || strings.Contains(string(raw), h.App) {
		t.Fatalf("a refused declare provisioned queues: %s", raw)
	}
}
