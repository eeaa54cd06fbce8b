package relay_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/gate-relay/status"
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
	log := testLogger(t)
	go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(log)) }()
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

// A relay started while NATS is down publishes once NATS comes up: it
// keeps connecting from the start (the issue: it never published after
// NATS returned, and the console kept the previous relay's numbers).
func TestARelayStartedWhileNATSIsDownPublishesOnceItReturns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const graph = "late-nats"
	natsAddr := freeAddr(t)
	host, portText, _ := net.SplitHostPort(natsAddr)
	port, _ := strconv.Atoi(portText)
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Bind, cfg.Replica = e.b.URL, e.b.Namespace(), freeAddr(t), "late-nats-1"
	cfg.PollTimeout, cfg.Lease, cfg.StatusPeriod, cfg.SignalPoll = 2*time.Second, 2*time.Second, 200*time.Millisecond, 100*time.Millisecond
	cfg.NATSURL = "nats://" + natsAddr
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := testLogger(t)
	go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(log)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// The relay runs the graph with NATS down.
	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		all, err := e.store.Statuses(context.Background())
		if err != nil {
			return err
		}
		for _, st := range all {
			if g, ok := st.Graph(e.app, graph); ok && g.Running {
				return nil
			}
		}
		return fmt.Errorf("the graph is not running yet")
	})
	// NATS comes up on the address the relay was given.
	ns, err := natsserver.NewServer(&natsserver.Options{Host: host, Port: port, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	got := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(status.CountersSubjectFor(e.app, graph), got)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	select {
	case m := <-got:
		t.Logf("counters published on %s after NATS came up (%d bytes)", m.Subject, len(m.Data))
	case <-time.After(10 * time.Second):
		t.Fatal("the relay started while NATS was down published nothing within 10 s of NATS coming up")
	}
}
