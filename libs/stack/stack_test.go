package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
)

func TestFindRootWalksUpToGoWork(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FindRoot(deep); !errors.Is(err, ErrNoRoot) {
		t.Fatalf("FindRoot without go.work = %v, want ErrNoRoot", err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := FindRoot(deep)
	if err != nil || got != root {
		t.Fatalf("FindRoot = %q, %v; want %q", got, err, root)
	}
}

func TestDialableTurnsWildcardBindsIntoLoopback(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0.0.0.0:8788":   "127.0.0.1:8788",
		":8791":          "127.0.0.1:8791",
		"10.0.0.5:6632":  "10.0.0.5:6632",
		"127.0.0.1:1234": "127.0.0.1:1234",
	} {
		if got := dialable(in); got != want {
			t.Errorf("dialable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFreeAddrCanBeListenedOn(t *testing.T) {
	t.Parallel()
	a, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatalf("FreeAddr gave %s, which cannot be listened on: %v", a, err)
	}
	l.Close()
}

func TestBuildRefusesAnUnknownBinary(t *testing.T) {
	t.Parallel()
	_, err := Build(context.Background(), t.TempDir(), t.TempDir(), "gate-console")
	if err == nil {
		t.Fatal("building an unknown binary succeeded")
	}
}

// alive reports whether a process with pid exists.
func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// TestLiveStackStartsKillsRestartsAndStopsEverything builds and starts the
// whole stack, kills and restarts a relay, adds a replica, and checks that
// Stop leaves no process behind.
func TestLiveStackStartsKillsRestartsAndStopsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("live: builds and starts miniqueen, gate-api and gate-relay; skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := Start(ctx, Config{NoReuse: true, LogDir: t.TempDir()})
	if err != nil {
		if !gatetest.RequireLive() {
			t.Skipf("live: the stack could not start (set GATE_TEST_REQUIRE_LIVE=1 to make this a failure): %v", err)
		}
		t.Fatal(err)
	}
	defer st.Stop()
	hc := newHealthClient()
	for _, u := range []string{st.QueenURL(), st.GateURL()} {
		if err := probeHealth(ctx, hc, u); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	// The local PostgreSQL answers on the build machines (and CI starts
	// it): make run then runs gate-recorder and says so.
	if st.recorder == nil || !strings.Contains(st.HistoryNote(), "127.0.0.1:5432") {
		if gatetest.RequireLive() {
			t.Fatalf("no gate-recorder started: %s", st.HistoryNote())
		}
		t.Logf("without history: %s", st.HistoryNote())
	} else if err := probeHealth(ctx, hc, st.recorder.HealthURL); err != nil {
		t.Fatalf("gate-recorder: %v", err)
	}
	recPid := 0
	if st.recorder != nil {
		recPid = st.recorder.Pid()
	}
	relays := st.Relays()
	if len(relays) != 1 {
		t.Fatalf("%d relays, want 1", len(relays))
	}
	first := relays[0].Pid()
	if err := st.KillRelay(0); err != nil {
		t.Fatal(err)
	}
	if relays[0].Running() || alive(first) {
		t.Fatalf("relay pid %d still alive after KillRelay", first)
	}
	if err := st.RestartRelay(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if second := relays[0].Pid(); second == first || !relays[0].Running() {
		t.Fatalf("restart: pid %d (was %d), running %v", second, first, relays[0].Running())
	}
	extra, err := st.StartRelay(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Relays()) != 2 || extra.HealthURL == relays[0].HealthURL {
		t.Fatalf("the extra relay did not get a port of its own: %v", st.Relays())
	}
	pids := []int{relays[0].Pid(), extra.Pid()}
	if recPid != 0 {
		pids = append(pids, recPid)
	}
	st.Stop()
	for _, pid := range pids {
		if alive(pid) {
			t.Fatalf("pid %d survived Stop", pid)
		}
	}
	if probeHealth(context.Background(), hc, st.GateURL()) == nil {
		t.Fatal("gate-api still answers after Stop")
	}
	if _, err := st.StartRelay(ctx); err == nil {
		t.Fatal("a stopped stack started a relay")
	}
}

// TestLaunchRecordsStartsAwaitsAndReportsAChild runs launch on small
// children: a healthy one is recorded where Stop finds it, listed by
// Started and logged; one that exits before answering, or cannot start at
// all, is an error that still left it recorded and added nothing to
// Started.
func TestLaunchRecordsStartsAwaitsAndReportsAChild(t *testing.T) {
	t.Parallel()
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer health.Close()
	var logs bytes.Buffer
	dir := t.TempDir()
	s, err := prepare(Config{Root: dir, LogDir: dir, HealthTimeout: 10 * time.Second, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	ok := s.newProcess("sleeper", []string{"sleep", "30"}, health.URL, nil)
	if err := s.launch(ctx, ok, func(p *Process) { s.relays = append(s.relays, p) }, "sleeper at "+health.URL, slog.LevelWarn, "sleeper healthy", "why", "a test"); err != nil {
		t.Fatal(err)
	}
	if len(s.relays) != 1 || s.relays[0] != ok || !ok.Running() {
		t.Fatalf("recorded %v, running %v; want the sleeper recorded and running", s.relays, ok.Running())
	}
	if got := s.Started(); len(got) != 1 || got[0] != "sleeper at "+health.URL {
		t.Fatalf("Started = %q, want the sleeper's line", got)
	}
	var rec map[string]any
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if rec["level"] != "WARN" || rec["msg"] != "sleeper healthy" || rec["url"] != health.URL || rec["pid"] != float64(ok.Pid()) || rec["why"] != "a test" {
		t.Fatalf("logged %v, want WARN sleeper healthy with its url, pid %d and why", rec, ok.Pid())
	}

	dead, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	var exited, missing *Process
	quitter := s.newProcess("quitter", []string{"sh", "-c", "exit 3"}, "http://"+dead, nil)
	if err := s.launch(ctx, quitter, func(p *Process) { exited = p }, "quitter line", slog.LevelInfo, "quitter healthy"); !errors.Is(err, ErrExited) || exited != quitter {
		t.Fatalf("a child that exits: %v, recorded %v; want ErrExited and the child recorded", err, exited)
	}
	absent := s.newProcess("absent", []string{filepath.Join(dir, "no-such-binary")}, "http://"+dead, nil)
	if err := s.launch(ctx, absent, func(p *Process) { missing = p }, "absent line", slog.LevelInfo, "absent healthy"); err == nil || missing != absent {
		t.Fatalf("a child that cannot start: %v, recorded %v; want an error and the child recorded", err, missing)
	}
	if got := s.Started(); len(got) != 1 {
		t.Fatalf("Started = %q after two failed launches, want only the sleeper", got)
	}

	pid := ok.Pid()
	s.Stop()
	if alive(pid) {
		t.Fatalf("the launched sleeper (pid %d) survived Stop", pid)
	}
}
