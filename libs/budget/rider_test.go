package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// twoCounters is a batch of three items: the first two charge "a" and "b",
// the third only "a"; "a" allows 10, "b" allows 3.
func twoCounters() *budget.Batch {
	b := &budget.Batch{}
	a := b.Counter("a", 10, 1, "ba")
	bb := b.Counter("b", 3, 5, "bb")
	b.Add(2, []int{a, bb})
	b.Add(2, []int{a, bb})
	b.Add(2, []int{a})
	return b
}

func TestRidersCarryOneRequiredIncrPerCounterAndAGetMany(t *testing.T) {
	t.Parallel()
	b := twoCounters()
	l := &budget.Limiter{NS: "gate"}
	tx := (&queen.Transaction{}).Ack(queen.AckItem{TransactionID: "t", PartitionID: "p", LeaseID: "l"})
	ch, ok := l.Riders(tx, b, 3)
	if !ok || !ch.Riding() {
		t.Fatal("a two-counter charge must ride")
	}
	if len(tx.KV) != 3 {
		t.Fatalf("%d riders, want 2 incrs and a getMany", len(tx.KV))
	}
	want := []struct {
		key      string
		delta    int64
		max, ttl int64
	}{{"a", 6, 10, 1}, {"b", 4, 3, 5}}
	for i, w := range want {
		op := tx.KV[i]
		if op.Op != queen.OpIncr || op.Key != w.key || op.Delta != w.delta || !op.Required || op.TTLSeconds != w.ttl || !op.Max.Set || op.Max.Value != w.max {
			t.Errorf("rider %d = %+v, want incr %s by %d, max %d, ttl %d, required", i, op, w.key, w.delta, w.max, w.ttl)
		}
	}
	if g := tx.KV[2]; g.Op != queen.OpGetMany || len(g.Keys) != 2 {
		t.Errorf("last rider %+v, want a getMany of both keys", g)
	}
	// A window with no counters, or more than a transaction carries, does
	// not ride.
	if _, ok := l.Riders(&queen.Transaction{}, &budget.Batch{Items: []budget.Item{{Cost: 1}}}, 1); ok {
		t.Error("a charge of no counter must not ride")
	}
	wide := &budget.Batch{}
	var idx []int
	for i := 0; i <= budget.MaxRiderCounters; i++ {
		idx = append(idx, wide.Counter("k"+string(rune('A'+i%26))+string(rune('a'+i/26)), 100, 1, "x"))
	}
	wide.Add(1, idx)
	big := &queen.Transaction{}
	if _, ok := l.Riders(big, wide, 1); ok || len(big.KV) != 0 {
		t.Errorf("%d counters rode (%d riders), want the separate path past %d", len(idx), len(big.KV), budget.MaxRiderCounters)
	}
}

func kvSlot(v int64) queen.TxnItemResult {
	return queen.TxnItemResult{Type: "kv", KV: &queen.KVResult{Op: queen.OpIncr, Applied: true, Value: json.RawMessage(itoa(v))}}
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func TestCommittedReadsEveryRiderSlotAndRefusesABrokerThatIgnoredThem(t *testing.T) {
	t.Parallel()
	b := twoCounters()
	var seen []string
	l := &budget.Limiter{NS: "gate", Observer: func(key string, delta, post int64, exp time.Time) {
		seen = append(seen, key)
		if exp.IsZero() {
			t.Errorf("observer saw %s without its window end", key)
		}
	}}
	tx := (&queen.Transaction{}).Ack(queen.AckItem{TransactionID: "t", PartitionID: "p", LeaseID: "l"})
	ch, _ := l.Riders(tx, b, 2)
	exp := queen.Timestamp("2026-12-01T10:00:01.000000+00:00")
	res := queen.TxnResult{Success: true, Results: []queen.TxnItemResult{{Type: "ack"}, kvSlot(4), kvSlot(4),
		{Type: "kv", KV: &queen.KVResult{Op: queen.OpGetMany, Rows: []queen.KVRow{{Key: "a", Value: json.RawMessage("4"), ExpiresAt: exp}, {Key: "b", Value: json.RawMessage("4"), ExpiresAt: exp}}}}}}
	if err := l.Committed(b, ch, &res); err != nil {
		t.Fatal(err)
	}
	if !ch.OK() || ch.Post[0] != 4 || ch.State[1].ExpiresAt.IsZero() || len(seen) != 2 {
		t.Errorf("charge %+v, observer %v: want both applied at 4 with their window ends", ch, seen)
	}
	for name, results := range map[string][]queen.TxnItemResult{
		"no rider slots":     {{Type: "ack"}},
		"a refused slot":     {{Type: "ack"}, kvSlot(4), {Type: "kv", KV: &queen.KVResult{Op: queen.OpIncr}}, {Type: "kv"}},
		"a slot of no value": {{Type: "ack"}, kvSlot(4), {Type: "kv", KV: &queen.KVResult{Op: queen.OpIncr, Applied: true}}, {Type: "kv"}},
	} {
		ch, _ := l.Riders((&queen.Transaction{}).Ack(queen.AckItem{TransactionID: "t", PartitionID: "p", LeaseID: "l"}), b, 2)
		if err := l.Committed(b, ch, &queen.TxnResult{Success: true, Results: results}); !errors.Is(err, budget.ErrRidersIgnored) {
			t.Errorf("%s: %v, want ErrRidersIgnored", name, err)
		}
	}
}

func TestARiderRefusalNamesOneCounterAndAReadDecidesTheRest(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.set("a", 2, 10*time.Second)
	f.set("b", 1, 10*time.Second)
	b := twoCounters()
	l := &budget.Limiter{KV: f, NS: "gate"}
	tx := (&queen.Transaction{}).Ack(queen.AckItem{TransactionID: "t", PartitionID: "p", LeaseID: "l"})
	ch, _ := l.Riders(tx, b, 3)
	// "b" lost: 1 + 4 > 3. Its flat slot is 1 (the ack) + 1.
	if !l.Refused(b, ch, &queen.Refusal{Reason: queen.ReasonKVPrecondition, KVReason: queen.KVLimit, FailedIndex: 2, Value: json.RawMessage("1")}) {
		t.Fatal("a limit refusal of a rider must be read as one")
	}
	if ch.Decided(b) {
		t.Fatal("a refusal names one counter's value; the other needs a read")
	}
	if err := l.Read(context.Background(), b, ch); err != nil {
		t.Fatal(err)
	}
	if !ch.Decided(b) {
		t.Fatal("after the read every counter is known")
	}
	if n := budget.Prefix(b, ch); n != 1 {
		t.Errorf("prefix %d, want 1 (b has room for one item of 2)", n)
	}
	if r := ch.Refused(); len(r) != 1 || r[0] != 1 {
		t.Errorf("refused %v, want only b", r)
	}
	if w := budget.Wait(ch, f.now); w != 10*time.Second {
		t.Errorf("wait %s, want b's window end, 10 s", w)
	}
	refunds, _ := ch.Refunds(b, 0)
	if len(refunds) != 0 {
		t.Errorf("a rider refusal applied nothing, yet %d refunds", len(refunds))
	}
	// Not a rider's limit: handled as any other rollback.
	if l.Refused(b, ch, &queen.Refusal{Reason: queen.ReasonDuplicate}) {
		t.Error("a QDUP is not a rider refusal")
	}
}

func TestProbeRidersWantsAnAppliedSlotWithAValue(t *testing.T) {
	t.Parallel()
	l := &budget.Limiter{NS: "gate"}
	cases := map[string]struct {
		res  queen.TxnResult
		err  error
		good bool
	}{
		"applied":       {res: queen.TxnResult{Success: true, Results: []queen.TxnItemResult{kvSlot(1)}}, good: true},
		"no slot":       {res: queen.TxnResult{Success: true}},
		"refused":       {res: queen.TxnResult{Refusal: &queen.Refusal{Reason: queen.ReasonKVPrecondition}}},
		"call failed":   {err: errors.New("connection refused")},
		"value missing": {res: queen.TxnResult{Success: true, Results: []queen.TxnItemResult{{Type: "kv", KV: &queen.KVResult{Op: queen.OpIncr, Applied: true}}}}},
	}
	for name, c := range cases {
		err := l.ProbeRiders(context.Background(), fakeTx{c.res, c.err}, plan.RiderProbeKey("r1"))
		if (err == nil) != c.good {
			t.Errorf("%s: %v, want success %v", name, err, c.good)
		}
	}
}

type fakeTx struct {
	res queen.TxnResult
	err error
}

func (f fakeTx) Transact(context.Context, *queen.Transaction) (queen.TxnResult, error) {
	return f.res, f.err
}

func TestSpendLiftAndJudgeANodeWithCeilingsFromThePlan(t *testing.T) {
	t.Parallel()
	n := &plan.Node{Name: "n", Budgets: []plan.Budget{
		{ID: "a", Key: "k1", Ceilings: map[string]int64{"p1": 50, "p2": 100}},
		{ID: "b", Key: "k1", Ceilings: map[string]int64{"p1": 80}},
		{ID: "c", Key: "k2", Ceilings: map[string]int64{"p1": 7}},
		{ID: "s", Key: "k3", ScopeBy: "$.acct", Ceilings: map[string]int64{"p1": 9}},
	}}
	cs := budget.Unscoped(n)
	if len(cs) != 2 || cs[0] != (budget.NodeCounter{Key: "k1", Ceiling: 100}) || cs[1] != (budget.NodeCounter{Key: "k2", Ceiling: 7}) {
		t.Fatalf("unscoped %+v, want k1 at its widest 100 once and k2 at 7; scoped budgets have no window to spend", cs)
	}
	f := newFake()
	f.set("k1", 30, time.Second)
	l := &budget.Limiter{KV: f, NS: "gate"}
	if rerr, err := l.Spend(context.Background(), cs, 60, 5); rerr != nil || err != nil {
		t.Fatalf("spend: %v %v", rerr, err)
	}
	last := f.calls[len(f.calls)-1]
	if len(f.calls) != 2 || last[0].Op != queen.OpPut || string(last[0].Value) != "100" || last[0].TTLSeconds != 60 || string(last[1].Value) != "7" {
		t.Errorf("spend sent %+v, want the refund credit, then each counter put to its ceiling for 60 s", f.calls)
	}
	if !budget.Fits(95, 5, 100) || budget.Fits(96, 5, 100) || budget.Headroom(120, 100) != 0 || budget.Utilisation(50, 100) != 0.5 || budget.Utilisation(5, 0) != 0 {
		t.Error("judging a reading against a ceiling")
	}
}
