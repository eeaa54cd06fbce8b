package stack

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func child(t *testing.T, name string, grace time.Duration, argv ...string) *Process {
	t.Helper()
	return &Process{Name: name, LogPath: filepath.Join(t.TempDir(), name+".log"), Grace: grace, argv: argv}
}

func stopped(t *testing.T, p *Process, within time.Duration, what string) {
	t.Helper()
	select {
	case <-p.Stopped():
	case <-time.After(within):
		t.Fatalf("%s: %s did not stop within %s", what, p.Name, within)
	}
}

// Stop asks with SIGTERM and waits; a child that ignores it is killed
// after its grace period; either way Stop returns with the child reaped.
func TestStopTerminatesThenKillsAfterTheGracePeriod(t *testing.T) {
	t.Parallel()
	polite := child(t, "polite", 10*time.Second, "sleep", "30")
	stubborn := child(t, "stubborn", 300*time.Millisecond, "sh", "-c", "trap '' TERM; sleep 30")
	for _, p := range []*Process{polite, stubborn} {
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !p.Running() || p.Pid() == 0 {
			t.Fatalf("%s is not running after Start", p.Name)
		}
	}
	time.Sleep(100 * time.Millisecond) // the trap is set
	begin := time.Now()
	polite.Stop()
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("a child that ends on SIGTERM took %s to stop (its grace is 10 s)", took)
	}
	pid := stubborn.Pid()
	begin = time.Now()
	stubborn.Stop()
	if took := time.Since(begin); took < 300*time.Millisecond {
		t.Fatalf("a child that ignores SIGTERM stopped after %s, before its grace period", took)
	}
	for _, p := range []*Process{polite, stubborn} {
		if p.Running() {
			t.Fatalf("%s runs after Stop", p.Name)
		}
	}
	if alive(pid) {
		t.Fatalf("the stubborn child (pid %d) survived Stop", pid)
	}
}

// A child that exits on its own ends its service (Stopped closes without a
// Stop), and starts again as a new incarnation; the end of Start's context
// stops it as Stop does.
func TestAProcessThatExitsStopsAndStartsAgain(t *testing.T) {
	t.Parallel()
	p := child(t, "brief", time.Second, "sh", "-c", "sleep 0.1")
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := p.Pid()
	stopped(t, p, 5*time.Second, "its own exit")
	if p.Running() {
		t.Fatal("an exited child reports running")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.argv = []string{"sleep", "30"}
	if err := p.Start(ctx); err != nil {
		t.Fatalf("a second start: %v", err)
	}
	if second := p.Pid(); second == first || !p.Running() {
		t.Fatalf("restart: pid %d (was %d), running %v", second, first, p.Running())
	}
	cancel()
	stopped(t, p, 5*time.Second, "the end of Start's context")
}
