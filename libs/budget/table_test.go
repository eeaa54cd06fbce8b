package budget_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
)

// TestTableJudgesLikeTheBrokerPath replays random windows through the
// Limiter over the fake broker and through the in-memory Table, with the
// same clock, and requires every decision, post value and window end to be
// the same: the simulation judges with the relay's arithmetic.
func TestTableJudgesLikeTheBrokerPath(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(7, 11))
	kv := newFake()
	l := &budget.Limiter{KV: kv, NS: "ns"}
	var tab budget.Table
	keys := []string{"a", "b", "c"}
	for round := 0; round < 2000; round++ {
		kv.now = kv.now.Add(time.Duration(rnd.IntN(700)) * time.Millisecond)
		b := &budget.Batch{}
		idx := make([]int, len(keys))
		for i, k := range keys {
			idx[i] = b.Counter(k, int64(3+i*4), int64(1+i), "id-"+k)
		}
		for n := rnd.IntN(8); n > 0; n-- {
			var touch []int
			for _, c := range idx {
				if rnd.IntN(3) > 0 {
					touch = append(touch, c)
				}
			}
			b.Add(int64(1+rnd.IntN(3)), touch)
		}
		n := rnd.IntN(len(b.Items) + 1)
		got := tab.Charge(b, n, kv.now)
		want, err := l.Charge(context.Background(), b, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Counters {
			if got.Delta[i] != want.Delta[i] || got.Applied[i] != want.Applied[i] || got.Post[i] != want.Post[i] {
				t.Fatalf("round %d counter %d: table %+v, broker %+v", round, i, got, want)
			}
			if got.Delta[i] > 0 && (got.State[i].Value != want.State[i].Value || !got.State[i].ExpiresAt.Equal(want.State[i].ExpiresAt.Truncate(time.Millisecond))) {
				t.Fatalf("round %d counter %d state: table %+v, broker %+v", round, i, got.State[i], want.State[i])
			}
		}
		if budget.Prefix(b, got) != budget.Prefix(b, want) {
			t.Fatalf("round %d: prefixes differ", round)
		}
		if !got.OK() {
			rt, _ := got.Refunds(b, 0)
			rb, _ := want.Refunds(b, 0)
			rep := tab.Refund(rt, kv.now)
			brep, err := l.Refund(context.Background(), rb)
			if err != nil {
				t.Fatal(err)
			}
			if rep != brep {
				t.Fatalf("round %d: refunds table %+v, broker %+v", round, rep, brep)
			}
		}
		for _, k := range keys {
			v, _, _ := tab.Value(k, kv.now)
			if v != kv.value(k) {
				t.Fatalf("round %d key %s: table %d, broker %d", round, k, v, kv.value(k))
			}
		}
	}
}

func TestAdmitChargesThePrefixAndNamesTheRefusal(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	var tab budget.Table
	b := &budget.Batch{}
	sec := b.Counter("sec", 5, 1, "per-second")
	minute := b.Counter("min", 7, 60, "per-minute")
	for range 6 {
		b.Add(1, []int{sec, minute})
	}
	a := tab.Admit(b, now)
	// The refused counter had no row yet (a refused incr creates none), so
	// its window end is unknown: wait 0, "retry now", as on the broker.
	if a.N != 5 || a.Refused != "per-second" || a.Wait != 0 {
		t.Fatalf("first window: %+v, want 5 admitted, refused by per-second, wait 0", a)
	}
	b.Items = b.Items[:1]
	if a := tab.Admit(b, now.Add(200*time.Millisecond)); a.N != 0 || a.Wait != 800*time.Millisecond {
		t.Fatalf("a full window refuses with the time to its end: %+v", a)
	}
	if a.Delta[sec] != 5 || a.Delta[minute] != 5 {
		t.Fatalf("the admitted prefix charged %v, want 5 on both counters", a.Delta)
	}
	if v, _, _ := tab.Value("sec", now); v != 5 {
		t.Fatalf("the refused whole-window charge must be refunded and the prefix charged: sec = %d", v)
	}
	// One second later the per-second window is new; the minute has 2 left.
	b.Reset()
	sec = b.Counter("sec", 5, 1, "per-second")
	minute = b.Counter("min", 7, 60, "per-minute")
	for range 6 {
		b.Add(1, []int{sec, minute})
	}
	a = tab.Admit(b, now.Add(time.Second))
	if a.N != 2 || a.Refused != "per-second" {
		t.Fatalf("second window: %+v, want 2 admitted (first refused counter named)", a)
	}
	if v, _, _ := tab.Value("min", now.Add(time.Second)); v != 7 {
		t.Fatalf("minute counter %d, want 7 (its ceiling)", v)
	}
	if a := tab.Admit(&budget.Batch{Items: []budget.Item{{Cost: 1}}}, now); a.N != 1 || a.Refused != "" {
		t.Fatalf("a window touching no counter is admitted whole: %+v", a)
	}
	if v, _, ok := tab.Value("sec", now.Add(2*time.Second)); ok || v != 0 {
		t.Fatal("an expired row reads as absent")
	}
}

func TestAddNIsNAdds(t *testing.T) {
	t.Parallel()
	var a, b budget.Batch
	for _, bt := range []*budget.Batch{&a, &b} {
		bt.Counter("x", 10, 1, "x")
		bt.Counter("y", 10, 1, "y")
	}
	for range 4 {
		a.Add(3, []int{0, 1, 0})
	}
	b.AddN(3, []int{0, 1, 0}, 4)
	b.AddN(9, nil, 0)
	if len(a.Items) != len(b.Items) || fmt.Sprint(a.Deltas(0, 4)) != fmt.Sprint(b.Deltas(0, 4)) || fmt.Sprint(a.Items) != fmt.Sprint(b.Items) {
		t.Fatalf("AddN %v, Add %v", b.Items, a.Items)
	}
}

// A window built with AddN (runs sharing one counter list, judged a run at
// a time) admits exactly what the same window built item by item admits,
// charge for charge, over random runs, costs and counter states.
func TestRunsJudgeLikeItems(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 5))
	var runs, items budget.Table
	now := time.UnixMilli(1_000_000)
	for round := 0; round < 3000; round++ {
		now = now.Add(time.Duration(rnd.IntN(400)) * time.Millisecond)
		var a, b budget.Batch
		xMax := int64(5 + rnd.IntN(8))
		for _, bt := range []*budget.Batch{&a, &b} {
			bt.Counter("x", xMax, 1, "x")
			bt.Counter("y", 20, 2, "y")
			bt.Counter("z", 9, 1, "z")
		}
		for r := rnd.IntN(5); r >= 0; r-- {
			cost := int64(rnd.IntN(4))
			touch := [][]int{{0}, {0, 1}, {1, 2}, {2}, nil}[rnd.IntN(5)]
			n := rnd.IntN(6)
			a.AddN(cost, touch, n)
			for range n {
				b.Add(cost, touch)
			}
		}
		if len(a.Items) == 0 {
			continue
		}
		ra, rb := runs.Admit(&a, now), items.Admit(&b, now)
		if ra.N != rb.N || ra.Refused != rb.Refused || fmt.Sprint(ra.Delta) != fmt.Sprint(rb.Delta) || ra.Wait != rb.Wait {
			t.Fatalf("round %d: runs %+v, items %+v", round, ra, rb)
		}
	}
}
