package server_test

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
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/server"
	"github.com/queen-mq/gate/libs/gatetest"
)

func TestHealthVersionMetrics(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "fault injection")
	a := h.Expect(h.Do(http.MethodGet, "/health", nil), http.StatusOK)
	if a.Str("status") != "healthy" {
		t.Fatalf("health: %s", a.Raw)
	}
	v := h.Expect(h.Do(http.MethodGet, "/version", nil), http.StatusOK)
	if v.Str("gate") == "" || !strings.Contains(string(v.Raw), `"reachable":true`) {
		t.Fatalf("version: %s", v.Raw)
	}

	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 10)), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), `{"version":`), http.StatusBadRequest)
	h.Run("relay-1", "g", 1)
	h.Expect(h.Do(http.MethodPost, h.GraphURL("g")+"/nodes/limit/push", map[string]any{}), http.StatusOK)
	m := h.Expect(h.Do(http.MethodGet, "/metrics", nil), http.StatusOK)
	for _, want := range []string{
		`gate_api_requests_total{method="POST",route="push",status="200"} 1`,
		`gate_api_requests_total{method="PUT",route="graph-put",status="400"} 1`,
		`gate_api_declares_total{outcome="ok"} 1`,
		`gate_api_declares_total{outcome="unreadable"} 1`,
		`gate_api_push_duration_seconds_count 1`,
		`gate_api_push_broker_calls_total 1`,
		`gate_api_push_broker_call_seconds_count 1`,
		`gate_api_push_broker_items_total 1`,
	} {
		if !strings.Contains(string(m.Raw), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	mini.SetError("health", http.StatusServiceUnavailable)
	var last apitest.Answer
	gatetest.Eventually(t, 5*time.Second, func() bool {
		last = h.Do(http.MethodGet, "/health", nil)
		return last.Status == http.StatusServiceUnavailable
	})
	if !strings.Contains(h.ErrorBody(last), h.Broker.URL) {
		t.Fatalf("503 does not say which broker: %s", last.Raw)
	}
}

// Serve stops on context cancellation (SIGTERM in main) and returns nil.
func TestServeShutsDown(t *testing.T) {
	t.Parallel()
	b := gatetest.NewBroker(t)
	t.Cleanup(apitest.SharedIdleClose)
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Bind = b.URL, b.Namespace(), "127.0.0.1:0"
	s, err := server.New(cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
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
