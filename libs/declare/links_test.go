package declare

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/queen-mq/gate/libs/graph"
)

// linkedDoc is graph i of a store where graphs share queues and shared
// keys by design: its ingress is Gate-owned or one of a few named queues,
// its egress one of a few queues (some of them others' ingresses), its
// budget now and then a shared key declared with one of two counts.
func linkedDoc(r *rand.Rand, app string, i int) m {
	in := any(true)
	if r.IntN(3) == 0 {
		in = m{"queue": fmt.Sprintf("%s.feed-%d", app, r.IntN(7))}
	}
	egress := fmt.Sprintf("%s.g%d.out", app, i)
	switch r.IntN(4) {
	case 0:
		egress = fmt.Sprintf("%s.feed-%d", app, r.IntN(7))
	case 1:
		egress = fmt.Sprintf("%s.common-%d", app, r.IntN(5))
	case 2:
		// Another graph's Gate-owned ingress: its output feeds that one.
		egress = fmt.Sprintf("gate.%s.g%d.in.in", app, r.IntN(i+1))
	}
	b := m{"id": "in", "count": 100, "timeMs": 1000}
	if r.IntN(3) == 0 {
		b["sharedKey"] = fmt.Sprintf("ip-%d", r.IntN(4))
		b["count"] = 100 + 50*r.IntN(2)
	}
	return m{"application": app, "graph": fmt.Sprintf("g%d", i), "version": 1,
		"nodes": m{
			"in":  m{"ingress": in, "budgets": a{b}},
			"out": m{"budgets": a{m{"id": "out", "count": 50, "timeMs": 1000}}, "egress": egress},
		},
		"paths": a{m{"name": "main", "nodes": a{"in", "out"}}}}
}

// Checking a declaration against only the graphs that share a link with
// it (Input.Related over an index of Links) finds exactly what checking it
// against every stored graph finds: every cross-graph warning and
// conflict, at 2,000 graphs of two applications, for graphs new and
// stored.
func TestRelatedFindsWhatEveryGraphFinds(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 24))
	const n = 1000
	var all []Stored
	index := map[string][]int{}
	for _, app := range []string{"shop", "ads"} {
		for i := range n {
			raw := body(t, linkedDoc(r, app, i))
			d, err := graph.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range Links(d) {
				index[l] = append(index[l], len(all))
			}
			all = append(all, Stored{App: app, Name: d.Graph, Doc: d})
		}
	}
	fired := map[string]int{}
	for k := range 300 {
		app := []string{"shop", "ads"}[k%2]
		// Half re-declare a stored graph (its previous version is among
		// the stored), half declare a new one.
		i := r.IntN(n)
		if k%4 >= 2 {
			i = n + k
		}
		doc := linkedDoc(r, app, i)
		if k%4 == 0 {
			doc["version"] = 2
		}
		in := Input{App: app, Name: fmt.Sprintf("g%d", i), Body: body(t, doc), Stored: all}
		want, err := Compile(in)
		if err != nil {
			t.Fatal(err)
		}
		asked := 0
		in.Stored = nil
		in.Related = func(links []string) []Stored {
			asked++
			seen := map[int]bool{}
			var picked []int
			for _, l := range links {
				for _, j := range index[l] {
					if !seen[j] {
						seen[j] = true
						picked = append(picked, j)
					}
				}
			}
			// The previous version of this graph, as a caller reads it.
			for j, s := range all {
				if s.App == app && s.Name == in.Name && !seen[j] {
					picked = append(picked, j)
				}
			}
			// In store order: the findings name other graphs in the order
			// they are given.
			slices.Sort(picked)
			out := []Stored{}
			for _, j := range picked {
				out = append(out, all[j])
			}
			return out
		}
		got, err := Compile(in)
		if err != nil {
			t.Fatal(err)
		}
		if asked != 1 {
			t.Fatalf("Related was asked %d times, want once", asked)
		}
		if !reflect.DeepEqual(got.Findings, want.Findings) || got.Conflict != want.Conflict || !reflect.DeepEqual(got.Unchecked, want.Unchecked) {
			t.Fatalf("%s/%s: against related graphs\n%v\nagainst every graph\n%v", app, in.Name, got.Findings, want.Findings)
		}
		for _, f := range want.Findings {
			fired[f.Rule]++
		}
	}
	// The store is built so that every cross-graph rule fires: a test
	// where none fired would prove nothing.
	for _, rule := range []string{RuleIngressOwner, RuleEgressOwner, RuleQueueCrossGraph, RuleSharedConflictGraph} {
		if fired[rule] == 0 {
			t.Errorf("rule %s never fired over 300 declarations: the store does not exercise it (fired: %v)", rule, fired)
		}
	}
}

// Links names every ingress (Gate-owned too), egress and shared key once.
func TestLinks(t *testing.T) {
	t.Parallel()
	d, err := graph.Parse(body(t, m{"application": "shop", "graph": "g", "version": 1,
		"nodes": m{
			"a": m{"ingress": true, "budgets": a{m{"id": "x", "count": 1, "timeMs": 1000, "sharedKey": "ip"}}, "egress": "shop.out"},
			"b": m{"ingress": m{"queue": "shop.feed"}, "budgets": a{m{"id": "y", "count": 1, "timeMs": 1000, "sharedKey": "ip"}}, "egress": "shop.out"},
		},
		"paths": a{m{"name": "p", "nodes": a{"a"}}, m{"name": "q", "nodes": a{"b"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	got := Links(d)
	want := []string{"queue\x00" + ingressQueue(d, "a"), "queue\x00shop.out", "shared\x00shop\x00ip", "queue\x00shop.feed"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Links = %q, want %q", got, want)
	}
	if Links(nil) != nil {
		t.Fatal("Links(nil) is not nil")
	}
}
