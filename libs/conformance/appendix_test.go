package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/queen-mq/gate/libs/capability"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// call is one request seen by the recording proxy.
type call struct {
	method, path string // path as sent, still escaped
	query        url.Values
	body         []byte
	status       int
}

// recorder is a reverse proxy in front of the broker that keeps every
// request, so a test can assert the exact wire Gate's calls produce.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

// recordingClient returns a client whose traffic goes through a recording
// proxy to e's broker.
func recordingClient(t *testing.T, e *env) (*queen.Client, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p, q, _ := strings.Cut(r.RequestURI, "?")
		out, err := http.NewRequestWithContext(r.Context(), r.Method, e.URL+r.RequestURI, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		if len(body) == 0 {
			out.Body, out.ContentLength = nil, 0
		}
		resp, err := e.c.HTTPClient().Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		qv, _ := url.ParseQuery(q)
		rec.mu.Lock()
		rec.calls = append(rec.calls, call{r.Method, p, qv, body, resp.StatusCode})
		rec.mu.Unlock()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	c, err := queen.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

// take returns and forgets the calls recorded so far.
func (r *recorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// only returns the single call recorded since the last take, failing t
// otherwise, and checks its method and path.
func (r *recorder) only(t *testing.T, method, path string) call {
	t.Helper()
	calls := r.take()
	if len(calls) != 1 {
		t.Fatalf("%s %s: %d calls on the wire, want 1: %+v", method, path, len(calls), calls)
	}
	c := calls[0]
	if c.method != method || c.path != path {
		t.Fatalf("wire: %s %s, want %s %s", c.method, c.path, method, path)
	}
	return c
}

// jsonEq asserts a request body equals want as JSON.
func jsonEq(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: body %s: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %s: %v", what, want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s body:\n got %s\nwant %s", what, gb, wb)
	}
}

// TestAppendixA_GateTrafficEndToEnd plays every row of queen-wire.md
// Appendix A through the Go client, checks the broker's answers as Gate reads
// them, and checks the client put exactly Gate's wire on the network. Gate's
// KV namespace "gate" is replaced by the test's own namespace, and its app
// name by the test prefix, for isolation.
func TestAppendixA_GateTrafficEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV, capability.Depth)
	c, rec := recordingClient(t, e)
	ctx := e.ctx
	app := e.Prefix
	ns := e.ns
	ingress := e.Queue("orders")                // user-owned ingress
	owned := "gate." + app + ".g.n.in"          // a queue Gate owns
	egress := e.Queue("out")                    // the egress queue
	group := "gate." + app + ".g.main.n"        // the stage's consumer group
	budget := "b:" + app + ":g:provider:global" // one budget counter

	// broker probe: GET /health, read version.
	h, err := c.Health(ctx)
	if err != nil || h.Version == "" || !h.Healthy() {
		t.Fatalf("health: %+v %v, want healthy with a version", h, err)
	}
	rec.only(t, http.MethodGet, "/health")

	// provision owned queue.
	cfg, err := c.Configure(ctx, queen.ConfigureRequest{Queue: owned, Namespace: "gate." + app, Options: queen.QueueOptions{LeaseTime: queen.Int(10), RetryLimit: queen.Int(3)}})
	if err != nil || !cfg.Configured || cfg.Options.LeaseTime.Value != 10 || cfg.Options.RetryLimit.Value != 3 {
		t.Fatalf("provision owned queue: %+v %v", cfg, err)
	}
	jsonEq(t, "provision", rec.only(t, http.MethodPost, "/api/v1/configure").body,
		fmt.Sprintf(`{"queue":%q,"namespace":%q,"options":{"leaseTime":10,"retryLimit":3}}`, owned, "gate."+app))

	// create egress queue (error ignored by Gate; we still expect success).
	if _, err := c.Configure(ctx, queen.ConfigureRequest{Queue: egress}); err != nil {
		t.Errorf("bare egress create: %v", err)
	}
	jsonEq(t, "egress create", rec.only(t, http.MethodPost, "/api/v1/configure").body, fmt.Sprintf(`{"queue":%q,"options":{}}`, egress))

	// user traffic: two accounts on the ingress (not Gate's wire).
	e.push(t, ingress, "acct-1", msgs(1, 3)...)
	e.push(t, ingress, "acct-2", msgs(4, 5)...)

	// probe user ingress.
	info, err := c.Queue(ctx, ingress)
	if err != nil || len(info.Partitions) != 2 {
		t.Fatalf("probe ingress: %+v %v, want 2 partitions", info, err)
	}
	for _, p := range info.Partitions {
		if p.Pending == 0 {
			t.Errorf("ingress partition %s reports pending 0", p.Name)
		}
	}
	rec.only(t, http.MethodGet, "/api/v1/resources/queues/"+ingress)

	// consume a stage.
	stagePop := queen.PopRequest{Queue: ingress, Batch: 50, Wait: true, Timeout: 30 * time.Second, ConsumerGroup: group, SubscriptionMode: queen.SubscribeAll, LeaseSeconds: 10}
	claim, err := c.Pop(ctx, stagePop)
	if err != nil || claim.Empty() {
		t.Fatalf("stage pop: %+v %v", claim, err)
	}
	pop := rec.only(t, http.MethodGet, "/api/v1/pop/queue/"+ingress)
	wantQuery := url.Values{"batch": {"50"}, "wait": {"true"}, "timeout": {"30000"}, "consumerGroup": {group}, "subscriptionMode": {"all"}, "leaseSeconds": {"10"}}
	if pop.query.Encode() != wantQuery.Encode() {
		t.Errorf("stage pop query %s, want exactly %s (no partitions, no autoAck)", pop.query.Encode(), wantQuery.Encode())
	}
	part := claim.Messages[0].Partition
	for _, m := range claim.Messages {
		if m.Partition != part || m.LeaseID != claim.LeaseID || m.ConsumerGroup != group {
			t.Fatalf("claim mixes partitions/leases/groups: %+v", claim.Messages)
		}
	}

	// keep the claim while parked.
	ext, err := c.ExtendLease(ctx, claim.LeaseID, 10*time.Second)
	if err != nil || !ext.Success || ext.Renewed != 1 {
		t.Fatalf("extend: %+v %v", ext, err)
	}
	jsonEq(t, "extend", rec.only(t, http.MethodPost, "/api/v1/lease/"+claim.LeaseID+"/extend").body, `{"seconds":10}`)

	// charge budgets: incr with max + getMany of the same key.
	cost := int64(len(claim.Messages))
	charge, err := c.KV(ctx, queen.KVIncr(ns, budget, cost, queen.IncrOpts{TTLSeconds: 1, Max: queen.Int(100)}), queen.KVGetMany(ns, budget))
	if err != nil || charge.Refusal != nil || !charge.Results[0].Applied || len(charge.Results[1].Rows) != 1 || charge.Results[1].Rows[0].ExpiresAt == "" {
		t.Fatalf("charge: %+v %v, want applied with the window end in getMany", charge, err)
	}
	jsonEq(t, "charge", rec.only(t, http.MethodPost, "/api/v1/kv").body, fmt.Sprintf(
		`{"operations":[{"op":"incr","ns":%[1]q,"key":%[2]q,"delta":%[3]d,"ttlSeconds":1,"max":100},{"op":"getMany","ns":%[1]q,"keys":[%[2]q]}]}`, ns, budget, cost))

	// relay: ack the whole claim (a true prefix: all of it) + push to egress on
	// the same partition with deterministic transaction ids + requiredLeases.
	relay := &queen.Transaction{}
	items := make([]queen.PushItem, len(claim.Messages))
	for i := range claim.Messages {
		m := &claim.Messages[i]
		relay.Ack(m.AckItem(queen.AckCompleted, ""))
		items[i] = queen.PushItem{Queue: egress, Partition: m.Partition, Payload: m.Data, TransactionID: "gate:" + m.ID}
	}
	relay.Push(items...).RequireLease(claim.LeaseID)
	res, err := c.Transact(ctx, relay)
	if err != nil || !res.Success || len(res.Results) != 2*len(claim.Messages) {
		t.Fatalf("relay: %+v %v", res, err)
	}
	tx := rec.only(t, http.MethodPost, "/api/v1/transaction")
	var wire struct {
		Operations []map[string]any `json:"operations"`
		Required   []string         `json:"requiredLeases"`
	}
	if err := json.Unmarshal(tx.body, &wire); err != nil {
		t.Fatal(err)
	}
	for i, op := range wire.Operations[:len(claim.Messages)] {
		if op["type"] != "ack" || op["status"] != "completed" || op["leaseId"] != claim.LeaseID || op["consumerGroup"] != group || op["partitionId"] == "" {
			t.Errorf("relay ack op %d = %v, want type ack, status completed, leaseId, consumerGroup, partitionId", i, op)
		}
	}
	if last := wire.Operations[len(wire.Operations)-1]; last["type"] != "push" {
		t.Errorf("relay push op %v", last)
	}
	if !slices.Equal(wire.Required, []string{claim.LeaseID}) {
		t.Errorf("requiredLeases %v, want [%s]", wire.Required, claim.LeaseID)
	}

	// The other account's claim: its relay collides (a previous run already
	// forwarded one message), so Gate refunds, then nacks the poison.
	claim2, err := c.Pop(ctx, stagePop)
	rec.take()
	if err != nil || claim2.Empty() || claim2.Messages[0].Partition == part {
		t.Fatalf("second stage pop: %+v %v, want the other partition", claim2, err)
	}
	if _, err := e.c.Push(ctx, []queen.PushItem{ // not Gate's wire: the earlier run's forward
		{Queue: egress, Partition: claim2.Messages[0].Partition, Payload: claim2.Messages[0].Data, TransactionID: "gate:" + claim2.Messages[0].ID}}); err != nil {
		t.Fatal(err)
	}
	d := int64(len(claim2.Messages))
	charged, err := c.KV(ctx, queen.KVIncr(ns, budget, d, queen.IncrOpts{TTLSeconds: 1, Max: queen.Int(100)}), queen.KVGetMany(ns, budget))
	if err != nil || !charged.Results[0].Applied {
		t.Fatalf("second charge: %+v %v", charged, err)
	}
	left := intOf(t, charged.Results[0])
	rec.take()
	relay2 := &queen.Transaction{}
	items2 := make([]queen.PushItem, len(claim2.Messages))
	for i := range claim2.Messages {
		m := &claim2.Messages[i]
		relay2.Ack(m.AckItem(queen.AckCompleted, ""))
		items2[i] = queen.PushItem{Queue: egress, Partition: m.Partition, Payload: m.Data, TransactionID: "gate:" + m.ID}
	}
	relay2.Push(items2...).RequireLease(claim2.LeaseID)
	res2, err := c.Transact(ctx, relay2)
	rec.take()
	if err != nil || res2.Success || !res2.Refusal.Duplicate() {
		t.Fatalf("colliding relay: %+v %v, want a QDUP rollback", res2, err)
	}
	// refund: min == max == (value the charge left) − d.
	x := left - d
	refund, err := c.KV(ctx, queen.KVIncr(ns, budget, -d, queen.IncrOpts{TTLSeconds: 1, Min: queen.Int(x), Max: queen.Int(x)}))
	if err != nil || !refund.Results[0].Applied || intOf(t, refund.Results[0]) != x {
		t.Fatalf("refund: %+v %v, want applied leaving %d", refund, err, x)
	}
	jsonEq(t, "refund", rec.only(t, http.MethodPost, "/api/v1/kv").body, fmt.Sprintf(
		`{"operations":[{"op":"incr","ns":%q,"key":%q,"delta":%d,"ttlSeconds":1,"min":%d,"max":%d}]}`, ns, budget, -d, x, x))
	// poison: one failed ack with an error.
	poison, err := c.Transact(ctx, (&queen.Transaction{}).Ack(claim2.Messages[0].AckItem(queen.AckFailed, "vendor 500")))
	if err != nil || !poison.Success || len(poison.Results) != 1 || poison.Results[0].Type != "ack" {
		t.Fatalf("poison: %+v %v", poison, err)
	}
	pw := rec.only(t, http.MethodPost, "/api/v1/transaction")
	if !bytes.Contains(pw.body, []byte(`"status":"failed"`)) || !bytes.Contains(pw.body, []byte(`"error":"vendor 500"`)) {
		t.Errorf("poison wire %s, want status failed with the error", pw.body)
	}

	// breaker: spend the window with put to the ceiling for retryAfter, record
	// the breaker under its own key; a charge is then refused until it lapses.
	brk := "brk:" + app + ":n"
	if r, err := c.KV(ctx, queen.KVPut(ns, budget, json.RawMessage(`100`), queen.PutOpts{TTLSeconds: 2})); err != nil || !r.Results[0].Applied {
		t.Fatalf("breaker put: %+v %v", r, err)
	}
	if r, err := c.KVPutKey(ctx, ns, brk, json.RawMessage(`{"retryAfter":2}`), queen.PutOpts{TTLSeconds: 2}); err != nil || !r.Applied {
		t.Fatalf("breaker PUT: %+v %v", r, err)
	}
	rec.take()
	if r, _ := c.KV(ctx, queen.KVIncr(ns, budget, 1, queen.IncrOpts{TTLSeconds: 1, Max: queen.Int(100)})); r.Results[0].Applied {
		t.Errorf("charge while the breaker spent the window: applied, want refused")
	}
	e.elapse(2500 * time.Millisecond)
	if r, _ := c.KV(ctx, queen.KVIncr(ns, budget, 1, queen.IncrOpts{TTLSeconds: 1, Max: queen.Int(100)})); !r.Results[0].Applied || intOf(t, r.Results[0]) != 1 {
		t.Errorf("charge after the breaker window: %+v, want applied in a fresh window", r.Results)
	}
	if _, err := c.KVPutKey(ctx, ns, brk, json.RawMessage(`{"retryAfter":60}`), queen.PutOpts{TTLSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if r, err := c.KVDeleteKey(ctx, ns, brk, queen.DeleteOpts{}); err != nil || !r.Applied {
		t.Errorf("breaker reset: %+v %v", r, err)
	}
	if del := rec.only(t, http.MethodDelete, "/api/v1/kv/"+ns+"/brk%3A"+app+"%3An"); len(del.body) != 0 {
		t.Errorf("breaker reset sent a body %s", del.body)
	}

	// spec store: PUT forever, list by prefix, delete.
	docKey := "graph:" + app + ":main"
	if r, err := c.KVPutKey(ctx, ns, docKey, json.RawMessage(`{"version":1,"nodes":[]}`), queen.PutOpts{Forever: true}); err != nil || !r.Applied {
		t.Fatalf("spec store put: %+v %v", r, err)
	}
	put := rec.only(t, http.MethodPut, "/api/v1/kv/"+ns+"/graph%3A"+app+"%3Amain")
	jsonEq(t, "spec store put", put.body, `{"value":{"version":1,"nodes":[]},"forever":true}`)
	list, err := c.KV(ctx, queen.KVGetPrefix(ns, "graph:", queen.PrefixOpts{Limit: 1000}))
	if err != nil || len(list.Results[0].Rows) != 1 || list.Results[0].Rows[0].Key != docKey || list.Results[0].Truncated || list.Results[0].Rows[0].ExpiresAt != "" {
		t.Fatalf("spec store list: %+v %v, want exactly %s, forever, not truncated", list, err, docKey)
	}
	jsonEq(t, "spec store list", rec.only(t, http.MethodPost, "/api/v1/kv").body, fmt.Sprintf(`{"operations":[{"op":"getPrefix","ns":%q,"prefix":"graph:","limit":1000}]}`, ns))
	if r, err := c.KVDeleteKey(ctx, ns, docKey, queen.DeleteOpts{}); err != nil || !r.Applied {
		t.Fatalf("spec store delete: %+v %v", r, err)
	}
	rec.take()

	// ETA / console: depth under the stage group + getMany of the budget.
	depth, err := c.Depth(ctx, ingress, group)
	if err != nil {
		t.Fatal(err)
	}
	dq := rec.only(t, http.MethodGet, "/api/v1/resources/queues/"+ingress+"/depth")
	if dq.query.Get("group") != group {
		t.Errorf("depth query %v, want group=%s", dq.query, group)
	}
	// The first account is settled; the second's poison was nacked (so it is
	// pending again).
	if depth.Pending != d || partDepth(depth, part).Pending != 0 {
		t.Errorf("depth %+v, want pending %d, all on the second account", depth, d)
	}

	// The egress workers see the relayed messages on the same partition.
	out := e.pop(t, queen.PopRequest{Queue: egress, Partition: part, ConsumerGroup: e.Group("workers"), Batch: 100})
	if len(out.Messages) != len(claim.Messages) {
		t.Fatalf("egress %s holds %d messages, want %d", part, len(out.Messages), len(claim.Messages))
	}
	for i, m := range out.Messages {
		if m.TransactionID != "gate:"+claim.Messages[i].ID || !bytes.Equal(m.Data, claim.Messages[i].Data) {
			t.Errorf("egress message %d = %s %s, want %s %s", i, m.TransactionID, m.Data, "gate:"+claim.Messages[i].ID, claim.Messages[i].Data)
		}
	}
}
