package ops

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
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

// The Server binds its address at Start (a busy one is an error naming
// the knob, and nothing runs), serves /health until Stop, and leaves
// nothing listening after it.
func TestServerBindsAtStartServesAndStops(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	src := fixed{store.RelayStatus{Replica: "r-1"}}
	s := NewServer("127.0.0.1:0", src, quiet)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := hc.Get("http://" + s.Addr() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"replica":"r-1"`) {
		t.Fatalf("/health answered %d %s, want 200 naming the replica", res.StatusCode, b)
	}

	busy := NewServer(s.Addr(), src, quiet)
	if err := busy.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "GATE_RELAY_BIND") {
		t.Fatalf("a second server on the same address started (%v), want an error naming GATE_RELAY_BIND", err)
	}
	select {
	case <-busy.Stopped():
	default:
		t.Fatal("a server that could not bind is still running")
	}

	s.Stop()
	if s.Err() != nil {
		t.Fatalf("Err after Stop = %v, want nil", s.Err())
	}
	if _, err := hc.Get("http://" + s.Addr() + "/health"); err == nil {
		t.Fatal("the server still answers after Stop")
	}
}

type refusing struct{ fixed }

func (refusing) StatusWrite() (*wire.RelayStatusWrite, int64) {
	return &wire.RelayStatusWrite{Error: "publishing relay status (3 rows): kv_value_too_large", Since: 1, Failures: 4}, 4
}

// A relay whose status writes the broker refuses is never a silent ok:
// /health says degraded and names the cause, /metrics counts the failures.
func TestAFailingStatusWriteIsDegradedHealthAndAMetric(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler(refusing{fixed{store.RelayStatus{Replica: "r"}}}))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var h wire.RelayHealth
	err = json.NewDecoder(res.Body).Decode(&h)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || h.Status != "degraded" || h.StatusWrite == nil || !strings.Contains(h.StatusWrite.Error, "kv_value_too_large") {
		t.Fatalf("/health: %d %+v (%v); want 200 degraded naming kv_value_too_large", res.StatusCode, h, err)
	}
	res, err = srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"gate_relay_status_write_failures_total 4", "gate_relay_status_write_ok 0"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestProfilesOnlyWhenAsked: /debug/pprof/ answers 404 unless the relay
// was started with GATE_RELAY_PPROF=1, and then serves a heap profile an
// operator can read with go tool pprof.
func TestProfilesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	src := fixed{store.RelayStatus{Replica: "r"}}
	get := func(h http.Handler, path string) (int, []byte) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	if code, _ := get(Handler(src), "/debug/pprof/heap"); code != http.StatusNotFound {
		t.Errorf("profiles off: GET /debug/pprof/heap = %d, want 404", code)
	}
	if code, _ := get(Handler(src, WithProfiles(false)), "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("WithProfiles(false): GET /debug/pprof/ = %d, want 404", code)
	}
	code, b := get(Handler(src, WithProfiles(true)), "/debug/pprof/heap")
	// A heap profile is a gzipped protobuf: it starts with gzip's magic.
	if code != http.StatusOK || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("profiles on: GET /debug/pprof/heap = %d, %d bytes (gzip magic %v), want 200 and a gzipped profile", code, len(b), len(b) >= 2 && b[0] == 0x1f)
	}
	if code, b := get(Handler(src, WithProfiles(true)), "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(string(b), "goroutine profile: total") {
		t.Errorf("profiles on: GET /debug/pprof/goroutine?debug=1 = %d, %.200s", code, b)
	}
	if code, _ := get(Handler(src, WithProfiles(true)), "/health"); code != http.StatusOK {
		t.Errorf("profiles on: /health = %d, want 200", code)
	}
}

type roles struct {
	fixed
	standby, dozing int
}

func (r roles) Roles() (int, int) { return r.standby, r.dozing }

// A relay whose graphs run as standbys exports how many, and how many of
// its stages doze (hold no parked poll), as gauges.
func TestMetricsCountStandbyGraphsAndDozingStages(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler(roles{standby: 4, dozing: 7}))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, want := range []string{"gate_relay_graphs_standby 4", "gate_relay_stages_dozing 7"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
