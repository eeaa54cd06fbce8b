package miniqueen

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetainCompletedKeepsMessagesForLaterGroups(t *testing.T) {
	t.Parallel()
	w := newWire(t, WithRetainCompleted())
	w.push(item("q", "p", map[string]any{"n": 0}, ""))
	p := w.pop("q", "batch=1&consumerGroup=first&subscriptionMode=all")
	w.ack(ackOf(p.messages[0], ""))
	if got := len(w.s.Messages("q", "p")); got != 1 {
		t.Fatalf("retained %d", got)
	}
	if q := w.pop("q", "batch=1&consumerGroup=later&subscriptionMode=all"); len(q.messages) != 1 {
		t.Fatalf("a later group with mode all must see the whole history")
	}
}

func TestMalformedBodiesAre400(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	cases := []struct{ path, body string }{
		{"/api/v1/push", `{"items":[{"queue":"q","payload":{"a":}}]}`},
		{"/api/v1/push", `{"items":[{"queue":5}]}`},
		{"/api/v1/push", `{"items":[{"payload":1}]}`},
		{"/api/v1/push", `[]`},
		{"/api/v1/push", ``},
		{"/api/v1/transaction", `{"operations":[{"type":"push","queue":"q","payload":tru}]}`},
		{"/api/v1/ack/batch", `{"consumerGroup":"g"}`},
		{"/api/v1/kv", `{"ops":[]}`},
		{"/api/v1/kv", `{"operations":[{"op":"get","ns":"gate","key":"k","keys":"x"}]}`},
	}
	for _, c := range cases {
		status, b, _ := w.do("POST", c.path, c.body)
		if status != http.StatusBadRequest || !strings.Contains(string(b), `"error"`) {
			t.Fatalf("%s %q: %d %s", c.path, c.body, status, b)
		}
	}
	if got := w.s.Partitions("q"); len(got) != 0 {
		t.Fatalf("a refused body stored something: %v", got)
	}
}

func TestKVKeyCeilingAndPathValueCap(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	keys := make([]string, 1025)
	for i := range keys {
		keys[i] = "k" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
	}
	v := w.call("POST", "/api/v1/kv", mustJSON(map[string]any{"operations": []map[string]any{{"op": "getMany", "ns": "gate", "keys": keys}}}), http.StatusBadRequest)
	if at(t, v, "reason") != "kv_too_many_keys" {
		t.Fatalf("%v", v)
	}
	v = w.call("PUT", "/api/v1/kv/gate/big", `{"value":"`+strings.Repeat("v", 65536)+`","forever":true}`, http.StatusRequestEntityTooLarge)
	if at(t, v, "reason") != "kv_value_too_large" {
		t.Fatalf("%v", v)
	}
	v = w.call("PUT", "/api/v1/kv/gate/owner", `{"value":1,"ttlSeconds":5,"expect":0,"required":true}`, 200)
	if at(t, v, "applied") != true {
		t.Fatalf("%v", v)
	}
	v = w.call("PUT", "/api/v1/kv/gate/owner", `{"value":2,"ttlSeconds":5,"expect":0,"required":true}`, 200)
	if at(t, v, "ok") != false || at(t, v, "kvReason") != "exists" || num(t, at(t, v, "failedIndex")) != 0 {
		t.Fatalf("required lost on the path route: %v", v)
	}
}

func TestGroupDeletePerQueueAndSubscriptionChange(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.push(item("a", "p", map[string]any{"n": 0}, ""), item("b", "p", map[string]any{"n": 0}, ""))
	for _, q := range []string{"a", "b"} {
		p := w.pop(q, "batch=1&"+grp)
		w.ack(ackOf(p.messages[0], ""))
	}
	v := w.call("DELETE", "/api/v1/consumer-groups/g/queues/a?deleteMetadata=false", "", 200)
	if at(t, v, "queueName") != "a" || num(t, at(t, v, "deletedPartitions")) != 1 || at(t, v, "metadataDeleted") != false {
		t.Fatalf("delete: %v", v)
	}
	if _, ok := w.s.Cursor("b", "g", "p"); !ok {
		t.Fatalf("deleting on queue a removed the cursor on b")
	}
	w.s.FastForward(time.Minute)
	v = w.call("POST", "/api/v1/consumer-groups/g/subscription", `{"subscriptionTimestamp":"`+w.s.Now().Format(time.RFC3339)+`"}`, 200)
	if num(t, at(t, v, "queuesUpdated")) != 2 {
		t.Fatalf("subscription: %v", v)
	}
	w.push(item("b", "new", map[string]any{"n": 1}, ""))
	if p := w.pop("b", "batch=10&"+grp); len(p.messages) != 1 {
		t.Fatalf("partition met after the cutoff: %v", p.body)
	}
	w.call("POST", "/api/v1/consumer-groups/g/subscription", `{"subscriptionTimestamp":"yesterday"}`, http.StatusBadRequest)
}

func TestNewGroupKeepsItsCutoffAfterCursorDelete(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.push(item("q", "p", map[string]any{"n": 0}, ""))
	if p := w.pop("q", "batch=10&consumerGroup=g&subscriptionMode=new"); p.status != http.StatusNoContent {
		t.Fatalf("new group saw the backlog")
	}
	w.s.FastForward(time.Second)
	w.push(item("q", "p", map[string]any{"n": 1}, ""))
	// Drop the cursors but keep the subscription record: the partition is
	// re-seeded from the stored registration time, not from the epoch.
	w.call("DELETE", "/api/v1/consumer-groups/g?deleteMetadata=false", "", 200)
	p := w.pop("q", "batch=10&consumerGroup=g")
	if got := payloads(t, p.messages); len(got) != 1 || got[0] != 1 {
		t.Fatalf("re-seeded new group got %v, want [1]", got)
	}
}
