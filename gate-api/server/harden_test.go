package server_test

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/queen-mq/gate/libs/miniqueen"
)

// What net/http answers itself — a malformed percent-escape in the request
// line, 2 MiB of headers — is the JSON error every other refusal is.
func TestUnreadableRequestsGetJSONErrors(t *testing.T) {
	t.Parallel()
	b := gatetest.NewBroker(t)
	t.Cleanup(apitest.SharedIdleClose)
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace = b.URL, b.Namespace()
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
	t.Cleanup(func() { cancel(); <-done })
	cases := []struct {
		name, request string
		status        int
	}{
		{"malformed percent-escape", "GET /v1/apps/%zz/graphs/g HTTP/1.1\r\nHost: gate\r\n\r\n", 400},
		{"2 MiB header", "GET /health HTTP/1.1\r\nHost: gate\r\nX-Big: " + strings.Repeat("h", 2<<20) + "\r\n\r\n", 431},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.WriteString(conn, c.request) }()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		conn.Close()
		apitest.CheckRefusal(t, c.name, resp.StatusCode, resp.Header, raw)
		var body map[string]any
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(raw, &body) != nil || body["error"] == "" {
			t.Errorf("%s: %d %q %s, want %d with a JSON error", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), raw, c.status)
		}
	}
}

// A hung broker is answered, not waited on: with every broker route held,
// push, PUT, view, ETA and backoff each get an answer — a 503/504 naming
// the broker — once GATE_BROKER_TIMEOUT_MS passes, not when the broker
// comes back. (How fast is measured by BenchmarkHungBrokerAnswer, not
// asserted here.)
func TestHungBrokerIsAnsweredNamingIt(t *testing.T) {
	t.Parallel()
	h := apitest.New(t, func(c *config.Config) { c.BrokerTimeout = 2 * time.Second })
	mini := h.Broker.RequireMini(t, "hanging broker routes")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Run("relay-1", "shop", 1)
	routes := []string{miniqueen.RoutePush, miniqueen.RouteKV, miniqueen.RouteQueues, miniqueen.RouteDepth, miniqueen.RouteConfigure, miniqueen.RouteTransaction, miniqueen.RouteHealth, miniqueen.RouteConsumerGroups}
	for _, r := range routes {
		mini.SetHang(r)
	}
	t.Cleanup(func() {
		for _, r := range routes {
			mini.ClearHang(r)
		}
	})
	doc := h.Shop()
	doc["version"] = 2
	calls := []struct {
		name, method, path string
		body               any
		cached             bool // may be answered from gate-api's cache
	}{
		{"push", http.MethodPost, h.GraphURL("shop") + "/nodes/entry/push", map[string]any{"partition": "a"}, false},
		{"PUT", http.MethodPut, h.GraphURL("shop"), doc, false},
		{"view", http.MethodGet, h.GraphURL("shop"), nil, true},
		{"ETA", http.MethodGet, h.GraphURL("shop") + "/nodes/entry/eta", nil, false},
		{"backoff", http.MethodPost, h.GraphURL("shop") + "/nodes/entry/backoff", map[string]any{"retryAfterSeconds": 5}, false},
	}
	for _, c := range calls {
		r := h.Do(c.method, c.path, c.body)
		if c.cached && r.Status == http.StatusOK {
			continue
		}
		if r.Status != http.StatusGatewayTimeout && r.Status != http.StatusServiceUnavailable {
			t.Errorf("%s with the broker hung: %d %.300s, want 503/504 naming the broker", c.name, r.Status, r.Raw)
			continue
		}
		if msg := h.ErrorBody(r); !strings.Contains(msg, "broker") {
			t.Errorf("%s: the answer does not name the broker: %s", c.name, msg)
		}
	}
	if n := len(h.Partition(h.Ingress("shop", "entry"), "a")); n > 1 {
		t.Fatalf("%d items queued by one push", n)
	}
}
