package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/store"
)

// With a status period of five minutes, the status document still shows
// a declared graph running, its swap to a new version and its removal
// within seconds: a reconcile that changes what runs publishes at once.
func TestStatusIsPublishedWhenWhatRunsChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const graph, replica = "shown", "pub-1"
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Bind, cfg.Replica = e.b.URL, e.b.Namespace(), freeAddr(t), replica
	cfg.PollTimeout, cfg.Lease, cfg.StatusPeriod, cfg.SignalPoll = 2*time.Second, 2*time.Second, 5*time.Minute, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(testLogger(t))) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	published := func(want func(store.RelayStatus) bool, what string) {
		t.Helper()
		gatetest.EventuallyErr(t, 5*time.Second, func() error {
			all, err := e.store.Statuses(context.Background())
			if err != nil {
				return err
			}
			for _, st := range all {
				if st.Replica == replica && want(st) {
					return nil
				}
			}
			return fmt.Errorf("no status of %s with %s yet: %+v", replica, what, all)
		})
	}
	running := func(version int64) func(store.RelayStatus) bool {
		return func(st store.RelayStatus) bool {
			g, ok := st.Graph(e.app, graph)
			return ok && g.Running && g.Version == version
		}
	}
	published(func(st store.RelayStatus) bool { _, ok := st.Graph(e.app, graph); return !ok }, "no graph (the boot publish)")
	doc := func(version int) string {
		return fmt.Sprintf(`{"version":%d,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":%q}},
			"paths":[{"name":"main","nodes":["n"]}]}`, version, e.egressQueue())
	}
	e.declare(graph, doc(1))
	published(running(1), "version 1 running")
	e.declare(graph, doc(2))
	published(running(2), "version 2 running")
	if _, err := e.store.Delete(context.Background(), e.app, graph); err != nil {
		t.Fatal(err)
	}
	published(func(st store.RelayStatus) bool { _, ok := st.Graph(e.app, graph); return !ok }, "the graph gone")
}
