package diff_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/diff"
)

// largest is the largest document a PUT accepts in stages: 2,000 paths of
// two hops (4,000 stages of the 4,096 the worker cap allows), each path
// with its own ingress node and one shared egress node.
func largest(tb testing.TB, count int) diff.Side {
	tb.Helper()
	body := largestBody(tb, count)
	res, err := declare.Compile(declare.Input{App: "shop", Name: "big", Body: body})
	if err != nil || res.Plan == nil {
		tb.Fatalf("the largest document does not compile: %v %v", err, res.Errors())
	}
	stored, _ := res.Doc.MarshalJSON()
	return diff.Side{Doc: res.Doc, Plan: res.Plan, Body: stored}
}

func largestBody(tb testing.TB, count int) []byte {
	tb.Helper()
	nodes := m{"ip": m{"budgets": a{m{"id": "ip", "count": count, "timeMs": 10000, "subWindows": 10}}, "egress": "shop.big.out"}}
	var paths a
	for i := range 2000 {
		n := "n" + strconv.Itoa(i)
		nodes[n] = m{"ingress": true, "budgets": a{m{"id": "b", "count": 100 + i%50, "timeMs": 1000}}}
		share := 0.5
		if i%7 == 0 {
			share = 1
		}
		paths = append(paths, m{"name": "p" + strconv.Itoa(i), "priority": i % 7, "share": share, "nodes": a{n, "ip"}})
	}
	body, err := json.Marshal(m{"version": 1, "nodes": nodes, "paths": paths})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkComputeLargest diffs the largest accepted document against a
// version of it whose shared budget changed (every path's ceiling moves):
// what a dry run adds to a PUT's checks at the document size bound.
func BenchmarkComputeLargest(b *testing.B) {
	from, to := largest(b, 1500), largest(b, 3000)
	b.ReportAllocs()
	for b.Loop() {
		d := diff.Compute(from, to)
		if len(d.Nodes) != 1 {
			b.Fatalf("nodes %d", len(d.Nodes))
		}
	}
}

// BenchmarkCompileLargest is the compile of the same document, which every
// PUT and dry run runs (twice for a dry run's stored side): the scale the
// diff is measured against.
func BenchmarkCompileLargest(b *testing.B) {
	body := largestBody(b, 3000)
	b.ReportAllocs()
	for b.Loop() {
		if res, err := declare.Compile(declare.Input{App: "shop", Name: "big", Body: body}); err != nil || res.Plan == nil {
			b.Fatal(err)
		}
	}
}
