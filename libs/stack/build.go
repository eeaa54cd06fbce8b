package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNoRoot is returned when no directory holding go.work is found.
var ErrNoRoot = errors.New("no go.work found in this directory or any parent; run from the Gate repository or set the stack's Root")

// Binary names the commands the stack builds, by package directory relative
// to the repository root.
var Binary = map[string]string{
	"miniqueen":    "./libs/miniqueen/cmd/miniqueen",
	"gate-api":     "./gate-api",
	"gate-relay":   "./gate-relay",
	"gate-console": "./gate-console",
}

// FindRoot walks up from dir to the directory that holds go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoRoot
		}
		dir = parent
	}
}

// Build compiles the named binaries (keys of Binary) with `go build` into
// binDir and returns their paths by name. It builds into a fresh temporary
// directory and renames each result into place, under an exclusive lock on
// binDir, so concurrent launchers never run a half-written binary and a
// running process keeps its own inode.
func Build(ctx context.Context, root, binDir string, names ...string) (map[string]string, error) {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", binDir, err)
	}
	lock, err := os.OpenFile(filepath.Join(binDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking %s: %w", binDir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	tmp, err := os.MkdirTemp(binDir, "build-")
	if err != nil {
		return nil, fmt.Errorf("creating build dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	pkgs := make([]string, 0, len(names))
	for _, n := range names {
		pkg, ok := Binary[n]
		if !ok {
			return nil, fmt.Errorf("building %q: unknown binary; known: miniqueen, gate-api, gate-relay", n)
		}
		pkgs = append(pkgs, pkg)
	}
	args := append([]string{"build", "-o", tmp + string(os.PathSeparator)}, pkgs...)
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	paths := make(map[string]string, len(names))
	for _, n := range names {
		dst := filepath.Join(binDir, n)
		if err := os.Rename(filepath.Join(tmp, n), dst); err != nil {
			return nil, fmt.Errorf("installing %s: %w", n, err)
		}
		paths[n] = dst
	}
	return paths, nil
}

// goTool is the go command: $GOROOT/bin/go when GOROOT is set and has one,
// else "go" from PATH.
func goTool() string {
	if r := os.Getenv("GOROOT"); r != "" {
		p := filepath.Join(r, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
