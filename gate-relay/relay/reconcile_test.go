package relay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
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
