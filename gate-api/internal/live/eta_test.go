package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// A held backoff is in the ETA twice: the spent counters push the number
// past the Retry-After, and the assumptions name the deadline, which is the
// breaker record's expiry as the broker holds it.
func TestETANamesAHeldBackoffAndWaitsItOut(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading the breaker record's expiry")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	h.Run("relay-1", "airbnb", 3)
	items := make([]queen.PushItem, 250)
	for i := range items {
		items[i] = queen.PushItem{Queue: h.Ingress("airbnb", "prices"), Partition: "p0", Payload: json.RawMessage(`{}`)}
	}
	if _, err := h.Client.Push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	url := h.GraphURL("airbnb") + "/nodes/prices"
	before := h.Expect(h.Do(http.MethodGet, url+"/eta?path=prices", nil), http.StatusOK)
	if strings.Contains(before.Str("assumes"), "a backoff holds") {
		t.Fatalf("no backoff was reported, yet: %s", before.Raw)
	}
	h.Expect(h.Do(http.MethodPost, url+"/backoff", map[string]any{"retryAfterSeconds": 42, "by": "vendor 429"}), http.StatusOK)
	brk, ok := mini.KV(h.NS, plan.BreakerKey(h.App, "airbnb", "prices"))
	if !ok || brk.ExpiresAt.IsZero() {
		t.Fatalf("the backoff left no breaker record with an expiry: %+v", brk)
	}
	a := h.Expect(h.Do(http.MethodGet, url+"/eta?path=prices", nil), http.StatusOK)
	want := "a backoff holds the node until " + strconv.FormatInt(brk.ExpiresAt.UnixMilli(), 10) + " (epoch ms)"
	if !strings.Contains(a.Str("assumes"), want) {
		t.Fatalf("assumes %q, want it to say %q", a.Str("assumes"), want)
	}
	// 250 items against 100 per 1 s, every counter spent for 42 s: the
	// first 100 after the backoff, the rest in the two windows after that.
	if eta := a.Num("etaSeconds"); eta < 43 || eta > 44 || a.Str("boundBy") != "prices-1s" {
		t.Fatalf("eta %v bound by %q, want 43–44 s by prices-1s: %s", eta, a.Str("boundBy"), a.Raw)
	}
}

// With ?scope= the ETA also judges the value's own limit: a value whose
// runtime limit of 2 is spent for 30 s waits for that window; a value
// under its document count of 40 does not; the refusals name the field.
func TestETAJudgesAScopeValueAtItsOwnLimit(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("k"), tiered(h, "k")), http.StatusOK)
	h.Run("relay-1", "k", 1)
	items := make([]queen.PushItem, 5)
	for i := range items {
		items[i] = queen.PushItem{Queue: h.Ingress("k", "limit"), Partition: "p0", Payload: json.RawMessage(`{"acct":"trial"}`)}
	}
	if _, err := h.Client.Push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	base := h.GraphURL("k") + "/nodes/limit"
	h.Expect(h.Do(http.MethodPut, base+"/budgets/acct/keys/trial", map[string]any{"count": 2}), http.StatusOK)
	scoped := plan.BudgetKey(h.App, "k", "limit", "acct")
	for _, v := range []string{"trial", "gold"} {
		if _, err := h.Client.KV(context.Background(), queen.KVPut(h.NS, plan.ScopedKey(scoped, v), json.RawMessage("2"), queen.PutOpts{TTLSeconds: 30})); err != nil {
			t.Fatal(err)
		}
	}
	a := h.Expect(h.Do(http.MethodGet, base+"/eta?scope=trial", nil), http.StatusOK)
	if eta := a.Num("etaSeconds"); eta < 29 || eta > 30 || a.Str("boundBy") != "acct" || !strings.Contains(a.Str("assumes"), `acct at trial's own 2 per window (runtime)`) {
		t.Fatalf("trial: %s", a.Raw)
	}
	a = h.Expect(h.Do(http.MethodGet, base+"/eta?scope=gold", nil), http.StatusOK)
	if eta := a.Num("etaSeconds"); eta != 0 || !strings.Contains(a.Str("assumes"), `acct at gold's own 40 per window (document)`) {
		t.Fatalf("gold: %s", a.Raw)
	}
	a = h.Expect(h.Do(http.MethodGet, base+"/eta", nil), http.StatusOK)
	if !strings.Contains(a.Str("assumes"), "give ?scope= a value") {
		t.Fatalf("no scope: %s", a.Raw)
	}
	for q, want := range map[string]string{
		"?scope=a&scope=b":                   "invalid-query",
		"?scope=" + strings.Repeat("x", 600): "scope-value-too-long",
	} {
		b := h.Do(http.MethodGet, base+"/eta"+q, nil)
		if b.Status != http.StatusUnprocessableEntity || b.Str("code") != want || b.Str("field") != "scope" {
			t.Errorf("%.30s: %d %s, want 422 %s naming scope", q, b.Status, b.Raw, want)
		}
	}
}
