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

// The relay's own loop runs on its clock: a new declaration is picked up
// when the change signal is next read, one SignalPoll of that clock after
// the last read, not before; the graph's start and the status snapshot
// carry the clock's time; Stop leaves nothing waiting on it.
func TestTheRelayReadsTheChangeSignalOnItsClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := clock.NewVirtual(time.Now().Truncate(time.Second))
	r, err := relay.New(relay.Config{
		Client: e.client, Store: e.store, Replica: "clocked", Lease: 2 * time.Second, PollTimeout: 2 * time.Second,
		Reconcile: 15 * time.Second, SignalPoll: 500 * time.Millisecond, Clock: v, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	// The loop waits on its two tickers once the first reconcile is done.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if !v.WaitForPending(2, ctx.Done()) {
		t.Fatalf("%d waits on the relay's clock, want its reconcile and signal tickers", v.Pending())
	}
	if next, _ := v.Next(); !next.Equal(v.Now().Add(500 * time.Millisecond)) {
		t.Fatalf("the loop's next wake-up is at %v, want one signal poll from now", next)
	}

	e.declare("timed", fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue()))
	running := func() bool {
		st := r.Snapshot()
		g, ok := st.Graph(e.app, "timed")
		return ok && g.Running
	}
	consistently(t, 300*time.Millisecond, func() bool { return !running() })
	v.Advance(500 * time.Millisecond)
	gatetest.Eventually(t, 10*time.Second, running)
	st := r.Snapshot()
	g, _ := st.Graph(e.app, "timed")
	if st.At != v.Now().UnixMilli() || g.Started != v.Now().UnixMilli() {
		t.Fatalf("snapshot at %d with the graph started at %d, want both at the relay clock's %d", st.At, g.Started, v.Now().UnixMilli())
	}
	e.push(plan.IngressQueue(e.app, "timed", "n"), item{Seq: 1, Part: "a"})
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.egressCount(e.egressQueue()) == 1 })

	r.Stop()
	select {
	case <-r.Stopped():
	default:
		t.Fatal("Stop returned before Stopped closed")
	}
	if n := v.Pending(); n != 0 {
		t.Fatalf("%d waits of a stopped relay are still pending on its clock", n)
	}
}
