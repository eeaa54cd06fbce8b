package conformance

import (
	"errors"
	"github.com/queen-mq/gate/libs/capability"
	"net/http"
	"testing"

	"github.com/queen-mq/gate/libs/queen"
)

// §7 riders as gate-relay's hot path sends them: the acks and pushes of one
// claim plus one required incr per counter (max = the path's ceiling, TTL =
// the sub-window) and a getMany of the same keys, in one transaction.

// riderClaim pushes two items to in, claims them under group g and returns
// the claim.
func riderClaim(t *testing.T, e *env, in, g string) queen.Claim {
	t.Helper()
	e.push(t, in, "p", msg(1), msg(2))
	c := e.pop(t, queen.PopRequest{Queue: in, ConsumerGroup: g, Batch: 2})
	if len(c.Messages) != 2 {
		t.Fatalf("claimed %d messages, want 2", len(c.Messages))
	}
	return c
}

// riderSettle is the relay's settle of claim c forwarding both items to out,
// charged by the riders.
func riderSettle(c queen.Claim, out string, riders ...queen.KVOp) *queen.Transaction {
	tx := &queen.Transaction{}
	for _, m := range c.Messages {
		tx.Ack(m.AckItem(queen.AckCompleted, ""))
	}
	tx.Push(item(out, "p", "fwd-1", 1), item(out, "p", "fwd-2", 2))
	return tx.AddKV(riders...)
}

func TestSemantic7_RequiredIncrRidersCommitWithAppliedSlotsCarryingValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV, capability.Riders)
	in, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	e.kv1(t, e.incr("node", 3, queen.IncrOpts{TTLSeconds: 60}))
	c := riderClaim(t, e, in, g)
	tx := riderSettle(c, out,
		e.incr("node", 2, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(5), Required: true}),
		e.incr("scoped", 2, queen.IncrOpts{TTLSeconds: 2, Max: queen.Int(10), Required: true}),
		queen.KVGetMany(e.ns, "node", "scoped"))
	res, err := e.c.Transact(e.ctx, tx)
	if err != nil || !res.Success {
		t.Fatalf("settle with riders: %+v %v, want committed", res, err)
	}
	if len(res.Results) != tx.Slots() {
		t.Fatalf("%d result slots, want %d (2 acks + 2 pushes + 3 riders)", len(res.Results), tx.Slots())
	}
	riders := res.Results[len(res.Results)-3:]
	want := []int64{5, 2}
	for i, r := range riders[:2] {
		if r.Type != "kv" || r.KV == nil || !r.KV.Applied {
			t.Fatalf("rider slot %d: %+v (kv %+v), want an applied kv result", i, r, r.KV)
		}
		if v, err := r.KV.Int64(); err != nil || v != want[i] {
			t.Errorf("rider slot %d value %s (err %v), want %d: the value the incr left", i, r.KV.Value, err, want[i])
		}
	}
	read := riders[2].KV
	if read == nil || len(read.Rows) != 2 {
		t.Fatalf("getMany rider: %+v, want both counters read after the incrs", read)
	}
	for _, row := range read.Rows {
		if row.ExpiresAt.IsZero() {
			t.Errorf("getMany row %s carries no expiry, want the window end", row.Key)
		}
	}
	e.counter(t, "node", 5)
	e.counter(t, "scoped", 2)
	if got := e.peek(t, out, "p"); !equalInts(got, []int{1, 2}) {
		t.Errorf("out holds %v, want [1 2]", got)
	}
	if d := e.depth(t, in, g); d.Pending != 0 {
		t.Errorf("in pending %d after the commit, want 0", d.Pending)
	}
}

func TestSemantic7_ALostRequiredRiderRollsEverythingBackAndNamesTheCurrentCounter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV, capability.Riders)
	in, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	e.kv1(t, e.incr("b-full", 4, queen.IncrOpts{TTLSeconds: 60}))
	c := riderClaim(t, e, in, g)
	// "a-open" sorts first and would apply on its own; "b-full" loses (4 + 2 > 5).
	tx := riderSettle(c, out,
		e.incr("a-open", 2, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(10), Required: true}),
		e.incr("b-full", 2, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(5), Required: true}),
		queen.KVGetMany(e.ns, "a-open", "b-full"))
	res, err := e.c.Transact(e.ctx, tx)
	if err != nil {
		t.Fatalf("settle with a losing rider: %v, want an HTTP 200 verdict", err)
	}
	if res.Success || res.Refusal == nil || !res.Refusal.KVPrecondition() || res.Refusal.KVReason != queen.KVLimit {
		t.Fatalf("answer %+v (refusal %v), want a kv_precondition rollback with kvReason limit", res, res.Refusal)
	}
	if len(res.Results) != 0 {
		t.Errorf("a rolled-back bundle carries %d results", len(res.Results))
	}
	// 2 acks + 2 push items, then rider 1.
	if res.Refusal.FailedIndex != 5 {
		t.Errorf("failedIndex %d, want 5 (the flat slot of the losing rider)", res.Refusal.FailedIndex)
	}
	if v, err := res.Refusal.Int64(); err != nil || v != 4 {
		t.Errorf("refusal value %s (err %v), want the counter's current 4", res.Refusal.Value, err)
	}
	e.counter(t, "a-open", 0)
	e.counter(t, "b-full", 4)
	if got := e.peek(t, out, "p"); len(got) != 0 {
		t.Errorf("out holds %v, want nothing (the pushes roll back with the gate)", got)
	}
	if d := e.depth(t, in, g); d.Pending != 2 {
		t.Errorf("in pending %d, want 2 (the acks roll back with the gate)", d.Pending)
	}
	// The refusal applied nothing, so the same claim settles a smaller
	// charge without any refund.
	tx = &queen.Transaction{}
	tx.Ack(c.Messages[0].AckItem(queen.AckCompleted, "")).Ack(c.Messages[1].AckItem(queen.AckRetry, ""))
	tx.Push(item(out, "p", "fwd-1", 1))
	tx.AddKV(e.incr("b-full", 1, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(5), Required: true}))
	if res, err := e.c.Transact(e.ctx, tx); err != nil || !res.Success {
		t.Fatalf("the prefix that fits: %+v %v, want committed", res, err)
	}
	e.counter(t, "b-full", 5)
	if got := e.peek(t, out, "p"); !equalInts(got, []int{1}) {
		t.Errorf("out holds %v, want [1]", got)
	}
}

func TestSemantic7_RidersOnlyBundleAnswersTheRiderSlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV, capability.Riders)
	tx := (&queen.Transaction{}).AddKV(e.incr("probe", 1, queen.IncrOpts{TTLSeconds: 1, Required: true}))
	res, err := e.c.Transact(e.ctx, tx)
	if err != nil || !res.Success || len(res.Results) != 1 {
		t.Fatalf("riders-only bundle: %+v %v, want committed with one slot", res, err)
	}
	r := res.Results[0]
	if r.Type != "kv" || r.KV == nil || !r.KV.Applied {
		t.Fatalf("slot %+v (kv %+v), want an applied incr", r, r.KV)
	}
	if v, err := r.KV.Int64(); err != nil || v != 1 {
		t.Errorf("slot value %s (err %v), want 1", r.KV.Value, err)
	}
}

func TestSemantic7_KVKillSwitchRefusesRidersAndAppliesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mini := e.RequireMini(t, "the KV kill switch is an operator setting of the broker; the suite cannot flip it on a real one")
	in, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	c := riderClaim(t, e, in, g)
	mini.SetKVDisabled(true)
	_, err := e.c.Transact(e.ctx, riderSettle(c, out, e.incr("n", 2, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(5), Required: true})))
	var qe *queen.Error
	if !errors.As(err, &qe) || qe.Status != http.StatusForbidden || qe.Reason != "kv_disabled" {
		t.Fatalf("riders under the kill switch: %v, want HTTP 403 reason kv_disabled", err)
	}
	if _, err := e.c.KV(e.ctx, queen.KVGet(e.ns, "n")); !queen.IsUnavailable(err) || queen.CodeOf(err) != "kv_disabled" {
		t.Errorf("kv call under the kill switch: %v, want 503 kv_disabled", err)
	}
	if got := e.peek(t, out, "p"); len(got) != 0 {
		t.Errorf("out holds %v, want nothing", got)
	}
	// The same claim settles without riders.
	tx := riderSettle(c, out)
	if res, err := e.c.Transact(e.ctx, tx); err != nil || !res.Success {
		t.Fatalf("bundle without riders under the kill switch: %+v %v, want committed", res, err)
	}
	mini.SetKVDisabled(false)
	e.counter(t, "n", 0)
}
