package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// With a 15 s reconcile period, the change signal makes a new declaration
// run within about a second; a changed document is swapped mid-flow
// without losing or repeating an item; a stored document that does not
// compile leaves the running version alone and says why; a deleted one
// stops.
func TestDeclareChangeAndDeleteReachARunningRelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, err := relay.New(relay.Config{
		Client: e.client, Store: e.store, Replica: "rc", Lease: 2 * time.Second, PollTimeout: 2 * time.Second,
		MaxPark: 30 * time.Second, Reconcile: 15 * time.Second, SignalPoll: 500 * time.Millisecond, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-r.Stopped() })
	running := func(version int64) func() bool {
		return func() bool {
			st := r.Snapshot()
			g, ok := st.Graph(e.app, "live")
			return ok && g.Running && g.Version == version
		}
	}
	doc := func(version, count int) string {
		return fmt.Sprintf(`{"version":%d,"nodes":{"n":{"ingress":true,"budgets":[{"count":%d,"timeMs":1000}],"egress":%q}},
			"paths":[{"name":"main","nodes":["n"]}]}`, version, count, e.egressQueue())
	}
	gatetest.Eventually(t, 5*time.Second, func() bool { return r.Snapshot().Replica == "rc" })
	declared := time.Now()
	e.declare("live", doc(1, 40))
	gatetest.Eventually(t, 3*time.Second, running(1))
	t.Logf("declared → running in %v (reconcile period 15 s)", time.Since(declared).Round(time.Millisecond))

	var items []item
	want := map[string][]int{}
	for s := 0; s < 60; s++ {
		for _, p := range []string{"a", "b"} {
			items = append(items, item{Seq: s, Part: p})
			want[p] = append(want[p], s)
		}
	}
	e.push(plan.IngressQueue(e.app, "live", "n"), items...)
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.egressCount(e.egressQueue()) > 0 })
	e.declare("live", doc(2, 50))
	gatetest.Eventually(t, 3*time.Second, running(2))
	gatetest.Eventually(t, 30*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= len(items) })
	consistently(t, 500*time.Millisecond, func() bool { return e.egressCount(e.egressQueue()) == len(items) })
	checkOnceInOrder(t, e.egress(e.egressQueue()), want)

	e.declare("live", doc(3, 0))
	gatetest.Eventually(t, 3*time.Second, func() bool {
		st := r.Snapshot()
		g, ok := st.Graph(e.app, "live")
		return ok && g.Running && g.Version == 2 && strings.Contains(g.Error, "budget-count")
	})

	if _, err := e.store.Delete(context.Background(), e.app, "live"); err != nil {
		t.Fatal(err)
	}
	gatetest.Eventually(t, 3*time.Second, func() bool { st := r.Snapshot(); _, ok := st.Graph(e.app, "live"); return !ok })
}

// A declaration is followed by its change row alone: with the full
// re-read an hour away, a PUT runs within about a second, and the relay
// reads that one document (two documents written behind the store's back,
// without a change row, stay unseen — nothing listed them). A revision
// whose change row never comes (a writer that died between its calls)
// falls back to the full re-read within a few seconds; a delete stops its
// graph by its change row.
func TestAChangedDocumentIsPickedUpOnItsOwnAndAGapFallsBackToAFullRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, err := relay.New(relay.Config{
		Client: e.client, Store: e.store, Replica: "rf", Lease: 2 * time.Second, PollTimeout: time.Second,
		MaxPark: 30 * time.Second, Reconcile: time.Hour, SignalPoll: 100 * time.Millisecond, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue())
	runs := func(graph string) bool { st := r.Snapshot(); g, ok := st.Graph(e.app, graph); return ok && g.Running }
	// The start's full read lists "first"; once it runs, that read is over.
	e.declare("first", doc)
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-r.Stopped() })
	gatetest.Eventually(t, 5*time.Second, func() bool { return runs("first") })

	for _, hidden := range []string{"hidden1", "hidden2"} {
		if _, err := e.client.KV(ctx, queen.KVPut(e.store.Namespace(), plan.DocumentKey(e.app, hidden), json.RawMessage(doc), queen.PutOpts{Forever: true})); err != nil {
			t.Fatal(err)
		}
	}
	e.declare("seen", doc)
	gatetest.Eventually(t, 3*time.Second, func() bool { return runs("seen") })
	consistently(t, 500*time.Millisecond, func() bool { return !runs("hidden1") && !runs("hidden2") })

	// A revision without its change row: the full re-read after the gap.
	if _, err := e.client.KV(ctx, queen.KVIncr(e.store.Namespace(), "rev:graphs", 1, queen.IncrOpts{Forever: true})); err != nil {
		t.Fatal(err)
	}
	gatetest.Eventually(t, 6*time.Second, func() bool { return runs("hidden1") && runs("hidden2") })

	if _, err := e.store.Delete(ctx, e.app, "seen"); err != nil {
		t.Fatal(err)
	}
	gatetest.Eventually(t, 3*time.Second, func() bool { st := r.Snapshot(); _, ok := st.Graph(e.app, "seen"); return !ok })
	if !runs("hidden1") {
		t.Errorf("deleting one graph stopped another")
	}
}
