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
)

// ErrExited is returned when a process exits before it became healthy.
var ErrExited = errors.New("process exited before it answered /health")

// Process is one child the stack started, in its own process group. The zero
// value is not usable; Stack creates processes.
type Process struct {
	// Name says what it is, e.g. "gate-relay-2".
	Name string
	// HealthURL is the base URL whose /health answers 200 when it is ready.
	HealthURL string
	// LogPath is the file that receives its stdout and stderr.
	LogPath string

	argv []string
	env  []string
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start launches the process (again, if it ran before) in a new process
// group, appending its output to LogPath.
func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", p.Name, err)
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
		return fmt.Errorf("starting %s (%s): %w", p.Name, p.argv[0], err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
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

// Done is closed when the current incarnation exits.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Running reports whether the current incarnation is alive.
func (p *Process) Running() bool {
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// signalGroup sends sig to the process group of the current incarnation.
func (p *Process) signalGroup(sig syscall.Signal) {
	pid := p.Pid()
	if pid <= 0 || !p.Running() {
		return
	}
	_ = syscall.Kill(-pid, sig)
}

// Kill ends the process group at once with SIGKILL (no cleanup: leases it
// holds lapse at the broker) and waits for it to be reaped.
func (p *Process) Kill() {
	p.signalGroup(syscall.SIGKILL)
	if d := p.Done(); d != nil {
		<-d
	}
}

// Stop asks the process group to end with SIGTERM and kills it if it has not
// exited within grace.
func (p *Process) Stop(grace time.Duration) {
	d := p.Done()
	if d == nil {
		return
	}
	p.signalGroup(syscall.SIGTERM)
	select {
	case <-d:
	case <-time.After(grace):
		p.Kill()
	}
	// A well-behaved child may leave grandchildren in its group; sweep them.
	p.mu.Lock()
	pid := 0
	if p.cmd != nil && p.cmd.Process != nil {
		pid = p.cmd.Process.Pid
	}
	p.mu.Unlock()
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// waitHealthy polls HealthURL/health until it answers 200, the process
// exits, or timeout passes.
func (p *Process) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	done := p.Done()
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
