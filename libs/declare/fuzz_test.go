package declare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/queen-mq/gate/libs/plan"
)

// FuzzCompile feeds arbitrary bodies to Compile. It must never panic, and
// every accepted document must compile to a sane plan that its own stored
// form compiles to again, byte for byte.
func FuzzCompile(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/golden/*.in.json")
	for _, p := range inputs {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(benchDocument())
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, target := range []bool{false, true} {
			res, err := Compile(Input{Body: b, Target: target})
			if err != nil {
				continue
			}
			if res.Accepted() != (res.Plan != nil) {
				t.Fatalf("accepted %t but plan present %t", res.Accepted(), res.Plan != nil)
			}
			if res.Plan == nil {
				continue
			}
			checkPlan(t, res.Plan)
			again := recompile(t, res)
			want, _ := json.Marshal(res.Plan)
			got, _ := json.Marshal(again.Plan)
			if !bytes.Equal(want, got) {
				t.Fatalf("the plan's own document compiles differently:\n%s\n%s", want, got)
			}
		}
	})
}

// recompile compiles the stored form of an accepted document.
func recompile(t *testing.T, res *Result) *Result {
	t.Helper()
	doc, err := json.Marshal(res.Doc)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	again, err := Compile(Input{Body: doc})
	if err != nil {
		t.Fatalf("the stored form does not parse: %v\n%s", err, doc)
	}
	if again.Plan == nil {
		t.Fatalf("the stored form is refused: %v\n%s", again.Findings, doc)
	}
	return again
}

// checkPlan asserts the invariants every accepted plan keeps.
func checkPlan(t *testing.T, p *plan.Plan) {
	t.Helper()
	owner := map[string]string{}
	for _, n := range p.Nodes {
		for _, b := range n.Budgets {
			if b.WindowSubSeconds < 1 {
				t.Fatalf("%s.%s ttl %d", n.Name, b.ID, b.WindowSubSeconds)
			}
			if b.CountSub < 1 || b.SubWindows < 1 {
				t.Fatalf("%s.%s countSub %d N %d", n.Name, b.ID, b.CountSub, b.SubWindows)
			}
			for path, c := range b.Ceilings {
				if c < 1 || c > b.CountSub {
					t.Fatalf("%s.%s ceiling %d for %s outside 1..%d", n.Name, b.ID, c, path, b.CountSub)
				}
			}
			id := fmt.Sprintf("node %s budget %s", n.Name, b.ID)
			if b.Shared {
				id = "shared " + b.SharedKey
			}
			if prev, dup := owner[b.Key]; dup && prev != id {
				t.Fatalf("kv key %s used by %s and %s", b.Key, prev, id)
			}
			owner[b.Key] = id
		}
	}
	for _, s := range p.Stages {
		if s.Batch < 1 || s.Concurrency < 1 {
			t.Fatalf("stage %s/%s batch %d workers %d", s.Path, s.Node, s.Batch, s.Concurrency)
		}
	}
}
