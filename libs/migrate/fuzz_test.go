package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/finding"
)

// FuzzToV2 checks that no input panics the mapping, that an accepted input
// always yields JSON (deterministically) and warnings only, and that a refused
// input always says why with a *ShapeError.
func FuzzToV2(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.v1.json"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(target(budget("g", `"scope":["a","b"],"match":{"op":[]},"store":"kv"`), `"lanes":[{"name":"a","cap":"absolute:1e308"},{"name":"b","cap":"share:-1"}]`)))
	f.Add([]byte(graph(`"a":`+node(`"entry":true`)+`,"b":`+node(""), `"edges":[{"from":"a","to":"b","priority":-5},{"from":"b","to":"a"}],"consume":["b","x"],"breach":[{"maxAttempts":99999999999}]`)))
	f.Add([]byte(`{"name":"x","version":0,"budgets":[{"id":"g","cap":1e300,"periodSeconds":9223372036854775807,"alignment":"rolling","confidence":"assumed"}],"cost":{"field":"f","default":-1e300,"max":1e300}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = IsV1(body)
		out, ws, err := ToV2(body)
		if err != nil {
			var se *ShapeError
			if !errors.As(err, &se) || !errors.Is(err, ErrShape) {
				t.Fatalf("error %v (%T) is not a *ShapeError", err, err)
			}
			if se.At != "" && !strings.HasPrefix(se.At, "/") {
				t.Fatalf("ShapeError.At %q is not a JSON pointer", se.At)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not JSON:\n%s", out)
		}
		again, _, err := ToV2(body)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("second run differs: %v\n%s\n%s", err, out, again)
		}
		for _, w := range ws {
			if w.Severity != finding.Warning || w.Rule == "" || w.Message == "" {
				t.Fatalf("bad finding %+v", w)
			}
			if w.At != "" && !strings.HasPrefix(w.At, "/") {
				t.Fatalf("finding At %q is not a JSON pointer", w.At)
			}
		}
	})
}
