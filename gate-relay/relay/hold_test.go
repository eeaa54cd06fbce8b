package relay_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/ops"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

// A full key must not stall the other partitions of its stage: a claim
// whose head cannot be admitted within a second is held by the stage
// (leased, renewed, rechecked) while the stage's one worker goes on
// popping, and woken when its window opens or is lifted.

// untilRefused waits until the stage at (path, node) has been refused at
// least once (a park, a hold or a release): its claim is waiting.
func untilRefused(t *testing.T, r *relay.Relay, app, graph, path, node string) {
	t.Helper()
	gatetest.Eventually(t, 15*time.Second, func() bool {
		st, ok := stageStatus(r, app, graph, path, node)
		return ok && st.Counters.Refusals() > 0
	})
}

// partitionItems pushes n items to partition part of queue, with seqs from
// from, each built by mk.
func (e *env) partitionItems(queue, part string, from, n int, mk func(seq int) item) []int {
	e.t.Helper()
	var items []item
	var seqs []int
	for s := from; s < from+n; s++ {
		it := mk(s)
		it.Seq, it.Part = s, part
		items = append(items, it)
		seqs = append(seqs, s)
	}
	e.push(queue, items...)
	return seqs
}

// within waits up to limit for cond and fails t naming what, returning how
// long it took.
func within(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// partitionCount is how many items of partition part reached queue.
func (e *env) partitionCount(queue, part string) int { return len(e.mini.Messages(queue, part)) }

// The case: an unscoped 100/s budget and a per-key budget of 1 per
// hour, one worker. Partition A's head waits for key A, which is spent;
// partition B then gets 20 items whose keys all have room. B's items leave
// within 2 s (they took 27–28 s when the worker parked on A's claim for the
// whole GATE_MAX_PARK_MS), A's items stay, nothing is dead-lettered or
// charged against the retry budget, and while A alone waits the stage does
// not spin: no claim, charge or settle, only its lease renewal and one
// counter read a second.
func TestAKeySpentForAnHourDoesNotStallTheOtherPartitions(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "scoped"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"concurrency":1,
		"budgets":[{"id":"all","count":100,"timeMs":1000},
		           {"id":"per-key","count":1,"timeMs":3600000,"subWindows":1,"scopeBy":"payload.listingId"}],
		"egress":%q}},"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue()))
	in := plan.IngressQueue(e.app, graph, "n")
	r := e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 10*time.Second, func() bool { _, ok := stageStatus(r, e.app, graph, "main", "n"); return ok })

	// Key A's one item of the hour goes; the next two wait.
	e.partitionItems(in, "A", 0, 1, func(int) item { return item{List: "A"} })
	within(t, 10*time.Second, "the first item of key A", func() bool { return e.partitionCount(e.egressQueue(), "A") == 1 })
	e.partitionItems(in, "A", 1, 2, func(int) item { return item{List: "A"} })
	untilRefused(t, r, e.app, graph, "main", "n")

	wantB := e.partitionItems(in, "B", 0, 20, func(s int) item { return item{List: fmt.Sprintf("b%d", s)} })
	took := within(t, 2*time.Second, "B's 20 items while A's head waits for its key", func() bool {
		return e.partitionCount(e.egressQueue(), "B") == 20
	})
	t.Logf("B's 20 items forwarded %v after they were pushed, A's head waiting", took.Round(time.Millisecond))

	// A alone waits now: measure what the stage asks of the broker.
	time.Sleep(time.Second)
	before := r.BrokerCalls()
	const quiet = 6 * time.Second
	time.Sleep(quiet)
	d := r.BrokerCalls().Sub(before)
	per := func(n int64) float64 { return float64(n) / quiet.Seconds() }
	t.Logf("while blocked: %.2f calls/s (pop %.2f, transaction %.2f, kv %.2f of which incr %.2f, lease %.2f, other %.2f)",
		per(d.Total()), per(d.Pop), per(d.Txn), per(d.KV), per(d.KVIncr), per(d.Lease), per(d.Other))
	if d.Txn+d.KVIncr > 0 {
		t.Errorf("%d transactions and %d charging kv calls in %v while only A waits: a blocked partition must not be claimed, charged and released again and again", d.Txn, d.KVIncr, quiet)
	}
	if max := int64(quiet/(2*time.Second)) + 2; d.Pop > max {
		t.Errorf("%d pops in %v, want at most %d: the one worker should sit in its long-poll", d.Pop, quiet, max)
	}
	st, _ := stageStatus(r, e.app, graph, "main", "n")
	if st.Holding != 1 || st.Counters.Held == 0 {
		t.Errorf("stage holding %d, counters %+v: want A's claim held", st.Holding, st.Counters)
	}

	got := e.egress(e.egressQueue())
	checkOnceInOrder(t, got, map[string][]int{"A": {0}, "B": wantB})
	if dl := e.mini.DeadLetters(in); len(dl) != 0 {
		t.Fatalf("DLQ holds %d messages: waiting must never dead-letter", len(dl))
	}
	if c, ok := e.mini.Cursor(in, plan.Group(e.app, graph, "main", "n"), "A"); !ok || c.Retries != 0 || c.Committed != 0 {
		t.Fatalf("A's cursor %+v: want item 0 settled, 1 and 2 waiting, the retry budget untouched", c)
	}
}

// A per-key window that opens in a few seconds: A's items leave one per
// window, each within about a second of its window opening, in order,
// while B's items (their keys free) go at once.
func TestAHeldClaimLeavesWhenItsWindowOpens(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "opens"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"concurrency":1,
		"budgets":[{"id":"all","count":100,"timeMs":1000},
		           {"id":"per-key","count":1,"timeMs":4000,"subWindows":1,"scopeBy":"payload.listingId"}],
		"egress":%q}},"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue()))
	in := plan.IngressQueue(e.app, graph, "n")
	r := e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 10*time.Second, func() bool { _, ok := stageStatus(r, e.app, graph, "main", "n"); return ok })
	wantA := e.partitionItems(in, "A", 0, 3, func(int) item { return item{List: "A"} })
	within(t, 10*time.Second, "A's first item", func() bool { return e.partitionCount(e.egressQueue(), "A") == 1 })
	untilRefused(t, r, e.app, graph, "main", "n")
	wantB := e.partitionItems(in, "B", 0, 10, func(s int) item { return item{List: fmt.Sprintf("b%d", s)} })
	within(t, 2*time.Second, "B's 10 items while A waits for its window", func() bool {
		return e.partitionCount(e.egressQueue(), "B") == 10
	})
	within(t, 15*time.Second, "A's three items, one per 4 s window", func() bool { return e.partitionCount(e.egressQueue(), "A") == 3 })
	// The egress shows a claim's items a moment before the relay reports
	// its counter writes (settledAt): wait for every item's report before
	// reading the writes.
	within(t, 5*time.Second, "the relay's reports of all 13 items", func() bool { return e.rec.settledAt(graph, "n") >= 13 })

	key := plan.ScopedKey(plan.BudgetKey(e.app, graph, "n", "per-key"), "A")
	var opened []time.Time
	writes, _ := e.rec.snapshot()
	for _, w := range writes {
		if w.Key == key && w.Delta > 0 {
			opened = append(opened, w.ExpiresAt.Add(-4*time.Second))
		}
	}
	got := e.egress(e.egressQueue())
	var aTimes []time.Time
	for _, o := range got {
		if o.Part == "A" {
			aTimes = append(aTimes, o.Created)
		}
	}
	for i := 1; i < len(aTimes); i++ {
		gap := aTimes[i].Sub(aTimes[i-1])
		t.Logf("A's item %d left %v after item %d", i, gap.Round(time.Millisecond), i-1)
		if gap < 4*time.Second-100*time.Millisecond || gap > 4*time.Second+1500*time.Millisecond {
			t.Errorf("A's item %d left %v after the previous one: want within about a second of its 4 s window opening", i, gap.Round(time.Millisecond))
		}
	}
	if len(opened) != 3 {
		t.Errorf("key A was charged in %d windows, want 3 (one item each)", len(opened))
	}
	checkOnceInOrder(t, got, map[string][]int{"A": wantA, "B": wantB})
	if dl := e.mini.DeadLetters(in); len(dl) != 0 {
		t.Fatalf("DLQ holds %d messages: waiting must never dead-letter", len(dl))
	}
}

// A long backoff on a counter only some items spend: node n charges the
// shared vendor key only for op "call", and a backoff reported on node v
// (which owns the same shared key) spends it for two minutes. Partition
// A's "call" items wait, partition B's "read" items go within 2 s, and
// lifting the backoff wakes A's held claim within about a second, its
// items in order, nothing dead-lettered.
func TestALongBackoffHoldsOnlyWhatSpendsTheCounterAndALiftWakesIt(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "vendor"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{
		"n":{"ingress":true,"concurrency":1,"budgets":[{"id":"all","count":100,"timeMs":1000},
		     {"id":"vendor","sharedKey":"vx","whenOp":["call"],"count":50,"timeMs":1000}],"egress":%q},
		"v":{"ingress":true,"budgets":[{"id":"vendor","sharedKey":"vx","count":50,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"main","nodes":["n"]},{"name":"side","nodes":["v"]}]}`, e.egressQueue(), e.b.Queue("side")))
	in := plan.IngressQueue(e.app, graph, "n")
	r := e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 10*time.Second, func() bool { _, ok := stageStatus(r, e.app, graph, "main", "n"); return ok })

	// The backoff reported on v: its unscoped counter, the shared key,
	// written to its ceiling for 120 s (gate-api's backoff write).
	lim := &budget.Limiter{KV: e.client, NS: e.b.Namespace()}
	vx := []budget.NodeCounter{{Key: plan.SharedBudgetKey(e.app, "vx"), Ceiling: 50}}
	if _, err := lim.Spend(context.Background(), vx, 120, 0); err != nil {
		t.Fatalf("backoff: %v", err)
	}
	wantA := e.partitionItems(in, "A", 0, 3, func(int) item { return item{Op: "call"} })
	untilRefused(t, r, e.app, graph, "main", "n")
	wantB := e.partitionItems(in, "B", 0, 20, func(int) item { return item{Op: "read"} })
	took := within(t, 2*time.Second, "B's 20 read items while A's calls wait for the backoff", func() bool {
		return e.partitionCount(e.egressQueue(), "B") == 20
	})
	t.Logf("B's items forwarded %v after they were pushed", took.Round(time.Millisecond))
	if n := e.partitionCount(e.egressQueue(), "A"); n != 0 {
		t.Fatalf("%d of A's calls left during the backoff", n)
	}
	// /metrics says why A waits, and that the stage holds its claim.
	metrics := scrape(t, r)
	for _, want := range []string{
		fmt.Sprintf(`gate_relay_denials_total{app=%q,budget="vendor",graph=%q,node="n",path="main",reason="backoff"}`, e.app, graph),
		fmt.Sprintf(`gate_relay_stage_holding{app=%q,graph=%q,node="n",path="main"} 1`, e.app, graph),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	lifted := time.Now()
	if err := lim.Lift(context.Background(), vx); err != nil {
		t.Fatalf("lift: %v", err)
	}
	woke := within(t, 3*time.Second, "A's calls after the lift", func() bool { return e.partitionCount(e.egressQueue(), "A") == 3 })
	t.Logf("A's calls left %v after the lift (the backoff had %v to run)", woke.Round(time.Millisecond), (120*time.Second - time.Since(lifted)).Round(time.Second))
	if woke > 1500*time.Millisecond {
		t.Errorf("A's calls left %v after the lift, want within about a second", woke.Round(time.Millisecond))
	}
	checkOnceInOrder(t, e.egress(e.egressQueue()), map[string][]int{"A": wantA, "B": wantB})
	if dl := e.mini.DeadLetters(in); len(dl) != 0 {
		t.Fatalf("DLQ holds %d messages: waiting must never dead-letter", len(dl))
	}
	if c, ok := e.mini.Cursor(in, plan.Group(e.app, graph, "main", "n"), "A"); !ok || c.Retries != 0 {
		t.Fatalf("A's cursor %+v: want the retry budget untouched", c)
	}
}

// scrape reads r's /metrics as the ops server serves it.
func scrape(t *testing.T, r *relay.Relay) string {
	t.Helper()
	rec := httptest.NewRecorder()
	ops.Handler(r).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return string(b)
}
