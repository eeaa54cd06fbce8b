package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/gatetest"
)

func TestHealthVersionMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mini := h.broker.RequireMini(t, "fault injection")
	a := h.expect(h.do(http.MethodGet, "/health", nil), http.StatusOK)
	if a.str("status") != "healthy" {
		t.Fatalf("health: %s", a.raw)
	}
	v := h.expect(h.do(http.MethodGet, "/version", nil), http.StatusOK)
	if v.str("gate") == "" || !strings.Contains(string(v.raw), `"reachable":true`) {
		t.Fatalf("version: %s", v.raw)
	}

	h.expect(h.do(http.MethodPut, h.graphURL("g"), h.target("g", 10)), http.StatusOK)
	h.expect(h.do(http.MethodPut, h.graphURL("g"), `{"version":`), http.StatusBadRequest)
	h.run("relay-1", "g", 1)
	h.expect(h.do(http.MethodPost, h.graphURL("g")+"/nodes/limit/push", map[string]any{}), http.StatusOK)
	m := h.expect(h.do(http.MethodGet, "/metrics", nil), http.StatusOK)
	for _, want := range []string{
		`gate_api_requests_total{method="POST",route="push",status="200"} 1`,
		`gate_api_requests_total{method="PUT",route="graph-put",status="400"} 1`,
		`gate_api_declares_total{outcome="ok"} 1`,
		`gate_api_declares_total{outcome="unreadable"} 1`,
		`gate_api_push_duration_seconds_count 1`,
		`gate_api_push_broker_calls_total 1`,
		`gate_api_push_broker_items_total 1`,
	} {
		if !strings.Contains(string(m.raw), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	mini.SetError("health", http.StatusServiceUnavailable)
	var last answer
	gatetest.Eventually(t, 5*time.Second, func() bool {
		last = h.do(http.MethodGet, "/health", nil)
		return last.status == http.StatusServiceUnavailable
	})
	if !strings.Contains(h.errorBody(last), h.broker.URL) {
		t.Fatalf("503 does not say which broker: %s", last.raw)
	}
}

// Serve stops on context cancellation (SIGTERM in main) and returns nil.
func TestServeShutsDown(t *testing.T) {
	t.Parallel()
	b := gatetest.NewBroker(t)
	t.Cleanup(sharedIdleClose)
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Bind = b.URL, b.Namespace(), "127.0.0.1:0"
	s, err := New(cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	gatetest.Eventually(t, 5*time.Second, func() bool {
		resp, err := http.Get("http://" + ln.Addr().String() + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("Serve did not return after cancellation")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/health"); err == nil {
		t.Fatalf("still serving after shutdown")
	}
}
