package relay_test

import (
	"os/exec"
	"path/filepath"
)

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
