package relay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

// A claim that costs four 1 s windows (20 items of cost 2 against 20 per
// window) under a 10 s lease: each settle of the admitted prefix hands the
// tail back with a `retry` ack, so the tail is forwarded in the next
// window instead of after the lease lapses. All 40 items leave within a
// few windows, once and in order, no window is overspent, and the retry
// budget and the DLQ are untouched (pacing is never a failure).
func TestPrefixSettleHandsTheTailBackForTheNextWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const graph, n = "handback", 40
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"h":{"ingress":true,"concurrency":1,
		"cost":{"path":"payload.cost","default":1,"max":5},
		"budgets":[{"id":"b","count":20,"timeMs":1000,"subWindows":1}],"egress":%q}},"paths":[{"name":"main","nodes":["h"]}]}`, e.egressQueue()))
	ingress := plan.IngressQueue(e.app, graph, "h")
	var items []item
	want := map[string][]int{}
	for s := 0; s < n; s++ {
		items = append(items, item{Seq: s, Part: "p", Cost: 2})
		want["p"] = append(want["p"], s)
	}
	e.push(ingress, items...)
	k := defaultKnobs()
	k.lease = 10 * time.Second
	r := e.startRelay(k)
	gatetest.Eventually(t, 40*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= n })
	got := e.egress(e.egressQueue())
	checkOnceInOrder(t, got, want)

	span := got[len(got)-1].Created.Sub(got[0].Created)
	t.Logf("first to last forward: %v (lease %v)", span.Round(time.Millisecond), k.lease)
	if span >= 7*time.Second {
		t.Fatalf("the last item left %v after the first: the tail waited for the %v lease instead of the next window", span.Round(time.Millisecond), k.lease)
	}
	writes, _ := e.rec.snapshot()
	for _, w := range writes {
		if w.Post > 20 {
			t.Fatalf("counter %s read %d: above the window's 20", w.Key, w.Post)
		}
	}
	// The stage counts a commit once the broker's answer is read, which can
	// trail the egress seeing the items.
	gatetest.Eventually(t, 10*time.Second, func() bool {
		st, _ := stageStatus(r, e.app, graph, "main", "h")
		return st.Counters.Forwarded >= n
	})
	st, _ := stageStatus(r, e.app, graph, "main", "h")
	if st.Counters.Deferred < 3 || st.Counters.Released != 0 || st.Counters.Forwarded != n || st.Counters.Deadlettered != 0 {
		t.Errorf("counters %+v: want ≥ 3 prefix settles, nothing released or dead-lettered, %d forwarded", st.Counters, n)
	}
	if dl := e.mini.DeadLetters(ingress); len(dl) != 0 {
		t.Fatalf("DLQ holds %d messages: a hand-back must never fail a message", len(dl))
	}
	c, ok := e.mini.Cursor(ingress, plan.Group(e.app, graph, "main", "h"), "p")
	if !ok || c.Committed != n-1 || c.Retries != 0 {
		t.Fatalf("source cursor %+v: want every item settled and the retry budget untouched", c)
	}
}
