// Command harness starts the real stack the console's browser tests run
// against: miniqueen, NATS, gate-api, gate-relay and gate-console (libs/stack,
// the launcher `make run` uses) on free loopback ports, plus a second
// gate-console whose dev identity is not an administrator (the viewer). It
// prints one JSON line with the URLs, then runs until stdin closes or it is
// signalled, and stops everything it started.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/queen-mq/gate/libs/stack"
)

// Viewer is the dev identity of the read-only console.
const Viewer = "viewer@localhost"

// URLs is what the harness prints.
type URLs struct {
	Console string `json:"console"`
	Viewer  string `json:"viewer"`
	API     string `json:"api"`
	Queen   string `json:"queen"`
	NATS    string `json:"nats"`
	Admin   string `json:"admin"`
	Logs    string `json:"logs"`
	// FakeAI is the fake provider (GET /calls counts its calls).
	FakeAI string `json:"fakeAI"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	consoleBind, err := freeAddr()
	if err != nil {
		return err
	}
	ai, err := startFakeAI()
	if err != nil {
		return err
	}
	defer ai.srv.Close()
	// Both consoles (and gate-api) talk to the fake provider only.
	aiEnv := []string{"GATE_AI_PROVIDER=openai", "GATE_AI_OPENAI_BASE_URL=" + ai.url + "/v1", "GATE_OPENAI_API_KEY=" + fakeAIKey}
	st, err := stack.Start(ctx, stack.Config{NoReuse: true, ConsoleBind: consoleBind, Logger: log,
		// Relays publish their counters every second, so the live view has a
		// 1 Hz stream to show.
		Env: append([]string{"GATE_STATUS_SECONDS=1"}, aiEnv...)})
	if err != nil {
		return err
	}
	defer st.Stop()
	root, err := stack.FindRoot(".")
	if err != nil {
		return err
	}
	viewerBind, err := freeAddr()
	if err != nil {
		return err
	}
	viewerURL := "http://" + viewerBind
	logs := filepath.Join(root, ".gate-run", "logs")
	lf, err := os.Create(filepath.Join(logs, "gate-console-viewer.log"))
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(filepath.Join(root, ".gate-run", "bin", "gate-console"))
	cmd.Env = append(os.Environ(), "GATE_STATUS_SECONDS=1", "QUEEN_URL="+st.QueenURL(), "GATE_NATS_URL="+st.NATSURL(),
		"GATE_PUBLIC_BIND="+viewerBind, "GATE_PUBLIC_URL="+viewerURL,
		"GATE_DEV_EMAIL="+Viewer, "GATE_ADMIN_EMAILS="+stack.DefaultConsoleEmail)
	cmd.Env = append(cmd.Env, aiEnv...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the viewer console: %w", err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	if err := waitHealthy(ctx, viewerURL+"/health"); err != nil {
		return fmt.Errorf("viewer console: %w (log: %s)", err, lf.Name())
	}
	out, _ := json.Marshal(URLs{Console: st.ConsoleURL(), Viewer: viewerURL, API: st.GateURL(), Queen: st.QueenURL(),
		NATS: st.NATSURL(), Admin: stack.DefaultConsoleEmail, Logs: logs, FakeAI: ai.url})
	fmt.Println(string(out))
	// Run until the test runner closes stdin or signals.
	closed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(closed) }()
	select {
	case <-ctx.Done():
	case <-closed:
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitHealthy(ctx context.Context, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("no healthy /health within 60 s")
}
