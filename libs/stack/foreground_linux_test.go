package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// foregroundHelper is the environment variable that makes the test binary
// act as a tiny gate-run: take the terminal's foreground, say so, wait for
// Ctrl-C, give the terminal back and exit 0.
const foregroundHelper = "GATE_STACK_FOREGROUND_HELPER"

func init() {
	mode := os.Getenv(foregroundHelper)
	if mode == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	restore := func() {}
	if mode == "foreground" {
		restore = Foreground()
	}
	fmt.Println("helper ready")
	<-ctx.Done()
	stop()
	restore()
	fmt.Println("helper stopped")
	os.Exit(0)
}

// openPTY opens a pseudo-terminal pair: the master (the "keyboard and
// screen") and the slave (the terminal a session runs on).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Fatalf("ptsname: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("opening the pty slave: %v", err)
	}
	return m, s
}

// runMakeAndCtrlC runs `make run` on a terminal, as a user does, where
// the recipe execs the helper in mode; once the helper is up it types
// Ctrl-C and returns make's exit error and what the terminal showed.
func runMakeAndCtrlC(t *testing.T, mode string) (error, string) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mk := filepath.Join(dir, "Makefile")
	// The same recipe shape as the repository's `run`: the shell execs
	// the launcher.
	if err := os.WriteFile(mk, []byte("run:\n\texec "+self+" -test.run=^$$\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command("make", "-s", "-f", mk, "run")
	cmd.Env = append(os.Environ(), foregroundHelper+"="+mode)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A session of its own on the terminal, make its foreground group:
	// what an interactive shell does for a job.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(master)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
	}()
	var seen []string
	deadline := time.After(30 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break wait
			}
			seen = append(seen, l)
			if l == "helper ready" {
				// Ctrl-C on the keyboard: the line discipline sends SIGINT
				// to the terminal's foreground process group.
				if _, err := master.Write([]byte{3}); err != nil {
					t.Fatal(err)
				}
				break wait
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the helper did not start under make: %q", seen)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("make did not exit after Ctrl-C")
	}
	// Drain what the terminal showed after the Ctrl-C.
	for l := range lines {
		seen = append(seen, l)
	}
	return werr, strings.Join(seen, " | ")
}

// `make run` exits 0 after Ctrl-C, as the README and the Makefile promise:
// gate-run takes the terminal's foreground, so the Ctrl-C reaches it alone
// and make sees its child exit 0. Without Foreground make itself gets the
// SIGINT and dies of it (the shell's 130).
func TestMakeRunExitsZeroAfterCtrlC(t *testing.T) {
	t.Parallel()
	err, screen := runMakeAndCtrlC(t, "foreground")
	if err != nil {
		t.Fatalf("make run after Ctrl-C: %v, want exit 0 (terminal: %s)", err, screen)
	}
	if !strings.Contains(screen, "helper stopped") {
		t.Fatalf("the launcher did not stop cleanly: %s", screen)
	}
}

// The control: the same launcher without Foreground leaves make in the
// terminal's foreground, and make dies of the SIGINT.
func TestWithoutForegroundMakeDiesOfCtrlC(t *testing.T) {
	t.Parallel()
	err, screen := runMakeAndCtrlC(t, "plain")
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("make run without Foreground after Ctrl-C: %v, want it killed by SIGINT (terminal: %s)", err, screen)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Fatalf("make ended with %v, want killed by SIGINT (terminal: %s)", ee, screen)
	}
}
