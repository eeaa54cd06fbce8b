package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/gate-relay/status"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Run shares the replica's state: the status document in kv (counters,
// version), /health, Prometheus /metrics labelled by app, graph, path and
// node, and counter snapshots and denials on NATS; cancelling it (SIGTERM)
// stops within the poll timeout and withdraws the status.
func TestRunSharesStatusMetricsAndNATS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := gatetest.NewNATS(t)
	const graph = "ops"
	e.declare(graph, fmt.Sprintf(`{"version":3,"nodes":{"n":{"ingress":true,"budgets":[{"id":"tiny","count":2,"timeMs":60000,"subWindows":1}],"egress":%q}},
		"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue()))
	counters := make(chan *nats.Msg, 64)
	denials := make(chan *nats.Msg, 64)
	if _, err := n.Conn.ChanSubscribe(status.CountersSubjectFor(e.app, graph), counters); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Conn.ChanSubscribe(status.DenialsSubjectFor(e.app, graph), denials); err != nil {
		t.Fatal(err)
	}
	if err := n.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Bind, cfg.NATSURL, cfg.Replica = e.b.URL, e.b.Namespace(), freeAddr(t), n.URL, "ops-1"
	cfg.PollTimeout, cfg.Lease, cfg.MaxPark, cfg.StatusPeriod, cfg.SignalPoll = 2*time.Second, 2*time.Second, 200*time.Millisecond, time.Second, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := testLogger(t)
	go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(log)) }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			<-done
		}
	})
	e.push(plan.IngressQueue(e.app, graph, "n"), item{Seq: 0, Part: "a"}, item{Seq: 1, Part: "a"}, item{Seq: 2, Part: "a"})
	gatetest.Eventually(t, 15*time.Second, func() bool { return e.egressCount(e.egressQueue()) == 2 })

	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		all, err := e.store.Statuses(context.Background())
		if err != nil {
			return err
		}
		for _, st := range all {
			if g, ok := st.Graph(e.app, graph); ok && st.Replica == "ops-1" && g.Version == 3 && g.Running &&
				len(g.Stages) == 1 && g.Stages[0].Counters.Forwarded == 2 && g.Stages[0].LastRefusal != nil && len(st.Denials) > 0 {
				return nil
			}
		}
		return fmt.Errorf("no status of ops-1 with graph %s v3 forwarding 2 and a refusal yet: %+v", graph, all)
	})

	get := func(path string) string {
		resp, err := http.Get("http://" + cfg.Bind + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var health struct {
		Status  string `json:"status"`
		Replica string `json:"replica"`
		Graphs  []struct {
			Graph   string `json:"graph"`
			Running bool   `json:"running"`
		} `json:"graphs"`
	}
	if err := json.Unmarshal([]byte(get("/health")), &health); err != nil || health.Status != "ok" || health.Replica != "ops-1" || len(health.Graphs) != 1 || !health.Graphs[0].Running {
		t.Fatalf("/health = %+v %v", health, err)
	}
	metrics := get("/metrics")
	line := fmt.Sprintf(`gate_relay_stage_forwarded_total{app=%q,graph=%q,node="n",path="main"} 2`, e.app, graph)
	if !strings.Contains(metrics, line) {
		t.Fatalf("/metrics lacks %s:\n%s", line, metrics)
	}
	for _, name := range []string{"popped", "admitted", "deferred", "parked", "released", "commits", "duplicates", "foreign", "deadlettered", "leaked", "wedged", "cost_admitted"} {
		if !strings.Contains(metrics, "gate_relay_stage_"+name+"_total{") {
			t.Fatalf("/metrics lacks the %s counter", name)
		}
	}

	select {
	case m := <-counters:
		var snap status.GraphSnapshot
		if err := json.Unmarshal(m.Data, &snap); err != nil || snap.Replica != "ops-1" || snap.Graph.Graph != graph {
			t.Fatalf("counters message %s: %v", m.Data, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no counters snapshot on NATS")
	}
	select {
	case m := <-denials:
		if !strings.Contains(string(m.Data), `"budgetId":"tiny"`) {
			t.Fatalf("denials message %s", m.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no denial on NATS")
	}

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(cfg.PollTimeout + 3*time.Second):
		t.Fatal("Run did not return within the poll timeout after cancellation")
	}
	t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	all, _ := e.store.Statuses(context.Background())
	for _, st := range all {
		if st.Replica == "ops-1" {
			t.Fatal("a cleanly stopped replica must withdraw its status")
		}
	}
}
