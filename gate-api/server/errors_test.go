package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/wire"
)

// Every key a handler passes to with() is a field of wire.Error (with()
// panics otherwise): the keys are read from this package's source.
func TestErrorKeysAreWireFields(t *testing.T) {
	samples := map[string]any{
		"field": "f", "rule": "r", "rules": []string{"r"}, "problems": []wire.Problem{{Rule: "r"}},
		"applications": []string{"a"}, "paths": []string{"p"}, "nodes": []string{"n"}, "node": "n",
		"budget": "b", "queue": "q", "status": "unhealthy", "queen": wire.QueenState{},
		"limit": int64(1), "maxAttempts": uint32(3), "retryAfterSeconds": int64(2),
	}
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`\.with\("([A-Za-z]+)"`)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			seen++
			v, ok := samples[m[1]]
			if !ok {
				t.Errorf("%s: with(%q) has no sample here; add the field to wire.Error and to apiError.with", f, m[1])
				continue
			}
			fail(400, "x").with(m[1], v)
		}
	}
	for k, v := range samples {
		fail(400, "x").with(k, v)
	}
	if seen < 10 {
		t.Fatalf("found only %d with() calls: the scan is broken", seen)
	}
}
