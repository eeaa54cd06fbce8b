package declare

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/finding"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenFindings is NAME.findings.json: the verdict beside the plan.
type goldenFindings struct {
	Status    int          `json:"status"`
	V1        bool         `json:"v1"`
	Findings  finding.List `json:"findings"`
	Migration finding.List `json:"migration"`
	Unchecked []string     `json:"unchecked"`
}

// goldenStored is one entry of NAME.stored.json.
type goldenStored struct {
	App     string          `json:"app"`
	Name    string          `json:"name"`
	Running bool            `json:"running"`
	Body    json.RawMessage `json:"body"`
}

// goldenInput reads NAME.in.json and its optional NAME.stored.json (other
// graphs) and NAME.facts.json (broker answers). A name starting with
// "target" is declared on the /targets route.
func goldenInput(t testing.TB, inPath string) Input {
	t.Helper()
	base := strings.TrimSuffix(inPath, ".in.json")
	b, err := os.ReadFile(inPath)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Body: b, Target: strings.HasPrefix(filepath.Base(base), "target")}
	if raw, err := os.ReadFile(base + ".stored.json"); err == nil {
		var stored []goldenStored
		if err := json.Unmarshal(raw, &stored); err != nil {
			t.Fatal(err)
		}
		in.Stored = []Stored{}
		for _, s := range stored {
			in.Stored = append(in.Stored, Stored{App: s.App, Name: s.Name, Body: s.Body, Running: s.Running})
		}
	}
	if raw, err := os.ReadFile(base + ".facts.json"); err == nil {
		f := facts{}
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		in.Facts = f
	}
	return in
}

func TestGolden(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob("testdata/golden/*.in.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, inPath := range inputs {
		name := strings.TrimSuffix(filepath.Base(inPath), ".in.json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := compileT(t, goldenInput(t, inPath))
			base := strings.TrimSuffix(inPath, ".in.json")
			gf := goldenFindings{Status: res.Status(), V1: res.V1, Findings: res.Findings, Migration: res.Migration, Unchecked: res.Unchecked}
			if gf.Findings == nil {
				gf.Findings = finding.List{}
			}
			if gf.Migration == nil {
				gf.Migration = finding.List{}
			}
			if gf.Unchecked == nil {
				gf.Unchecked = []string{}
			}
			checkGolden(t, base+".findings.json", gf)
			checkGolden(t, base+".plan.json", res.Plan)
			checkGolden(t, base+".response.json", res.Response())
		})
	}
}

func checkGolden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./libs/declare -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the compile (run go test ./libs/declare -update and review the diff):\n%s", path, firstDiff(want, got))
	}
}

func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestGoldenIsDeterministic compiles every golden input twice and demands
// byte-identical plan JSON.
func TestGoldenIsDeterministic(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob("testdata/golden/*.in.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, inPath := range inputs {
		var first []byte
		for range 3 {
			res := compileT(t, goldenInput(t, inPath))
			b, err := json.Marshal(res.Plan)
			if err != nil {
				t.Fatalf("%s: marshalling the plan: %v", inPath, err)
			}
			r, err := json.Marshal(res.Response())
			if err != nil {
				t.Fatalf("%s: marshalling the response: %v", inPath, err)
			}
			b = append(b, r...)
			if first == nil {
				first = b
			} else if !bytes.Equal(first, b) {
				t.Fatalf("%s: two compiles gave different JSON", inPath)
			}
		}
	}
}
