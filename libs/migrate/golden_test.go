package migrate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden v2 documents and warnings under testdata/")

// TestGolden maps every testdata/*.v1.json and compares the v2 document
// (indented) with *.v2.json and the warnings with *.warnings.json. Run with
// -update to regenerate them after an intended change, then review the diff.
func TestGolden(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/*.v1.json documents")
	}
	for _, in := range inputs {
		base := strings.TrimSuffix(in, ".v1.json")
		t.Run(filepath.Base(base), func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			if !IsV1(body) {
				t.Errorf("IsV1 = false for a v1 document")
			}
			v2, ws, err := ToV2(body)
			if err != nil {
				t.Fatalf("ToV2: %v", err)
			}
			var doc bytes.Buffer
			if err := json.Indent(&doc, v2, "", "  "); err != nil {
				t.Fatal(err)
			}
			doc.WriteByte('\n')
			if IsV1(v2) {
				t.Errorf("IsV1 = true for the mapped v2 document")
			}
			warnings, err := json.MarshalIndent(ws, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			warnings = append(warnings, '\n')
			compare(t, base+".v2.json", doc.Bytes())
			compare(t, base+".warnings.json", warnings)
		})
	}
}

func compare(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the mapping (run go test -update and review the diff)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
