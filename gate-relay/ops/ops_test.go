package ops

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/store"
)

type fixed struct{ st store.RelayStatus }

func (f fixed) Snapshot() store.RelayStatus { return f.st }

type down struct{ fixed }

func (down) BrokerHealth(context.Context) error { return errors.New("connection refused") }

// TestMetricsBrokerUp: a broker that does not answer is gate_relay_broker_up 0.
func TestMetricsBrokerUp(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler(down{}))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(b), "gate_relay_broker_up 0") {
		t.Errorf("/metrics lacks gate_relay_broker_up 0:\n%.400s", b)
	}
}

// TestMetricsHaveRuntimeAndStages: /metrics carries the Go runtime
// collector (goroutines, so a stalled relay can be watched) and the stage
// counters labelled by app, graph, path and node.
func TestMetricsHaveRuntimeAndStages(t *testing.T) {
	t.Parallel()
	src := fixed{store.RelayStatus{Replica: "r", Graphs: []store.GraphStatus{{App: "a", Graph: "g", Version: 3, Running: true,
		Stages: []store.StageStatus{{Path: "main", Node: "n", Counters: store.Counters{Forwarded: 7, Wedged: 1}}}}}}}
	srv := httptest.NewServer(Handler(src))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	body := string(b)
	for _, want := range []string{
		"go_goroutines ",
		"go_memstats_heap_alloc_bytes ",
		"process_open_fds ",
		`gate_relay_stage_forwarded_total{app="a",graph="g",node="n",path="main"} 7`,
		`gate_relay_stage_wedged_total{app="a",graph="g",node="n",path="main"} 1`,
		`gate_relay_graph_running{app="a",graph="g",version="3"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
