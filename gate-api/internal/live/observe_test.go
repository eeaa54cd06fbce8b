package live_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
)

// mirroredTarget is a 50/s target whose budget mirrors the vendor's
// X-RateLimit meter.
func mirroredTarget(h *apitest.Harness, name, headers string) map[string]any {
	doc := h.Target(name, 50)
	b := doc["nodes"].(map[string]any)["limit"].(map[string]any)["budgets"].([]any)[0].(map[string]any)
	b["vendorMeter"] = map[string]any{"headers": headers}
	return doc
}

func observed(t *testing.T, a apitest.Answer) (budgets []map[string]any, backoff map[string]any) {
	t.Helper()
	var body struct {
		Budgets []map[string]any `json:"budgets"`
		Backoff map[string]any   `json:"backoff"`
	}
	if err := json.Unmarshal(a.Raw, &body); err != nil {
		t.Fatal(err)
	}
	return body.Budgets, body.Backoff
}

// A vendor answer lowers the mirrored budget's ceiling to the vendor's
// limit for every relay (the meter row) and raises the counter to what the
// vendor used; a 429 with Retry-After holds the node like a backoff.
func TestObserveFollowsTheVendorsMeter(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading kv rows")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("v"), mirroredTarget(h, "v", "x-ratelimit")), http.StatusOK)
	url := h.GraphURL("v") + "/nodes/limit/observe"
	counter := plan.BudgetKey(h.App, "v", "limit", "global")
	meter := plan.MeterKey(counter)

	reset := strconv.FormatInt(time.Now().Add(900*time.Millisecond).UnixMilli(), 10)
	a := h.Expect(h.Do(http.MethodPost, url, map[string]any{"status": 200, "headers": map[string]any{
		"X-RateLimit-Limit": "20", "x-ratelimit-remaining": "5", "X-RateLimit-Reset": reset, "Content-Type": "application/json",
	}}), http.StatusOK)
	bs, backoff := observed(t, a)
	if len(bs) != 1 || backoff != nil {
		t.Fatalf("answer: %s", a.Raw)
	}
	b := bs[0]
	if b["budget"] != "global" || b["applied"] != true || b["lowered"] != true || b["ceiling"] != 20.0 || b["declared"] != 50.0 ||
		b["vendorLimit"] != 20.0 || b["raisedTo"] != 15.0 || b["resetRule"] != "epoch-ms" {
		t.Fatalf("budget: %s", a.Raw)
	}
	if note, _ := b["note"].(string); !strings.HasPrefix(note, "the vendor enforces 20 where 50 is declared, since ") {
		t.Fatalf("note %q", note)
	}
	if e, ok := mini.KV(h.NS, meter); !ok || !strings.Contains(string(e.Value), `"limit":20`) {
		t.Fatalf("meter row %+v", e)
	}
	if e, ok := mini.KV(h.NS, counter); !ok || e.Int != 15 {
		t.Fatalf("counter %+v, want 15", e)
	}
	// The diagnostics say it in words.
	d := h.Expect(h.Do(http.MethodGet, h.GraphURL("v")+"/diagnostics", nil), http.StatusOK)
	if !strings.Contains(string(d.Raw), `"kind":"vendor"`) || !strings.Contains(string(d.Raw), "Budget global of node limit: the vendor enforces 20 where 50 is declared, since ") {
		t.Fatalf("diagnostics: %s", d.Raw)
	}

	// The vendor refuses: Retry-After 2 holds the node for 2 s, as a
	// backoff would, and the breaker record says observe did it.
	a = h.Expect(h.Do(http.MethodPost, url, map[string]any{"status": 429, "headers": map[string]any{
		"Retry-After": "2", "X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1",
	}}), http.StatusOK)
	if _, backoff = observed(t, a); backoff == nil || backoff["retryAfterSeconds"] != 2.0 {
		t.Fatalf("429 answer: %s", a.Raw)
	}
	if e, _ := mini.KV(h.NS, counter); e.Int != 50 || e.ExpiresAt.Sub(e.UpdatedAt) != 2*time.Second {
		t.Fatalf("counter after a 429: %+v, want spent to 50 for 2 s", e)
	}
	brk, ok := mini.KV(h.NS, plan.BreakerKey(h.App, "v", "limit"))
	var rec store.Breaker
	if !ok || json.Unmarshal(brk.Value, &rec) != nil || !strings.HasPrefix(rec.By, "observe") {
		t.Fatalf("breaker record %s", brk.Value)
	}

	// The vendor allows more than declared: Gate goes back to 50, not 80.
	a = h.Expect(h.Do(http.MethodPost, url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": "80"}}), http.StatusOK)
	if bs, _ = observed(t, a); bs[0]["ceiling"] != 50.0 || bs[0]["lowered"] != false {
		t.Fatalf("answer: %s", a.Raw)
	}
	if _, ok := mini.KV(h.NS, meter); ok {
		t.Fatal("the meter row outlived a vendor that allows what is declared")
	}
}

// A GitHub answer for another resource than the mirrored one applies
// nothing and says so.
func TestObserveIgnoresAnotherResource(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading kv rows")
	doc := mirroredTarget(h, "gh", "github")
	doc["nodes"].(map[string]any)["limit"].(map[string]any)["budgets"].([]any)[0].(map[string]any)["vendorMeter"] = map[string]any{"headers": "github", "name": "core"}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("gh"), doc), http.StatusOK)
	a := h.Expect(h.Do(http.MethodPost, h.GraphURL("gh")+"/nodes/limit/observe", map[string]any{"status": 200, "headers": map[string]any{
		"x-ratelimit-resource": "search", "x-ratelimit-limit": "10", "x-ratelimit-remaining": "0",
	}}), http.StatusOK)
	bs, _ := observed(t, a)
	if bs[0]["applied"] != false || bs[0]["policy"] != "search" || bs[0]["ceiling"] != 50.0 {
		t.Fatalf("answer: %s", a.Raw)
	}
	if _, ok := mini.KV(h.NS, plan.MeterKey(plan.BudgetKey(h.App, "gh", "limit", "global"))); ok {
		t.Fatal("another resource's answer wrote the meter row")
	}
}

// Malformed, hostile and misdirected observations are 4xx naming the
// field, and none of them writes a meter row, a counter or a breaker.
func TestObserveRefusesBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading kv rows")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("v"), mirroredTarget(h, "v", "x-ratelimit")), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("plain"), h.Target("plain", 50)), http.StatusOK)
	url := h.GraphURL("v") + "/nodes/limit/observe"
	many := map[string]any{}
	for i := range 200 {
		many["X-H"+strconv.Itoa(i)] = "1"
	}
	ok := map[string]any{"X-RateLimit-Limit": "10"}
	for _, tc := range []struct {
		name   string
		url    string
		body   any
		status int
		code   string
		field  string
	}{
		{"no status", url, map[string]any{"headers": ok}, 422, "missing-field", "status"},
		{"a status out of range", url, map[string]any{"status": 1000, "headers": ok}, 422, "invalid-field", "status"},
		{"no headers", url, map[string]any{"status": 200}, 422, "missing-field", "headers"},
		{"a negative limit", url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": "-10"}}, 422, "invalid-header", "headers.X-RateLimit-Limit"},
		{"a non-numeric remaining", url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Remaining": "lots"}}, 422, "invalid-header", "headers.X-RateLimit-Remaining"},
		{"a huge limit", url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": strings.Repeat("9", 40)}}, 422, "invalid-header", "headers.X-RateLimit-Limit"},
		{"a dated reset", url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": "10", "X-RateLimit-Reset": "1500000000"}}, 422, "invalid-header", "headers.X-RateLimit-Reset"},
		{"a dated Retry-After", url, map[string]any{"status": 429, "headers": map[string]any{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}}, 422, "invalid-header", "headers.Retry-After"},
		{"a header value that is a number", url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": 10}}, 422, "wrong-type", ""},
		{"thousands of headers", url, map[string]any{"status": 200, "headers": many}, 422, "invalid-header", "headers"},
		{"a megabyte header", url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": strings.Repeat("1", 1<<20)}}, 413, "", ""},
		{"a 5 KiB header", url, map[string]any{"status": 200, "headers": map[string]any{"X-Big": strings.Repeat("a", 5000)}}, 422, "invalid-header", "headers.X-Big"},
		{"a budget that mirrors nothing", h.GraphURL("plain") + "/nodes/limit/observe", map[string]any{"status": 200, "headers": ok}, 422, "no-vendor-meter", "node"},
		{"an unknown budget", url, map[string]any{"status": 200, "headers": ok, "budget": "nope"}, 422, "no-vendor-meter", "budget"},
		{"an unknown node", h.GraphURL("v") + "/nodes/nope/observe", map[string]any{"status": 200, "headers": ok}, 404, "", "node"},
		{"an unknown field", url, map[string]any{"status": 200, "headers": ok, "limit": 5}, 422, "", ""},
	} {
		a := h.Do(http.MethodPost, tc.url, tc.body)
		if a.Status != tc.status || (tc.code != "" && a.Str("code") != tc.code) || (tc.field != "" && a.Str("field") != tc.field) {
			t.Errorf("%s: %d %s, want %d %s naming %q", tc.name, a.Status, a.Raw, tc.status, tc.code, tc.field)
		}
	}
	for _, key := range []string{plan.MeterKey(plan.BudgetKey(h.App, "v", "limit", "global")), plan.BudgetKey(h.App, "v", "limit", "global"), plan.BreakerKey(h.App, "v", "limit"), plan.BudgetKey(h.App, "plain", "limit", "global")} {
		if _, ok := mini.KV(h.NS, key); ok {
			t.Errorf("a refused observation wrote %s", key)
		}
	}
}

// A new limit from the vendor goes on the graph's timeline (with
// PostgreSQL), once per limit, and so does its end.
func TestObserveAnnotatesTheTimeline(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("v"), mirroredTarget(h, "v", "x-ratelimit")), http.StatusOK)
	url := h.GraphURL("v") + "/nodes/limit/observe"
	for range 3 {
		h.Expect(h.Do(http.MethodPost, url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": "10"}}), http.StatusOK)
	}
	h.Expect(h.Do(http.MethodPost, url, map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": "50"}}), http.StatusOK)
	a := h.Expect(h.Do(http.MethodGet, h.GraphURL("v")+"/timeline", nil), http.StatusOK)
	raw := string(a.Raw)
	if n := strings.Count(raw, "the vendor enforces 10 where 50 is declared"); n != 1 {
		t.Fatalf("%d timeline events for the vendor's 10, want 1: %s", n, raw)
	}
	if !strings.Contains(raw, "the vendor allows 50 where 50 is declared: Gate keeps 50 again") {
		t.Fatalf("the timeline does not say the vendor's limit ended: %s", raw)
	}
}

// A storm of 429s is one backoff on the timeline: every answer holds the
// node (the breaker's until moves with each), but only the first of an
// episode writes the "Backoff applied" annotation — one PostgreSQL row, not
// one per answer.
func TestObserveAnnotatesABackoffOncePerEpisode(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("v"), mirroredTarget(h, "v", "x-ratelimit")), http.StatusOK)
	url := h.GraphURL("v") + "/nodes/limit/observe"
	for range 5 {
		a := h.Expect(h.Do(http.MethodPost, url, map[string]any{"status": 429, "headers": map[string]any{"Retry-After": "30"}}), http.StatusOK)
		if !strings.Contains(string(a.Raw), `"retryAfterSeconds":30`) {
			t.Fatalf("a 429 with Retry-After 30 did not hold the node: %s", a.Raw)
		}
	}
	events, err := db.ConfigEvents(t.Context(), h.App, "v", 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, e := range events {
		if e.Change.Label == "Backoff applied" && e.Change.Node == "limit" {
			applied++
		}
	}
	if applied != 1 {
		t.Fatalf("%d backoff annotations for one storm of five 429s, want 1: %+v", applied, events)
	}
}
