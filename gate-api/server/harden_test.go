package server

import (
	"net/http"
	"testing"
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
