package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/queen-mq/gate/libs/service"
)

// ErrExited is returned when a process exits before it became healthy.
var ErrExited = errors.New("process exited before it answered /health")

// exited is the cause that ends a Process's work when the child exits on
// its own (rather than being stopped).
var exited = errors.New("the process exited")

// Process is one child the stack started, in its own process group, with
// the start and stop of every Gate service (package libs/service): Start
// launches an incarnation, Stop ends it (SIGTERM to its group, SIGKILL
// after Grace), and Stopped closes once it exited and was reaped, whether
// it was stopped, killed or exited on its own. A stopped process starts
// again (a restart, same name, port and log). The zero value is not
// usable; Stack creates processes.
type Process struct {
	service.Base

	// Name says what it is, e.g. "gate-relay-2".
	Name string
	// HealthURL is the base URL whose /health answers 200 when it is ready.
	HealthURL string
	// LogPath is the file that receives its stdout and stderr.
	LogPath string
	// Grace is how long Stop waits after SIGTERM before SIGKILL.
	Grace time.Duration

	argv []string
	env  []string
	dir  string

	mu  sync.Mutex
	cmd *exec.Cmd
	err error
}

// Start launches an incarnation in a new process group, appending its
// output to LogPath. It runs until Stop, Kill, its own exit or the end of
// ctx (which stops it as Stop does).
func (p *Process) Start(ctx context.Context) error {
	ctx, ok := p.StartInit(ctx)
	if !ok {
		return nil
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return p.Fail(fmt.Errorf("opening log of %s: %w", p.Name, err))
	}
	fmt.Fprintf(logf, "\n==== %s start %s\n", p.Name, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return p.Fail(fmt.Errorf("starting %s (%s): %w", p.Name, p.argv[0], err))
	}
	p.mu.Lock()
	p.cmd, p.err = cmd, nil
	p.mu.Unlock()
	pid := cmd.Process.Pid
	reaped := make(chan struct{})
	p.Go(func() {
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), exited) {
			// Stopped: ask, then insist after the grace period.
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			grace := time.NewTimer(p.Grace)
			select {
			case <-reaped:
			case <-grace.C:
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				<-reaped
			}
			grace.Stop()
		}
		// A well-behaved child may leave grandchildren in its group; sweep
		// them.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	})
	p.Go(func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(reaped)
		p.End(exited)
	})
	p.Ready()
	return nil
}

// Pid is the process id of the current incarnation (0 before the first
// start).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the current incarnation was started and has
// not exited.
func (p *Process) Running() bool {
	return closed(p.Started()) && !closed(p.Stopped())
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Kill ends the process group at once with SIGKILL (no cleanup: leases it
// holds lapse at the broker) and waits for it to be reaped.
func (p *Process) Kill() {
	pid := p.Pid()
	if pid <= 0 {
		return
	}
	if p.Running() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	<-p.Stopped()
}

// waitHealthy polls HealthURL/health until it answers 200, the process
// exits, or timeout passes.
func (p *Process) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	done := p.Stopped()
	for {
		if err := probeHealth(ctx, hc, p.HealthURL); err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s: %w (%v); last log lines:\n%s", p.Name, ErrExited, p.exitErr(), tail(p.LogPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer %s/health within %v; last log lines:\n%s", p.Name, p.HealthURL, timeout, tail(p.LogPath, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *Process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// probeHealth answers nil when base/health answers 200.
func probeHealth(ctx context.Context, hc *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/health answered %d", base, res.StatusCode)
	}
	return nil
}

// tail returns the last n lines of the file at path ("" when unreadable).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// newHealthClient is the client health probes use.
func newHealthClient() *http.Client { return &http.Client{Timeout: time.Second} }
