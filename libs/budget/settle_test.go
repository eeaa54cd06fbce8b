package budget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// settleRig charges items of estimated cost on one 100-per-10-s counter
// (and a second, 1000-per-60-s one) and settles them.
type settleRig struct {
	t   *testing.T
	l   *budget.Limiter
	vc  *clock.Virtual
	cs  []budget.Counter
	ctx context.Context
}

func newSettleRig(t *testing.T) *settleRig {
	l, _, vc := meterRig(t)
	return &settleRig{t: t, l: l, vc: vc, ctx: context.Background(), cs: []budget.Counter{
		{Key: "b:a:g:tokens:tpm", Max: 100, TTLSeconds: 10, BudgetID: "tpm"},
		{Key: "b:a:g:tokens:tpd", Max: 1000, TTLSeconds: 60, BudgetID: "tpd"},
	}}
}

// charge charges cost to every counter the way a relay does and returns
// the windows it landed in, in ms.
func (r *settleRig) charge(cost int64) []int64 {
	r.t.Helper()
	var b budget.Batch
	var idx []int
	for _, c := range r.cs {
		idx = append(idx, b.Counter(c.Key, c.Max, c.TTLSeconds, c.BudgetID))
	}
	b.Add(cost, idx)
	ch, err := r.l.Charge(r.ctx, &b, 1)
	if err != nil || !ch.OK() {
		r.t.Fatalf("charge %d: %v %+v", cost, err, ch)
	}
	w := make([]int64, len(r.cs))
	for i := range r.cs {
		w[i] = ch.State[i].ExpiresAt.UnixMilli()
	}
	return w
}

func (r *settleRig) value(key string) int64 {
	r.t.Helper()
	rd, err := budget.ReadCounters(r.ctx, r.l.KV, r.l.NS, []string{key})
	if err != nil {
		r.t.Fatal(err)
	}
	return rd[key].Value
}

func (r *settleRig) settle(txn string, est, actual int64, windows []int64) budget.SettleResult {
	r.t.Helper()
	res, err := r.l.Settle(r.ctx, budget.Settle{Key: budget.SettleKey("a", "g", "tokens", txn), Record: json.RawMessage(`{}`),
		Estimated: est, Actual: actual, Counters: r.cs, Windows: windows, Now: r.vc.Now()})
	if err != nil {
		r.t.Fatalf("settle %s: %v", txn, err)
	}
	return res
}

// A lower actual cost goes back into the window it was charged in; a
// second report of the same message changes nothing.
func TestSettleRefundsIntoTheChargedWindowOnce(t *testing.T) {
	t.Parallel()
	r := newSettleRig(t)
	w := r.charge(40)
	r.charge(40)
	res := r.settle("m1", 40, 10, w)
	if res.Duplicate || res.Refunded != 60 || res.Counters[0].Outcome != budget.SettleRefunded || res.Counters[0].Value != 50 {
		t.Fatalf("settle: %+v", res)
	}
	if v := r.value(r.cs[0].Key); v != 50 {
		t.Fatalf("counter %d after the refund, want 80 − 30 = 50", v)
	}
	again := r.settle("m1", 40, 10, w)
	if !again.Duplicate || r.value(r.cs[0].Key) != 50 || r.value(r.cs[1].Key) != 50 {
		t.Fatalf("a second report changed something: %+v, counters %d %d", again, r.value(r.cs[0].Key), r.value(r.cs[1].Key))
	}
}

// A refund never goes into a window other than the one charged: once the
// 10 s window ended (and another opened), only the 60 s one takes it.
func TestSettleNeverRefundsIntoAnotherWindow(t *testing.T) {
	t.Parallel()
	r := newSettleRig(t)
	w := r.charge(40)
	r.vc.Advance(11 * time.Second)
	r.charge(40) // opens a new 10 s window at 40; the 60 s one reads 80
	res := r.settle("m1", 40, 10, w)
	if res.Counters[0].Outcome != budget.SettleWindowEnded || res.Counters[1].Outcome != budget.SettleRefunded {
		t.Fatalf("outcomes: %+v", res.Counters)
	}
	if a, b := r.value(r.cs[0].Key), r.value(r.cs[1].Key); a != 40 || b != 50 {
		t.Fatalf("counters %d and %d, want 40 (the new window untouched) and 50", a, b)
	}
	// A window about to end takes no refund either.
	w2 := r.charge(20)
	r.vc.Advance(10*time.Second - budget.RefundMargin/2)
	res = r.settle("m2", 20, 0, w2)
	if res.Counters[0].Outcome != budget.SettleWindowEnded {
		t.Fatalf("a window ending within the margin took a refund: %+v", res.Counters)
	}
}

// An unknown window (0) is never refunded into; a correction row left by
// the relay names the true one.
func TestSettleReadsTheRelaysCorrectionRow(t *testing.T) {
	t.Parallel()
	r := newSettleRig(t)
	w := r.charge(30)
	res := r.settle("m1", 30, 5, []int64{0, 0})
	if res.Counters[0].Outcome != budget.SettleWindowUnknown || r.value(r.cs[0].Key) != 30 {
		t.Fatalf("unknown window refunded: %+v", res)
	}
	if err := r.l.WriteCorrection(r.ctx, "claim-1", budget.Correction{r.cs[0].Key: w[0]}, 10); err != nil {
		t.Fatal(err)
	}
	res, err := r.l.Settle(r.ctx, budget.Settle{Key: budget.SettleKey("a", "g", "tokens", "m2"), Record: json.RawMessage(`{}`),
		Estimated: 30, Actual: 5, Counters: r.cs, Windows: []int64{0, 0}, Row: "claim-1", Now: r.vc.Now()})
	if err != nil || res.Counters[0].Outcome != budget.SettleRefunded || res.Counters[1].Outcome != budget.SettleWindowUnknown || r.value(r.cs[0].Key) != 5 {
		t.Fatalf("corrected settle: %v %+v, counter %d", err, res, r.value(r.cs[0].Key))
	}
}

// A higher actual cost is charged to the current window without a
// ceiling: a debt later items wait for.
func TestSettleChargesADebtAboveTheCeiling(t *testing.T) {
	t.Parallel()
	r := newSettleRig(t)
	w := r.charge(90)
	res := r.settle("m1", 90, 150, w)
	if res.Charged != 120 || res.Counters[0].Outcome != budget.SettleCharged || r.value(r.cs[0].Key) != 150 {
		t.Fatalf("debt: %+v, counter %d", res, r.value(r.cs[0].Key))
	}
	var b budget.Batch
	b.Add(1, []int{b.Counter(r.cs[0].Key, 100, 10, "tpm")})
	if ch, err := r.l.Charge(r.ctx, &b, 1); err != nil || ch.OK() {
		t.Fatalf("an item was admitted while the debt holds the window over its ceiling: %v", err)
	}
	// In a new window the debt lands in the current one.
	r.vc.Advance(11 * time.Second)
	r.settle("m2", 10, 25, w)
	if v := r.value(r.cs[0].Key); v != 15 {
		t.Fatalf("debt into a fresh window: %d, want 15", v)
	}
}

// Property: whatever the order of charges, settles (lower, higher, equal,
// repeated) and window turns, no counter ever goes below zero or below
// what its window's items still hold, and a window's final count is what
// its items were charged (estimates) less their refunds, plus debts.
func TestSettlePropertyCountersHoldWhatTheirItemsHold(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := newSettleRig(t)
			r.cs = r.cs[:1]
			rnd := rand.New(rand.NewPCG(seed, 1))
			type item struct {
				txn      string
				est, act int64
				window   int64
				settled  bool
			}
			var items []*item
			expect := map[int64]int64{} // window end → what it must read
			for step := range 200 {
				switch op := rnd.IntN(10); {
				case op < 4:
					est := 1 + rnd.Int64N(20)
					var b budget.Batch
					b.Add(est, []int{b.Counter(r.cs[0].Key, 100, 10, "tpm")})
					ch, err := r.l.Charge(r.ctx, &b, 1)
					if err != nil {
						t.Fatal(err)
					}
					if !ch.OK() {
						continue
					}
					w := ch.State[0].ExpiresAt.UnixMilli()
					expect[w] += est
					items = append(items, &item{txn: fmt.Sprint("t", step), est: est, act: rnd.Int64N(2 * est), window: w})
				case op < 8 && len(items) > 0:
					it := items[rnd.IntN(len(items))]
					res := r.settle(it.txn, it.est, it.act, []int64{it.window})
					if res.Duplicate != it.settled {
						t.Fatalf("step %d: duplicate %v, settled before %v", step, res.Duplicate, it.settled)
					}
					it.settled = true
					if !res.Duplicate && res.Counters[0].Delta != 0 {
						expect[res.Counters[0].WindowEnd.UnixMilli()] += res.Counters[0].Delta
						if res.Counters[0].Delta < 0 && res.Counters[0].WindowEnd.UnixMilli() != it.window {
							t.Fatalf("step %d: refund into window %d, charged in %d", step, res.Counters[0].WindowEnd.UnixMilli(), it.window)
						}
					}
				default:
					r.vc.Advance(time.Duration(rnd.IntN(4000)) * time.Millisecond)
				}
				rd, err := budget.ReadCounters(r.ctx, r.l.KV, r.l.NS, []string{r.cs[0].Key})
				if err != nil {
					t.Fatal(err)
				}
				cur := rd[r.cs[0].Key]
				if cur.Value < 0 {
					t.Fatalf("step %d: counter %d below zero", step, cur.Value)
				}
				if w, ok := cur.WindowEnd(); ok && cur.Value != expect[w] {
					t.Fatalf("step %d: window %d reads %d, its items hold %d", step, w, cur.Value, expect[w])
				}
			}
		})
	}
}

// A settle of a message whose window read fails changes nothing and says so.
func TestSettleNeedsTheBroker(t *testing.T) {
	t.Parallel()
	r := newSettleRig(t)
	w := r.charge(10)
	r.l.KV = failingKV{}
	if _, err := r.l.Settle(r.ctx, budget.Settle{Key: "k", Record: json.RawMessage(`{}`), Estimated: 10, Actual: 1, Counters: r.cs, Windows: w, Now: r.vc.Now()}); err == nil {
		t.Fatal("settle without a broker succeeded")
	}
}

type failingKV struct{}

func (failingKV) KV(context.Context, ...queen.KVOp) (queen.KVResponse, error) {
	return queen.KVResponse{}, fmt.Errorf("connection refused")
}

// NodeCounters finds the counters a relay charges: whenOp, scope, shared
// keys once.
func TestNodeCountersAreTheRelaysCounters(t *testing.T) {
	t.Parallel()
	n := &plan.Node{Name: "tokens", Budgets: []plan.Budget{
		{ID: "rpm", Key: "b:a:g:tokens:rpm", ScopeBy: "payload.key", WindowSubSeconds: 60, Ceilings: map[string]int64{"main": 10}},
		{ID: "writes", Key: "b:a:g:tokens:w", WhenOp: []string{"write.*"}, WindowSubSeconds: 1},
		{ID: "shared", Key: "s:a:ip", WindowSubSeconds: 1},
		{ID: "shared2", Key: "s:a:ip", WindowSubSeconds: 1},
	}}
	cs, err := budget.NodeCounters(n, "main", []byte(`{"key":"k1","op":"read"}`))
	if err != nil || len(cs) != 2 || cs[0].Key != "b:a:g:tokens:rpm:k1" || cs[0].Max != 10 || cs[0].TTLSeconds != 60 || cs[1].Key != "s:a:ip" {
		t.Fatalf("counters %+v %v", cs, err)
	}
	cs, _ = budget.NodeCounters(n, "main", []byte(`{"op":"write.x"}`))
	if len(cs) != 2 || cs[0].BudgetID != "writes" {
		t.Fatalf("counters %+v", cs)
	}
}
