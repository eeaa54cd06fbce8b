package live_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
)

// tiered is a 100/s target with a per-account budget of 10/s whose
// document gives "gold" 40.
func tiered(h *apitest.Harness, name string) map[string]any {
	doc := h.Target(name, 100)
	n := doc["nodes"].(map[string]any)["limit"].(map[string]any)
	n["budgets"] = append(n["budgets"].([]any), map[string]any{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "keys": map[string]any{"gold": 40}})
	return doc
}

func keyLimit(t *testing.T, a apitest.Answer) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// PUT sets a value's own count (one kv row), GET says what it counts and
// why, DELETE brings the document's count back; a runtime limit wins over
// the document's.
func TestKeyLimitsAreSetReadAndDeletedAtRuntime(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading kv rows")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("k"), tiered(h, "k")), http.StatusOK)
	base := h.GraphURL("k") + "/nodes/limit/budgets/acct/keys/"

	a := keyLimit(t, h.Expect(h.Do(http.MethodGet, base+"gold", nil), http.StatusOK))
	if a["count"] != 40.0 || a["source"] != "document" || a["ceiling"] != 40.0 || a["default"] != 10.0 {
		t.Fatalf("gold before: %v", a)
	}
	a = keyLimit(t, h.Expect(h.Do(http.MethodGet, base+"anyone", nil), http.StatusOK))
	if a["count"] != 10.0 || a["source"] != "budget" || a["document"] != nil {
		t.Fatalf("anyone: %v", a)
	}
	a = keyLimit(t, h.Expect(h.Do(http.MethodPut, base+"gold", map[string]any{"count": 5}), http.StatusOK))
	if a["count"] != 5.0 || a["source"] != "runtime" || a["document"] != 40.0 || a["at"] == 0.0 {
		t.Fatalf("gold put: %v", a)
	}
	row := plan.KeyLimitKey(plan.BudgetKey(h.App, "k", "limit", "acct"), "gold")
	if e, ok := mini.KV(h.NS, row); !ok || !strings.Contains(string(e.Value), `"count":5`) || len(e.Value) > 64 {
		t.Fatalf("row %s: %+v, want a small row with count 5", row, e)
	}
	a = keyLimit(t, h.Expect(h.Do(http.MethodGet, base+"gold", nil), http.StatusOK))
	if a["count"] != 5.0 || a["source"] != "runtime" {
		t.Fatalf("gold after the put: %v, want the runtime 5 over the document's 40", a)
	}
	// A value with a slash and a space, percent-encoded.
	odd := "team/a b"
	h.Expect(h.Do(http.MethodPut, base+url.PathEscape(odd), map[string]any{"count": 500}), http.StatusOK)
	if _, ok := mini.KV(h.NS, plan.KeyLimitKey(plan.BudgetKey(h.App, "k", "limit", "acct"), odd)); !ok {
		t.Fatal("the encoded value's row is missing")
	}
	a = keyLimit(t, h.Expect(h.Do(http.MethodDelete, base+"gold", nil), http.StatusOK))
	if a["deleted"] != true || a["count"] != 40.0 || a["source"] != "document" {
		t.Fatalf("gold delete: %v", a)
	}
	b := h.Do(http.MethodDelete, base+"gold", nil)
	if b.Status != http.StatusNotFound || b.Str("code") != "key-limit-not-found" || b.Str("field") != "value" {
		t.Fatalf("a second delete: %d %s", b.Status, b.Raw)
	}
	// The console's read path answers the same.
	c := h.Expect(h.Do(http.MethodGet, "/api/apps/"+h.App+"/graphs/k/nodes/limit/budgets/acct/keys", nil), http.StatusOK)
	if !strings.Contains(string(c.Raw), `"value":"team/a b"`) || !strings.Contains(string(c.Raw), `"wins":"runtime"`) {
		t.Fatalf("list: %s", c.Raw)
	}
}

// The list pages through every runtime limit with nextAfter; the document's
// counts come on the first page.
func TestKeyLimitsListPages(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("k"), tiered(h, "k")), http.StatusOK)
	base := h.GraphURL("k") + "/nodes/limit/budgets/acct/keys"
	for i := range 25 {
		h.Expect(h.Do(http.MethodPut, fmt.Sprintf("%s/v%02d", base, i), map[string]any{"count": i + 1}), http.StatusOK)
	}
	var seen []string
	after, pages := "", 0
	for {
		u := base + "?limit=10"
		if after != "" {
			u += "&after=" + url.QueryEscape(after)
		}
		var page struct {
			Runtime   []struct{ Value string }
			Document  []struct{ Value string }
			NextAfter string
		}
		if err := json.Unmarshal(h.Expect(h.Do(http.MethodGet, u, nil), http.StatusOK).Raw, &page); err != nil {
			t.Fatal(err)
		}
		if (pages == 0) != (len(page.Document) == 1) {
			t.Fatalf("page %d has %d document counts, want gold on the first page only", pages, len(page.Document))
		}
		for _, r := range page.Runtime {
			seen = append(seen, r.Value)
		}
		pages++
		if page.NextAfter == "" || pages > 5 {
			break
		}
		after = page.NextAfter
	}
	if len(seen) != 25 || pages != 3 || seen[0] != "v00" || seen[24] != "v24" {
		t.Fatalf("%d values over %d pages: %v", len(seen), pages, seen)
	}
}

// Bad input is a 4xx naming the field, and writes nothing.
func TestKeyLimitsRefuseBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading kv rows")
	doc := tiered(h, "k")
	doc["nodes"].(map[string]any)["limit"].(map[string]any)["cost"] = map[string]any{"path": "payload.units", "default": 1, "max": 5}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("k"), doc), http.StatusOK)
	g := h.GraphURL("k") + "/nodes/limit/budgets/"
	long := strings.Repeat("v", plan.KeyLimitRoom(plan.BudgetKey(h.App, "k", "limit", "acct"))+1)
	for _, tc := range []struct {
		name, method, url string
		body              any
		status            int
		code, field       string
	}{
		{"an unknown budget", http.MethodPut, g + "nope/keys/a", map[string]any{"count": 5}, 404, "budget-not-found", "budget"},
		{"an unscoped budget", http.MethodPut, g + "global/keys/a", map[string]any{"count": 5}, 422, "unscoped-budget", "budget"},
		{"an unscoped budget's list", http.MethodGet, g + "global/keys", nil, 422, "unscoped-budget", "budget"},
		{"an unknown node", http.MethodPut, h.GraphURL("k") + "/nodes/nope/budgets/acct/keys/a", map[string]any{"count": 5}, 404, "node-not-found", "node"},
		{"a value past the key room", http.MethodPut, g + "acct/keys/" + long, map[string]any{"count": 5}, 422, "invalid-key-limit", "value"},
		{"a count of 0", http.MethodPut, g + "acct/keys/a", map[string]any{"count": 0}, 422, "invalid-key-limit", "count"},
		{"a negative count", http.MethodPut, g + "acct/keys/a", map[string]any{"count": -4}, 422, "invalid-key-limit", "count"},
		{"an absurd count", http.MethodPut, g + "acct/keys/a", map[string]any{"count": int64(plan.MaxKeyCount) + 1}, 422, "invalid-key-limit", "count"},
		{"a count below the largest item", http.MethodPut, g + "acct/keys/a", map[string]any{"count": 4}, 422, "invalid-key-limit", "count"},
		{"a fractional count", http.MethodPut, g + "acct/keys/a", map[string]any{"count": 2.5}, 422, "", ""},
		{"no count", http.MethodPut, g + "acct/keys/a", map[string]any{}, 422, "missing-field", "count"},
		{"an unknown field", http.MethodPut, g + "acct/keys/a", map[string]any{"count": 5, "limit": 3}, 422, "", ""},
		{"an unknown list parameter", http.MethodGet, g + "acct/keys?page=2", nil, 422, "invalid-query", "page"},
		{"a page too large", http.MethodGet, g + "acct/keys?limit=5000", nil, 422, "invalid-query", "limit"},
		{"a repeated after", http.MethodGet, g + "acct/keys?after=a&after=b", nil, 422, "invalid-query", "after"},
	} {
		a := h.Do(tc.method, tc.url, tc.body)
		if a.Status != tc.status || (tc.code != "" && a.Str("code") != tc.code) || (tc.field != "" && a.Str("field") != tc.field) {
			t.Errorf("%s: %d %s, want %d %s naming %q", tc.name, a.Status, a.Raw, tc.status, tc.code, tc.field)
		}
	}
	for _, k := range mini.KVKeys(h.NS) {
		if strings.HasPrefix(k, plan.KeyLimitPrefix) {
			t.Errorf("a refused request wrote %s", k)
		}
	}
}
