package graph

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const minimal = `{"version":1,"nodes":{"limit":{"ingress":true,"budgets":[{"id":"global","count":100,"timeMs":1000}],"egress":"demo.out"}},"paths":[{"name":"main","nodes":["limit"]}]}`

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if d.Application != "default" || d.Graph != "" || d.Version != 1 || d.MaxAttempts != nil || d.Counters != nil || d.Watch != nil {
		t.Errorf("root defaults: %+v", d)
	}
	n := d.Nodes["limit"]
	if n.Cost.Object || n.Cost.Fixed != 1 || n.Cost.Maximum() != 1 || n.Cost.Typical() != 1 {
		t.Errorf("cost defaults to a fixed 1: %+v", n.Cost)
	}
	if !n.Ingress.Bool || n.Ingress.Named() || !n.Ingress.HTTPPush() || n.Ingress.Sheds() {
		t.Errorf("ingress true: %+v", n.Ingress)
	}
	if n.Egress.Object || n.Egress.Queue != "demo.out" {
		t.Errorf("egress: %+v", n.Egress)
	}
	b := n.Budgets[0]
	if b.Confidence != "inferred" || b.SubWindows != nil || b.ScopeBy != nil || b.WhenOp != nil || !b.Unconditional() {
		t.Errorf("budget defaults: %+v", b)
	}
	if p := d.Paths[0]; p.Priority != 0 || p.Share != nil || len(p.Nodes) != 1 || p.Nodes[0].Fanout {
		t.Errorf("path defaults: %+v", p)
	}
}

func TestParseShapes(t *testing.T) {
	t.Parallel()
	doc := `{"application":"a","graph":"g","version":0,"maxAttempts":5,"counters":{"windowSeconds":60},"watch":{"durationSeconds":600,"startedAt":1000},
	"nodes":{
	  "n":{"ingress":{"queue":"mine","partitions":4,"http":true,"shed":true},"cost":{"path":"payload.a.b","default":2,"max":9},"batch":10,"concurrency":3,
	       "budgets":[{"id":"x","count":-5,"timeMs":50,"subWindows":7,"scopeBy":"payload.k","sharedKey":"s","whenOp":["a.*","b"],"confidence":"documented","source":"doc","asOf":"2026"},
	                  {"count":1,"timeMs":1000,"whenOp":[]}],
	       "egress":{"queue":"q","group":"grp"}},
	  "m":{"ingress":false,"cost":7,"egress":{"queue":"q2"}},
	  "o":{"ingress":{}}
	},
	"paths":[{"name":"p","priority":3,"share":0.25,"nodes":["o",["n","m"]]}]}`
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	n := d.Nodes["n"]
	if !n.Ingress.Named() || *n.Ingress.Partitions != 4 || !n.Ingress.HTTPPush() || !n.Ingress.Sheds() {
		t.Errorf("named ingress %+v", n.Ingress)
	}
	if !n.Cost.Object || n.Cost.Path != "payload.a.b" || n.Cost.Default != 2 || n.Cost.Maximum() != 9 || n.Cost.Typical() != 2 {
		t.Errorf("cost %+v", n.Cost)
	}
	b := n.Budgets[0]
	if b.Count != -5 || b.TimeMs != 50 || *b.SubWindows != 7 || *b.ScopeBy != "payload.k" || *b.SharedKey != "s" || !reflect.DeepEqual(b.WhenOp, []string{"a.*", "b"}) || b.Source != "doc" || b.AsOf != "2026" {
		t.Errorf("budget %+v", b)
	}
	if w := n.Budgets[1].WhenOp; w == nil || len(w) != 0 {
		t.Errorf("whenOp [] must stay distinguishable from absent: %#v", w)
	}
	if d.Nodes["m"].Ingress != nil || d.Nodes["m"].Cost.Fixed != 7 || !d.Nodes["m"].Egress.Object {
		t.Errorf("node m %+v", d.Nodes["m"])
	}
	if o := d.Nodes["o"].Ingress; o == nil || o.Named() || !o.HTTPPush() {
		t.Errorf("ingress {} is Gate-owned with the front door on: %+v", o)
	}
	if p := d.Paths[0]; *p.Share != 0.25 || p.Priority != 3 || !p.Nodes[1].Fanout || !reflect.DeepEqual(p.Nodes[1].Names, []string{"n", "m"}) {
		t.Errorf("path %+v", p)
	}
	if *d.Watch.StartedAt != 1000 || d.Counters.WindowSeconds != 60 || *d.MaxAttempts != 5 {
		t.Errorf("root %+v", d)
	}
	if got := d.NodeNames(); !reflect.DeepEqual(got, []string{"m", "n", "o"}) {
		t.Errorf("node order %v", got)
	}
}

func TestParseErrorsNameThePointer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want []string // each a Problem "at: message" prefix
	}{
		{"count as a string", `{"version":1,"nodes":{"prices":{"budgets":[{"count":"100","timeMs":1000}]}},"paths":[]}`,
			[]string{`/nodes/prices/budgets/0/count: expected a whole number, got "100"`}},
		{"count as a float", `{"version":1,"nodes":{"p":{"budgets":[{"count":2.0,"timeMs":1000}]}},"paths":[]}`,
			[]string{`/nodes/p/budgets/0/count: expected a whole number, got 2.0`}},
		{"negative subWindows", `{"version":1,"nodes":{"p":{"budgets":[{"count":2,"timeMs":1000,"subWindows":-1}]}},"paths":[]}`,
			[]string{`/nodes/p/budgets/0/subWindows: expected a whole number from 0 to 4294967295, got -1`}},
		{"version above u32", `{"version":4294967296,"nodes":{},"paths":[]}`, []string{`/version: expected a whole number from 0 to 4294967295, got 4294967296`}},
		{"unknown root field", `{"version":1,"nodes":{},"paths":[],"lanes":[]}`, []string{`/lanes: unknown field "lanes" (known fields: application, graph, version, nodes, paths, maxAttempts, counters, watch)`}},
		{"unknown node field", `{"version":1,"nodes":{"n":{"entry":true}},"paths":[]}`, []string{`/nodes/n/entry: unknown field "entry"`}},
		{"unknown cost field", `{"version":1,"nodes":{"n":{"cost":{"path":"payload.x","field":"x"}}},"paths":[]}`, []string{`/nodes/n/cost/field: unknown field "field"`}},
		{"cost object without path", `{"version":1,"nodes":{"n":{"cost":{"max":3}}},"paths":[]}`, []string{`/nodes/n/cost: missing required field "path"`}},
		{"cost as a string", `{"version":1,"nodes":{"n":{"cost":"2"}},"paths":[]}`, []string{`/nodes/n/cost: expected a whole number or an object`}},
		{"ingress as a string", `{"version":1,"nodes":{"n":{"ingress":"q"}},"paths":[]}`, []string{`/nodes/n/ingress: expected true, false or an object`}},
		{"unknown ingress field", `{"version":1,"nodes":{"n":{"ingress":{"queue":"q","group":"g"}}},"paths":[]}`, []string{`/nodes/n/ingress/group: unknown field "group"`}},
		{"empty ingress queue", `{"version":1,"nodes":{"n":{"ingress":{"queue":""}}},"paths":[]}`, []string{`/nodes/n/ingress/queue: an application-owned ingress queue needs a name`}},
		{"egress as a number", `{"version":1,"nodes":{"n":{"egress":5}},"paths":[]}`, []string{`/nodes/n/egress: expected a queue name or an object`}},
		{"egress object without queue", `{"version":1,"nodes":{"n":{"egress":{"group":"g"}}},"paths":[]}`, []string{`/nodes/n/egress: missing required field "queue"`}},
		{"unknown budget field", `{"version":1,"nodes":{"n":{"budgets":[{"count":1,"timeMs":1,"cap":3}]}},"paths":[]}`, []string{`/nodes/n/budgets/0/cap: unknown field "cap"`}},
		{"missing count", `{"version":1,"nodes":{"n":{"budgets":[{"timeMs":1}]}},"paths":[]}`, []string{`/nodes/n/budgets/0: missing required field "count"`}},
		{"bad confidence", `{"version":1,"nodes":{"n":{"budgets":[{"count":1,"timeMs":1,"confidence":"sure"}]}},"paths":[]}`, []string{`/nodes/n/budgets/0/confidence: expected one of "documented", "inferred", "assumed", got "sure"`}},
		{"whenOp of numbers", `{"version":1,"nodes":{"n":{"budgets":[{"count":1,"timeMs":1,"whenOp":[1]}]}},"paths":[]}`, []string{`/nodes/n/budgets/0/whenOp/0: expected a string, got 1`}},
		{"nested fan-out", `{"version":1,"nodes":{},"paths":[{"name":"p","nodes":["a",["b",["c"]]]}]}`, []string{`/paths/0/nodes/1/1: expected a node name (a fan-out is a flat array of node names)`}},
		{"path without nodes", `{"version":1,"nodes":{},"paths":[{"name":"p"}]}`, []string{`/paths/0: missing required field "nodes"`}},
		{"share as a string", `{"version":1,"nodes":{},"paths":[{"name":"p","share":"0.5","nodes":[]}]}`, []string{`/paths/0/share: expected a number in (0, 1], got "0.5"`}},
		{"repeated field", `{"version":1,"version":2,"nodes":{},"paths":[]}`, []string{`/version: field "version" is given twice`}},
		{"repeated node", `{"version":1,"nodes":{"a":{},"a":{}},"paths":[]}`, []string{`/nodes/a: node "a" is declared twice`}},
		{"escaped pointer", `{"version":1,"nodes":{"a/b~c":{"batch":"x"}},"paths":[]}`, []string{`/nodes/a~1b~0c/batch: expected a whole number`}},
		{"watch without duration", `{"version":1,"nodes":{},"paths":[],"watch":{}}`, []string{`/watch: missing required field "durationSeconds"`}},
		{"missing everything", `{}`, []string{`(document): missing required field "version"`, `(document): missing required field "nodes"`, `(document): missing required field "paths"`}},
		{"not an object", `[1]`, []string{`(document): expected a graph document (a JSON object), got [1]`}},
		{"trailing data", `{"version":1,"nodes":{},"paths":[]} x`, []string{`(document): invalid JSON at byte 36: unexpected data after the document`}},
		{"unterminated", `{"version":1,"nodes":{`, []string{`(document): invalid JSON at byte`}},
		{"long value is cut", `{"version":"` + strings.Repeat("x", 100) + `","nodes":{},"paths":[]}`, []string{`/version: expected a whole number from 0 to 4294967295, got "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.body))
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not a *ParseError wrapping ErrInvalid", err)
			}
			for _, w := range tc.want {
				found := false
				for _, p := range pe.Problems {
					if strings.HasPrefix(p.String(), w) {
						found = true
					}
				}
				if !found {
					t.Errorf("no problem starting %q in %v", w, pe.Problems)
				}
			}
		})
	}
}

func TestNullIsAbsent(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(`{"version":1,"maxAttempts":null,"watch":null,"nodes":{"n":{"ingress":null,"cost":null,"budgets":[{"count":1,"timeMs":1000,"scopeBy":null,"id":null}]}},"paths":[{"name":"p","share":null,"nodes":["n"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.MaxAttempts != nil || d.Watch != nil || d.Nodes["n"].Ingress != nil || d.Nodes["n"].Cost.Fixed != 1 || d.Nodes["n"].Budgets[0].ScopeBy != nil || d.Paths[0].Share != nil {
		t.Errorf("null optionals must parse as absent: %+v", d)
	}
	if _, err := Parse([]byte(`{"version":null,"nodes":{},"paths":[]}`)); err == nil {
		t.Error("a null required field must be refused")
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		minimal,
		`{"application":"a","graph":"g","version":0,"maxAttempts":5,"counters":{"windowSeconds":60},"watch":{"durationSeconds":600,"startedAt":1000},
		"nodes":{"n":{"ingress":{"queue":"mine","partitions":4,"http":false,"shed":true},"cost":{"path":"payload.a","default":2,"max":9},"batch":10,"concurrency":3,
		"budgets":[{"id":"x","count":5,"timeMs":5000,"subWindows":5,"scopeBy":"payload.k","sharedKey":"s","whenOp":["a.*"],"confidence":"documented","source":"doc","asOf":"2026"},{"count":1,"timeMs":1000,"whenOp":[]}],
		"egress":{"queue":"q","group":"grp"}},"m":{"ingress":{},"cost":{"path":"payload.c"},"egress":"q2"}},
		"paths":[{"name":"p","priority":3,"share":0.25,"nodes":["m",["n","m"]]},{"name":"<&>","nodes":[]}]}`,
	} {
		d, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("the stored form does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(d, again) {
			t.Errorf("round trip changed the document:\n%s", out)
		}
		out2, _ := json.Marshal(again)
		if string(out) != string(out2) {
			t.Errorf("marshal is not stable:\n%s\n%s", out, out2)
		}
	}
}

func TestMarshalOmitsAbsentOptionals(t *testing.T) {
	t.Parallel()
	d, _ := Parse([]byte(minimal))
	out, _ := json.Marshal(d)
	want := `{"application":"default","graph":"","version":1,"nodes":{"limit":{"budgets":[{"id":"global","count":100,"timeMs":1000,"confidence":"inferred"}],"cost":1,"ingress":true,"egress":"demo.out"}},"paths":[{"name":"main","priority":0,"nodes":["limit"]}]}`
	if string(out) != want {
		t.Errorf("stored form\n got %s\nwant %s", out, want)
	}
}

func TestPointer(t *testing.T) {
	t.Parallel()
	if got := Pointer("/nodes", "a/b", "c~d", "0"); got != "/nodes/a~1b/c~0d/0" {
		t.Errorf("Pointer = %q", got)
	}
	if got := Pointer(""); got != "" {
		t.Errorf("Pointer of nothing = %q", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(`{"version":1,"nodes":{"a":{"cost":{"path":"payload.x"}}},"paths":[{"name":"p","nodes":[["a","b"]]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b)
		if err != nil {
			return
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("stored form unreadable: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(again)
		if string(out) != string(out2) {
			t.Fatalf("unstable:\n%s\n%s", out, out2)
		}
	})
}

func TestIsTarget(t *testing.T) {
	t.Parallel()
	d, _ := Parse([]byte(minimal))
	if !d.IsTarget() {
		t.Error("a one-node document is a target")
	}
	d.Nodes["other"] = &Node{}
	if d.IsTarget() {
		t.Error("a two-node document is not a target")
	}
}

func TestVendorMeterParsesAndRoundTrips(t *testing.T) {
	t.Parallel()
	body := strings.Replace(minimal, `"timeMs":1000}`, `"timeMs":1000,"vendorMeter":{"headers":"github","name":"core"}}`, 1)
	d, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	m := d.Nodes["limit"].Budgets[0].VendorMeter
	if m == nil || m.Headers != "github" || m.Name != "core" {
		t.Fatalf("vendorMeter: %+v", m)
	}
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out)
	if err != nil || !reflect.DeepEqual(again.Nodes["limit"].Budgets[0].VendorMeter, m) {
		t.Fatalf("round trip: %s %v", out, err)
	}
	for _, bad := range []string{`{"name":"core"}`, `{"headers":"github","extra":1}`, `"github"`} {
		_, err := Parse([]byte(strings.Replace(minimal, `"timeMs":1000}`, `"timeMs":1000,"vendorMeter":`+bad+`}`, 1)))
		if err == nil || !strings.Contains(err.Error(), "/nodes/limit/budgets/0/vendorMeter") {
			t.Errorf("vendorMeter %s: %v, want an error naming the pointer", bad, err)
		}
	}
}

func TestBudgetKeysParseAndRoundTrip(t *testing.T) {
	t.Parallel()
	body := strings.Replace(minimal, `"timeMs":1000}`, `"timeMs":1000,"scopeBy":"payload.acct","keys":{"acct-9":5,"acct-42":500}}`, 1)
	d, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	keys := d.Nodes["limit"].Budgets[0].Keys
	if !reflect.DeepEqual(keys, map[string]int64{"acct-9": 5, "acct-42": 500}) {
		t.Fatalf("keys: %v", keys)
	}
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"keys":{"acct-42":500,"acct-9":5}`) {
		t.Errorf("keys are written sorted by value: %s", out)
	}
	again, err := Parse(out)
	if err != nil || !reflect.DeepEqual(again.Nodes["limit"].Budgets[0].Keys, keys) {
		t.Fatalf("round trip: %s %v", out, err)
	}
	for bad, at := range map[string]string{
		`[1]`:           "/nodes/limit/budgets/0/keys",
		`{"a":1.5}`:     "/nodes/limit/budgets/0/keys/a",
		`{"a":"5"}`:     "/nodes/limit/budgets/0/keys/a",
		`{"a":1,"a":2}`: "/nodes/limit/budgets/0/keys/a",
		`{"x/y":true}`:  "/nodes/limit/budgets/0/keys/x~1y",
	} {
		_, err := Parse([]byte(strings.Replace(minimal, `"timeMs":1000}`, `"timeMs":1000,"keys":`+bad+`}`, 1)))
		if err == nil || !strings.Contains(err.Error(), at) {
			t.Errorf("keys %s: %v, want an error naming %s", bad, err, at)
		}
	}
}
