package push_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
)

// A push retried with the same txn and no partition must collapse on the
// broker's dedup: it lands on the partition the txn picks, every time.
func TestPushTxnWithoutPartitionIsStoredOnce(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Run("relay-1", "shop", 1)
	push := h.GraphURL("shop") + "/nodes/entry/push"
	parts := map[string]bool{}
	pushed := 0
	for range 3 {
		a := h.Expect(h.Do(http.MethodPost, push, map[string]any{"txn": "order-42", "payload": map[string]any{"units": 1}}), http.StatusOK)
		parts[a.Str("partition")] = true
		pushed += int(a.Num("pushed"))
	}
	if n := len(h.Messages(h.Ingress("shop", "entry"))); n != 1 || pushed != 1 || len(parts) != 1 {
		t.Fatalf("three pushes of txn order-42: %d stored, pushed sum %d, partitions %v; want 1, 1, one partition", n, pushed, parts)
	}
	// Different txns still spread over the width.
	for i := range 16 {
		h.Expect(h.Do(http.MethodPost, push, map[string]any{"txn": "spread-" + string(rune('a'+i))}), http.StatusOK)
	}
	if n := len(h.Mini.Partitions(h.Ingress("shop", "entry"))); n < 2 {
		t.Fatalf("16 distinct txns landed on %d partition(s)", n)
	}
}

// The small ones of issue 14, item 7: the push body is read as strictly as
// a declared document, ':' cannot make two budgets share a kv key, and a
// forged attempt does not wrap.
func TestHostileBodiesAreRefusedByField(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Run("relay-1", "shop", 1)
	push := h.GraphURL("shop") + "/nodes/entry/push"
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
		r := h.Do(http.MethodPost, push, c.body)
		if r.Status != c.status || r.Str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %.300s", c.name, r.Status, r.Str("field"), c.status, c.field, r.Raw)
			continue
		}
		h.ErrorBody(r)
	}
	if n := len(h.Partition(h.Ingress("shop", "entry"), "x")); n != 0 {
		t.Fatalf("refused pushes queued %d item(s)", n)
	}
	// The same ':' refused at the PUT, by rule.
	for _, field := range []string{"id", "sharedKey"} {
		d := h.Shop()
		d["nodes"].(map[string]any)["entry"].(map[string]any)["budgets"].([]any)[0].(map[string]any)[field] = "k:z"
		if r := h.Expect(h.Do(http.MethodPut, h.GraphURL("colon"), d), http.StatusUnprocessableEntity); r.Str("rule") != "kv-key-separator" {
			t.Errorf("':' in %s: rule %q, want kv-key-separator", field, r.Str("rule"))
		}
	}
	// A re-entered item stamped attempt 4294967295 is over maxAttempts.
	re := h.GraphURL("shop") + "/reenter"
	r := h.Do(http.MethodPost, re, `{"txn":"t-9","payload":{"_gate":{"path":"main","attempt":4294967295}}}`)
	if r.Status != http.StatusUnprocessableEntity || r.Str("field") != "attempt" {
		t.Fatalf("attempt 4294967295 re-entered: %d %s, want 422 on attempt", r.Status, r.Raw)
	}
	if n := len(h.Messages(h.Ingress("shop", "entry"))); n != 0 {
		t.Fatalf("the wrapped re-entry queued %d item(s)", n)
	}
}

// A scope value that would make its counter key longer than the broker
// takes is refused at the door (the item would otherwise wedge its
// partition), naming the field and the room left; one that fits is not.
func TestLongScopeValueIsRefusedAtTheDoor(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Run("relay-1", "shop", 1)
	push := h.GraphURL("shop") + "/nodes/entry/push"
	key := "b:" + h.App + ":shop:entry:per-acct"
	room := 512 - len(key) - 1
	r := h.Expect(h.Do(http.MethodPost, push, map[string]any{"partition": "long", "op": "charge.card", "payload": map[string]any{"account": strings.Repeat("a", room+1)}}), http.StatusUnprocessableEntity)
	if r.Str("field") != "payload.account" || int(r.Num("room")) != room || r.Str("budget") != "per-acct" {
		t.Fatalf("long scope value: %.400s, want field payload.account, room %d", r.Raw, room)
	}
	if n := len(h.Partition(h.Ingress("shop", "entry"), "long")); n != 0 {
		t.Fatalf("the refused item was queued")
	}
	h.Expect(h.Do(http.MethodPost, push, map[string]any{"partition": "long", "op": "charge.card", "payload": map[string]any{"account": strings.Repeat("a", room)}}), http.StatusOK)
}
