package conformance

import (
	"encoding/json"
	"fmt"
	"github.com/queen-mq/gate/libs/capability"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/queen"
)

// §12.15 — transaction atomicity.

func TestSemantic15_AnyFailureInATransactionLeavesNoTrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV, capability.Riders)
	in, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	e.kv1(t, e.incr("n", 1, queen.IncrOpts{TTLSeconds: 600}))
	e.push(t, in, "p", msg(1))
	e.push(t, out, "p", msg(100)) // its transactionId "p-n100" collides below
	c := e.pop(t, queen.PopRequest{Queue: in, ConsumerGroup: g, Batch: 1})
	good := c.Messages[0].AckItem(queen.AckCompleted, "")
	badLease := good
	badLease.LeaseID = queen.NewTransactionID()
	charge := e.incr("n", 1, queen.IncrOpts{TTLSeconds: 600})

	cases := []struct {
		name  string
		tx    *queen.Transaction
		check func(*queen.Refusal) bool
	}{
		{"rejected ack", (&queen.Transaction{}).AddKV(charge).Push(item(out, "p", "fwd-a", 2)).Ack(badLease), (*queen.Refusal).AckRejected},
		{"duplicate push", (&queen.Transaction{}).AddKV(charge).Ack(good).Push(item(out, "p", "fwd-b", 3), item(out, "p", "p-n100", 4)), (*queen.Refusal).Duplicate},
		{"lost required gate", (&queen.Transaction{}).AddKV(e.incr("n", 1, queen.IncrOpts{TTLSeconds: 600, Max: queen.Int(1), Required: true})).Push(item(out, "p", "fwd-c", 5)).Ack(good), (*queen.Refusal).KVPrecondition},
		{"unknown transactionId in an ack", (&queen.Transaction{}).AddKV(charge).Push(item(out, "p", "fwd-d", 6)).Ack(good).Ack(queen.AckItem{TransactionID: "no-such-txn", PartitionID: good.PartitionID, LeaseID: good.LeaseID, ConsumerGroup: g}), (*queen.Refusal).AckRejected},
	}
	for _, tc := range cases {
		res, err := e.c.Transact(e.ctx, tc.tx)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Success || res.Refusal == nil || !tc.check(res.Refusal) {
			t.Errorf("%s: %+v (refusal %v), want a rollback of that kind", tc.name, res, res.Refusal)
		}
		if len(res.Results) != 0 {
			t.Errorf("%s: a rolled-back bundle carries %d results", tc.name, len(res.Results))
		}
		e.counter(t, "n", 1)
		if got := e.peek(t, out, "p"); !equalInts(got, []int{100}) {
			t.Errorf("%s: out holds %v, want only [100]", tc.name, got)
		}
		if d, ok := e.sideDepth(t, in, g); ok && d.Pending != 1 {
			t.Errorf("%s: in pending %d, want 1 (the ack must not apply)", tc.name, d.Pending)
		}
	}
	// The same claim then commits everything together.
	res, err := e.c.Transact(e.ctx, (&queen.Transaction{}).AddKV(charge).Push(item(out, "p", "fwd-ok", 7)).Ack(good).RequireLease(good.LeaseID))
	if err != nil || !res.Success {
		t.Fatalf("the clean bundle: %+v %v", res, err)
	}
	e.counter(t, "n", 2)
	if got := e.peek(t, out, "p"); !equalInts(got, []int{100, 7}) {
		t.Errorf("out holds %v, want [100 7]", got)
	}
	if d, ok := e.sideDepth(t, in, g); ok && d.Pending != 0 {
		t.Errorf("in pending %d after the commit, want 0", d.Pending)
	}
}

// §12.16 — a duplicate push inside a transaction is a hard QDUP rollback; a
// repeat inside the bundle is duplicate:true.

func TestSemantic16_DuplicatePushInATransactionIsAQDUPRollbackThatNamesNoID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.Queue("out")
	pre, err := e.c.Push(e.ctx, []queen.PushItem{item(out, "p", "dup-7f3a", 1)})
	if err != nil || pre[0].Status != queen.PushQueued {
		t.Fatal(pre, err)
	}
	body := fmt.Sprintf(`{"operations":[{"type":"push","items":[
		{"queue":%[1]q,"partition":"p","payload":{"n":2},"transactionId":"fresh-1"},
		{"queue":%[1]q,"partition":"p","payload":{"n":3},"transactionId":"dup-7f3a"}]}]}`, out)
	v := e.rawJSON(t, http.MethodPost, "/api/v1/transaction", body, http.StatusOK)
	if obj(t, v, "success") != false {
		t.Fatalf("bundle with a stored transactionId: %v, want success:false", v)
	}
	if reason, _ := v.(map[string]any)["reason"].(string); reason != "duplicate" {
		t.Errorf("reason %q, want duplicate", reason)
	}
	msgText, _ := obj(t, v, "error").(string)
	if !strings.HasPrefix(msgText, "QDUP") || strings.Contains(msgText, "dup-7f3a") {
		t.Errorf("error %q, want it to start with QDUP and not name the colliding id", msgText)
	}
	if got := e.peek(t, out, "p"); !equalInts(got, []int{1}) {
		t.Errorf("out holds %v, want [1] (fresh-1 rolled back)", got)
	}
	// The same id on another partition is not a duplicate.
	res, err := e.c.Transact(e.ctx, (&queen.Transaction{}).Push(item(out, "q", "dup-7f3a", 4)))
	if err != nil || !res.Success {
		t.Errorf("the same transactionId on another partition: %+v %v, want committed", res, err)
	}
}

func TestSemantic16_RepeatInsideOneBundleIsMarkedDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out := e.Queue("out")
	tx := (&queen.Transaction{}).Push(item(out, "p", "r-1", 5), item(out, "p", "r-1", 6))
	res, err := e.c.Transact(e.ctx, tx)
	if err != nil || !res.Success || len(res.Results) != 2 {
		t.Fatalf("bundle repeating an item: %+v %v, want committed with 2 results", res, err)
	}
	if res.Results[0].Duplicate || !res.Results[1].Duplicate || res.Results[1].MessageID != res.Results[0].MessageID {
		t.Errorf("results %+v, want the second marked duplicate with the first's messageId", res.Results)
	}
	if got := e.peek(t, out, "p"); !equalInts(got, []int{5}) {
		t.Errorf("out holds %v, want [5] once", got)
	}
	// Replaying a committed bundle is a QDUP rollback (what makes a relay's
	// ack+push retry safe).
	again, err := e.c.Transact(e.ctx, (&queen.Transaction{}).Push(item(out, "p", "r-1", 5)))
	if err != nil || again.Success || again.Refusal == nil || !again.Refusal.Duplicate() {
		t.Errorf("replayed bundle: %+v %v, want a duplicate rollback", again, err)
	}
}

// §12.17 — flat result indexing.

func TestSemantic17_ResultsAreFlatPushItemsAndAcksThenKVRiders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV, capability.Riders)
	in, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	e.push(t, in, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: in, ConsumerGroup: g, Batch: 1})
	m := c.Messages[0]
	body := fmt.Sprintf(`{"operations":[
		{"type":"push","items":[{"queue":%[1]q,"partition":"p","payload":1,"transactionId":"a1"},{"queue":%[1]q,"partition":"p","payload":2,"transactionId":"a2"}]},
		{"type":"ack","transactionId":%[2]q,"partitionId":%[3]q,"leaseId":%[4]q,"consumerGroup":%[5]q,"status":"completed"},
		{"type":"push","items":[{"queue":%[1]q,"partition":"p","payload":3,"transactionId":"a3"}]}],
		"requiredLeases":[%[4]q],
		"kv":[{"op":"incr","ns":%[6]q,"key":"k","delta":1,"ttlSeconds":60},{"op":"get","ns":%[6]q,"key":"k"}]}`,
		out, m.TransactionID, m.PartitionID, m.LeaseID, g, e.ns)
	v := e.rawJSON(t, http.MethodPost, "/api/v1/transaction", body, http.StatusOK)
	if obj(t, v, "success") != true {
		t.Fatalf("bundle: %v", v)
	}
	results := obj(t, v, "results").([]any)
	wantTypes := []string{"push", "push", "ack", "push", "kv", "kv"}
	if len(results) != len(wantTypes) {
		t.Fatalf("%d results, want %d (one per push item and ack, then per kv op): %v", len(results), len(wantTypes), results)
	}
	for i, r := range results {
		if idx := obj(t, r, "index").(json.Number).String(); idx != fmt.Sprint(i) {
			t.Errorf("result %d has index %s", i, idx)
		}
		if typ := obj(t, r, "type"); typ != wantTypes[i] {
			t.Errorf("result %d type %v, want %s", i, typ, wantTypes[i])
		}
	}
	for i, kv := range results[4:] {
		if op := obj(t, kv, "opIndex").(json.Number).String(); op != fmt.Sprint(i) {
			t.Errorf("kv rider %d opIndex %s", i, op)
		}
	}
	if obj(t, results[4], "applied") != true || obj(t, results[5], "found") != true {
		t.Errorf("kv riders %v, want the incr applied and the get to find it", results[4:])
	}
	if obj(t, results[3], "transactionId") != "a3" {
		t.Errorf("slot 3 %v, want the third push item a3", results[3])
	}

	// failedIndex lives in the same flat space: 2 push items + 1 kv op before
	// the lost one = 3.
	tx := (&queen.Transaction{}).
		Push(item(out, "p", "b1", 4), item(out, "p", "b2", 5)).
		AddKV(e.incr("k2", 1, queen.IncrOpts{TTLSeconds: 60}), e.incr("k3", 5, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(3), Required: true}))
	res, err := e.c.Transact(e.ctx, tx)
	if err != nil || res.Success || res.Refusal == nil {
		t.Fatalf("bundle with a lost required rider: %+v %v", res, err)
	}
	if res.Refusal.FailedIndex != 3 || res.Refusal.KVReason != queen.KVLimit || res.Refusal.Reason != queen.ReasonKVPrecondition {
		t.Errorf("refusal %+v, want failedIndex 3 kvReason limit reason kv_precondition", res.Refusal)
	}
}
