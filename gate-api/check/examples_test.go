package check

import (
	"path/filepath"
	"testing"
)

// TestExamplesAreAccepted keeps every document the README points users at
// declarable: each file under examples/ must pass the same compile a PUT
// runs.
func TestExamplesAreAccepted(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d example documents under examples/, want the 5 the README lists", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			if code, out, errOut := run(t, f); code != ExitAccepted {
				t.Errorf("%s refused (exit %d)\nstdout: %s\nstderr: %s", f, code, out, errOut)
			}
		})
	}
}
