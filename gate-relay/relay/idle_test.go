package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

// An idle two-node graph keeps one long-poll parked on the broker (its
// ingress stage's), not two, from its start: the second stage reads an
// interior queue only the first pushes into, so it starts dozing (and
// dozes again once quiet), and the first stage's settle wakes it. A new
// item goes from the ingress to the egress with the relay's clock standing
// still: the doze adds no latency to it.
func TestAnIdleTwoNodeGraphParksOnePollAndANewItemGoesThroughAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.declare("idle", fmt.Sprintf(`{"version":1,"nodes":{"in":{"ingress":true,"budgets":[{"count":100,"timeMs":1000}]},
		"out":{"budgets":[{"count":50,"timeMs":1000}],"egress":%q}},"paths":[{"name":"main","nodes":["in","out"]}]}`, e.egressQueue()))
	v := clock.NewVirtual(time.Now().Truncate(time.Second))
	r, err := relay.New(relay.Config{
		Client: e.client, Store: e.store, Replica: "idle", Lease: 2 * time.Second, PollTimeout: 2 * time.Second,
		Reconcile: time.Hour, SignalPoll: time.Hour, Clock: v, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	gatetest.Eventually(t, 10*time.Second, func() bool {
		st := r.Snapshot()
		g, ok := st.Graph(e.app, "idle")
		return ok && g.Running
	})
	// Started: only the ingress stage's poll is parked.
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.mini.Parked() == 1 })
	consistently(t, 300*time.Millisecond, func() bool { return e.mini.Parked() == 1 })

	at := v.Now()
	e.push(plan.IngressQueue(e.app, "idle", "in"), item{Seq: 1, Part: "a"}, item{Seq: 2, Part: "a"})
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.egressCount(e.egressQueue()) == 2 })
	if !v.Now().Equal(at) {
		t.Fatalf("the relay's clock moved %s", v.Now().Sub(at))
	}
	// Woken, the interior stage parks its long-poll; quiet for twice the
	// poll timeout (and the lease), it dozes again.
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.mini.Parked() == 2 })
	v.Advance(4 * time.Second)
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.mini.Parked() == 1 })
	consistently(t, 300*time.Millisecond, func() bool { return e.mini.Parked() == 1 })
}
