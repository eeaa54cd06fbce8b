package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest/logsink"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/miniqueen"
)

// TestMain fails the package when the command leaves a goroutine of its
// server behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunServesLogsAndStopsCleanly(t *testing.T) {
	var logs logsink.Sink
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *miniqueen.Server, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", "all", logger, func(s *miniqueen.Server) { started <- s }) }()
	srv := <-started
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"healthy"`) {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "addr="+srv.Addr()) {
		t.Fatalf("the address served is not logged: %s", logs.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("run did not stop")
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	if err := run(context.Background(), "127.0.0.1:0", "sometimes", logger, nil); err == nil {
		t.Fatalf("a bad subscription mode must be refused")
	}
	if err := run(context.Background(), "256.0.0.1:99999", "new", logger, nil); err == nil {
		t.Fatalf("a bad address must be refused")
	}
}
