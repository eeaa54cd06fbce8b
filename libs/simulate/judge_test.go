package simulate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// sharedDoc is a random graph of two or three entry nodes and two exit
// nodes on two to four paths: budgets of one to ten seconds with and
// without sub-windows, exits sharing a key at different ceilings, entry
// costs read from the item and paths of different priorities and shares.
func sharedDoc(rnd *rand.Rand) (string, []string) {
	budget := func(id string) map[string]any {
		// One or two sub-windows, each with room for the dearest item at
		// the narrowest share.
		ms := []int{1000, 2000, 5000, 10000}[rnd.IntN(4)]
		b := map[string]any{"id": id, "count": 40 + rnd.IntN(80), "timeMs": ms, "subWindows": 1}
		if ms > 1000 && rnd.IntN(2) == 0 {
			b["subWindows"] = 2
		}
		return b
	}
	nodes := map[string]any{}
	entries := 2 + rnd.IntN(2)
	for i := range entries {
		n := map[string]any{"ingress": true, "budgets": []any{budget("in")}}
		if rnd.IntN(2) == 0 {
			n["cost"] = map[string]any{"path": "payload.units", "default": 1, "max": 4}
		}
		nodes[fmt.Sprintf("e%d", i)] = n
	}
	shared := budget("ip")
	shared["sharedKey"] = "ip"
	for i := range 2 {
		budgets := []any{budget("out")}
		if rnd.IntN(3) > 0 {
			budgets = append(budgets, shared)
		}
		nodes[fmt.Sprintf("x%d", i)] = map[string]any{"budgets": budgets, "egress": fmt.Sprintf("app.out%d", i)}
	}
	var paths []any
	var names []string
	// The first paths visit every node at the top priority (share 1, as
	// the compiler asks); later ones come at a lower priority and share.
	for i := range entries + rnd.IntN(3) {
		name := fmt.Sprintf("p%d", i)
		names = append(names, name)
		prio, share := 0, 1.0
		if i >= entries {
			prio, share = 1, []float64{0.25, 0.5, 1}[rnd.IntN(3)]
		}
		paths = append(paths, map[string]any{"name": name, "priority": prio, "share": share,
			"nodes": []any{fmt.Sprintf("e%d", i%entries), fmt.Sprintf("x%d", i%2)}})
	}
	raw, _ := json.Marshal(map[string]any{"version": 1, "nodes": nodes, "paths": paths})
	return string(raw), names
}

// The replay judges each claim from one reading of its counters
// (budget.Table.AdmitRuns); the same replay with every claim run through
// the admission loop itself — each try charged, read back and refunded —
// gives exactly the same answer, window for window: admitted and delayed
// items, refusals per budget, backlogs, drain times and every counter
// window's total per path, for random graphs (shared keys at different
// ceilings, windows of one to ten seconds, bursts that keep stages
// refused for many seconds) over many seeds.
func TestGraphOneReadingIsTheLoop(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(17, 29))
	refused := 0
	const rounds = 300
	for round := range rounds {
		doc, paths := randomDoc(rnd)
		if round%3 > 0 {
			doc, paths = sharedDoc(rnd)
		}
		p := compile(t, doc)
		secs := 10 + rnd.IntN(90)
		arr := map[string][]Second{}
		for _, path := range paths {
			for s := range secs {
				n := int64(rnd.IntN(30))
				if s%20 < 3 {
					n += int64(rnd.IntN(150)) // a burst
				}
				if n > 0 {
					arr[path] = append(arr[path], Second{T: int64(s) * 1000, Items: n, Cost: n * int64(1+rnd.IntN(4))})
				}
			}
		}
		in := GraphInput{Trace: true, Plan: p, Start: 0, End: int64(secs) * 1000, Arrivals: arr}
		fast := Graph(in)
		in.byLoop = true
		loop := Graph(in)
		if a, b := asJSON(t, fast), asJSON(t, loop); a != b {
			t.Fatalf("round %d: one reading\n%s\nthe loop\n%s\n%s", round, a, b, doc)
		}
		for _, n := range fast.Nodes {
			if len(n.Refusals) > 0 {
				refused++
				break
			}
		}
	}
	if refused < rounds/2 {
		t.Fatalf("only %d of %d rounds refused a claim: the comparison is too easy", refused, rounds)
	}
}
