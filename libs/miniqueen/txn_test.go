package miniqueen

import (
	"net/http"
	"strings"
	"testing"
)

// claimOne pushes n messages to src/p and pops them under group g.
func claimOne(t *testing.T, w *wire, n int) popped {
	t.Helper()
	for i := 0; i < n; i++ {
		w.push(item("src", "p", map[string]any{"n": i}, "in-"+string(rune('a'+i))))
	}
	p := w.pop("src", "batch=200&"+grp+"&leaseSeconds=10")
	if len(p.messages) != n {
		t.Fatalf("claimed %d, want %d", len(p.messages), n)
	}
	return p
}

func relayBody(p popped, extra map[string]any) map[string]any {
	var ops []map[string]any
	for _, m := range p.messages {
		a := ackOf(m, "completed")
		a["type"] = "ack"
		ops = append(ops, a)
	}
	var items []map[string]any
	for _, m := range p.messages {
		items = append(items, map[string]any{"queue": "dst", "partition": m["partition"], "payload": m["data"], "transactionId": "fwd-" + m["transactionId"].(string)})
	}
	ops = append(ops, map[string]any{"type": "push", "items": items})
	body := map[string]any{"operations": ops, "requiredLeases": []string{p.leaseID}}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func TestTransactionCommitsRelay(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	p := claimOne(t, w, 2)
	v := w.txn(relayBody(p, map[string]any{"kv": []map[string]any{incr("budget", 2, map[string]any{"max": 10})}}))
	if at(t, v, "success") != true || !isUUID(str(t, at(t, v, "transactionId"))) {
		t.Fatalf("commit: %v", v)
	}
	res := at(t, v, "results").([]any)
	if len(res) != 5 {
		t.Fatalf("flat results: one per ack, per push item, per kv op: %v", res)
	}
	for i, want := range []string{"ack", "ack", "push", "push", "kv"} {
		if at(t, res[i], "type") != want || num(t, at(t, res[i], "index")) != int64(i) {
			t.Fatalf("slot %d: %v", i, res[i])
		}
	}
	if at(t, res[0], "error") != nil || at(t, res[0], "dlq") != false || at(t, res[2], "queueName") != "dst" || at(t, res[2], "transactionId") != "fwd-in-a" {
		t.Fatalf("entries: %v", res)
	}
	if num(t, at(t, res[4], "opIndex")) != 0 || at(t, res[4], "op") != "incr" || num(t, at(t, res[4], "value")) != 2 {
		t.Fatalf("kv entry: %v", res[4])
	}
	if c, _ := w.s.Cursor("src", "g", "p"); c.Committed != 1 || c.LeaseID != "" {
		t.Fatalf("acks not applied: %+v", c)
	}
	if got := w.s.Messages("dst", "p"); len(got) != 2 || got[0].TransactionID != "fwd-in-a" {
		t.Fatalf("pushes not applied: %+v", got)
	}
	// The partition is claimable again at once.
	w.push(item("src", "p", map[string]any{"n": 9}, ""))
	if q := w.pop("src", "batch=10&"+grp); len(q.messages) != 1 {
		t.Fatalf("settled claim must release the partition")
	}
}

// TestTransactionIsAllOrNothing checks that every kind of failure leaves no
// trace: counter, pushes and cursor unchanged.
func TestTransactionIsAllOrNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(t *testing.T, w *wire, p popped, body map[string]any)
		check  func(t *testing.T, v any)
	}{
		{
			name: "lost required gate",
			mutate: func(t *testing.T, w *wire, p popped, body map[string]any) {
				w.kv(incr("budget", 9, nil))
				body["kv"] = []map[string]any{
					{"op": "putIfAbsent", "ns": "gate", "key": "fresh", "value": 1, "ttlSeconds": 60, "required": true},
					incr("budget", 2, map[string]any{"max": 10, "required": true}),
				}
			},
			check: func(t *testing.T, v any) {
				if at(t, v, "success") != false || at(t, v, "ok") != false || at(t, v, "reason") != "kv_precondition" ||
					at(t, v, "error") != "kv_precondition_failed" || num(t, at(t, v, "failedIndex")) != 5 ||
					at(t, v, "kvReason") != "limit" || num(t, at(t, v, "value")) != 9 || len(at(t, v, "results").([]any)) != 0 {
					t.Fatalf("verdict: %v", v)
				}
			},
		},
		{
			name: "duplicate push",
			mutate: func(t *testing.T, w *wire, p popped, body map[string]any) {
				w.push(item("dst", "p", 1, "fwd-in-b"))
				body["kv"] = []map[string]any{incr("budget", 2, nil)}
			},
			check: func(t *testing.T, v any) {
				if at(t, v, "success") != false || at(t, v, "reason") != "duplicate" || !strings.HasPrefix(str(t, at(t, v, "error")), "QDUP") ||
					strings.Contains(str(t, at(t, v, "error")), "fwd-in-b") {
					t.Fatalf("QDUP: %v", v)
				}
			},
		},
		{
			name: "stale lease",
			mutate: func(t *testing.T, w *wire, p popped, body map[string]any) {
				ops := body["operations"].([]map[string]any)
				ops[0]["leaseId"] = "01980000-0000-7000-8000-000000000000"
				body["kv"] = []map[string]any{incr("budget", 2, nil)}
			},
			check: func(t *testing.T, v any) {
				if at(t, v, "success") != false || at(t, v, "reason") != "ack_rejected" || !strings.HasPrefix(str(t, at(t, v, "error")), "QTXN") {
					t.Fatalf("QTXN: %v", v)
				}
			},
		},
		{
			name: "unknown transaction id",
			mutate: func(t *testing.T, w *wire, p popped, body map[string]any) {
				ops := body["operations"].([]map[string]any)
				ops[1]["transactionId"] = "never-pushed"
			},
			check: func(t *testing.T, v any) {
				if at(t, v, "reason") != "ack_rejected" {
					t.Fatalf("unknown txn: %v", v)
				}
			},
		},
		{
			name: "required lease no longer live",
			mutate: func(t *testing.T, w *wire, p popped, body map[string]any) {
				body["requiredLeases"] = []string{p.leaseID, "01980000-0000-7000-8000-00000000dead"}
			},
			check: func(t *testing.T, v any) {
				if at(t, v, "reason") != "ack_rejected" {
					t.Fatalf("required lease: %v", v)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWire(t)
			p := claimOne(t, w, 2)
			body := relayBody(p, nil)
			c.mutate(t, w, p, body)
			before, hadBudget := w.s.KV("gate", "budget")
			dstBefore := len(w.s.Messages("dst", "p"))
			v := w.txn(body)
			c.check(t, v)
			after, hasBudget := w.s.KV("gate", "budget")
			if hadBudget != hasBudget || before.Int != after.Int || before.Version != after.Version {
				t.Fatalf("counter changed: %+v -> %+v", before, after)
			}
			if _, ok := w.s.KV("gate", "fresh"); ok {
				t.Fatalf("rolled-back putIfAbsent left a key")
			}
			if got := len(w.s.Messages("dst", "p")); got != dstBefore {
				t.Fatalf("pushes leaked: %d -> %d", dstBefore, got)
			}
			if cur, _ := w.s.Cursor("src", "g", "p"); cur.Committed != -1 || cur.LeaseID != p.leaseID {
				t.Fatalf("cursor moved: %+v", cur)
			}
		})
	}
}

func TestTransactionDuplicatesAndRiders(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	// An intra-bundle repeat is not a rollback.
	v := w.txn(map[string]any{"operations": []map[string]any{
		{"type": "push", "items": []map[string]any{item("dst", "x", 1, "same"), item("dst", "x", 2, "same")}},
		{"type": "push", "queue": "dst", "partition": "", "payload": map[string]any{"traceless": true}, "traceId": "not-a-uuid"},
	}})
	r := at(t, v, "results").([]any)
	if at(t, r[1], "duplicate") != true || at(t, r[1], "messageId") != at(t, r[0], "messageId") || has(r[0], "duplicate") {
		t.Fatalf("in-bundle repeat: %v", r)
	}
	if got := w.s.Partitions("dst"); len(got) != 2 || got[1] != "" {
		t.Fatalf("explicit empty partition name is real: %v", got)
	}
	// Replaying a committed bundle is a QDUP rollback.
	v = w.txn(map[string]any{"operations": []map[string]any{{"type": "push", "items": []map[string]any{item("dst", "x", 1, "same")}}}})
	if at(t, v, "reason") != "duplicate" {
		t.Fatalf("replay: %v", v)
	}
	// A rider-only bundle commits.
	v = w.txn(map[string]any{"kv": []map[string]any{incr("r", 1, nil)}})
	if at(t, v, "success") != true || at(t, v, "results", 0, "type") != "kv" {
		t.Fatalf("rider only: %v", v)
	}
	// A transaction push keeps a UUID traceId.
	trace := "0198f0aa-0000-7000-8000-000000000001"
	w.txn(map[string]any{"operations": []map[string]any{{"type": "push", "queue": "traced", "payload": 1, "traceId": trace}}})
	if got := w.s.Messages("traced", "Default"); len(got) != 1 || got[0].TraceID != trace {
		t.Fatalf("traceId: %+v", got)
	}
}

func TestTransactionFailedAckDeadLettersInsideCommit(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.call("POST", "/api/v1/configure", `{"queue":"src","options":{"retryLimit":0}}`, 200)
	p := claimOne(t, w, 1)
	a := ackOf(p.messages[0], "failed")
	a["type"] = "ack"
	a["error"] = "poison"
	v := w.txn(map[string]any{"operations": []map[string]any{a}})
	if at(t, v, "success") != true || at(t, v, "results", 0, "dlq") != true {
		t.Fatalf("poison: %v", v)
	}
}

func TestTransactionRefusesMalformedBundles(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	cases := []struct{ name, body string }{
		{"not json", `{`},
		{"no operations", `{}`},
		{"unknown op type", `{"operations":[{"type":"frob"}]}`},
		{"kv not an array", `{"operations":[],"kv":{"op":"get"}}`},
		{"getPrefix in a transaction", `{"operations":[],"kv":[{"op":"getPrefix","ns":"gate","prefix":"a"}]}`},
		{"ack without partitionId", `{"operations":[{"type":"ack","transactionId":"t"}]}`},
	}
	for _, c := range cases {
		v := w.call("POST", "/api/v1/transaction", c.body, http.StatusBadRequest)
		if str(t, at(t, v, "error")) == "" {
			t.Fatalf("%s: %v", c.name, v)
		}
	}
	v := w.call("POST", "/api/v1/transaction", `{}`, http.StatusBadRequest)
	if at(t, v, "error") != "transaction requires an operations array" || at(t, v, "success") != false {
		t.Fatalf("no operations: %v", v)
	}
}
