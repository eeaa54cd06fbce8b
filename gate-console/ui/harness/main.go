// Command harness starts the real stack the console's browser tests run
// against: miniqueen, NATS, gate-api, gate-relay and gate-console (libs/stack,
// the launcher `make run` uses) on free loopback ports, plus a second
// gate-console whose dev identity is not an administrator (the viewer). It
// prints one JSON line with the URLs, then runs until stdin closes or it is
// signalled, and stops everything it started.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/stack"
)

// Viewer is the dev identity of the read-only console.
const Viewer = "viewer@localhost"

// SigninUser is who the mock OIDC provider signs in (mockoidc's default
// user), an admin of the sign-in console; SigninDomain the allowed domain.
const (
	SigninUser   = "jane.doe@example.com"
	SigninDomain = "example.com"
)

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
	// History says whether gate-recorder runs (the stack's sentence), and
	// Schema is this run's own PostgreSQL schema ("" without history).
	History string `json:"history"`
	// Signin is a console without the dev bypass, signing in through a
	// mock OIDC provider that answers as SigninUser.
	Signin     string `json:"signin"`
	SigninUser string `json:"signinUser"`
	Schema     string `json:"schema"`
	// BrokerDown is an admin console that reaches the stack's Queen only
	// through a switchable proxy (outage.go); BrokerSwitch takes POST /down
	// and POST /up to take the broker away from it and give it back.
	BrokerDown   string `json:"brokerDown"`
	BrokerSwitch string `json:"brokerSwitch"`
}

// FlushMs is the recorder's flush period in the harness (the knob's
// minimum), so a browser test sees recorded traffic a second after it moved.
const FlushMs = "1000"

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
	consoleBind, err := stack.FreeAddr()
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
	// Every run records into a fresh schema of its own (dropped at exit),
	// so the history the tests read is only their own traffic.
	schema := fmt.Sprintf("ui_%d_%d", time.Now().Unix(), os.Getpid())
	histEnv := []string{"GATE_HISTORY_SCHEMA=" + schema, "GATE_RECORDER_FLUSH_MS=" + FlushMs}
	st, err := stack.Start(ctx, stack.Config{NoReuse: true, ConsoleBind: consoleBind, Logger: log,
		// Relays publish their counters every second, so the live view has a
		// 1 Hz stream to show.
		Env: append(append([]string{"GATE_STATUS_SECONDS=1"}, histEnv...), aiEnv...)})
	if err != nil {
		return err
	}
	defer st.Stop()
	hist := st.HistoryEnv()
	if hist == nil {
		schema = ""
	} else {
		defer dropSchema(append(append([]string{}, hist...), histEnv...), schema, log)
	}
	root, err := stack.FindRoot(".")
	if err != nil {
		return err
	}
	logs := filepath.Join(root, ".gate-run", "logs")
	bin := filepath.Join(root, ".gate-run", "bin", "gate-console")
	base := append([]string{"GATE_STATUS_SECONDS=1", "QUEEN_URL=" + st.QueenURL(), "GATE_NATS_URL=" + st.NATSURL()}, aiEnv...)
	if hist != nil {
		base = append(append(base, hist...), histEnv...)
	}
	viewerURL, stopViewer, err := startConsole(ctx, bin, filepath.Join(logs, "gate-console-viewer.log"),
		append(base, "GATE_DEV_EMAIL="+Viewer, "GATE_ADMIN_EMAILS="+stack.DefaultConsoleEmail))
	if err != nil {
		return fmt.Errorf("viewer console: %w", err)
	}
	defer stopViewer()
	// A third console signs people in through a mock OIDC provider (no dev
	// bypass): the browser goes to the provider and back.
	oidc, err := mockoidc.Run()
	if err != nil {
		return fmt.Errorf("mock OIDC provider: %w", err)
	}
	defer func() { _ = oidc.Shutdown() }()
	signinURL, stopSignin, err := startConsole(ctx, bin, filepath.Join(logs, "gate-console-signin.log"),
		append(base, "GATE_OIDC_ISSUER="+oidc.Issuer(), "GOOGLE_CLIENT_ID="+oidc.ClientID, "GOOGLE_CLIENT_SECRET="+oidc.ClientSecret,
			"GOOGLE_ALLOWED_DOMAINS="+SigninDomain, "GATE_ADMIN_EMAILS="+SigninUser, "GATE_SESSION_SECRET="+sessionSecret()))
	if err != nil {
		return fmt.Errorf("sign-in console: %w", err)
	}
	defer stopSignin()
	// A console whose broker the tests can take away (and give back).
	out0, err := newOutage(st.QueenURL())
	if err != nil {
		return err
	}
	switchURL, stopSwitch, err := out0.control()
	if err != nil {
		return err
	}
	defer stopSwitch()
	downBase := append([]string{"GATE_STATUS_SECONDS=1", "QUEEN_URL=" + out0.URL(), "GATE_NATS_URL=" + st.NATSURL()}, aiEnv...)
	if hist != nil {
		downBase = append(append(downBase, hist...), histEnv...)
	}
	downURL, stopDown, err := startConsole(ctx, bin, filepath.Join(logs, "gate-console-broker-down.log"),
		append(downBase, "GATE_DEV_EMAIL="+stack.DefaultConsoleEmail, "GATE_ADMIN_EMAILS="+stack.DefaultConsoleEmail))
	if err != nil {
		return fmt.Errorf("broker-down console: %w", err)
	}
	defer stopDown()
	out, _ := json.Marshal(URLs{BrokerDown: downURL, BrokerSwitch: switchURL, Console: st.ConsoleURL(), Viewer: viewerURL, API: st.GateURL(), Queen: st.QueenURL(),
		NATS: st.NATSURL(), Admin: stack.DefaultConsoleEmail, Logs: logs, FakeAI: ai.url, Signin: signinURL, SigninUser: SigninUser,
		History: st.HistoryNote(), Schema: schema})
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

// waitHealthy waits for url to answer 200, or, with answered, any status
// (a console whose broker is down answers /health with 503).
func waitHealthy(ctx context.Context, url string, answered bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK || answered {
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

// dropSchema removes this run's history schema once everything stopped.
func dropSchema(env []string, schema string, log *slog.Logger) {
	getenv := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return os.Getenv(k)
	}
	k, err := knob.ReadHistory(getenv)
	if err != nil || !k.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := history.Open(ctx, k, history.Options{SkipMigrate: true, PoolSize: 1})
	if err != nil {
		log.Warn("could not drop the run's history schema", "schema", schema, "error", err)
		return
	}
	defer db.Close()
	if _, err := db.Pool().Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		log.Warn("could not drop the run's history schema", "schema", schema, "error", err)
	}
}

// startConsole starts one more gate-console on a free port with env (on top
// of the harness's environment) and waits for its /health; stop ends it.
func startConsole(ctx context.Context, bin, logPath string, env []string) (string, func(), error) {
	return startConsoleAnswering(ctx, bin, logPath, env, false)
}

// startConsoleAnswering is startConsole; with answered it waits for any
// answer of /health instead of a healthy one.
func startConsoleAnswering(ctx context.Context, bin, logPath string, env []string, answered bool) (string, func(), error) {
	bind, err := stack.FreeAddr()
	if err != nil {
		return "", nil, err
	}
	u := "http://" + bind
	lf, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), env...), "GATE_PUBLIC_BIND="+bind, "GATE_PUBLIC_URL="+u)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return "", nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		lf.Close()
	}
	if err := waitHealthy(ctx, u+"/health", answered); err != nil {
		stop()
		return "", nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	return u, stop, nil
}

// sessionSecret is a fresh 32-byte session key for the sign-in console.
func sessionSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
