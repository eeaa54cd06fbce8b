package declare

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

func TestUnreadableBodiesNameThePointer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"malformed JSON", `{"version":1,`, []string{"invalid JSON at byte"}},
		{"count as a string", `{"version":1,"nodes":{"prices":{"budgets":[{"count":"100","timeMs":1000}]}},"paths":[]}`,
			[]string{`/nodes/prices/budgets/0/count: expected a whole number, got "100"`}},
		{"float version", `{"version":1.0,"nodes":{},"paths":[]}`, []string{"/version: expected a whole number from 0 to 4294967295, got 1.0"}},
		{"negative batch", `{"version":1,"nodes":{"a":{"batch":-1}},"paths":[]}`, []string{"/nodes/a/batch: expected a whole number from 0 to 4294967295, got -1"}},
		{"unknown budget field", `{"version":1,"nodes":{"a":{"budgets":[{"count":1,"timeMs":1000,"cap":5}]}},"paths":[]}`,
			[]string{`/nodes/a/budgets/0/cap: unknown field "cap"`}},
		{"missing version", `{"nodes":{},"paths":[]}`, []string{`missing required field "version"`}},
		{"nested fan-out", `{"version":1,"nodes":{},"paths":[{"name":"p","nodes":["a",["b",["c"]]]}]}`,
			[]string{"/paths/0/nodes/1/1: expected a node name (a fan-out is a flat array of node names)"}},
		{"v1 graph on a v2 shape", `{"version":1,"nodes":{"a":{"cost":{"field":"x"}}},"paths":[]}`, []string{`/nodes/a/cost/field: unknown field "field"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Input{Body: []byte(tc.body)})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrUnreadable) {
				t.Errorf("error %v does not wrap ErrUnreadable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestV1IsMappedAndCompiled(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/golden/target-v1.in.json")
	if err != nil {
		t.Fatal(err)
	}
	res := compileT(t, Input{App: "demo", Name: "mailer", Body: b, Target: true})
	if !res.V1 || !res.Accepted() || len(res.Migration) == 0 {
		t.Fatalf("v1 target: V1 %t, findings %v, migration %d", res.V1, res.Findings, len(res.Migration))
	}
	if q := res.Plan.Node("mailer").EgressQueue; q != "gate.demo.mailer.admitted.main" {
		t.Errorf("egress %q", q)
	}
	resp := res.Response()
	if !resp.Migrated || len(resp.Migration) != len(res.Migration) || !strings.HasPrefix(resp.Migration[0], "[") {
		t.Errorf("response migration %v", resp.Migration)
	}
	// A v1 target body on a graph route is read as a v1 graph, which it is not.
	if _, err := Compile(Input{Body: b}); err == nil || !errors.Is(err, ErrUnreadable) {
		t.Errorf("v1 target on a graph route: %v", err)
	}
}

func TestRoutePinsIdentity(t *testing.T) {
	t.Parallel()
	res := compileT(t, Input{App: "team-a", Name: "airbnb", Body: body(t, base())})
	if res.Doc.Application != "team-a" || res.Doc.Graph != "airbnb" || res.Plan.Node("in").IngressQueue != "gate.team-a.airbnb.in.ingress" {
		t.Errorf("identity not pinned: %s/%s", res.Doc.Application, res.Doc.Graph)
	}
	d := base()
	delete(d, "application")
	if res := compileT(t, Input{Body: body(t, d)}); res.Doc.Application != graph.DefaultApplication {
		t.Errorf("application defaults to %q", res.Doc.Application)
	}
}

func TestUncheckedRules(t *testing.T) {
	t.Parallel()
	named := withNamed(nil)()
	budgetOf(named, "in", 0)["sharedKey"] = "ip"
	cases := []struct {
		name string
		in   Input
		want []string
	}{
		{"offline, Gate-owned ingress", Input{Body: body(t, base())}, []string{RuleIngressOwner, RuleVersionBump, RuleVersionOrder, RuleEgressOwner, RuleQueueCrossGraph}},
		{"offline, application queue and a shared key", Input{Body: body(t, named)}, []string{RuleIngressOwner, RuleVersionBump, RuleVersionOrder, RuleIngressQueue, RuleIngressRetention, RuleSinglePartition, RuleEgressOwner, RuleQueueCrossGraph, RuleSharedConflictGraph}},
		{"facts but no stored graphs", Input{Body: body(t, named), Facts: facts{}}, []string{RuleIngressOwner, RuleVersionBump, RuleVersionOrder, RuleEgressOwner, RuleQueueCrossGraph, RuleSharedConflictGraph}},
		{"everything known", Input{Body: body(t, named), Facts: facts{}, Stored: []Stored{}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := compileT(t, tc.in)
			if !equalStrings(res.Unchecked, tc.want) {
				t.Errorf("unchecked %v, want %v", res.Unchecked, tc.want)
			}
			for _, r := range res.Unchecked {
				if rule, _ := Lookup(r); !rule.Broker {
					t.Errorf("%s is listed unchecked but is not broker-dependent in the catalogue", r)
				}
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	stored := withStored(otherGraph("other-app", "other", false, nil))
	cases := []struct {
		name string
		doc  func() m
		in   func(*Input)
		want int
	}{
		{"accepted", base, nil, 200},
		{"refused by a rule", with(func(d m) { budgetOf(d, "in", 0)["count"] = 0 }), nil, 422},
		{"ingress of a stored graph", with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "theirs.in"} }), stored, 409},
		{"ingress of a running graph", with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "theirs.in"} }), withStored(otherGraph("demo", "other", true, nil)), 422},
		{"version not raised", with(func(d m) { budgetOf(d, "in", 0)["id"] = "x" }), withStored(self(nil)), 409},
		{"a rule wins over a conflict", with(func(d m) { budgetOf(d, "in", 0)["id"] = "x"; budgetOf(d, "in", 0)["count"] = 0 }), withStored(self(nil)), 422},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Input{Body: body(t, tc.doc())}
			if tc.in != nil {
				tc.in(&in)
			}
			res := compileT(t, in)
			if res.Status() != tc.want {
				t.Errorf("status %d, want %d: %v", res.Status(), tc.want, res.Findings)
			}
			if (res.Status() == 200) != (res.Plan != nil) || (res.Status() == 200) != (res.Response() != nil) {
				t.Errorf("plan present %t with status %d", res.Plan != nil, res.Status())
			}
		})
	}
}

func TestNeedsVersionBump(t *testing.T) {
	t.Parallel()
	parse := func(d m) *graph.Document {
		doc, err := graph.Parse(body(t, d))
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	cases := []struct {
		name string
		mut  func(d m)
		want string
	}{
		{"budget removed", func(d m) {
			nodeOf(d, "in")["budgets"] = a{m{"id": "other", "count": 1, "timeMs": 1000}}
		}, `drops counter "b:demo:g:in:global"`},
		{"shared key added", func(d m) { budgetOf(d, "in", 0)["sharedKey"] = "k" }, "drops counter"},
		{"scope changed", nil, "changes the scope"},
		{"node removed", func(d m) {
			nodesOf(d)["new"] = nodesOf(d)["in"]
			delete(nodesOf(d), "in")
			pathOf(d, 0)["nodes"] = a{"new"}
		}, `removes node "in"`},
		{"ingress renamed", func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "mine"} }, `ingress queue from "gate.demo.g.in.ingress" to "mine"`},
		{"path renamed", func(d m) { pathOf(d, 0)["name"] = "other" }, `removes path "main"`},
		{"enforce to watch", func(d m) { d["watch"] = m{"durationSeconds": 600} }, "switches from enforce to watch"},
		{"count changed (hot)", func(d m) { budgetOf(d, "in", 0)["count"] = 5 }, ""},
		{"budget added (hot)", func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "more", "count": 1, "timeMs": 1000})
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			oldDoc, newDoc := base(), base()
			if tc.name == "scope changed" {
				nodeOf(oldDoc, "in")["budgets"] = append(nodeOf(oldDoc, "in")["budgets"].(a), m{"id": "acct", "count": 1, "timeMs": 1000, "scopeBy": "payload.a"})
				nodeOf(newDoc, "in")["budgets"] = append(nodeOf(newDoc, "in")["budgets"].(a), m{"id": "acct", "count": 1, "timeMs": 1000, "scopeBy": "payload.b"})
			} else {
				tc.mut(newDoc)
			}
			reasons := NeedsVersionBump(parse(oldDoc), parse(newDoc))
			if tc.want == "" {
				if len(reasons) != 0 {
					t.Errorf("hot change needs a bump: %v", reasons)
				}
				return
			}
			if !strings.Contains(strings.Join(reasons, "; "), tc.want) {
				t.Errorf("reasons %v, want one containing %q", reasons, tc.want)
			}
		})
	}
}

func TestCatalogueIsConsistent(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range Catalogue {
		if seen[r.Name] {
			t.Errorf("%s listed twice", r.Name)
		}
		seen[r.Name] = true
		if (r.Severity == "error") != (r.Status != 0) {
			t.Errorf("%s: severity %s with status %d", r.Name, r.Severity, r.Status)
		}
		if r.Summary == "" {
			t.Errorf("%s has no summary", r.Name)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	d := base()
	budgetOf(d, "in", 0)["count"] = 0
	budgetOf(d, "in", 0)["timeMs"] = 10
	res := compileT(t, Input{Body: body(t, d)})
	got := res.ErrorText()
	if !strings.HasPrefix(got, "[budget-count] ") || !strings.Contains(got, "; [budget-window] ") {
		t.Errorf("ErrorText = %q", got)
	}
	if ok := compileT(t, Input{Body: body(t, base())}); ok.ErrorText() != "" {
		t.Errorf("accepted ErrorText = %q", ok.ErrorText())
	}
}

// countingFacts records how often each queue is probed.
type countingFacts struct {
	mu    sync.Mutex
	calls map[string]int
	facts facts
}

func (c *countingFacts) Queue(name string) QueueFacts {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[name]++
	return c.facts[name]
}

func TestFactsAreProbedOncePerQueue(t *testing.T) {
	t.Parallel()
	f := &countingFacts{calls: map[string]int{}, facts: facts{"demo.in": {Exists: true, Partitions: 3}}}
	d := withNamed(nil)()
	budgetOf(d, "in", 0)["count"] = 100000
	res := compileT(t, Input{Body: body(t, d), Facts: f, Options: plan.Options{LaneCapacity: 1}})
	if f.calls["demo.in"] != 1 {
		t.Errorf("demo.in probed %d times", f.calls["demo.in"])
	}
	// The broker's 3 partitions cap the derived workers.
	if w := res.Plan.Stages[0].Concurrency; w != 3 {
		t.Errorf("workers %d, want the 3 observed partitions", w)
	}
}

func TestStoredForms(t *testing.T) {
	t.Parallel()
	other := base()
	other["application"], other["graph"] = "demo", "other"
	nodeOf(other, "in")["ingress"] = m{"queue": "theirs.in"}
	parsed, err := graph.Parse(body(t, other))
	if err != nil {
		t.Fatal(err)
	}
	mine := with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "theirs.in"} })()
	cases := []struct {
		name   string
		stored Stored
		status int
	}{
		{"parsed document, running", Stored{App: "demo", Name: "other", Doc: parsed, Running: true}, 422},
		{"running but not stored", Stored{App: "demo", Name: "other", Doc: parsed, Running: true, NotStored: true}, 422},
		{"stored only", Stored{App: "demo", Name: "other", Doc: parsed}, 409},
		{"unreadable body is skipped", Stored{App: "demo", Name: "other", Body: []byte(`{`)}, 200},
		{"stored v1 target with the same ingress", Stored{App: "demo", Name: "other", Body: []byte(`{"application":"demo","name":"other","version":1,"budgets":[{"id":"g","cap":10,"periodSeconds":1,"alignment":"calendar","confidence":"assumed"}],"cost":{"field":"n","default":1,"max":1}}`)}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := compileT(t, Input{Body: body(t, mine), Stored: []Stored{tc.stored}})
			if res.Status() != tc.status {
				t.Errorf("status %d, want %d: %v", res.Status(), tc.status, res.Findings)
			}
		})
	}
}
