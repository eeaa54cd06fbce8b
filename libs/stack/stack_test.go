package stack

import (
	"context"
	"errors"
	"net"
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
	a, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatalf("freeAddr gave %s, which cannot be listened on: %v", a, err)
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
