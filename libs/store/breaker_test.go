package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// brokerStore is a store on its own namespace and the raw client beside it,
// to put rows the store never would.
func brokerStore(t *testing.T) (*store.Store, *queen.Client, string) {
	t.Helper()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return store.New(c, b.Namespace()), c, b.Namespace()
}

func nodes(app, graph string, names ...string) *plan.Plan {
	p := &plan.Plan{}
	for _, n := range names {
		p.Nodes = append(p.Nodes, plan.Node{Name: n, BreakerKey: plan.BreakerKey(app, graph, n)})
	}
	return p
}

func putRaw(t *testing.T, c *queen.Client, ns, key, value string) {
	t.Helper()
	if _, err := c.KV(context.Background(), queen.KVPut(ns, key, json.RawMessage(value), queen.PutOpts{TTLSeconds: 60})); err != nil {
		t.Fatal(err)
	}
}

// A breaker record written for a node reads back at its key, whole, and
// expires with the Retry-After it carries; nodes without one, and a row at
// a breaker key that is no breaker record, read as no record.
func TestBreakerRecordsReadBackByNodeAndExpireWithTheirBackoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c, ns := brokerStore(t)
	p := nodes("shop", "orders", "api", "db", "junk")
	held := store.Breaker{At: time.Now().UnixMilli(), RetryAfterSeconds: 42, By: "vendor 429", Application: "shop", Graph: "orders", Node: "api"}
	before := time.Now()
	if err := s.PutBreaker(ctx, p.Nodes[0].BreakerKey, held); err != nil {
		t.Fatalf("put: %v", err)
	}
	putRaw(t, c, ns, p.Nodes[2].BreakerKey, `{"at":5}`)

	got, err := s.Breakers(ctx, p)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(got) != 1 || got[p.Nodes[0].BreakerKey] != held {
		t.Fatalf("read %+v, want only api's record %+v", got, held)
	}
	if u := held.Until(); u != held.At+42_000 {
		t.Errorf("until %d, want at + 42 s", u)
	}
	res, err := c.KV(ctx, queen.KVGetMany(ns, p.Nodes[0].BreakerKey))
	if err != nil || len(res.Results) != 1 || len(res.Results[0].Rows) != 1 {
		t.Fatalf("raw read: %+v %v", res, err)
	}
	exp, err := res.Results[0].Rows[0].ExpiresAt.Time()
	if err != nil {
		t.Fatalf("the record has no expiry: %v", err)
	}
	if lo, hi := before.Add(40*time.Second), time.Now().Add(44*time.Second); exp.Before(lo) || exp.After(hi) {
		t.Errorf("the record expires at %s, want 42 s after the write (%s … %s)", exp, lo, hi)
	}

	if err := s.PutBreaker(ctx, p.Nodes[1].BreakerKey, store.Breaker{Node: "db", RetryAfterSeconds: 0}); err == nil {
		t.Error("a record with retryAfterSeconds 0 (it would never expire) was written")
	}
	if got, _ := s.Breakers(ctx, p); len(got) != 1 {
		t.Errorf("after a refused write the records are %+v, want api's alone", got)
	}
	if got, err := s.Breakers(ctx, &plan.Plan{}); err != nil || len(got) != 0 {
		t.Errorf("a plan without nodes reads %+v %v, want none", got, err)
	}
}

// The fleet's records list newest first, across graphs; rows under the
// prefix that are no record, and rows outside it, are not listed.
func TestRecentBreakersListNewestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, c, ns := brokerStore(t)
	recs := []store.Breaker{
		{At: 100, RetryAfterSeconds: 30, Application: "shop", Graph: "orders", Node: "api"},
		{At: 300, RetryAfterSeconds: 30, Application: "shop", Graph: "refunds", Node: "api", By: "429"},
		{At: 200, RetryAfterSeconds: 30, Application: "mail", Graph: "send", Node: "smtp"},
	}
	for _, r := range recs {
		if err := s.PutBreaker(ctx, plan.BreakerKey(r.Application, r.Graph, r.Node), r); err != nil {
			t.Fatal(err)
		}
	}
	putRaw(t, c, ns, plan.BreakerPrefix+"shop:orders:junk", `"not a record"`)
	putRaw(t, c, ns, "b:shop:orders:api:global", `7`)
	got, err := s.RecentBreakers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != recs[1] || got[1] != recs[2] || got[2] != recs[0] {
		t.Fatalf("listed %+v, want the records at 300, 200, 100", got)
	}
}

// A broker that does not answer is an error naming the read, never an
// empty answer passed off as "no backoff".
func TestBreakerReadsFailWhenTheBrokerDoesNotAnswer(t *testing.T) {
	t.Parallel()
	c, err := queen.New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(c, "gate")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := s.Breakers(ctx, nodes("shop", "orders", "api")); err == nil || got == nil || len(got) != 0 {
		t.Errorf("breakers = %+v, %v; want an empty map and an error", got, err)
	}
	if _, err := s.RecentBreakers(ctx); err == nil {
		t.Error("listing against no broker answered without an error")
	}
	if err := s.PutBreaker(ctx, "brk:shop:orders:api", store.Breaker{Node: "api", RetryAfterSeconds: 5}); err == nil {
		t.Error("writing against no broker answered without an error")
	}
}
