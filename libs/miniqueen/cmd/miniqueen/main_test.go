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

// TestProfilesOnTheirOwnListener: --pprof serves a heap profile on its
// own address (not the broker's) and stops with the context, leaving no
// goroutine behind (TestMain checks); a busy address is an error naming
// the flag.
func TestProfilesOnTheirOwnListener(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	addr, done, err := serveProfiles(ctx, "127.0.0.1:0", logger)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Fatalf("GET /debug/pprof/heap = %d, %d bytes; want 200 and a gzipped profile", resp.StatusCode, len(body))
	}
	if _, _, err := serveProfiles(ctx, addr, logger); err == nil || !strings.Contains(err.Error(), "--pprof") {
		t.Fatalf("a busy address: error %v, want one naming --pprof", err)
	}
	cancel()
	done()
	tr.CloseIdleConnections()
	if _, err := (&http.Client{Transport: tr, Timeout: 2 * time.Second}).Get("http://" + addr + "/debug/pprof/heap"); err == nil {
		t.Fatalf("the profile listener still answers after its context ended")
	}
}

func TestCollectorPercent(t *testing.T) {
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	for _, tc := range []struct {
		flag, gogc string
		want       int
		bad        bool
	}{
		{flag: "", want: defaultGCPercent},
		{flag: " 250 ", want: 250},
		{flag: "25", want: 25},
		{flag: "10000", want: 10000},
		{flag: "", gogc: "200", want: 0},    // GOGC wins: the runtime read it
		{flag: "900", gogc: "off", want: 0}, // whatever it says
		{flag: "24", bad: true},
		{flag: "10001", bad: true},
		{flag: "-1", bad: true},
		{flag: "400%", bad: true},
		{flag: "off", bad: true},
	} {
		got, err := collectorPercent(tc.flag, env(tc.gogc))
		switch {
		case tc.bad && (err == nil || !strings.Contains(err.Error(), "--gc-percent") || !strings.Contains(err.Error(), "GOGC")):
			t.Errorf("collectorPercent(%q) = %d, %v; want an error naming --gc-percent and GOGC", tc.flag, got, err)
		case !tc.bad && (err != nil || got != tc.want):
			t.Errorf("collectorPercent(%q) with GOGC=%q = %d, %v; want %d", tc.flag, tc.gogc, got, err, tc.want)
		}
	}
}
