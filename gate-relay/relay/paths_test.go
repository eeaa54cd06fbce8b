package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Two paths cross node ip with shares 1.0 and 0.5 (ceilings 100 and 50 on
// one counter of 100 per second), both with a backlog: the 0.5 path never
// charges past half, the 1.0 path admits between half and full, no window
// passes 100, and per partition each path's items keep their order.
func TestReserveAndOrderAcrossTwoPaths(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "reserve"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{
		"a":{"ingress":true,"budgets":[{"count":100000,"timeMs":1000}]},
		"b":{"ingress":true,"budgets":[{"count":100000,"timeMs":1000}]},
		"ip":{"concurrency":4,"budgets":[{"id":"ip-1s","count":100,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"p1","share":1.0,"nodes":["a","ip"]},{"name":"p2","share":0.5,"nodes":["b","ip"]}]}`, e.egressQueue()))
	want := map[string][]int{}
	for _, src := range []string{"a", "b"} {
		var items []item
		for s := 0; s < 75; s++ {
			for p := 0; p < 4; p++ {
				part := fmt.Sprintf("x%d", p)
				items = append(items, item{Seq: s, Part: part, Src: src})
				want[src+"/"+part] = append(want[src+"/"+part], s)
			}
		}
		e.push(plan.IngressQueue(e.app, graph, src), items...)
	}
	r := e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 60*time.Second, func() bool {
		return e.egressCount(e.egressQueue()) >= 600 && e.rec.settledAt(graph, "ip") >= 600
	})

	got := e.egress(e.egressQueue())
	per := map[string][]int{}
	for _, o := range got {
		wantPath := map[string]string{"a": "p1", "b": "p2"}[o.Src]
		if o.Gate.Path != wantPath || o.Gate.Node != "ip" || o.Gate.Hop != 2 || o.Gate.Graph != graph {
			t.Fatalf("item %s/%s/%d carries stamp %+v, want path %s node ip hop 2", o.Src, o.Part, o.Seq, o.Gate, wantPath)
		}
		if o.Part != o.Partition {
			t.Fatalf("item moved from partition %s to %s", o.Part, o.Partition)
		}
		per[o.Src+"/"+o.Part] = append(per[o.Src+"/"+o.Part], o.Seq)
	}
	for k, seqs := range want {
		if fmt.Sprint(per[k]) != fmt.Sprint(seqs) {
			t.Fatalf("%s left as %s, want each item once in push order", k, summarize(per[k]))
		}
	}

	key := plan.BudgetKey(e.app, graph, "ip", "ip-1s")
	writes, settles := e.rec.snapshot()
	perWindow := map[time.Time]int64{}
	for _, w := range writes {
		if w.Key == key {
			perWindow[w.ExpiresAt] += w.Delta
		}
	}
	for w, v := range perWindow {
		if v > 100 {
			t.Errorf("window ending %s charged %d, above the node's 100", w, v)
		}
	}
	aboveHalf := 0
	for _, s := range settles {
		if s.Node != "ip" {
			continue
		}
		for _, w := range s.Windows {
			if w.Key != key {
				continue
			}
			if s.Path == "p2" && w.Post > 50 {
				t.Errorf("the 0.5 path charged the counter to %d, past its ceiling 50", w.Post)
			}
			if s.Path == "p1" && w.Post > 50 {
				aboveHalf++
			}
		}
	}
	if aboveHalf == 0 {
		t.Error("the 1.0 path never admitted while the counter was between half and full")
	}
	denied := 0
	for _, d := range r.Denials().Newest(0) {
		if d.Path == "p2" && d.Node == "ip" && d.BudgetID == "ip-1s" && d.Outcome == "denied" {
			denied++
		}
	}
	if denied == 0 {
		t.Error("the 0.5 path was never refused, so the reserve was never exercised")
	}
	p2, _ := stageStatus(r, e.app, graph, "p2", "ip")
	if p2.LastRefusal == nil || p2.LastRefusal.Budget != "ip-1s" {
		t.Errorf("p2/ip last refusal = %+v, want budget ip-1s", p2.LastRefusal)
	}
	p1, _ := stageStatus(r, e.app, graph, "p1", "ip")
	if p1.Counters.Foreign == 0 || p2.Counters.Foreign == 0 {
		t.Errorf("each ip stage must ack the other path's frames as foreign: p1 %+v p2 %+v", p1.Counters, p2.Counters)
	}
	t.Logf("reserve: p1/ip %+v; p2/ip %+v; p1 charges above half: %d; p2 denials: %d", p1.Counters, p2.Counters, aboveHalf, denied)
}

// A per-listing budget (scopeBy listingId, whenOp photo.delete) holds per
// listing and charges only deletes; an item without a listing skips it.
func TestScopedAndOpFilteredBudgets(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "scoped"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"photos":{"ingress":true,
		"budgets":[{"id":"global","count":100000,"timeMs":1000},
		           {"id":"per-listing","count":5,"timeMs":60000,"subWindows":1,"scopeBy":"payload.listingId","whenOp":["photo.delete"]}],
		"egress":%q}},"paths":[{"name":"main","nodes":["photos"]}]}`, e.egressQueue()))
	ingress := plan.IngressQueue(e.app, graph, "photos")
	var items []item
	for s := 0; s < 10; s++ {
		items = append(items,
			item{Seq: s, Part: "l1", Op: "photo.delete", List: "L1"},
			item{Seq: s, Part: "l2", Op: "photo.delete", List: "L2"},
			item{Seq: s, Part: "u", Op: "photo.update", List: "L1"})
	}
	for s := 0; s < 5; s++ {
		items = append(items, item{Seq: s, Part: "n", Op: "photo.delete"})
	}
	e.push(ingress, items...)
	k := defaultKnobs()
	k.maxPark = 300 * time.Millisecond
	e.startRelay(k)
	gatetest.Eventually(t, 30*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 25 })
	consistently(t, 1500*time.Millisecond, func() bool { return e.egressCount(e.egressQueue()) == 25 })

	count := map[string]int{}
	for _, o := range e.egress(e.egressQueue()) {
		count[o.Part]++
	}
	if count["l1"] != 5 || count["l2"] != 5 || count["u"] != 10 || count["n"] != 5 {
		t.Fatalf("egress per partition = %v, want l1 5, l2 5 (per-listing limit), u 10 (updates are not charged), n 5 (no listing: skipped)", count)
	}
	prefix := plan.BudgetKey(e.app, graph, "photos", "per-listing")
	net := map[string]int64{}
	writes, _ := e.rec.snapshot()
	for _, w := range writes {
		net[w.Key] += w.Delta
	}
	if net[plan.ScopedKey(prefix, "L1")] != 5 || net[plan.ScopedKey(prefix, "L2")] != 5 {
		t.Fatalf("per-listing counters net %v, want 5 for L1 and L2", net)
	}
	for key := range net {
		if key == prefix {
			t.Fatalf("the scoped budget was charged without a scope value: %s", key)
		}
	}
	for _, l := range []string{"L1", "L2"} {
		if e, ok := e.mini.KV(e.b.Namespace(), plan.ScopedKey(prefix, l)); !ok || e.Int != 5 {
			t.Fatalf("counter for %s on the broker = %+v (found %v), want 5", l, e, ok)
		}
	}
}

// A ceiling whose 3 s window is three times the 1 s lease keeps claims
// parked for several lease periods: every item is delivered once, in
// order, with an empty DLQ (the claim is held and its lease renewed, never
// nacked nor lost); a poison item (cost above max) reaches the DLQ after
// the retry limit and the items around it are delivered in order.
func TestWaitingNeverDeadLettersButPoisonDoes(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "waiting"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"w":{"ingress":true,
		"cost":{"path":"payload.cost","default":1,"max":5},
		"budgets":[{"count":5,"timeMs":3000,"subWindows":1}],"egress":%q}},"paths":[{"name":"main","nodes":["w"]}]}`, e.egressQueue()))
	ingress := plan.IngressQueue(e.app, graph, "w")
	var items []item
	want := map[string][]int{}
	for s := 0; s < 14; s++ {
		items = append(items, item{Seq: s, Part: "slow", Cost: 1})
		want["slow"] = append(want["slow"], s)
	}
	items = append(items, item{Seq: 0, Part: "bad", Cost: 1}, item{Seq: 1, Part: "bad", Cost: 50}, item{Seq: 2, Part: "bad", Cost: 2})
	want["bad"] = []int{0, 2}
	e.push(ingress, items...)
	k := defaultKnobs()
	k.lease = time.Second
	r := e.startRelay(k)
	gatetest.Eventually(t, 40*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 16 })
	gatetest.Eventually(t, 10*time.Second, func() bool { return len(e.mini.DeadLetters(ingress)) >= 1 })
	consistently(t, 500*time.Millisecond, func() bool { return e.egressCount(e.egressQueue()) == 16 })
	checkOnceInOrder(t, e.egress(e.egressQueue()), want)
	dlq := e.mini.DeadLetters(ingress)
	if len(dlq) != 1 {
		t.Fatalf("DLQ holds %d messages, want only the poison item", len(dlq))
	}
	var poisoned item
	_ = json.Unmarshal(dlq[0].Data, &poisoned)
	if poisoned.Part != "bad" || poisoned.Seq != 1 {
		t.Fatalf("DLQ holds %+v, want the poison item bad/1", poisoned)
	}
	st, _ := stageStatus(r, e.app, graph, "main", "w")
	// A 3 s window waits longer than a handler parks (a second): the
	// stage holds the claim, its lease renewed, instead.
	if st.Counters.Parked+st.Counters.Held == 0 || st.Counters.Released != 0 || st.Wedge != nil {
		t.Errorf("the stage must park or hold its claims (lease renewed), never release or fail a settle: %+v wedge %+v", st.Counters, st.Wedge)
	}
	if st.Counters.Deadlettered != 1 {
		t.Errorf("deadlettered = %d, want the one poison item counted once (not once per nack)", st.Counters.Deadlettered)
	}
	t.Logf("waiting: %+v", st.Counters)
}

// A backoff (counters put to the ceiling with ttl 3, breaker record
// written, as gate-api does) stops every path through the node until the
// window ends; deleting the keys lifts a longer backoff at once.
func TestBackoffStopsEveryPathUntilLiftedOrExpired(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "backoff"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{
		"a":{"ingress":true,"budgets":[{"count":100000,"timeMs":1000}]},
		"b":{"ingress":true,"budgets":[{"count":100000,"timeMs":1000}]},
		"api":{"budgets":[{"id":"api-1s","count":20,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"p1","share":1.0,"nodes":["a","api"]},{"name":"p2","share":0.5,"nodes":["b","api"]}]}`, e.egressQueue()))
	r := e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 10*time.Second, func() bool { _, ok := stageStatus(r, e.app, graph, "p2", "api"); return ok })
	key := plan.BudgetKey(e.app, graph, "api", "api-1s")
	brk := plan.BreakerKey(e.app, graph, "api")
	ns := e.b.Namespace()
	backoff := func(seconds int64) time.Time {
		rec, _ := json.Marshal(map[string]any{"at": time.Now().UnixMilli(), "retryAfterSeconds": seconds, "application": e.app, "graph": graph, "node": "api"})
		res, err := e.client.KV(context.Background(),
			queen.KVPut(ns, key, json.RawMessage("20"), queen.PutOpts{TTLSeconds: seconds}),
			queen.KVPut(ns, brk, rec, queen.PutOpts{TTLSeconds: seconds}))
		if err != nil || res.Err() != nil {
			t.Fatalf("backoff: %v %v", err, res.Err())
		}
		entry, ok := e.mini.KV(ns, key)
		if !ok {
			t.Fatal("backoff counter not written")
		}
		return entry.ExpiresAt
	}
	pushBoth := func(from int) {
		for _, src := range []string{"a", "b"} {
			var items []item
			for s := from; s < from+5; s++ {
				items = append(items, item{Seq: s, Part: "q", Src: src})
			}
			e.push(plan.IngressQueue(e.app, graph, src), items...)
		}
	}

	until := backoff(3)
	pushBoth(0)
	gatetest.Eventually(t, 15*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 10 })
	for _, o := range e.egress(e.egressQueue()) {
		if o.Created.Before(until) {
			t.Fatalf("item %s/%d left at %s, before the backoff ended at %s", o.Src, o.Seq, o.Created.Format(time.StampMilli), until.Format(time.StampMilli))
		}
	}

	until = backoff(20)
	pushBoth(5)
	consistently(t, time.Second, func() bool { return e.egressCount(e.egressQueue()) == 10 })
	lifted := time.Now()
	for _, k := range []string{key, brk} {
		if _, err := e.client.KVDeleteKey(context.Background(), ns, k, queen.DeleteOpts{}); err != nil {
			t.Fatalf("lifting: %v", err)
		}
	}
	gatetest.Eventually(t, 5*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 20 })
	t.Logf("backoff lifted after %v (it would have ended at +%v)", time.Since(lifted).Round(time.Millisecond), until.Sub(lifted).Round(time.Second))
	if time.Now().After(until) {
		t.Fatal("the items left only when the backoff expired, not when it was lifted")
	}
}

// An item already downstream (its derived transaction id is on the egress
// partition) rolls the settle back with QDUP: the relay recovers by
// halving, bare-acks that item without forwarding it, and forwards every
// other item once, in order.
func TestDuplicateRollbackRecoversByHalving(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const graph = "dup"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"count":100000,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue()))
	var items []item
	for s := 0; s < 10; s++ {
		items = append(items, item{Seq: s, Part: "p"})
	}
	e.push(plan.IngressQueue(e.app, graph, "n"), items...)
	derived := plan.DeriveTransactionID("t-p-3", plan.TerminalLabel(e.app, graph, "main", "n"))
	if _, err := e.client.Push(context.Background(), []queen.PushItem{{Queue: e.egressQueue(), Partition: "p", Payload: json.RawMessage(`{"seq":-1,"part":"p"}`), TransactionID: derived}}); err != nil {
		t.Fatal(err)
	}
	r := e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 20*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 10 })
	consistently(t, 500*time.Millisecond, func() bool { return e.egressCount(e.egressQueue()) == 10 })
	var seqs []int
	for _, o := range e.egress(e.egressQueue()) {
		seqs = append(seqs, o.Seq)
	}
	if fmt.Sprint(seqs) != "[-1 0 1 2 4 5 6 7 8 9]" {
		t.Fatalf("egress holds %v, want the earlier copy of item 3 and every other item once, in order", seqs)
	}
	st, _ := stageStatus(r, e.app, graph, "main", "n")
	if st.Counters.Duplicates == 0 || st.Counters.Forwarded != 9 || st.Wedge != nil {
		t.Fatalf("counters after recovery: %+v wedge %+v", st.Counters, st.Wedge)
	}
	if c, _ := e.mini.Cursor(plan.IngressQueue(e.app, graph, "n"), plan.Group(e.app, graph, "main", "n"), "p"); c.Committed != 9 {
		t.Fatalf("the source cursor stopped at %d, want every item settled", c.Committed)
	}
}
