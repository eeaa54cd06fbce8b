package miniqueen

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAppendixATraffic replays, call by call, what Gate v0.2.1 sends
// (queen-wire.md Appendix A) and checks each answer.
func TestAppendixATraffic(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	const (
		in    = "gate.rrl.price-airbnb.providerX.in"
		out   = "rrl.egress.price-airbnb"
		group = "gate.rrl.g.main.n"
	)
	// provision owned queue / create egress queue
	v := w.call("POST", "/api/v1/configure", `{"queue":"`+in+`","namespace":"gate.rrl","options":{"leaseTime":10,"retryLimit":3}}`, 200)
	if at(t, v, "configured") != true {
		t.Fatalf("provision: %v", v)
	}
	w.call("POST", "/api/v1/configure", `{"queue":"`+out+`","options":{}}`, 200)
	// probe user ingress
	v = w.call("GET", "/api/v1/resources/queues/"+in, "", 200)
	if len(at(t, v, "partitions").([]any)) != 0 || num(t, at(t, v, "queue", "retentionSeconds")) != 0 {
		t.Fatalf("probe: %v", v)
	}
	for i := 0; i < 4; i++ {
		w.push(item(in, "listing-42", map[string]any{"op": "price.update", "cost": 2, "i": i}, "evt-"+string(rune('a'+i))))
	}
	// consume a stage
	p := w.pop(in, "batch=200&wait=true&timeout=30000&consumerGroup="+group+"&subscriptionMode=all&leaseSeconds=10")
	if len(p.messages) != 4 {
		t.Fatalf("stage pop: %v", p.body)
	}
	// keep the claim while parked
	w.s.FastForward(3 * time.Second)
	v = w.call("POST", "/api/v1/lease/"+p.leaseID+"/extend", `{"seconds":10}`, 200)
	if at(t, v, "success") != true || num(t, at(t, v, "renewed")) != 1 {
		t.Fatalf("extend: %v", v)
	}
	// charge budgets
	key := "b:rrl:price-airbnb:providerX:providerX"
	v = w.call("POST", "/api/v1/kv", `{"operations":[{"op":"incr","ns":"gate","key":"`+key+`","delta":12,"ttlSeconds":1,"max":100},{"op":"getMany","ns":"gate","keys":["`+key+`"]}]}`, 200)
	if at(t, v, "results", 0, "applied") != true || num(t, at(t, v, "results", 1, "rows", 0, "value")) != 12 {
		t.Fatalf("charge: %v", v)
	}
	// refund: x = value the charge left - d
	v = w.call("POST", "/api/v1/kv", `{"operations":[{"op":"incr","ns":"gate","key":"`+key+`","delta":-4,"min":8,"max":8,"ttlSeconds":1}]}`, 200)
	if at(t, v, "results", 0, "applied") != true || num(t, at(t, v, "results", 0, "value")) != 8 {
		t.Fatalf("refund: %v", v)
	}
	// breaker
	v = w.call("POST", "/api/v1/kv", `{"operations":[{"op":"put","ns":"gate","key":"`+key+`","value":100,"ttlSeconds":30}]}`, 200)
	if at(t, v, "results", 0, "applied") != true {
		t.Fatalf("breaker put: %v", v)
	}
	if e, _ := w.s.KV("gate", key); e.Int != 100 || !e.ExpiresAt.Equal(w.s.Now().Add(30*time.Second)) {
		t.Fatalf("put must move the expiry: %+v", e)
	}
	w.call("PUT", "/api/v1/kv/gate/brk:rrl:providerX", `{"value":{"open":true,"retryAfter":30},"ttlSeconds":30}`, 200)
	v = w.call("POST", "/api/v1/kv", `{"operations":[{"op":"delete","ns":"gate","key":"brk:rrl:providerX"}]}`, 200)
	if at(t, v, "results", 0, "applied") != true {
		t.Fatalf("breaker reset: %v", v)
	}
	// relay a true prefix of the claim (3 of 4)
	var ops []map[string]any
	var items []map[string]any
	for _, m := range p.messages[:3] {
		ops = append(ops, map[string]any{"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": p.leaseID, "consumerGroup": group, "status": "completed"})
		items = append(items, map[string]any{"queue": out, "partition": m["partition"], "payload": m["data"], "transactionId": "gate:" + m["transactionId"].(string)})
	}
	ops = append(ops, map[string]any{"type": "push", "items": items})
	v = w.txn(map[string]any{"operations": ops, "requiredLeases": []string{p.leaseID}})
	if at(t, v, "success") != true {
		t.Fatalf("relay: %v", v)
	}
	// poison: the fourth message fails
	m := p.messages[3]
	v = w.txn(map[string]any{"operations": []map[string]any{{"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": p.leaseID, "consumerGroup": group, "status": "failed", "error": "vendor 500"}}, "requiredLeases": []string{p.leaseID}})
	if at(t, v, "success") != true || at(t, v, "results", 0, "dlq") != false {
		t.Fatalf("poison: %v", v)
	}
	if c, _ := w.s.Cursor(in, group, "listing-42"); c.Committed != 2 || c.Retries != 1 || c.LeaseID != "" {
		t.Fatalf("cursor after relay + poison: %+v", c)
	}
	// spec store
	w.call("PUT", "/api/v1/kv/gate/graph%3Arrl%3Amain", `{"value":{"nodes":[]},"forever":true}`, 200)
	v = w.call("POST", "/api/v1/kv", `{"operations":[{"op":"getPrefix","ns":"gate","prefix":"graph:","limit":1000}]}`, 200)
	if at(t, v, "results", 0, "rows", 0, "key") != "graph:rrl:main" || at(t, v, "results", 0, "truncated") != false {
		t.Fatalf("spec list: %v", v)
	}
	if v := w.call("DELETE", "/api/v1/kv/gate/graph%3Arrl%3Amain", "", 200); at(t, v, "applied") != true {
		t.Fatalf("spec delete: %v", v)
	}
	// ETA / console
	v = w.call("GET", "/api/v1/resources/queues/"+in+"/depth?group="+group, "", 200)
	if num(t, at(t, v, "pending")) != 1 || at(t, v, "partitions", 0, "partition") != "listing-42" {
		t.Fatalf("depth: %v", v)
	}
	v = w.call("GET", "/api/v1/resources/queues/"+out+"/depth", "", 200)
	if num(t, at(t, v, "pending")) != 3 {
		t.Fatalf("egress depth: %v", v)
	}
	// broker probe
	status, b, _ := w.do("GET", "/health", "")
	if status != http.StatusOK || !strings.Contains(string(b), `"version":"1.0.5"`) {
		t.Fatalf("health: %d %s", status, b)
	}
}
