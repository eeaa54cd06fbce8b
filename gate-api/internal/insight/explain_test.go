package insight_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// listingsDoc is a node with a global budget, a per-listing budget of 100
// a week, a budget only for deletions, and two paths of unequal share.
func listingsDoc(h *apitest.Harness) map[string]any {
	return map[string]any{
		"version": 1,
		"nodes": map[string]any{
			"list": map[string]any{"ingress": true, "egress": h.App + ".listings.out", "budgets": []any{
				map[string]any{"id": "global", "count": 10, "timeMs": 1000},
				map[string]any{"id": "per-listing", "count": 100, "timeMs": 7 * 86400 * 1000, "subWindows": 1, "scopeBy": "payload.listing"},
				map[string]any{"id": "deletes", "count": 5, "timeMs": 1000, "whenOp": []any{"listing.delete"}},
			}},
			"bulk": map[string]any{"ingress": true, "budgets": []any{map[string]any{"id": "bulk", "count": 50, "timeMs": 1000}}},
		},
		"paths": []any{
			map[string]any{"name": "main", "priority": 0, "nodes": []any{"list"}},
			map[string]any{"name": "backfill", "priority": 1, "share": 0.5, "nodes": []any{"bulk", "list"}},
		},
	}
}

func explainURL(h *apitest.Harness, node string, q url.Values) string {
	return h.GraphURL("listings") + "/nodes/" + node + "/explain?" + q.Encode()
}

func explanation(t *testing.T, h *apitest.Harness, q url.Values) wire.Explanation {
	t.Helper()
	a := h.Expect(h.Do(http.MethodGet, explainURL(h, "list", q), nil), http.StatusOK)
	var x wire.Explanation
	if err := json.Unmarshal(a.Raw, &x); err != nil {
		t.Fatal(err)
	}
	return x
}

// A listing whose weekly budget is spent: explain names every counter the
// item would charge, the per-listing one binding at 100 of 100 until its
// window ends, the items ahead in its partition and an earliest admission
// no earlier than that end; the sentence says so. Another listing fits.
func TestExplainNamesTheBindingCounterAndTheItemsAhead(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("listings"), listingsDoc(h)), http.StatusOK)
	p := h.Plane().Cat.Lookup(h.App, "listings").Plan
	n := p.Node("list")
	var scopedKey string
	for _, b := range n.Budgets {
		if b.ID == "per-listing" {
			scopedKey = plan.ScopedKey(b.Key, "L-1")
		}
	}
	ctx := context.Background()
	if _, err := h.Client.KV(ctx, queen.KVPut(h.NS, scopedKey, json.RawMessage("100"), queen.PutOpts{TTLSeconds: 3 * 86400})); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h.Expect(h.Do(http.MethodPost, h.GraphURL("listings")+"/nodes/list/push", map[string]any{"partition": "p1", "payload": map[string]any{"listing": "L-1", "i": i}}), http.StatusOK)
	}
	x := explanation(t, h, url.Values{"scope": {"L-1"}, "partition": {"p1"}})
	if x.Path != "main" || len(x.Counters) != 2 || x.Binding == nil || *x.Binding != "per-listing" {
		t.Fatalf("explanation %+v: want the main path, the global and per-listing counters, per-listing binding", x)
	}
	var scoped, global wire.ExplainCounter
	for _, c := range x.Counters {
		switch c.Budget {
		case "per-listing":
			scoped = c
		case "global":
			global = c
		}
	}
	if scoped.Kind != "scoped" || scoped.Value != 100 || scoped.Ceiling != 100 || scoped.Fits || !scoped.Binds || scoped.FreesAt == nil || scoped.Reason == nil || *scoped.Reason != "ceiling" {
		t.Fatalf("per-listing: %+v; want scoped, 100 of 100, refusing at its ceiling, binding, with a window end", scoped)
	}
	if global.Kind != "unscoped" || !global.Fits || global.Binds || len(global.Shares) != 2 || global.Shares[0].Path != "backfill" || global.Shares[0].Ceiling != 5 || global.Ceiling != 10 {
		t.Fatalf("global: %+v; want unscoped with room, the backfill path's share 5 and main's 10", global)
	}
	if x.Ahead == nil || *x.Ahead != 3 || x.EarliestAdmission < *scoped.FreesAt || x.WaitSeconds < 2*86400 {
		t.Fatalf("ahead %v, earliest %d (frees %d), wait %d s: want 3 ahead and no earlier than the window's end", x.Ahead, x.EarliestAdmission, *scoped.FreesAt, x.WaitSeconds)
	}
	if !strings.Contains(x.Sentence, "waiting for per-listing: 100 of 100 this week, frees ") || !strings.Contains(x.Sentence, "3 items ahead") {
		t.Fatalf("sentence %q", x.Sentence)
	}

	// Another listing, a deletion: the deletions budget joins, all fit.
	x = explanation(t, h, url.Values{"scope": {"L-2"}, "op": {"listing.delete"}})
	if x.Binding != nil || len(x.Counters) != 3 || x.AheadMax == nil || *x.AheadMax != 3 || x.WaitSeconds != 0 || !strings.HasPrefix(x.Sentence, "every counter has room now") {
		t.Fatalf("a fresh listing's deletion: %+v", x)
	}
	// Without a scope value the per-listing budget is not judged, and says so.
	x = explanation(t, h, url.Values{})
	if len(x.Unjudged) != 1 || x.Unjudged[0] != "per-listing" || !strings.Contains(x.Assumes, "not judged") {
		t.Fatalf("no scope: %+v", x)
	}
	// The backfill path is judged at its share.
	x = explanation(t, h, url.Values{"path": {"backfill"}, "scope": {"L-2"}})
	if x.Path != "backfill" || x.Counters[0].Ceiling != 5 {
		t.Fatalf("backfill: %+v", x)
	}

	// A backoff: the node is held until its deadline, the global counter
	// refuses as a backoff, and it binds the earliest admission.
	h.Expect(h.Do(http.MethodPost, h.GraphURL("listings")+"/nodes/list/backoff", map[string]any{"retryAfterSeconds": 600, "by": "vendor 429"}), http.StatusOK)
	x = explanation(t, h, url.Values{"scope": {"L-2"}})
	if x.Backoff == nil || x.Backoff.By != "vendor 429" || x.Binding == nil || *x.Binding != "global" || x.Counters[0].Reason == nil || *x.Counters[0].Reason != "backoff" ||
		x.WaitSeconds < 590 || !strings.HasPrefix(x.Sentence, "held by a backoff until ") {
		t.Fatalf("under a backoff: %+v", x)
	}
}

// Every bad input is a 4xx naming the field, and none reads the broker
// for long: an unknown node, a path that does not cross it, a scope value
// longer than the key room, an op no budget names, a scope on a node with
// no scoped budget, an unknown or repeated parameter, an empty partition.
func TestExplainRefusesBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("listings"), listingsDoc(h)), http.StatusOK)
	cases := []struct {
		name, node, raw string
		status          int
		field, code     string
	}{
		{"unknown node", "nope", "", 404, "node", "node-not-found"},
		{"path not through the node", "list", "path=elsewhere", 404, "path", "path-not-found"},
		{"scope longer than the key room", "list", "scope=" + strings.Repeat("x", 600), 422, "scope", "scope-value-too-long"},
		{"op no budget names", "list", "op=listing.create", 422, "op", "invalid-query"},
		{"op far too long", "list", "op=" + strings.Repeat("o", 300), 422, "op", "invalid-query"},
		{"scope on a node without a scoped budget", "bulk", "scope=L-1", 422, "scope", "invalid-query"},
		{"unknown parameter", "list", "scop=L-1", 422, "scop", "invalid-query"},
		{"a parameter twice", "list", "scope=a&scope=b", 422, "scope", "invalid-query"},
		{"empty partition", "list", "partition=", 422, "partition", "invalid-query"},
		{"scope not UTF-8", "list", "scope=%ff", 422, "scope", "invalid-query"},
	}
	for _, c := range cases {
		a := h.Do(http.MethodGet, h.GraphURL("listings")+"/nodes/"+c.node+"/explain?"+c.raw, nil)
		if a.Status != c.status || a.Str("field") != c.field || a.Str("code") != c.code {
			t.Errorf("%s: %d %s; want %d %s naming %s", c.name, a.Status, a.Raw, c.status, c.code, c.field)
		}
	}
	// The scope refusal says how much room the key has.
	a := h.Do(http.MethodGet, h.GraphURL("listings")+"/nodes/list/explain?scope="+strings.Repeat("x", 600), nil)
	if a.Num("room") <= 0 || a.Num("bytes") != 600 || a.Str("budget") != "per-listing" {
		t.Fatalf("scope too long: %s", a.Raw)
	}
}

// A listing with its own limit is judged at it: the document's 300 a week
// (a spent 100 fits under it), then a runtime 100 that wins over it (the
// same 100 binds, "its own limit"); another listing stays at the budget's.
func TestExplainJudgesAScopeValueAtItsOwnLimit(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	doc := listingsDoc(h)
	per := doc["nodes"].(map[string]any)["list"].(map[string]any)["budgets"].([]any)[1].(map[string]any)
	per["keys"] = map[string]any{"L-big": 300}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("listings"), doc), http.StatusOK)
	n := h.Plane().Cat.Lookup(h.App, "listings").Plan.Node("list")
	key := plan.ScopedKey(n.Budgets[1].Key, "L-big")
	if _, err := h.Client.KV(context.Background(), queen.KVPut(h.NS, key, json.RawMessage("100"), queen.PutOpts{TTLSeconds: 3 * 86400})); err != nil {
		t.Fatal(err)
	}
	scoped := func(x wire.Explanation) wire.ExplainCounter {
		for _, c := range x.Counters {
			if c.Budget == "per-listing" {
				return c
			}
		}
		t.Fatalf("no per-listing counter: %+v", x)
		return wire.ExplainCounter{}
	}
	x := explanation(t, h, url.Values{"scope": {"L-big"}})
	c := scoped(x)
	if c.Ceiling != 300 || c.KeyCount != 300 || c.KeySource != "document" || !c.Fits || x.Binding != nil {
		t.Fatalf("L-big under its document count: %+v", c)
	}
	// backfill's share of the value's own count is half of it.
	if x.Counters[1].Shares[0].Path != "backfill" || x.Counters[1].Shares[0].Ceiling != 150 {
		t.Fatalf("shares: %+v", x.Counters[1].Shares)
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("listings")+"/nodes/list/budgets/per-listing/keys/L-big", map[string]any{"count": 100}), http.StatusOK)
	x = explanation(t, h, url.Values{"scope": {"L-big"}})
	c = scoped(x)
	if c.Ceiling != 100 || c.KeySource != "runtime" || c.Fits || x.Binding == nil || *x.Binding != "per-listing" ||
		!strings.Contains(x.Sentence, "waiting for per-listing (L-big's own limit, set at runtime): 100 of 100 this week") {
		t.Fatalf("L-big under a runtime 100: %+v; sentence %q", c, x.Sentence)
	}
	c = scoped(explanation(t, h, url.Values{"scope": {"L-small"}}))
	if c.Ceiling != 100 || c.KeySource != "budget" || c.KeyCount != 100 {
		t.Fatalf("another listing: %+v", c)
	}
}

// Explain by transaction id: the push door's record gives the item's op,
// scope value and partition, so the answer is the one scope and op would
// give, with the id, when it was pushed and where; an unknown id is a 404
// naming it, an id beside scope, op or partition (or empty) a 422 naming
// the field; once its partition has nothing pending the item is said to be
// forwarded.
func TestExplainByTransactionID(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("listings"), listingsDoc(h)), http.StatusOK)
	for i, txn := range []string{"order-1", "order-2"} {
		h.Expect(h.Do(http.MethodPost, h.GraphURL("listings")+"/nodes/list/push", map[string]any{"partition": "p7", "txn": txn, "op": "listing.delete",
			"payload": map[string]any{"listing": "L-9", "i": i}}), http.StatusOK)
	}
	x := explanation(t, h, url.Values{"transactionId": {"order-1"}})
	if x.TransactionID == nil || *x.TransactionID != "order-1" || x.PushedTo == nil || *x.PushedTo != "list" || x.PushedAt == nil || *x.PushedAt == 0 {
		t.Fatalf("by transaction id: %+v; want the id, the node it was pushed to and when", x)
	}
	if x.Scope == nil || *x.Scope != "L-9" || x.Op == nil || *x.Op != "listing.delete" || x.Partition == nil || *x.Partition != "p7" ||
		len(x.Counters) != 3 || len(x.Unjudged) != 0 || x.Ahead == nil || *x.Ahead != 2 || x.Forwarded == nil || *x.Forwarded {
		t.Fatalf("by transaction id: %+v; want scope L-9, op listing.delete, partition p7, three counters judged, 2 pending, not forwarded", x)
	}
	byScope := explanation(t, h, url.Values{"scope": {"L-9"}, "op": {"listing.delete"}, "partition": {"p7"}})
	if len(byScope.Counters) != len(x.Counters) || byScope.WaitSeconds != x.WaitSeconds || byScope.Sentence != x.Sentence || byScope.Counters[1].Key != x.Counters[1].Key {
		t.Fatalf("by id %+v\nby scope %+v: the same item", x, byScope)
	}

	a := h.Expect(h.Do(http.MethodGet, explainURL(h, "list", url.Values{"transactionId": {"never-pushed"}}), nil), http.StatusNotFound)
	if a.Str("code") != "item-not-found" || a.Str("field") != "transactionId" || !strings.Contains(h.ErrorBody(a), "never-pushed") {
		t.Fatalf("unknown id: %s", a.Raw)
	}
	for _, c := range []struct {
		q     url.Values
		field string
	}{
		{url.Values{"transactionId": {"order-1"}, "scope": {"L-9"}}, "scope"},
		{url.Values{"transactionId": {"order-1"}, "partition": {"p7"}}, "partition"},
		{url.Values{"transactionId": {""}}, "transactionId"},
		{url.Values{"transactionId": {strings.Repeat("x", 257)}}, "transactionId"},
	} {
		a := h.Expect(h.Do(http.MethodGet, explainURL(h, "list", c.q), nil), http.StatusUnprocessableEntity)
		if a.Str("field") != c.field {
			t.Fatalf("%v: field %q, want %q: %s", c.q, a.Str("field"), c.field, a.Raw)
		}
	}

	// A worker of the stage takes both items on: the partition is empty,
	// the item forwarded.
	st := h.Plane().Cat.Lookup(h.App, "listings").Plan.Stages[0]
	for _, s := range h.Plane().Cat.Lookup(h.App, "listings").Plan.Stages {
		if s.Node == "list" && s.Path == "main" {
			st = s
		}
	}
	ctx := context.Background()
	cl, err := h.Client.Pop(ctx, queen.PopRequest{Queue: st.Source, Partition: "p7", ConsumerGroup: st.Group, Batch: 10, SubscriptionMode: queen.SubscribeAll})
	if err != nil || len(cl.Messages) != 2 {
		t.Fatalf("pop: %d messages (%v)", len(cl.Messages), err)
	}
	acks := make([]queen.AckItem, 0, 2)
	for _, m := range cl.Messages {
		acks = append(acks, queen.AckItem{TransactionID: m.TransactionID, PartitionID: cl.PartitionID, LeaseID: cl.LeaseID, ConsumerGroup: st.Group})
	}
	if _, err := h.Client.AckBatch(ctx, st.Group, acks); err != nil {
		t.Fatal(err)
	}
	x = explanation(t, h, url.Values{"transactionId": {"order-2"}})
	if x.Forwarded == nil || !*x.Forwarded || !strings.HasPrefix(x.Sentence, "already forwarded: nothing is pending in partition p7 at node list") {
		t.Fatalf("after the worker: forwarded %v, sentence %q", x.Forwarded, x.Sentence)
	}
}

// With the records off (GATE_ITEM_RECORD_SECONDS=0) a push with a txn
// writes none, and explain by transaction id says so.
func TestExplainByTransactionIDWithRecordsOff(t *testing.T) {
	t.Parallel()
	h := apitest.New(t, func(c *config.Config) { c.ItemRecordSeconds = 0 })
	h.Expect(h.Do(http.MethodPut, h.GraphURL("listings"), listingsDoc(h)), http.StatusOK)
	h.Expect(h.Do(http.MethodPost, h.GraphURL("listings")+"/nodes/list/push", map[string]any{"txn": "order-1", "payload": map[string]any{"listing": "L-9"}}), http.StatusOK)
	if _, found, err := h.Plane().Store.Item(context.Background(), h.App, "listings", "order-1"); err != nil || found {
		t.Fatalf("a record was written with the records off (found %v, %v)", found, err)
	}
	a := h.Expect(h.Do(http.MethodGet, explainURL(h, "list", url.Values{"transactionId": {"order-1"}}), nil), http.StatusNotFound)
	if a.Str("code") != "item-not-found" || !strings.Contains(h.ErrorBody(a), "GATE_ITEM_RECORD_SECONDS=0") {
		t.Fatalf("records off: %s", a.Raw)
	}
}
