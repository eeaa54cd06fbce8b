package simulate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/plan"
)

func compile(t testing.TB, doc string) *plan.Plan {
	t.Helper()
	res, err := declare.Compile(declare.Input{App: "app", Name: "g", Body: []byte(doc)})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if res.Plan == nil {
		t.Fatalf("refused: %s\n%s", res.ErrorText(), doc)
	}
	return res.Plan
}

func node(t *testing.T, r *GraphResult, name string) int {
	for i, n := range r.Nodes {
		if n.Node == name {
			return i
		}
	}
	t.Fatalf("no node %s in %+v", name, r.Nodes)
	return -1
}

// A single node with one budget replays exactly like the preview.
func TestGraphSingleNodeMatchesTheWorkedCheck(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"id":"sec","count":10,"timeMs":1000}],"egress":"app.out"}},
		"paths":[{"name":"main","nodes":["n"]}]}`)
	r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 3000, Arrivals: map[string][]Second{"main": {{T: 0, Items: 25, Cost: 25}}}})
	n := r.Nodes[0]
	if n.Arrived != 25 || n.Admitted != 25 || n.DelayedItems != 15 || n.PeakBacklog != 15 || n.FinalBacklog != 0 || *n.DrainSeconds != 0 {
		t.Fatalf("node %+v: want 25 arrived and admitted, delayed 15, peak 15, final 0, drain 0", n)
	}
	if n.BoundBy == nil || *n.BoundBy != "sec" || n.Budgets[0].Windows != 3 || n.Budgets[0].FullWindows != 2 {
		t.Fatalf("bound by %v, budgets %+v: want sec, 3 windows of which 2 full", n.BoundBy, n.Budgets)
	}
	if r.Items != 25 || r.Delivered != 25 || r.DelayedItems != 15 || *r.DrainSeconds != 0 {
		t.Fatalf("totals %+v", r.GraphSimulation)
	}
	pre := Preview([]Second{{T: 0, Items: 25}}, 0, 3000, Allowance{Count: 10, Seconds: 1, CostPerItem: 1})
	if pre.Delayed != n.DelayedItems || pre.Peak != n.PeakBacklog {
		t.Fatalf("preview %+v and graph replay %+v disagree", pre, n)
	}
	// Over 2 s the backlog is not gone: 5 remain, drained one window later.
	r = Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 2000, Arrivals: map[string][]Second{"main": {{T: 0, Items: 25, Cost: 25}}}})
	if n := r.Nodes[0]; n.FinalBacklog != 5 || *n.DrainSeconds != 0 || *r.DrainSeconds != 0 {
		t.Fatalf("a backlog of 5 at a 10/s budget whose window opens at the end drains at once: %+v drain %v", n, *n.DrainSeconds)
	}
}

// Two budgets on one node (per second and per minute) both hold; the one
// that refuses most is named.
func TestGraphCombinedWindows(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"version":1,"nodes":{"n":{"ingress":true,"budgets":[
		{"id":"sec","count":10,"timeMs":1000},{"id":"min","count":100,"timeMs":60000,"subWindows":1}],"egress":"app.out"}},
		"paths":[{"name":"main","nodes":["n"]}]}`)
	var arr []Second
	for s := int64(0); s < 60; s++ {
		arr = append(arr, Second{T: s * 1000, Items: 8, Cost: 8})
	}
	r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 60000, Arrivals: map[string][]Second{"main": arr}})
	n := r.Nodes[0]
	// 480 arrive in the minute; the minute budget lets 100 through, the
	// rest waits for the next minute window.
	if n.FinalBacklog != 380 || n.BoundBy == nil || *n.BoundBy != "min" {
		t.Fatalf("node %+v bound by %v: want 380 left after the minute budget, bound by min", n, n.BoundBy)
	}
	checkWindows(t, r)
	// Drain: 380 at 10/s within 100/min: minute windows open at 60, 120,
	// 180 and 240 s; the last 80 go 10 a second from 240 s, the last at
	// 247 s → 187 s after the end.
	if n.DrainSeconds == nil || *n.DrainSeconds != 187 {
		t.Fatalf("drain %v, want 187 s", *n.DrainSeconds)
	}
}

// Two paths at a shared node: the share caps the bulk path on the one
// counter, the fast path still gets the rest.
func TestGraphSharesAtANode(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"version":1,"nodes":{
		"fast":{"ingress":true,"budgets":[{"id":"wide","count":100000,"timeMs":1000}]},"bulk":{"ingress":true,"budgets":[{"id":"wide","count":100000,"timeMs":1000}]},
		"ip":{"budgets":[{"id":"ip","count":50,"timeMs":1000}],"egress":"app.out"}},
		"paths":[{"name":"fast","priority":0,"share":1.0,"nodes":["fast","ip"]},{"name":"bulk","priority":1,"share":0.5,"nodes":["bulk","ip"]}]}`)
	var fast, bulk []Second
	for s := int64(0); s < 20; s++ {
		fast = append(fast, Second{T: s * 1000, Items: 60, Cost: 60})
		bulk = append(bulk, Second{T: s * 1000, Items: 100, Cost: 100})
	}
	r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 20000, Arrivals: map[string][]Second{"fast": fast, "bulk": bulk}})
	checkWindows(t, r)
	ip := r.Nodes[node(t, r, "ip")]
	var fastAdm, bulkAdm int64
	for _, w := range r.Windows {
		if w.Key != ip.Budgets[0].Key || w.Opened >= 20000 {
			continue
		}
		if w.Total != 50 {
			t.Fatalf("window %+v: with both paths backlogged every second admits the ceiling 50", w)
		}
		fastAdm += w.PerPath["fast"]
		bulkAdm += w.PerPath["bulk"]
	}
	for _, np := range ip.Paths {
		switch np.Path {
		case "fast":
			if np.Ceilings[0].Ceiling != 50 {
				t.Fatalf("fast ceiling %+v", np.Ceilings)
			}
		case "bulk":
			if np.Ceilings[0].Ceiling != 25 || *np.Ceilings[0].PeakUtilisation > 1 {
				t.Fatalf("bulk ceiling %+v", np.Ceilings)
			}
		}
	}
	if bulkAdm > 20*25 || fastAdm < 20*25 || fastAdm+bulkAdm != 20*50 {
		t.Fatalf("fast %d bulk %d: bulk may never pass 25 of 50 per second and fast keeps the rest", fastAdm, bulkAdm)
	}
}

// One shared key spent by two nodes of a graph is one counter.
func TestGraphSharedKeyAcrossNodes(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"version":1,"nodes":{
		"a":{"ingress":true,"budgets":[{"id":"ipa","count":20,"timeMs":1000,"sharedKey":"ip"}],"egress":"app.a"},
		"b":{"ingress":true,"budgets":[{"id":"ipb","count":20,"timeMs":1000,"sharedKey":"ip"}],"egress":"app.b"}},
		"paths":[{"name":"a","nodes":["a"]},{"name":"b","nodes":["b"]}]}`)
	arr := []Second{{T: 0, Items: 20, Cost: 20}, {T: 1000, Items: 20, Cost: 20}}
	r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 2000, Arrivals: map[string][]Second{"a": arr, "b": arr}})
	checkWindows(t, r)
	a, b := r.Nodes[node(t, r, "a")], r.Nodes[node(t, r, "b")]
	if a.FinalBacklog+b.FinalBacklog != 40 || a.Admitted+b.Admitted != 80 || *r.DrainSeconds != 1 {
		t.Fatalf("a %+v b %+v: one counter of 20/s shared by both, so 40 of 80 pass in 2 s and the rest in the 2 s after", a, b)
	}
	if a.FinalBacklog == 0 || b.FinalBacklog == 0 {
		t.Fatalf("a %d b %d left: the stages of a hop take turns, neither starves", a.FinalBacklog, b.FinalBacklog)
	}
}

// Scoped and op-filtered budgets are listed, never charged; path costs
// use the recorded cost per item.
func TestGraphUnsupportedAndCostPerItem(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"version":1,"nodes":{"n":{"ingress":true,"cost":{"path":"payload.rooms","default":1,"max":20},"budgets":[
		{"id":"global","count":30,"timeMs":1000},
		{"id":"per-account","count":25,"timeMs":1000,"scopeBy":"payload.account"},
		{"id":"deletes","count":25,"timeMs":1000,"whenOp":["photo.delete"]}],"egress":"app.out"}},
		"paths":[{"name":"main","nodes":["n"]}]}`)
	r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 1000, Arrivals: map[string][]Second{"main": {{T: 0, Items: 10, Cost: 40}}}})
	if len(r.Unsupported) != 2 || r.Unsupported[0].Budget != "per-account" || r.Unsupported[1].Budget != "deletes" {
		t.Fatalf("unsupported %+v: want per-account and deletes", r.Unsupported)
	}
	n := r.Nodes[0]
	// Costs 4 each (40 over 10 items): 7 fit 30 (28), 3 wait.
	if n.Admitted != 10 || n.FinalBacklog != 3 || n.DelayedItems != 3 || len(n.Budgets) != 1 {
		t.Fatalf("node %+v: 10 items of cost 4 against 30 → 7 admitted, 3 left; only the global budget simulated", n)
	}
	r = Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 1000, Arrivals: map[string][]Second{"main": {{T: 0, Items: 2, Cost: 120}}}})
	if r.Nodes[0].TooExpensive != 2 || r.Nodes[0].Admitted != 0 {
		t.Fatalf("items of recorded cost 60 exceed max 20: %+v", r.Nodes[0])
	}
}

// A ceiling below the item cost never drains: reported as null, not a
// made-up number, and the replay ends.
func TestGraphNeverDrains(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"version":1,"nodes":{"n":{"ingress":true,"cost":{"path":"payload.n","default":1,"max":3},"budgets":[{"id":"tiny","count":3,"timeMs":1000}],"egress":"app.out"}},
		"paths":[{"name":"main","nodes":["n"]}]}`)
	// The compiler refuses a cost that can never fit; a plan edited by hand
	// (a ceiling lowered below the item) shows the replay still ends.
	p.Nodes[0].Budgets[0].Ceilings["main"] = 2
	r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 1000, Arrivals: map[string][]Second{"main": {{T: 0, Items: 1, Cost: 3}}}})
	if r.Nodes[0].DrainSeconds != nil || r.DrainSeconds != nil || r.DelayedItems != 1 {
		t.Fatalf("%+v: an item of cost 5 never fits a ceiling of 3", r.Nodes[0])
	}
}

// checkWindows asserts the ceilings: no counter window holds more than
// the largest ceiling charged into it, and no path more than its own.
func checkWindows(t testing.TB, r *GraphResult) {
	t.Helper()
	for _, w := range r.Windows {
		if w.Total > w.Max {
			t.Fatalf("window %s ending %d holds %d over its ceiling %d", w.Key, w.End, w.Total, w.Max)
		}
		for path, v := range w.PerPath {
			if v > w.PathMax[path] {
				t.Fatalf("window %s ending %d: path %s charged %d over its ceiling %d", w.Key, w.End, path, v, w.PathMax[path])
			}
		}
	}
}

// randomDoc is a single-node or two-path document with random budgets.
func randomDoc(rnd *rand.Rand) (string, []string) {
	budget := func(id string) map[string]any {
		b := map[string]any{"id": id, "count": 30 + rnd.IntN(60), "timeMs": []int{1000, 2000, 5000, 10000}[rnd.IntN(4)]}
		if rnd.IntN(2) == 0 {
			b["subWindows"] = 1
		}
		return b
	}
	if rnd.IntN(2) == 0 {
		budgets := []any{budget("a")}
		if rnd.IntN(2) == 0 {
			budgets = append(budgets, budget("b"))
		}
		doc := map[string]any{"version": 1, "nodes": map[string]any{"n": map[string]any{"ingress": true, "cost": 1 + rnd.IntN(3), "budgets": budgets, "egress": "app.out"}},
			"paths": []any{map[string]any{"name": "main", "nodes": []any{"n"}}}}
		raw, _ := json.Marshal(doc)
		return string(raw), []string{"main"}
	}
	share := []float64{0.25, 0.5, 0.75, 1}[rnd.IntN(4)]
	doc := map[string]any{"version": 1, "nodes": map[string]any{
		"x": map[string]any{"ingress": true, "budgets": []any{budget("x")}},
		"y": map[string]any{"ingress": true, "budgets": []any{budget("y")}},
		"z": map[string]any{"budgets": []any{budget("z1"), budget("z2")}, "egress": "app.out"}},
		"paths": []any{
			map[string]any{"name": "p", "priority": 0, "share": 1.0, "nodes": []any{"x", "z"}},
			map[string]any{"name": "q", "priority": 1, "share": share, "nodes": []any{"y", "z"}}}}
	raw, _ := json.Marshal(doc)
	return string(raw), []string{"p", "q"}
}

// Property: for random documents and arrivals, no counter window ever
// holds more than its ceiling, no path more than its share, and every item
// is either admitted or still queued at each node.
func TestGraphPropertyCeilingsHold(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 5))
	for round := 0; round < 150; round++ {
		doc, paths := randomDoc(rnd)
		p := compile(t, doc)
		secs := 10 + rnd.IntN(50)
		arr := map[string][]Second{}
		for _, path := range paths {
			for s := 0; s < secs; s++ {
				if n := rnd.IntN(40) - 10; n > 0 {
					arr[path] = append(arr[path], Second{T: int64(s) * 1000, Items: int64(n), Cost: int64(n)})
				}
			}
		}
		r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: int64(secs) * 1000, Arrivals: arr})
		checkWindows(t, r)
		for _, w := range r.Windows {
			if w.End-w.Opened > 60_000 {
				t.Fatalf("round %d: window %+v longer than any declared sub-window", round, w)
			}
		}
		for _, n := range r.Nodes {
			if n.Arrived != n.Admitted+n.FinalBacklog+n.TooExpensive && n.DrainSeconds != nil {
				// FinalBacklog is at the end of the range; after the drain
				// everything arrived is admitted.
				if n.Arrived != n.Admitted+n.TooExpensive {
					t.Fatalf("round %d node %s: arrived %d, admitted %d after draining", round, n.Node, n.Arrived, n.Admitted)
				}
			}
		}
		if r.DrainSeconds != nil && r.Items != r.Delivered {
			t.Fatalf("round %d: %d items, %d delivered after draining\n%s", round, r.Items, r.Delivered, doc)
		}
	}
}

func TestGraphWindowsAreTheCeilingPerSubWindow(t *testing.T) {
	t.Parallel()
	// 50 per 10 s in 10 sub-windows: 5 per second; 100 items at t=0.
	p := compile(t, `{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"id":"b","count":50,"timeMs":10000,"subWindows":10}],"egress":"app.out"}},
		"paths":[{"name":"main","nodes":["n"]}]}`)
	r := Graph(GraphInput{Trace: true, Plan: p, Start: 0, End: 10000, Arrivals: map[string][]Second{"main": {{T: 0, Items: 100, Cost: 100}}}})
	var got []string
	for _, w := range r.Windows {
		got = append(got, fmt.Sprintf("%d:%d", w.Opened/1000, w.Total))
	}
	want := "0:5 1:5 2:5 3:5 4:5 5:5 6:5 7:5 8:5 9:5"
	if strings.Join(got[:10], " ") != want {
		t.Fatalf("windows %v, want %s", got, want)
	}
	if n := r.Nodes[0]; n.FinalBacklog != 50 || *n.DrainSeconds != 9 {
		t.Fatalf("%+v: 50 left at 5 per second, the first after the range at 10 s, the last at 19 s", n)
	}
}
