package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/server"
)

// writeAllThenRead is how Python's http.client (and many producers) send
// a request: the request line, the headers and the whole body are written
// before a byte of the answer is read. It reports the answer, or how the
// exchange broke (a write or read error is a reset the client sees instead
// of the refusal).
func writeAllThenRead(addr, method, path string, body []byte) (status int, header http.Header, err error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: gate\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, len(body))
	if _, err := io.WriteString(conn, head); err != nil {
		return 0, nil, fmt.Errorf("writing the headers: %w", err)
	}
	if _, err := conn.Write(body); err != nil {
		return 0, nil, fmt.Errorf("writing the body: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, resp.Header, fmt.Errorf("reading the answer's body: %w", err)
	}
	if resp.StatusCode >= 400 && !strings.Contains(string(raw), `"code"`) {
		return resp.StatusCode, resp.Header, fmt.Errorf("the %d answer has no refusal body: %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, resp.Header, nil
}

// bigJSON is a JSON object of about n bytes.
func bigJSON(n int) []byte {
	pad := n - 64
	return []byte(`{"partition":"p0","payload":{"blob":"` + strings.Repeat("x", pad) + `"}}`)
}

// Every refusal reaches a client that writes its whole body before
// reading: 24 concurrent 7 MiB pushes against a door whose bytes in flight
// hold one of them (503 with Retry-After for the rest), and 7 MiB bodies to
// the document, simulate and chat routes (413, or the chat's 503 when the
// agent is off) each read a complete HTTP answer — none is reset.
func TestRefusedBigBodiesAreAnsweredNotReset(t *testing.T) {
	if testing.Short() {
		t.Skip("moves about 300 MiB over loopback")
	}
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("big"), h.Target("big", 1000)), http.StatusOK)
	h.Run("relay-1", "big", 1)

	// The production listener and server settings, on the harness's
	// broker and store.
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace = h.Broker.URL, h.NS
	cfg.PushInflightBytes = cfg.MaxPushBodyBytes // one 7 MiB push buffers at a time
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
	addr := ln.Addr().String()
	// The second server sees the graph and its relay once it has read kv.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _, err := writeAllThenRead(addr, http.MethodPost, h.GraphURL("big")+"/nodes/limit/push", []byte(`{"partition":"p0","payload":{}}`))
		if err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the production server never accepted a small push: %d %v", st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	body := bigJSON(7 << 20)
	type result struct {
		route  string
		status int
		header http.Header
		err    error
	}
	var wg sync.WaitGroup
	results := make(chan result, 64)
	send := func(route, method, path string, n int) {
		for range n {
			wg.Go(func() {
				st, hd, err := writeAllThenRead(addr, method, path, body)
				results <- result{route, st, hd, err}
			})
		}
	}
	send("push", http.MethodPost, h.GraphURL("big")+"/nodes/limit/push", 24)
	send("document", http.MethodPut, h.GraphURL("big"), 4)
	send("simulate", http.MethodPost, "/api/apps/"+h.App+"/graphs/big/simulate", 4)
	send("chat", http.MethodPost, "/api/ai/chat", 4)
	wg.Wait()
	close(results)

	statuses := map[string]map[int]int{}
	for r := range results {
		if statuses[r.route] == nil {
			statuses[r.route] = map[int]int{}
		}
		if r.err != nil {
			t.Errorf("%s: a client that writes its whole body first saw %v (status %d), not an answer", r.route, r.err, r.status)
			statuses[r.route][-1]++
			continue
		}
		statuses[r.route][r.status]++
		if r.status == http.StatusServiceUnavailable && r.route == "push" && r.header.Get("Retry-After") == "" {
			t.Errorf("push 503 without Retry-After")
		}
	}
	t.Logf("answers by route and status: %v", statuses)
	if statuses["push"][http.StatusServiceUnavailable] == 0 {
		t.Errorf("no push was refused for the bytes in flight: %v (the test did not exercise the 503)", statuses["push"])
	}
	for route, want := range map[string]int{"document": 413, "simulate": 413, "chat": 503} {
		if statuses[route][want] != 4 {
			t.Errorf("%s: answers %v, want 4 × %d", route, statuses[route], want)
		}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("the server stopped early")
	}
}
