package relay_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The data plane links no web framework, database driver, AI SDK (nor the
// AI agent), container or test machinery: only the broker client, the compiler, NATS and the
// Prometheus client.
func TestBinaryKeepsHeavyDependenciesOut(t *testing.T) {
	t.Parallel()
	deps, err := depsOf("..")
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range deps {
		for _, banned := range []string{"testcontainers", "github.com/jackc/pgx", "gorilla/mux", "gatetest", "miniqueen", "nats-server", "testing", "openai-go", "google.golang.org/genai", "gate/libs/agent"} {
			if strings.Contains(d, banned) {
				t.Errorf("gate-relay links %s", d)
			}
		}
	}
}

// buildBinary builds the gate-relay command into dir for the process tests.
func buildBinary(dir string) (string, error) {
	bin := filepath.Join(dir, "gate-relay")
	cmd := exec.Command("go", "build", "-o", bin, "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: string(out)}
	}
	return bin, nil
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// depsOf lists the packages the gate-relay binary links.
func depsOf(dir string) ([]string, error) {
	out, err := exec.Command("go", "list", "-deps", dir).Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}
