package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// 2,500 stored documents all run: before, the store was listed with one
// getPrefix capped at 1,000 rows and the 1,001st graph never ran. The
// relay's status, read back as gate-api reads it, shows every one running.
func TestTwoThousandFiveHundredStoredGraphsAllRun(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const n = 2500
	ctx := context.Background()
	for from := 0; from < n; from += 200 {
		var ops []queen.KVOp
		for i := from; i < min(from+200, n); i++ {
			doc := fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":%q}},"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue())
			ops = append(ops, queen.KVPut(e.store.Namespace(), plan.DocumentKey(e.app, fmt.Sprintf("g%d", i)), json.RawMessage(doc), queen.PutOpts{Forever: true}))
		}
		if _, err := e.client.KV(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	r, err := relay.New(relay.Config{
		Client: e.client, Store: e.store, Replica: "big", Lease: 5 * time.Second, PollTimeout: 10 * time.Second,
		MaxPark: 30 * time.Second, Reconcile: time.Hour, SignalPoll: time.Second, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	if err := r.Start(rctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-r.Stopped() })
	start := time.Now()
	gatetest.EventuallyErr(t, 180*time.Second, func() error {
		st := r.Snapshot()
		running := 0
		for _, g := range st.Graphs {
			if g.Running {
				running++
			}
		}
		if running != n {
			return fmt.Errorf("%d of %d graphs run", running, n)
		}
		return nil
	})
	t.Logf("%d graphs running %v after the relay started", n, time.Since(start).Round(time.Millisecond))
	if err := e.store.PutStatus(ctx, r.Snapshot(), time.Minute); err != nil {
		t.Fatalf("publishing the status of %d graphs: %v", n, err)
	}
	all, err := e.store.Statuses(ctx)
	if err != nil || len(all) != 1 || len(all[0].Graphs) != n {
		t.Fatalf("the published status: %d replicas (%v); want one with %d graphs", len(all), err, n)
	}
	for _, name := range []string{"g0", "g999", "g1000", "g2499"} {
		if g, ok := all[0].Graph(e.app, name); !ok || !g.Running {
			t.Errorf("%s is not published running", name)
		}
	}
}
