package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/finding"
)

// lookup resolves a JSON pointer in a decoded document.
func lookup(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	return v
}

// expect is one warning a case must produce: its rule, where, and a phrase.
type expect struct {
	rule, at, phrase string
}

// budget is a v1 budget with the given extra fields.
func budget(id string, extra string) string {
	b := fmt.Sprintf(`{"id":%q,"cap":100,"periodSeconds":1,"alignment":"calendar","confidence":"assumed"`, id)
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// target is a v1 TargetSpec with the given budgets and extra root fields.
func target(budgets string, extra string) string {
	doc := `{"application":"acme","name":"svc","version":4,"cost":{"field":"units","default":1,"max":1},"budgets":[` + budgets + `]`
	if extra != "" {
		doc += "," + extra
	}
	return doc + "}"
}

func checkCase(t *testing.T, body string, v2 map[string]any, absent []string, warns []expect, silent []string) (any, finding.List) {
	t.Helper()
	out, ws, err := ToV2([]byte(body))
	if err != nil {
		t.Fatalf("ToV2: %v", err)
	}
	doc := decode(t, out)
	for ptr, want := range v2 {
		got, ok := lookup(doc, ptr)
		if !ok {
			t.Errorf("v2 %s is missing; want %v\n%s", ptr, want, out)
			continue
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(wj, gj) {
			t.Errorf("v2 %s = %s, want %s", ptr, gj, wj)
		}
	}
	for _, ptr := range absent {
		if got, ok := lookup(doc, ptr); ok {
			t.Errorf("v2 %s = %v, want absent", ptr, got)
		}
	}
	for _, w := range warns {
		found := false
		for _, f := range ws {
			if f.Rule == w.rule && f.At == w.at && strings.Contains(f.Message, w.phrase) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q warning at %q containing %q; got:\n%s", w.rule, w.at, w.phrase, render(ws))
		}
	}
	for _, rule := range silent {
		for _, f := range ws {
			if f.Rule == rule {
				t.Errorf("unexpected %q warning at %q: %s", rule, f.At, f.Message)
			}
		}
	}
	for _, f := range ws {
		if f.Severity != finding.Warning {
			t.Errorf("%s: severity %q, want warning", f.Rule, f.Severity)
		}
		if _, ok := lookup(decode(t, []byte(body)), f.At); !ok && !pointsIntoParent(decode(t, []byte(body)), f.At) {
			t.Errorf("%s: At %q does not point into the v1 input", f.Rule, f.At)
		}
	}
	return doc, ws
}

// pointsIntoParent reports whether ptr's parent exists: a warning about a
// defaulted (absent) field points at the object that would hold it.
func pointsIntoParent(doc any, ptr string) bool {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return false
	}
	_, ok := lookup(doc, ptr[:i])
	return ok
}

func render(ws finding.List) string {
	var b strings.Builder
	for _, f := range ws {
		fmt.Fprintf(&b, "  [%s] %s: %s\n", f.Rule, f.At, f.Message)
	}
	return b.String()
}

func TestBudgetFieldsAreMappedAndNamed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		body   string
		v2     map[string]any
		absent []string
		warns  []expect
		silent []string
	}{
		{
			name: "cap and periodSeconds become count and timeMs",
			body: target(budget("g", `"cap":2.7,"periodSeconds":60`), ""),
			// the later cap key wins in JSON decoding; budget() writes cap 100 first
			v2:    map[string]any{"/nodes/svc/budgets/0/count": 2, "/nodes/svc/budgets/0/timeMs": 60000},
			warns: []expect{{RuleCap, "/budgets/0/cap", "cap 2.7 per periodSeconds 60 became count 2 per timeMs 60000"}},
		},
		{
			name:  "a cap below one and a zero period are floored at one",
			body:  target(`{"id":"g","cap":0.4,"periodSeconds":0,"alignment":"calendar","confidence":"assumed"}`, ""),
			v2:    map[string]any{"/nodes/svc/budgets/0/count": 1, "/nodes/svc/budgets/0/timeMs": 1000},
			warns: []expect{{RuleCap, "/budgets/0/cap", "became count 1 per timeMs 1000"}},
		},
		{
			name:  "a negative cap and period are floored at one",
			body:  target(`{"id":"g","cap":-3,"periodSeconds":-9,"alignment":"calendar","confidence":"assumed"}`, ""),
			v2:    map[string]any{"/nodes/svc/budgets/0/count": 1, "/nodes/svc/budgets/0/timeMs": 1000},
			warns: []expect{{RuleCap, "/budgets/0/cap", "count 1"}},
		},
		{
			name:  "calendar alignment becomes one fixed window",
			body:  target(budget("g", `"periodSeconds":3600`), ""),
			v2:    map[string]any{"/nodes/svc/budgets/0/subWindows": 1},
			warns: []expect{{RuleAlignment, "/budgets/0/alignment", "no longer aligned to the wall clock"}},
		},
		{
			name: "rolling alignment becomes subWindows R",
			body: `{"name":"svc","version":1,"cost":{"field":"units","default":1,"max":5},"budgets":[` +
				`{"id":"g","cap":600,"periodSeconds":60,"alignment":"rolling","confidence":"assumed"}]}`,
			v2:    map[string]any{"/nodes/svc/budgets/0/subWindows": 60},
			warns: []expect{{RuleAlignment, "/budgets/0/alignment", "subWindows 60 (fixed sub-windows of 1s each): a burst across one sub-window boundary can reach 20 instead of 1200"}},
		},
		{
			name:   "match.op becomes whenOp",
			body:   target(budget("all", "")+","+budget("w", `"match":{"op":["write.*","delete"]}`), ""),
			v2:     map[string]any{"/nodes/svc/budgets/1/whenOp": []string{"write.*", "delete"}},
			absent: []string{"/nodes/svc/budgets/0/whenOp"},
			warns:  []expect{{RuleMatch, "/budgets/1/match", `match.op ["write.*", "delete"] became whenOp`}},
		},
		{
			name:   "an empty match is dropped and charges everything",
			body:   target(budget("g", `"match":{"op":[]}`), ""),
			absent: []string{"/nodes/svc/budgets/0/whenOp"},
			warns:  []expect{{RuleMatch, "/budgets/0/match", "charges every item"}},
			silent: []string{RuleNodeBudget},
		},
		{
			name:   "one scope dimension becomes scopeBy",
			body:   target(budget("all", "")+","+budget("acct", `"scope":["account"]`), ""),
			v2:     map[string]any{"/nodes/svc/budgets/1/scopeBy": "payload.account"},
			warns:  []expect{{RuleScope, "/budgets/1/scope", `scope ["account"] became scopeBy "payload.account"`}},
			silent: []string{RuleNodeBudget},
		},
		{
			name:  "several scope dimensions keep only the first",
			body:  target(budget("all", "")+","+budget("acct", `"scope":["account","region","user"]`), ""),
			v2:    map[string]any{"/nodes/svc/budgets/1/scopeBy": "payload.account"},
			warns: []expect{{RuleScope, "/budgets/1/scope", `dropped 2: ["region", "user"]`}},
		},
		{
			name:   "an empty scope is dropped",
			body:   target(budget("g", `"scope":[]`), ""),
			absent: []string{"/nodes/svc/budgets/0/scopeBy"},
			warns:  []expect{{RuleScope, "/budgets/0/scope", "scope [] is empty"}},
		},
		{
			name:   "maxKeys is a no-op",
			body:   target(budget("g", `"maxKeys":5000`), ""),
			absent: []string{"/nodes/svc/budgets/0/maxKeys"},
			warns:  []expect{{RuleMaxKeys, "/budgets/0/maxKeys", "maxKeys 5000 is a no-op"}},
		},
		{
			name:  "store kv becomes a sharedKey named after the budget",
			body:  target(budget("egress-ip", `"store":"kv"`), ""),
			v2:    map[string]any{"/nodes/svc/budgets/0/sharedKey": "egress-ip"},
			warns: []expect{{RuleStore, "/budgets/0/store", `"b:acme:shared:egress-ip"`}},
		},
		{
			name:   "store gate stays node-local",
			body:   target(budget("g", `"store":"gate"`), ""),
			absent: []string{"/nodes/svc/budgets/0/sharedKey"},
			warns:  []expect{{RuleStore, "/budgets/0/store", `"b:acme:svc:svc:g"`}},
		},
		{
			name:   "absent optional fields produce no warning",
			body:   target(budget("g", ""), ""),
			silent: []string{RuleMatch, RuleScope, RuleMaxKeys, RuleStore, RuleNodeBudget, RuleShards, RuleEgress},
			warns:  []expect{{RuleCap, "/budgets/0/cap", ""}, {RuleAlignment, "/budgets/0/alignment", ""}},
		},
		{
			name: "confidence, source and asOf are kept",
			body: target(budget("g", `"confidence":"documented","source":"vendor docs","asOf":"2024-05-01"`), ""),
			v2: map[string]any{"/nodes/svc/budgets/0/confidence": "documented",
				"/nodes/svc/budgets/0/source": "vendor docs", "/nodes/svc/budgets/0/asOf": "2024-05-01"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkCase(t, c.body, c.v2, c.absent, c.warns, c.silent)
		})
	}
}

func TestRollingSubWindowsIsALargestDivisor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		count, timeMs, costMax, want int64
	}{
		{100, 1000, 1, 1},     // a one-second period cannot be subdivided
		{600, 60_000, 1, 60},  // one second per sub-window
		{600, 60_000, 50, 12}, // 600/50 = 12 items of the largest kind, 12 divides 60
		{600, 60_000, 100, 6}, // 6 divides 60
		{7, 60_000, 1, 6},     // ceiling 7 is not a divisor of 60; 6 is
		{1_000_000, 86_400_000, 1, 3600},
		{5, 10_000, 1, 5},    // clamp to count
		{1, 3_600_000, 1, 1}, // a count of one is one window
		{100, 7_000, 1, 7},   // prime period
		{100, 1_500, 1, 1},   // 1.5 s floors to 1 s
	}
	for _, c := range cases {
		if got := rollingSubWindows(c.count, c.timeMs, c.costMax); got != c.want {
			t.Errorf("R(count %d, timeMs %d, costMax %d) = %d, want %d", c.count, c.timeMs, c.costMax, got, c.want)
		}
	}
}

func TestNodeFieldsAreMappedAndNamed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		body   string
		v2     map[string]any
		absent []string
		warns  []expect
		silent []string
	}{
		{
			name:  "cost becomes a payload path with integer default and max",
			body:  target(budget("g", ""), "") + "",
			v2:    map[string]any{"/nodes/svc/cost": map[string]any{"path": "payload.units", "default": 1, "max": 1}},
			warns: []expect{{RuleCost, "/cost", `became {"path": "payload.units", "default": 1, "max": 1}`}},
		},
		{
			name:  "fractional cost rounds up and names old and new",
			body:  `{"name":"svc","version":1,"cost":{"field":"kb","default":0.5,"max":2.25},"budgets":[` + budget("g", "") + `]}`,
			v2:    map[string]any{"/nodes/svc/cost/default": 1, "/nodes/svc/cost/max": 3},
			warns: []expect{{RuleCost, "/cost", "default 0.5 became 1 and max 2.25 became 3"}},
		},
		{
			name:  "a max below the default is raised to the default",
			body:  `{"name":"svc","version":1,"cost":{"field":"kb","default":4,"max":2},"budgets":[` + budget("g", "") + `]}`,
			v2:    map[string]any{"/nodes/svc/cost/default": 4, "/nodes/svc/cost/max": 4},
			warns: []expect{{RuleCost, "/cost", "max 2 became 4"}},
		},
		{
			name: "a cost without default or max defaults to one",
			body: `{"name":"svc","version":1,"cost":{"field":"kb"},"budgets":[` + budget("g", "") + `]}`,
			v2:   map[string]any{"/nodes/svc/cost/default": 1, "/nodes/svc/cost/max": 1},
		},
		{
			name:  "pacing.batch becomes the node batch, clamped, and leaseSeconds is dropped",
			body:  target(budget("g", ""), `"pacing":{"leaseSeconds":30,"batch":0}`),
			v2:    map[string]any{"/nodes/svc/batch": 1},
			warns: []expect{{RulePacing, "/pacing", "leaseSeconds 30 was dropped"}},
		},
		{
			name:  "absent pacing applies v1's default and still warns",
			body:  target(budget("g", ""), ""),
			v2:    map[string]any{"/nodes/svc/batch": 200},
			warns: []expect{{RulePacing, "", "pacing was absent"}},
		},
		{
			name:  "pacing.batch above 1000 is clamped",
			body:  target(budget("g", ""), `"pacing":{"batch":5000}`),
			v2:    map[string]any{"/nodes/svc/batch": 1000},
			warns: []expect{{RulePacing, "/pacing", "batch 5000 became the node's batch 1000"}},
		},
		{
			name:  "admitted.partitions becomes the ingress width and partitionBy is ignored",
			body:  target(budget("g", ""), `"admitted":{"partitionBy":"entity","partitions":0}`),
			v2:    map[string]any{"/nodes/svc/ingress": map[string]any{"partitions": 1, "http": true}},
			warns: []expect{{RuleAdmitted, "/admitted", `admitted.partitionBy "entity" is ignored`}},
		},
		{
			name:  "absent admitted gives 64 partitions and still warns",
			body:  target(budget("g", ""), ""),
			v2:    map[string]any{"/nodes/svc/ingress/partitions": 64},
			warns: []expect{{RuleAdmitted, "", "admitted.partitions 64 became the ingress partitions 64"}},
		},
		{
			name:   "shardBy and shards are no-ops",
			body:   target(budget("g", ""), `"shardBy":"tenant","shards":12`),
			absent: []string{"/nodes/svc/shards", "/nodes/svc/shardBy"},
			warns:  []expect{{RuleShards, "/shardBy", `shardBy "tenant" and shards 12 are no-ops`}},
		},
		{
			name:  "shards alone is a no-op too",
			body:  target(budget("g", ""), `"shards":3`),
			warns: []expect{{RuleShards, "/shards", "shards 3 is a no-op"}},
		},
		{
			name:  "free-text egress is ignored",
			body:  target(budget("g", ""), `"egress":"https://vendor.example/api"`),
			v2:    map[string]any{"/nodes/svc/egress": "gate.acme.svc.admitted.default"},
			warns: []expect{{RuleEgress, "/egress", `egress "https://vendor.example/api" is free text and was ignored`}},
		},
		{
			name: "a node of only scoped or matched budgets gets a pass-through budget",
			body: target(budget("acct", `"scope":["account"]`)+","+budget("w", `"match":{"op":["write"]}`), ""),
			v2: map[string]any{"/nodes/svc/budgets/2": map[string]any{"id": "passthrough", "count": 1000000,
				"timeMs": 1000, "subWindows": 1, "confidence": "inferred"}},
			warns: []expect{{RuleNodeBudget, "/budgets", "pass-through budget \"passthrough\" of 1000000 per second"}},
		},
		{
			name:  "a target with no budgets gets a pass-through budget",
			body:  target("", ""),
			v2:    map[string]any{"/nodes/svc/budgets/0/id": "passthrough"},
			warns: []expect{{RuleNodeBudget, "/budgets", "it has 0 budget(s)"}},
		},
		{
			name:  "missing lanes still warn about the default lane's concurrency",
			body:  target(budget("g", ""), ""),
			warns: []expect{{RuleLaneConcurrency, "", "lane concurrency 8 was not carried over (no lanes were declared"}},
		},
		{
			name:   "lanes with concurrency 0 produce no lane-concurrency warning",
			body:   target(budget("g", ""), `"lanes":[{"name":"main","cap":"ceiling","concurrency":0}]`),
			absent: []string{"/nodes/svc/concurrency"},
			silent: []string{RuleLaneConcurrency},
			warns:  []expect{{RuleLanes, "/lanes", `lane "main" became path "svc"`}},
		},
		{
			name:  "the largest lane concurrency is named",
			body:  target(budget("g", ""), `"lanes":[{"name":"a","cap":"ceiling","concurrency":3},{"name":"b","cap":"share:0.5","concurrency":16}]`),
			warns: []expect{{RuleLaneConcurrency, "/lanes", "lane concurrency 16 was not carried over"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkCase(t, c.body, c.v2, c.absent, c.warns, c.silent)
		})
	}
}

func TestTargetBecomesOneNodeGraph(t *testing.T) {
	t.Parallel()
	body := target(budget("g", ""), `"lanes":[{"name":"bulk","cap":"ceiling"},{"name":"live","cap":"share:0.25","default":true}]`)
	body = strings.Replace(body, `"name":"svc"`, `"name":"billing.stripe"`, 1)
	doc, ws := checkCase(t, body, map[string]any{
		"/application":          "acme",
		"/graph":                "stripe",
		"/version":              4,
		"/nodes/stripe/egress":  "gate.acme.billing.stripe.admitted.live",
		"/nodes/stripe/ingress": map[string]any{"partitions": 64, "http": true},
		"/paths/0":              map[string]any{"name": "bulk", "priority": 0, "share": 1, "nodes": []string{"stripe"}},
		"/paths/1":              map[string]any{"name": "live", "priority": 1, "share": 0.25, "nodes": []string{"stripe"}},
	}, []string{"/counters", "/maxAttempts", "/watch", "/paths/2"}, []expect{
		{RuleName, "/name", `v1 target "billing.stripe" became graph "stripe" with one node "stripe"`},
		{RuleConsume, "", `"gate.acme.billing.stripe.admitted.live"`},
		{RuleLanes, "/lanes", "2 lanes became 2 paths"},
	}, []string{RuleEdges, RuleBreach, RuleEntry})
	_ = doc
	// Spec §7.2 order for a target.
	want := []string{RuleName, RuleCap, RuleAlignment, RuleCost, RuleLaneConcurrency, RulePacing, RuleAdmitted, RuleConsume, RuleLanes}
	if got := ws.Rules(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("rule order = %v, want %v", got, want)
	}
}

func TestLaneCapsBecomeShares(t *testing.T) {
	t.Parallel()
	// tightest = min(100/1, 30/60) = 0.5 items/s
	budgets := budget("fast", "") + `,{"id":"slow","cap":30,"periodSeconds":60,"alignment":"calendar","confidence":"assumed"}`
	cases := []struct {
		name   string
		lanes  string
		shares []float64
		warns  []expect
	}{
		{"ceiling is the full share", `{"name":"a","cap":"ceiling"},{"name":"b","cap":"ceiling"}`, []float64{1, 1}, nil},
		{"share is clamped to 0.01..1", `{"name":"a","cap":"ceiling"},{"name":"b","cap":"share:0.001"},{"name":"c","cap":"share:3"},{"name":"d","cap":"share:0.4"}`,
			[]float64{1, 0.01, 1, 0.4},
			[]expect{{RuleLaneCap, "/lanes/1/cap", "share:0.001 became share 0.01"}, {RuleLaneCap, "/lanes/2/cap", "share:3 became share 1.00"}}},
		{"absolute is a fraction of the tightest budget", `{"name":"a","cap":"ceiling"},{"name":"b","cap":"absolute:0.125"},{"name":"c","cap":"absolute:9"}`,
			[]float64{1, 0.25, 1},
			[]expect{{RuleLaneCap, "/lanes/1/cap", "absolute:0.125 became share 0.25 of the node's tightest budget (0.5 items/s)"}}},
		{"ceiling-minus-measured is one minus the floor to 0.05", `{"name":"a","cap":"ceiling"},{"name":"b","cap":"ceiling-minus-measured","floor":0.33},{"name":"c","cap":"ceiling-minus-measured","floor":1},{"name":"d","cap":"ceiling-minus-measured"}`,
			[]float64{1, 0.65, 0.05, 1},
			[]expect{{RuleLaneCap, "/lanes/1/cap", "floor 0.33 became share 0.65"}, {RuleLaneCap, "/lanes/2/cap", "floor 1 became share 0.05"}}},
		{"the first lane always takes the full share", `{"name":"a","cap":"share:0.2"},{"name":"b","cap":"ceiling"}`,
			[]float64{1, 1},
			[]expect{{RuleLaneCap, "/lanes/0/cap", `cap "share:0.2" was ignored`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v2 := map[string]any{}
			for i, s := range c.shares {
				v2[fmt.Sprintf("/paths/%d/share", i)] = s
				v2[fmt.Sprintf("/paths/%d/priority", i)] = i
			}
			checkCase(t, target(budgets, `"lanes":[`+c.lanes+`]`), v2, []string{fmt.Sprintf("/paths/%d", len(c.shares))},
				append(c.warns, expect{RuleLanes, "/lanes", "receives every message"}), nil)
		})
	}
}

// graph is a v1 GraphSpec with the given nodes and extra root fields.
func graph(nodes string, extra string) string {
	doc := `{"application":"channel","name":"airbnb","version":7,"nodes":{` + nodes + `}`
	if extra != "" {
		doc += "," + extra
	}
	return doc + "}"
}

func node(extra string) string {
	n := `{"cost":{"field":"rooms","default":1,"max":1},"budgets":[` + budget("g", "") + `]`
	if extra != "" {
		n += "," + extra
	}
	return n + "}"
}

func TestGraphFieldsAreMappedAndNamed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		body   string
		v2     map[string]any
		absent []string
		warns  []expect
		silent []string
	}{
		{
			name: "entry becomes a Gate-owned ingress and only entries get one",
			body: graph(`"a":`+node(`"entry":true`)+`,"b":`+node(`"entry":false`), `"edges":[{"from":"a","to":"b"}],"consume":["b"]`),
			v2: map[string]any{"/nodes/a/ingress": map[string]any{"partitions": 64, "http": true},
				"/nodes/b/egress": map[string]any{"queue": "gate.channel.airbnb.b.admitted.default"}},
			absent: []string{"/nodes/b/ingress", "/nodes/a/egress"},
			warns: []expect{{RuleEntry, "/nodes/a/entry", `"gate.channel.airbnb.a.ingress"`},
				{RuleConsume, "/consume/0", `consume "b" became egress {"queue": "gate.channel.airbnb.b.admitted.default"} with no group`},
				{RuleAdmitted, "/nodes/b", "is not an entry"}},
		},
		{
			name: "edges become one path per entry following the first edge",
			body: graph(`"a":`+node(`"entry":true`)+`,"b":`+node("")+`,"c":`+node("")+`,"d":`+node(`"entry":true`),
				`"edges":[{"from":"a","to":"b","priority":2},{"from":"b","to":"c"},{"from":"b","to":"d"},{"from":"d","to":"c","priority":1}],"consume":["c"]`),
			v2: map[string]any{
				"/paths/0": map[string]any{"name": "a", "priority": 2, "share": 1, "nodes": []string{"a", "b", "c"}},
				"/paths/1": map[string]any{"name": "d", "priority": 1, "share": 1, "nodes": []string{"d", "c"}},
			},
			absent: []string{"/paths/2"},
			warns:  []expect{{RuleEdges, "/edges", "4 edge(s) became 2 path(s)"}, {RuleEdges, "/edges", "edges not followed: b -> d"}},
		},
		{
			name:  "a cycle stops the chain",
			body:  graph(`"a":`+node(`"entry":true`)+`,"b":`+node(""), `"edges":[{"from":"a","to":"b"},{"from":"b","to":"a"}],"consume":["b"]`),
			v2:    map[string]any{"/paths/0/nodes": []string{"a", "b"}},
			warns: []expect{{RuleEdges, "/edges", "edges not followed: b -> a"}},
		},
		{
			name:  "no edges still warns and yields one-node paths",
			body:  graph(`"a":`+node(`"entry":true`), `"consume":["a"]`),
			v2:    map[string]any{"/paths/0": map[string]any{"name": "a", "priority": 0, "share": 1, "nodes": []string{"a"}}},
			warns: []expect{{RuleEdges, "", "0 edge(s) became 1 path(s)"}},
		},
		{
			name: "every lane path of an entry takes the entry edge's priority",
			body: graph(`"a":`+node(`"entry":true,"lanes":[{"name":"hi","cap":"ceiling"},{"name":"lo","cap":"share:0.5"}]`)+`,"b":`+node(""),
				`"edges":[{"from":"a","to":"b","priority":3}],"consume":["b"]`),
			v2: map[string]any{
				"/paths/0": map[string]any{"name": "hi", "priority": 3, "share": 1, "nodes": []string{"a", "b"}},
				"/paths/1": map[string]any{"name": "lo", "priority": 3, "share": 0.5, "nodes": []string{"a", "b"}},
			},
		},
		{
			name: "lane names that collide across entries are prefixed by the entry",
			body: graph(`"a":`+node(`"entry":true,"lanes":[{"name":"x","cap":"ceiling"},{"name":"y","cap":"ceiling"}]`)+
				`,"b":`+node(`"entry":true,"lanes":[{"name":"x","cap":"ceiling"},{"name":"z","cap":"ceiling"}]`), `"consume":["a","b"]`),
			v2: map[string]any{"/paths/0/name": "x", "/paths/1/name": "y", "/paths/2/name": "b-x", "/paths/3/name": "z"},
		},
		{
			name:  "lanes on a node that is not an entry are ignored",
			body:  graph(`"a":`+node(`"entry":true`)+`,"b":`+node(`"lanes":[{"name":"x","cap":"ceiling"}]`), `"edges":[{"from":"a","to":"b"}],"consume":["b"]`),
			warns: []expect{{RuleLanes, "/nodes/b/lanes", "not an entry, so its 1 lane(s) were ignored"}},
		},
		{
			name:  "consume of the default lane names it",
			body:  graph(`"a":`+node(`"entry":true,"lanes":[{"name":"p","cap":"ceiling"},{"name":"q","cap":"ceiling","default":true}]`), `"consume":["a"]`),
			v2:    map[string]any{"/nodes/a/egress/queue": "gate.channel.airbnb.a.admitted.q"},
			warns: []expect{{RuleConsume, "/consume/0", "admitted.q"}},
		},
		{
			name:  "consume of an unknown node is ignored with a warning",
			body:  graph(`"a":`+node(`"entry":true`), `"consume":["a","ghost"]`),
			warns: []expect{{RuleConsume, "/consume/1", `consume "ghost" names no node of this graph`}},
		},
		{
			name:  "a repeated consume is ignored with a warning",
			body:  graph(`"a":`+node(`"entry":true`), `"consume":["a","a"]`),
			v2:    map[string]any{"/nodes/a/egress/queue": "gate.channel.airbnb.a.admitted.default"},
			warns: []expect{{RuleConsume, "/consume/0", "became egress"}, {RuleConsume, "/consume/1", `consume "a" repeats /consume/0`}},
		},
		{
			name:  "breach becomes maxAttempts and names the reenter route",
			body:  graph(`"a":`+node(`"entry":true`), `"consume":["a"],"breach":[{"when":{"status":429},"retryTo":"origin-entry","maxAttempts":4},{"when":{"outcome":"timeout"},"retryTo":"self","maxAttempts":2}]`),
			v2:    map[string]any{"/maxAttempts": 4},
			warns: []expect{{RuleBreach, "/breach", "2 breach rule(s) became maxAttempts 4; the trigger (when) moved to your worker"}, {RuleBreach, "/breach", "calls backoff (POST /v1/apps/channel/graphs/airbnb/nodes/{node}/backoff"}, {RuleBreach, "/breach", "calls reenter (POST /v1/apps/channel/graphs/airbnb/reenter"}, {RuleBreach, "/breach", `retryTo "self" ignored`}},
		},
		{
			name: "breach with zero attempts still allows one",
			body: graph(`"a":`+node(`"entry":true`), `"consume":["a"],"breach":[{"maxAttempts":0}]`),
			v2:   map[string]any{"/maxAttempts": 1},
		},
		{
			name:   "no breach leaves maxAttempts absent",
			body:   graph(`"a":`+node(`"entry":true`), `"consume":["a"],"breach":[]`),
			absent: []string{"/maxAttempts"},
			silent: []string{RuleBreach},
		},
		{
			name:  "node free-text egress is ignored",
			body:  graph(`"a":`+node(`"entry":true,"egress":"vendor"`), `"consume":["a"]`),
			warns: []expect{{RuleEgress, "/nodes/a/egress", `egress "vendor" is free text`}},
		},
		{
			name:  "node names with a slash are escaped in pointers",
			body:  graph(`"a/b":`+node(`"entry":true,"egress":"x"`), `"consume":["a/b"]`),
			warns: []expect{{RuleEgress, "/nodes/a~1b/egress", ""}, {RuleEntry, "/nodes/a~1b/entry", ""}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkCase(t, c.body, c.v2, c.absent, c.warns, c.silent)
		})
	}
}

func TestGraphWarningOrder(t *testing.T) {
	t.Parallel()
	body := graph(`"b":`+node(`"entry":true,"lanes":[{"name":"x","cap":"ceiling"},{"name":"y","cap":"absolute:1"}],"shardBy":"host","egress":"t"`)+
		`,"a":`+node(""), `"edges":[{"from":"b","to":"a"}],"consume":["a"],"breach":[{"maxAttempts":3}]`)
	_, ws, err := ToV2([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range ws {
		got = append(got, f.Rule+"@"+f.At)
	}
	want := []string{
		"breach@/breach",
		"cap@/nodes/a/budgets/0/cap", "alignment@/nodes/a/budgets/0/alignment", "cost@/nodes/a/cost",
		"consume@/consume/0", "lane-concurrency@/nodes/a", "pacing@/nodes/a", "admitted@/nodes/a",
		"entry@/nodes/b/entry", "cap@/nodes/b/budgets/0/cap", "alignment@/nodes/b/budgets/0/alignment", "cost@/nodes/b/cost",
		"lane-concurrency@/nodes/b/lanes", "pacing@/nodes/b", "admitted@/nodes/b", "shards@/nodes/b/shardBy", "egress@/nodes/b/egress",
		"lanes@/nodes/b/lanes", "lane-cap@/nodes/b/lanes/1/cap",
		"edges@/edges",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEdgeChainStopsAfter32Steps(t *testing.T) {
	t.Parallel()
	var nodes, edges []string
	for i := 0; i <= 40; i++ {
		extra := ""
		if i == 0 {
			extra = `"entry":true`
		}
		nodes = append(nodes, fmt.Sprintf(`"n%02d":%s`, i, node(extra)))
		if i > 0 {
			edges = append(edges, fmt.Sprintf(`{"from":"n%02d","to":"n%02d"}`, i-1, i))
		}
	}
	out, _, err := ToV2([]byte(graph(strings.Join(nodes, ","), `"edges":[`+strings.Join(edges, ",")+`]`)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := lookup(decode(t, out), "/paths/0/nodes")
	if n := len(got.([]any)); n != 33 {
		t.Errorf("chain has %d nodes, want 33 (the entry plus 32 steps)", n)
	}
}

func TestShapeErrorsNameThePointer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, at, phrase string
	}{
		{"not an object", `[1,2]`, "", "must be a JSON object"},
		{"unknown target field", target(budget("g", ""), `"paths":[]`), "/paths", `unknown field "paths" in a v1 TargetSpec`},
		{"unknown graph field", graph(`"a":`+node(`"entry":true`), `"lanes":[]`), "/lanes", `unknown field "lanes" in a v1 GraphSpec`},
		{"unknown node field", graph(`"a":`+node(`"ingress":true`), ""), "/nodes/a/ingress", `unknown field "ingress" in a v1 node`},
		{"unknown budget field", target(budget("g", `"count":5`), ""), "/budgets/0/count", `unknown field "count" in a v1 budget`},
		{"unknown cost field", `{"name":"s","version":1,"budgets":[],"cost":{"path":"payload.x"}}`, "/cost/path", `unknown field "path" in a v1 cost`},
		{"unknown lane field", target(budget("g", ""), `"lanes":[{"name":"a","cap":"ceiling","share":1}]`), "/lanes/0/share", "in a v1 lane"},
		{"unknown pacing field", target(budget("g", ""), `"pacing":{"rate":1}`), "/pacing/rate", "in a v1 pacing"},
		{"unknown admitted field", target(budget("g", ""), `"admitted":{"width":1}`), "/admitted/width", "in a v1 admitted"},
		{"unknown match field", target(budget("g", `"match":{"ops":["a"]}`), ""), "/budgets/0/match/ops", "in a v1 match"},
		{"unknown edge field", graph(`"a":`+node(`"entry":true`), `"edges":[{"from":"a","to":"a","weight":1}]`), "/edges/0/weight", "in a v1 edge"},
		{"unknown breach field", graph(`"a":`+node(`"entry":true`), `"breach":[{"retry":1}]`), "/breach/0/retry", "in a v1 breach rule"},
		{"unknown breach condition field", graph(`"a":`+node(`"entry":true`), `"breach":[{"when":{"code":1}}]`), "/breach/0/when/code", "in a v1 breach condition"},
		{"missing version", `{"name":"s","budgets":[],"cost":{"field":"x"}}`, "/version", `requires "version"`},
		{"missing target budgets", `{"name":"s","version":1,"cost":{"field":"x"}}`, "/budgets", `requires "budgets"`},
		{"missing cost", `{"name":"s","version":1,"budgets":[]}`, "/cost", `requires "cost"`},
		{"missing node cost", graph(`"a":{"entry":true}`, ""), "/nodes/a/cost", `requires "cost"`},
		{"missing alignment", target(`{"id":"g","cap":1,"periodSeconds":1,"confidence":"assumed"}`, ""), "/budgets/0/alignment", `requires "alignment"`},
		{"missing confidence", target(`{"id":"g","cap":1,"periodSeconds":1,"alignment":"rolling"}`, ""), "/budgets/0/confidence", `requires "confidence"`},
		{"float version", strings.Replace(target(budget("g", ""), ""), `"version":4`, `"version":4.0`, 1), "/version", "unsigned 32-bit integer"},
		{"negative version", strings.Replace(target(budget("g", ""), ""), `"version":4`, `"version":-1`, 1), "/version", "unsigned 32-bit integer"},
		{"float period", target(budget("g", `"periodSeconds":1.5`), ""), "/budgets/0/periodSeconds", "must be an integer"},
		{"bad alignment", target(budget("g", `"alignment":"sliding"`), ""), "/budgets/0/alignment", `got "sliding"`},
		{"bad store", target(budget("g", `"store":"redis"`), ""), "/budgets/0/store", `got "redis"`},
		{"bad shardBy", target(budget("g", ""), `"shardBy":"ip"`), "/shardBy", `got "ip"`},
		{"bad partitionBy", target(budget("g", ""), `"admitted":{"partitionBy":"random"}`), "/admitted/partitionBy", `got "random"`},
		{"bad lane cap", target(budget("g", ""), `"lanes":[{"name":"a","cap":"half"}]`), "/lanes/0/cap", `got "half"`},
		{"non-finite lane cap", target(budget("g", ""), `"lanes":[{"name":"a","cap":"share:NaN"}]`), "/lanes/0/cap", "finite number"},
		{"node not an object", graph(`"a":[]`, ""), "/nodes/a", "must be a JSON object"},
		{"budgets not an array", `{"name":"s","version":1,"budgets":{},"cost":{"field":"x"}}`, "/budgets", "must be an array"},
		{"string cap", target(`{"id":"g","cap":"10","periodSeconds":1,"alignment":"rolling","confidence":"assumed"}`, ""), "/budgets/0/cap", "must be a number, got a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, ws, err := ToV2([]byte(c.body))
			if err == nil {
				t.Fatalf("accepted:\n%s", out)
			}
			if out != nil || ws != nil {
				t.Errorf("an error must come with no output")
			}
			if !errors.Is(err, ErrShape) {
				t.Errorf("error %v does not wrap ErrShape", err)
			}
			var se *ShapeError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *ShapeError", err)
			}
			if se.At != c.at {
				t.Errorf("At = %q, want %q (%v)", se.At, c.at, err)
			}
			if !strings.Contains(err.Error(), c.phrase) {
				t.Errorf("error %q does not contain %q", err, c.phrase)
			}
		})
	}
}

func TestIsV1(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want bool
	}{
		{"v1 target", target(budget("g", ""), ""), true},
		{"v1 graph", graph(`"a":`+node(`"entry":true`), `"consume":["a"]`), true},
		{"v1 graph with only nodes and version", `{"version":1,"nodes":{"a":{"entry":true,"cost":{"field":"x"}}}}`, true},
		{"v1 graph recognised by a budget", `{"version":1,"nodes":{"a":{"budgets":[{"cap":1}]}}}`, true},
		{"v2 minimal target", `{"version":1,"nodes":{"limit":{"ingress":true,"budgets":[{"id":"global","count":100,"timeMs":1000}],"egress":"demo.out"}},"paths":[{"name":"main","nodes":["limit"]}]}`, false},
		{"v2 without paths", `{"version":1,"nodes":{"limit":{"ingress":true,"budgets":[{"count":1,"timeMs":1000}]}}}`, false},
		{"v2 with graph field", `{"graph":"x","name":"y","version":1}`, false},
		{"v2 with watch", `{"name":"y","watch":{"durationSeconds":120}}`, false},
		{"empty object", `{}`, false},
		{"array", `[]`, false},
		{"garbage", `not json`, false},
		{"null", `null`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := IsV1([]byte(c.body)); got != c.want {
				t.Errorf("IsV1 = %v, want %v", got, c.want)
			}
		})
	}
}

// A v1 document as users send it carries no "name" when the route names
// it: the route's name is the name; without a route name it is required.
func TestMapTakesTheNameFromTheRoute(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		shape      Shape
	}{
		{"target", `{"version":1,"budgets":[{"id":"g","cap":5,"periodSeconds":1,"alignment":"rolling","confidence":"assumed"}],"cost":{"field":"units"}}`, ShapeTarget},
		{"graph", `{"version":1,"nodes":{"a":{"entry":true,"budgets":[{"id":"g","cap":5,"periodSeconds":1,"alignment":"rolling","confidence":"assumed"}],"cost":{"field":"units"}}},"consume":["a"]}`, ShapeGraph},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, _, err := Map([]byte(c.body), Options{Shape: c.shape, Application: "app", Name: "routed"})
			if err != nil {
				t.Fatalf("a v1 %s without name on a named route: %v", c.name, err)
			}
			if got, _ := lookup(decode(t, out), "/graph"); got != "routed" {
				t.Fatalf("graph %v, want the route's name routed", got)
			}
			if _, _, err := Map([]byte(c.body), Options{Shape: c.shape}); err == nil || !strings.Contains(err.Error(), `requires "name"`) {
				t.Fatalf("without a route name: %v, want requires \"name\"", err)
			}
		})
	}
}

func TestMapPinsIdentityAndShape(t *testing.T) {
	t.Parallel()
	body := target(budget("g", ""), "")
	out, ws, err := Map([]byte(body), Options{Application: "route-app", Name: "route.name"})
	if err != nil {
		t.Fatal(err)
	}
	doc := decode(t, out)
	for ptr, want := range map[string]any{
		"/application":       "route-app",
		"/graph":             "name",
		"/nodes/name/egress": "gate.route-app.route.name.admitted.default",
	} {
		if got, _ := lookup(doc, ptr); got != want {
			t.Errorf("%s = %v, want %v", ptr, got, want)
		}
	}
	if len(ws) == 0 {
		t.Error("no warnings")
	}
	// A target route reading a graph body refuses it as a TargetSpec.
	_, _, err = Map([]byte(graph(`"a":`+node(`"entry":true`), "")), Options{Shape: ShapeTarget})
	var se *ShapeError
	if !errors.As(err, &se) || se.At != "/nodes" {
		t.Errorf("graph body read as a target: err = %v, want unknown field at /nodes", err)
	}
	// A graph route reading a target body refuses it as a GraphSpec.
	_, _, err = Map([]byte(body), Options{Shape: ShapeGraph})
	if !errors.As(err, &se) || se.At != "/budgets" {
		t.Errorf("target body read as a graph: err = %v, want unknown field at /budgets", err)
	}
}

func TestToV2IsDeterministic(t *testing.T) {
	t.Parallel()
	body := []byte(graph(`"c":`+node(`"entry":true`)+`,"a":`+node(`"entry":true`)+`,"b":`+node(""),
		`"edges":[{"from":"a","to":"b"},{"from":"c","to":"b"}],"consume":["b"]`))
	first, fw, err := ToV2(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		again, aw, err := ToV2(body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("run %d differs:\n%s\n%s", i, first, again)
		}
		if render(fw) != render(aw) {
			t.Fatalf("run %d warnings differ", i)
		}
	}
}

func TestHugeAndNegativeValuesSaturate(t *testing.T) {
	t.Parallel()
	checkCase(t,
		`{"name":"svc","version":1,"cost":{"field":"f","default":1e300,"max":-5},"budgets":[`+
			`{"id":"g","cap":1e300,"periodSeconds":9223372036854775807,"alignment":"rolling","confidence":"assumed"}]}`,
		map[string]any{
			"/nodes/svc/budgets/0/count":  int64(9223372036854775807),
			"/nodes/svc/budgets/0/timeMs": int64(9223372036854775807),
			"/nodes/svc/cost/default":     int64(9223372036854775807),
			"/nodes/svc/cost/max":         int64(9223372036854775807),
		}, nil, nil, nil)
	checkCase(t,
		graph(`"a":`+node(`"entry":true,"admitted":{"partitions":99999999999}`)+`,"b":`+node(""),
			`"edges":[{"from":"a","to":"b","priority":-4}],"consume":["b"],"breach":[{"maxAttempts":99999999999}]`),
		map[string]any{
			"/maxAttempts":                uint32(4294967295),
			"/paths/0/priority":           0,
			"/nodes/a/ingress/partitions": uint32(4294967295),
		}, nil, nil, nil)
}
