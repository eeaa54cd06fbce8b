package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
)

// The regression suite of issue 14 (hardening): each test reproduces one
// report from trying Gate as a user, an operator or an attacker.

// A push retried with the same txn and no partition must collapse on the
// broker's dedup: it lands on the partition the txn picks, every time.
func TestPushTxnWithoutPartitionIsStoredOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	h.run("relay-1", "shop", 1)
	push := h.graphURL("shop") + "/nodes/entry/push"
	parts := map[string]bool{}
	pushed := 0
	for range 3 {
		a := h.expect(h.do(http.MethodPost, push, map[string]any{"txn": "order-42", "payload": map[string]any{"units": 1}}), http.StatusOK)
		parts[a.str("partition")] = true
		pushed += int(a.num("pushed"))
	}
	if n := len(h.messages(h.ingress("shop", "entry"))); n != 1 || pushed != 1 || len(parts) != 1 {
		t.Fatalf("three pushes of txn order-42: %d stored, pushed sum %d, partitions %v; want 1, 1, one partition", n, pushed, parts)
	}
	// Different txns still spread over the width.
	for i := range 16 {
		h.expect(h.do(http.MethodPost, push, map[string]any{"txn": "spread-" + string(rune('a'+i))}), http.StatusOK)
	}
	if n := len(h.mini.Partitions(h.ingress("shop", "entry"))); n < 2 {
		t.Fatalf("16 distinct txns landed on %d partition(s)", n)
	}
}

// A declare that fails after the read of the stored documents failed must
// not claim nothing serves: the previous version is stored and may run.
func TestDeclareFailureAfterUnreadableStoreSaysThePreviousVersionMayServe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	h.broker.RequireMini(t, "failing the kv route").SetError(miniqueen.RouteKV, http.StatusServiceUnavailable)
	doc := h.shop()
	doc["version"] = 2
	r := h.expect(h.do(http.MethodPut, h.graphURL("shop"), doc), http.StatusBadGateway)
	msg := h.errorBody(r)
	if strings.Contains(msg, "nothing was stored") || !strings.Contains(msg, "may still serve") || !strings.Contains(msg, "could not be read") {
		t.Fatalf("the 502 after an unreadable store must say the previous version may still serve: %s", msg)
	}
	h.mini.ClearError(miniqueen.RouteKV)
	got := h.expect(h.do(http.MethodGet, h.graphURL("shop"), nil), http.StatusOK)
	if v := got.num("version"); v != 1 {
		t.Fatalf("stored version %v after the failed declare, want 1 (unchanged)", v)
	}
}

// A v1 body as users send it names nothing: the route names it.
func TestV1DocumentWithoutNameTakesTheRoutesName(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := `{"version":1,"budgets":[{"id":"g","cap":5,"periodSeconds":1,"alignment":"rolling","confidence":"assumed"}],"cost":{"field":"units"}}`
	r := h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets/mail", body), http.StatusOK)
	if r.str("graph") != "mail" || !h.stored(h.app, "mail") {
		t.Fatalf("v1 target without name: %.400s", r.raw)
	}
}

// One application cannot name another application's queues silently: a
// Gate-owned queue of another graph is refused by rule, and a queue another
// graph uses is named in a warning — egress-owner included, which gate-api
// must feed with the other stored graphs.
func TestCrossApplicationQueuesAreRefusedOrWarnedByRule(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	other := "/v1/apps/" + h.app + "x/graphs/"
	entry := func(d map[string]any) map[string]any { return d["nodes"].(map[string]any)["limit"].(map[string]any) }
	warned := func(a answer, rule string) bool {
		ws, _ := a.body["warnings"].([]any)
		for _, w := range ws {
			if s, _ := w.(string); strings.HasPrefix(s, "["+rule+"] ") {
				return true
			}
		}
		return false
	}

	// Consuming shop's Gate-owned ingress: refused by name.
	d := h.target("thief", 10)
	entry(d)["ingress"] = map[string]any{"queue": h.ingress("shop", "entry")}
	r := h.expect(h.do(http.MethodPut, other+"thief", d), http.StatusUnprocessableEntity)
	if r.str("rule") != "gate-queue" {
		t.Fatalf("ingress on another application's Gate-owned queue: rule %q, want gate-queue: %s", r.str("rule"), r.raw)
	}
	// Pushing into shop's Gate-owned ingress, past its budgets: refused.
	d = h.target("pusher", 10)
	entry(d)["egress"] = h.ingress("shop", "entry")
	if r := h.expect(h.do(http.MethodPut, other+"pusher", d), http.StatusUnprocessableEntity); r.str("rule") != "gate-queue" {
		t.Fatalf("egress onto another application's Gate-owned queue: %s", r.raw)
	}
	// Sharing shop's egress: accepted with egress-owner.
	d = h.target("twin", 10)
	entry(d)["egress"] = h.app + ".shop.out"
	if r := h.expect(h.do(http.MethodPut, other+"twin", d), http.StatusOK); !warned(r, "egress-owner") {
		t.Fatalf("two graphs sharing an egress: no egress-owner warning: %s", r.raw)
	}
	// Consuming shop's egress: accepted with queue-cross-graph.
	d = h.target("copier", 10)
	entry(d)["ingress"] = map[string]any{"queue": h.app + ".shop.out"}
	if r := h.expect(h.do(http.MethodPut, other+"copier", d), http.StatusOK); !warned(r, "queue-cross-graph") {
		t.Fatalf("an ingress on another graph's egress: no queue-cross-graph warning: %s", r.raw)
	}
}

// The small ones of issue 14, item 7: the push body is read as strictly as
// a declared document, ':' cannot make two budgets share a kv key, and a
// forged attempt does not wrap.
func TestHostileBodiesAreRefusedByField(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	h.run("relay-1", "shop", 1)
	push := h.graphURL("shop") + "/nodes/entry/push"
	cases := []struct {
		name, body string
		status     int
		field      string
	}{
		{"duplicate top-level key", `{"partition":"x","partition":"y"}`, 422, "partition"},
		{"duplicate key inside the payload", `{"partition":"x","payload":{"account":"1","account":"2"}}`, 422, "payload.account"},
		{"capitalised Payload", `{"partition":"x","Payload":{"units":1}}`, 422, "Payload"},
		{"invalid UTF-8 in a payload value", "{\"partition\":\"x\",\"payload\":{\"note\":\"a\xffb\"}}", 422, "payload.note"},
		{"invalid UTF-8 in a key", "{\"partition\":\"x\",\"payload\":{\"n\xc3\":1}}", 422, "payload"},
		{"op of 100 kB", `{"partition":"x","op":"` + strings.Repeat("o", 100_000) + `"}`, 422, "op"},
		{"op with NUL", `{"partition":"x","op":"a\u0000b"}`, 422, "op"},
	}
	for _, c := range cases {
		r := h.do(http.MethodPost, push, c.body)
		if r.status != c.status || r.str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %.300s", c.name, r.status, r.str("field"), c.status, c.field, r.raw)
			continue
		}
		h.errorBody(r)
	}
	if n := len(h.partition(h.ingress("shop", "entry"), "x")); n != 0 {
		t.Fatalf("refused pushes queued %d item(s)", n)
	}
	// The same ':' refused at the PUT, by rule.
	for _, field := range []string{"id", "sharedKey"} {
		d := h.shop()
		d["nodes"].(map[string]any)["entry"].(map[string]any)["budgets"].([]any)[0].(map[string]any)[field] = "k:z"
		if r := h.expect(h.do(http.MethodPut, h.graphURL("colon"), d), http.StatusUnprocessableEntity); r.str("rule") != "kv-key-separator" {
			t.Errorf("':' in %s: rule %q, want kv-key-separator", field, r.str("rule"))
		}
	}
	// A re-entered item stamped attempt 4294967295 is over maxAttempts.
	re := h.graphURL("shop") + "/reenter"
	r := h.do(http.MethodPost, re, `{"txn":"t-9","payload":{"_gate":{"path":"main","attempt":4294967295}}}`)
	if r.status != http.StatusUnprocessableEntity || r.str("field") != "attempt" {
		t.Fatalf("attempt 4294967295 re-entered: %d %s, want 422 on attempt", r.status, r.raw)
	}
	if n := len(h.messages(h.ingress("shop", "entry"))); n != 0 {
		t.Fatalf("the wrapped re-entry queued %d item(s)", n)
	}
}

// What net/http answers itself — a malformed percent-escape in the request
// line, 2 MiB of headers — is the JSON error every other refusal is.
func TestUnreadableRequestsGetJSONErrors(t *testing.T) {
	t.Parallel()
	b := gatetest.NewBroker(t)
	t.Cleanup(sharedIdleClose)
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace = b.URL, b.Namespace()
	s, err := New(cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	cases := []struct {
		name, request string
		status        int
	}{
		{"malformed percent-escape", "GET /v1/apps/%zz/graphs/g HTTP/1.1\r\nHost: gate\r\n\r\n", 400},
		{"2 MiB header", "GET /health HTTP/1.1\r\nHost: gate\r\nX-Big: " + strings.Repeat("h", 2<<20) + "\r\n\r\n", 431},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.WriteString(conn, c.request) }()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		conn.Close()
		var body map[string]any
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(raw, &body) != nil || body["error"] == "" {
			t.Errorf("%s: %d %q %s, want %d with a JSON error", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), raw, c.status)
		}
	}
}

// A hung broker is answered, not waited on: with every broker route held,
// push, PUT, view, ETA and backoff each get an answer — a 503/504 naming
// the broker — once GATE_BROKER_TIMEOUT_MS passes, not when the broker
// comes back. (How fast is measured by BenchmarkHungBrokerAnswer, not
// asserted here.)
func TestHungBrokerIsAnsweredNamingIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) { c.BrokerTimeout = 300 * time.Millisecond })
	mini := h.broker.RequireMini(t, "hanging broker routes")
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	h.run("relay-1", "shop", 1)
	routes := []string{miniqueen.RoutePush, miniqueen.RouteKV, miniqueen.RouteQueues, miniqueen.RouteDepth, miniqueen.RouteConfigure, miniqueen.RouteTransaction, miniqueen.RouteHealth, miniqueen.RouteConsumerGroups}
	for _, r := range routes {
		mini.SetHang(r)
	}
	t.Cleanup(func() {
		for _, r := range routes {
			mini.ClearHang(r)
		}
	})
	doc := h.shop()
	doc["version"] = 2
	calls := []struct {
		name, method, path string
		body               any
		cached             bool // may be answered from gate-api's cache
	}{
		{"push", http.MethodPost, h.graphURL("shop") + "/nodes/entry/push", map[string]any{"partition": "a"}, false},
		{"PUT", http.MethodPut, h.graphURL("shop"), doc, false},
		{"view", http.MethodGet, h.graphURL("shop"), nil, true},
		{"ETA", http.MethodGet, h.graphURL("shop") + "/nodes/entry/eta", nil, false},
		{"backoff", http.MethodPost, h.graphURL("shop") + "/nodes/entry/backoff", map[string]any{"retryAfterSeconds": 5}, false},
	}
	for _, c := range calls {
		r := h.do(c.method, c.path, c.body)
		if c.cached && r.status == http.StatusOK {
			continue
		}
		if r.status != http.StatusGatewayTimeout && r.status != http.StatusServiceUnavailable {
			t.Errorf("%s with the broker hung: %d %.300s, want 503/504 naming the broker", c.name, r.status, r.raw)
			continue
		}
		if msg := h.errorBody(r); !strings.Contains(msg, "broker") {
			t.Errorf("%s: the answer does not name the broker: %s", c.name, msg)
		}
	}
	if n := len(h.partition(h.ingress("shop", "entry"), "a")); n > 1 {
		t.Fatalf("%d items queued by one push", n)
	}
}

// A scope value that would make its counter key longer than the broker
// takes is refused at the door (the item would otherwise wedge its
// partition), naming the field and the room left; one that fits is not.
func TestLongScopeValueIsRefusedAtTheDoor(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.expect(h.do(http.MethodPut, h.graphURL("shop"), h.shop()), http.StatusOK)
	h.run("relay-1", "shop", 1)
	push := h.graphURL("shop") + "/nodes/entry/push"
	key := "b:" + h.app + ":shop:entry:per-acct"
	room := 512 - len(key) - 1
	r := h.expect(h.do(http.MethodPost, push, map[string]any{"partition": "long", "op": "charge.card", "payload": map[string]any{"account": strings.Repeat("a", room+1)}}), http.StatusUnprocessableEntity)
	if r.str("field") != "payload.account" || int(r.num("room")) != room || r.str("budget") != "per-acct" {
		t.Fatalf("long scope value: %.400s, want field payload.account, room %d", r.raw, room)
	}
	if n := len(h.partition(h.ingress("shop", "entry"), "long")); n != 0 {
		t.Fatalf("the refused item was queued")
	}
	h.expect(h.do(http.MethodPost, push, map[string]any{"partition": "long", "op": "charge.card", "payload": map[string]any{"account": strings.Repeat("a", room)}}), http.StatusOK)
}

// A hostile document — 30,000 paths at one node — is refused by the
// product's own bound (worker-total), and a small PUT sent while it is
// being checked is answered and stored: the check holds no lock.
func TestHostileDocumentDoesNotHoldUpASmallPUT(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := h.target("huge", 10)
	var paths []any
	for i := range 30_000 {
		paths = append(paths, map[string]any{"name": "p" + strconv.Itoa(i), "priority": i % 7, "share": 1, "nodes": []any{"limit"}})
	}
	doc["paths"] = paths
	big, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	bigDone := make(chan answer, 1)
	go func() { bigDone <- h.do(http.MethodPut, h.graphURL("huge"), big) }()
	small := h.expect(h.do(http.MethodPut, h.graphURL("small"), h.target("small", 10)), http.StatusOK)
	if small.num("version") != 1 || !h.stored(h.app, "small") {
		t.Fatalf("the small PUT beside the hostile one: %.300s", small.raw)
	}
	r := <-bigDone
	if r.status != http.StatusUnprocessableEntity || r.str("rule") != "worker-total" {
		t.Fatalf("30,000 paths: %d rule %q, want 422 worker-total: %.300s", r.status, r.str("rule"), r.raw)
	}
	if h.stored(h.app, "huge") {
		t.Fatalf("the refused document was stored")
	}
}
