package budget_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/queen"
)

// fakeKV models the broker's incr (guards, create-only TTL) and getMany for
// one namespace, with a settable clock and a failing call.
type fakeKV struct {
	mu     sync.Mutex
	now    time.Time
	rows   map[string]*row
	calls  [][]queen.KVOp
	failAt int // 1-based call number that fails; 0 = none
	layout string
}

type row struct {
	v   int64
	exp time.Time
}

func newFake() *fakeKV {
	return &fakeKV{now: time.Date(2026, 8, 21, 8, 0, 0, 0, time.UTC), rows: map[string]*row{}, layout: time.RFC3339Nano}
}

func (f *fakeKV) live(k string) (*row, bool) {
	r, ok := f.rows[k]
	if !ok || !f.now.Before(r.exp) {
		return nil, false
	}
	return r, true
}

func (f *fakeKV) KV(_ context.Context, ops ...queen.KVOp) (queen.KVResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, ops)
	if f.failAt == len(f.calls) {
		return queen.KVResponse{}, errors.New("connection reset")
	}
	out := make([]queen.KVResult, len(ops))
	for i, op := range ops {
		if op.Op != queen.OpIncr {
			continue
		}
		cur := int64(0)
		r, live := f.live(op.Key)
		if live {
			cur = r.v
		}
		next := cur + op.Delta
		ok := (!op.Min.Set || next >= op.Min.Value) && (!op.Max.Set || next <= op.Max.Value)
		res := queen.KVResult{Index: i, Op: op.Op, Key: op.Key, Applied: ok}
		if ok {
			if live {
				r.v = next
			} else {
				f.rows[op.Key] = &row{v: next, exp: f.now.Add(time.Duration(op.TTLSeconds) * time.Second)}
			}
			res.Value = json.RawMessage(strconv.FormatInt(next, 10))
		} else {
			res.Reason = queen.KVLimit
			res.Value = json.RawMessage(strconv.FormatInt(cur, 10))
		}
		out[i] = res
	}
	for i, op := range ops {
		if op.Op != queen.OpGetMany {
			continue
		}
		res := queen.KVResult{Index: i, Op: op.Op}
		for _, k := range op.Keys {
			if r, ok := f.live(k); ok {
				res.Rows = append(res.Rows, queen.KVRow{Key: k, Value: json.RawMessage(strconv.FormatInt(r.v, 10)), ExpiresAt: queen.Timestamp(r.exp.Format(f.layout))})
			} else {
				res.Missing = append(res.Missing, k)
			}
		}
		out[i] = res
	}
	return queen.KVResponse{Results: out}, nil
}

func (f *fakeKV) value(k string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.live(k); ok {
		return r.v
	}
	return 0
}

func (f *fakeKV) set(k string, v int64, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows[k] = &row{v: v, exp: f.now.Add(ttl)}
}

// window builds a batch of one counter (max, ttl 1) and items of costs.
func window(max int64, costs ...int64) *budget.Batch {
	b := &budget.Batch{}
	c := b.Counter("k", max, 1, "b0")
	for _, cost := range costs {
		b.Add(cost, []int{c})
	}
	return b
}

func TestBatchMintsEachKeyOnceAndChargesItOncePerItem(t *testing.T) {
	t.Parallel()
	b := &budget.Batch{}
	x := b.Counter("x", 10, 1, "first")
	if y := b.Counter("x", 99, 7, "second"); y != x || b.Counters[0].Max != 10 || b.Counters[0].BudgetID != "first" {
		t.Fatalf("a key seen twice must keep its first parameters: %+v", b.Counters)
	}
	z := b.Counter("z", 5, 1, "z")
	b.Add(3, []int{x, x, z})
	b.Add(2, []int{z})
	if got := b.Deltas(0, 2); got[x] != 3 || got[z] != 5 {
		t.Fatalf("deltas = %v, want x 3 (charged once per item) and z 5", got)
	}
	if got := b.Deltas(1, 2); got[x] != 0 || got[z] != 2 {
		t.Fatalf("deltas of the second item = %v", got)
	}
	if (&budget.Batch{}).Charges() {
		t.Fatal("an empty batch charges nothing")
	}
}

func TestPrefixIsNeverASubset(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		used  int64
		max   int64
		costs []int64
		want  int
	}{
		{"all fit", 0, 50, []int64{10, 10, 10}, 3},
		{"cut at the first that does not fit", 45, 50, []int64{1, 1, 1, 1, 1, 1, 1}, 5},
		{"a later cheap item is not admitted past an expensive one", 0, 5, []int64{1, 10, 1}, 1},
		{"nothing fits", 50, 50, []int64{1}, 0},
		{"exactly full", 40, 50, []int64{5, 5}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			kv := newFake()
			kv.set("k", c.used, time.Second)
			l := &budget.Limiter{KV: kv, NS: "ns"}
			b := window(c.max, c.costs...)
			ch, err := l.Charge(context.Background(), b, len(b.Items))
			if err != nil {
				t.Fatal(err)
			}
			if got := budget.Prefix(b, ch); got != c.want {
				t.Fatalf("prefix = %d, want %d", got, c.want)
			}
		})
	}
}

func TestPrefixSubtractsTheCallsOwnAppliedCharge(t *testing.T) {
	t.Parallel()
	kv := newFake()
	kv.set("small", 8, time.Second)
	l := &budget.Limiter{KV: kv, NS: "ns"}
	b := &budget.Batch{}
	big := b.Counter("big", 100, 1, "big")
	small := b.Counter("small", 10, 1, "small")
	for i := 0; i < 5; i++ {
		b.Add(1, []int{big, small})
	}
	ch, err := l.Charge(context.Background(), b, 5)
	if err != nil {
		t.Fatal(err)
	}
	if ch.OK() || !ch.Applied[big] || ch.Applied[small] {
		t.Fatalf("want big applied, small refused: %+v", ch)
	}
	// big reads 5 including this call's own 5: remaining must be 100, not 95.
	if got := budget.Prefix(b, ch); got != 2 {
		t.Fatalf("prefix = %d, want 2 (small has 2 left)", got)
	}
	refunds, unknown := ch.Refunds(b, 0)
	if unknown != 0 || len(refunds) != 1 || refunds[0].Counter.Key != "big" || refunds[0].Delta != 5 || refunds[0].Post != 5 {
		t.Fatalf("refunds = %+v (unknown %d), want big −5 guarded at 5", refunds, unknown)
	}
	rep, err := l.Refund(context.Background(), refunds)
	if err != nil || rep.Applied != 1 {
		t.Fatalf("refund: %+v %v", rep, err)
	}
	if v := kv.value("big"); v != 0 {
		t.Fatalf("after the refund big reads %d, want 0: a refused admission charges nothing", v)
	}
}

func TestRefundIsGuardedAgainstMovedCountersAndNewWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("another charge landed", func(t *testing.T) {
		t.Parallel()
		kv := newFake()
		l := &budget.Limiter{KV: kv, NS: "ns"}
		b := window(50, 5)
		ch, _ := l.Charge(ctx, b, 1)
		kv.set("k", 7, time.Second) // someone else charged 2 more
		refunds, _ := ch.Refunds(b, 0)
		rep, err := l.Refund(ctx, refunds)
		if err != nil || rep.Refused != 1 || kv.value("k") != 7 {
			t.Fatalf("refund over a moved counter must not apply: %+v %v value %d", rep, err, kv.value("k"))
		}
		op := kv.calls[len(kv.calls)-1][0]
		if op.Delta != -5 || op.Min != queen.Int(0) || op.Max != queen.Int(0) {
			t.Fatalf("refund op = %+v, want incr −5 with min = max = post − delta = 0", op)
		}
	})
	t.Run("the window rotated", func(t *testing.T) {
		t.Parallel()
		kv := newFake()
		l := &budget.Limiter{KV: kv, NS: "ns"}
		b := window(50, 5)
		ch, _ := l.Charge(ctx, b, 1)
		kv.now = kv.now.Add(2 * time.Second)
		other := window(50, 3)
		if _, err := l.Charge(ctx, other, 1); err != nil {
			t.Fatal(err)
		}
		refunds, _ := ch.Refunds(b, 0)
		if rep, _ := l.Refund(ctx, refunds); rep.Applied != 0 || kv.value("k") != 3 {
			t.Fatalf("a refund landed in a newer window: %+v value %d", rep, kv.value("k"))
		}
	})
	t.Run("a partial give-back keeps the settled part", func(t *testing.T) {
		t.Parallel()
		kv := newFake()
		l := &budget.Limiter{KV: kv, NS: "ns"}
		b := window(50, 1, 2, 3, 4)
		ch, _ := l.Charge(ctx, b, 4)
		refunds, _ := ch.Refunds(b, 2)
		if rep, _ := l.Refund(ctx, refunds); rep.Applied != 1 || kv.value("k") != 3 {
			t.Fatalf("giving back items 2..4 left %d, want 3", kv.value("k"))
		}
	})
}

func TestChargeChunksAt255KeysAndRefundsEarlierChunksOnFailure(t *testing.T) {
	t.Parallel()
	kv := newFake()
	l := &budget.Limiter{KV: kv, NS: "ns"}
	b := &budget.Batch{}
	var idx []int
	for i := 0; i < 300; i++ {
		idx = append(idx, b.Counter(fmt.Sprintf("k%03d", i), 10, 1, "b"))
	}
	b.Add(1, idx)
	ch, err := l.Charge(context.Background(), b, 1)
	if err != nil || !ch.OK() {
		t.Fatalf("charge: %v", err)
	}
	if len(kv.calls) != 2 || len(kv.calls[0]) != 256 || len(kv.calls[1]) != 46 {
		t.Fatalf("calls carried %d and %d ops, want 255+getMany and 45+getMany", len(kv.calls[0]), len(kv.calls[1]))
	}
	if last := kv.calls[0][255]; last.Op != queen.OpGetMany || len(last.Keys) != 255 {
		t.Fatalf("the first call must end with a getMany of its keys: %+v", last)
	}

	kv2 := newFake()
	kv2.failAt = 2
	l2 := &budget.Limiter{KV: kv2, NS: "ns"}
	if _, err := l2.Charge(context.Background(), b, 1); !errors.Is(err, budget.ErrCall) {
		t.Fatalf("a failed chunk must surface as ErrCall, got %v", err)
	}
	for i := 0; i < 255; i++ {
		if v := kv2.value(fmt.Sprintf("k%03d", i)); v != 0 {
			t.Fatalf("k%03d reads %d after the second chunk failed; the first chunk must be refunded", i, v)
		}
	}
}

func TestWaitIsTheLatestRefusedWindowEnd(t *testing.T) {
	t.Parallel()
	kv := newFake()
	kv.layout = "2006-01-02 15:04:05.999999" // no offset, space: read as UTC
	kv.set("a", 10, 300*time.Millisecond)
	kv.set("b", 10, 900*time.Millisecond)
	kv.set("c", 0, 5*time.Second)
	l := &budget.Limiter{KV: kv, NS: "ns"}
	b := &budget.Batch{}
	a, bb, c := b.Counter("a", 10, 1, "a"), b.Counter("b", 10, 1, "b"), b.Counter("c", 10, 1, "c")
	b.Add(1, []int{a, bb, c})
	ch, err := l.Charge(context.Background(), b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if w := budget.Wait(ch, kv.now); w != 900*time.Millisecond {
		t.Fatalf("wait = %v, want 900ms (the max over refused counters, not the applied one)", w)
	}
	if budget.Wait(&budget.Charge{Delta: []int64{1}, Applied: []bool{false}, State: []budget.State{{}}}, kv.now) != 0 {
		t.Fatal("a refused counter with no known end must mean retry now")
	}
}

func TestParkSleepAndBudget(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		if s := budget.ParkSleep(0, rnd); s != budget.MinParkSleep {
			t.Fatalf("a zero wait sleeps %v, want the 50ms floor", s)
		}
		if s := budget.ParkSleep(time.Second, rnd); s < time.Second || s >= time.Second+200*time.Millisecond {
			t.Fatalf("a 1 s wait sleeps %v, want [1s, 1.2s)", s)
		}
		if s := budget.ParkSleep(100*time.Millisecond, rnd); s < 100*time.Millisecond || s >= 145*time.Millisecond {
			t.Fatalf("a 100ms wait sleeps %v, want jitter below 45ms", s)
		}
	}
	p := budget.Parking{MaxPark: time.Second}
	if !p.Fits(time.Second) || p.Fits(time.Second+1) {
		t.Fatal("a park fits while parked + wait ≤ max")
	}
	p.Spent(800 * time.Millisecond)
	if p.Fits(300*time.Millisecond) || p.Exhausted() {
		t.Fatalf("after 800ms a 300ms wait must release: %+v", p)
	}
	p.Spent(200 * time.Millisecond)
	if !p.Exhausted() {
		t.Fatal("a park budget fully held is exhausted")
	}
}

// Against a live broker: twenty concurrent charges of 5 on one counter with
// max 50 apply exactly ten times.
func TestConcurrentChargesNeverPassTheCeiling(t *testing.T) {
	t.Parallel()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	l := &budget.Limiter{KV: c, NS: b.Namespace()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &budget.Batch{}
			k := w.Counter("b:live:ceiling", 50, 30, "b0")
			w.Add(5, []int{k})
			ch, err := l.Charge(context.Background(), w, 1)
			if err != nil {
				t.Error(err)
				return
			}
			if ch.OK() {
				mu.Lock()
				applied++
				mu.Unlock()
			} else if st := ch.State[k]; !st.Known || st.Value != 50 || st.ExpiresAt.IsZero() {
				t.Errorf("a refused charge must read the counter and its window end: %+v", st)
			}
		}()
	}
	wg.Wait()
	if applied != 10 {
		t.Fatalf("%d charges of 5 applied under max 50, want exactly 10", applied)
	}
}
