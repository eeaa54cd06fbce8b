package declare

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/gate/libs/finding"
)

// m and a build documents as plain JSON values so a test can also write
// values of the wrong type.
type (
	m = map[string]any
	a = []any
)

// base is the smallest accepted document: one node, one path.
func base() m {
	return m{
		"application": "demo", "graph": "g", "version": 1,
		"nodes": m{"in": m{
			"ingress": true,
			"budgets": a{m{"id": "global", "count": 100, "timeMs": 1000}},
			"egress":  "demo.g.out",
		}},
		"paths": a{m{"name": "main", "nodes": a{"in"}}},
	}
}

// crossing has two entry nodes whose paths meet at node x.
func crossing() m {
	return m{
		"application": "demo", "graph": "g", "version": 1,
		"nodes": m{
			"a": m{"ingress": true, "budgets": a{m{"id": "global", "count": 100, "timeMs": 1000}}},
			"b": m{"ingress": true, "budgets": a{m{"id": "global", "count": 100, "timeMs": 1000}}},
			"x": m{"budgets": a{m{"id": "global", "count": 100, "timeMs": 1000}}, "egress": "demo.g.out"},
		},
		"paths": a{
			m{"name": "p", "nodes": a{"a", "x"}},
			m{"name": "q", "nodes": a{"b", "x"}},
		},
	}
}

func nodesOf(d m) m             { return d["nodes"].(m) }
func nodeOf(d m, name string) m { return nodesOf(d)[name].(m) }
func pathOf(d m, i int) m       { return d["paths"].(a)[i].(m) }
func budgetOf(d m, n string, i int) m {
	return nodeOf(d, n)["budgets"].(a)[i].(m)
}

func body(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// facts is an in-memory broker answer per queue.
type facts map[string]QueueFacts

func (f facts) Queue(name string) QueueFacts { return f[name] }

func compileT(t testing.TB, in Input) *Result {
	t.Helper()
	r, err := Compile(in)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

func byRule(l finding.List, rule string) finding.List {
	var out finding.List
	for _, f := range l {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
