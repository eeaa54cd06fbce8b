package declare

import (
	"encoding/json"
	"fmt"
	"slices"
	"syscall"
	"testing"
)

// benchDocument is a document at the drafting limit: 20 nodes, 20 paths.
// Ten entry nodes each feed two of ten exit nodes; every exit node is
// crossed by two paths of different priority, and exits share two keys.
func benchDocument() []byte {
	nodes := m{}
	var paths a
	for i := range 10 {
		nodes[fmt.Sprintf("entry-%02d", i)] = m{
			"ingress": m{"partitions": 8},
			"cost":    m{"path": "payload.units", "default": 1, "max": 5},
			"budgets": a{
				m{"id": "second", "count": 200, "timeMs": 1000},
				m{"id": "minute", "count": 6000, "timeMs": 60000, "subWindows": 60},
				m{"id": "per-account", "count": 20, "timeMs": 1000, "scopeBy": "payload.accountId", "whenOp": a{"write.*"}},
			},
		}
		nodes[fmt.Sprintf("exit-%02d", i)] = m{
			"budgets": a{
				m{"id": "global", "count": 1000, "timeMs": 1000},
				m{"id": "ip", "count": 1500, "timeMs": 10000, "subWindows": 10, "sharedKey": fmt.Sprintf("ip-%d", i%2)},
			},
			"egress": m{"queue": fmt.Sprintf("demo.bench.out-%02d", i), "group": "workers"},
		}
	}
	for i := range 20 {
		prio := i / 10
		paths = append(paths, m{
			"name":     fmt.Sprintf("path-%02d", i),
			"priority": prio,
			"nodes":    a{fmt.Sprintf("entry-%02d", i%10), fmt.Sprintf("exit-%02d", (i+prio)%10)},
		})
	}
	b, _ := json.Marshal(m{"application": "demo", "graph": "bench", "version": 1, "nodes": nodes, "paths": paths})
	return b
}

func TestBenchDocumentIsAccepted(t *testing.T) {
	t.Parallel()
	res := compileT(t, Input{Body: benchDocument()})
	if !res.Accepted() || len(res.Plan.Nodes) != 20 || len(res.Plan.Stages) != 40 {
		t.Fatalf("bench document: %v", res.Findings)
	}
}

// BenchmarkCompile compiles the 20-node, 20-path document offline. Beside
// ns/op (wall time, which a busy machine inflates) it reports cpu-ns/op: the
// process's user+system CPU time per compile, garbage collection included.
func BenchmarkCompile(b *testing.B) {
	doc := benchDocument()
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	start := cpuTime()
	for b.Loop() {
		res, err := Compile(Input{Body: doc})
		if err != nil || res.Plan == nil {
			b.Fatal(err, res.Findings)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// manyPaths is the hostile document of issue 14: one node, n paths through
// it (the reported one had 30,000 and 1.45 MB).
func manyPaths(n int) []byte {
	var paths a
	for i := range n {
		paths = append(paths, m{"name": fmt.Sprintf("p%05d", i), "priority": i % 7, "share": 1, "nodes": a{"in"}})
	}
	d := base()
	d["paths"] = paths
	b, _ := json.Marshal(d)
	return b
}

// A document that cannot run (more stages than MaxWorkers) is refused by
// worker-total without the checks that grow with paths × nodes.
func TestThirtyThousandPathsAreRefusedByWorkerTotal(t *testing.T) {
	t.Parallel()
	res := compileT(t, Input{Body: manyPaths(30_000)})
	errs := res.Findings.Errors()
	if res.Accepted() || len(errs) != 1 || errs[0].Rule != RuleWorkerTotal || errs[0].Numbers["stages"] != 30_000 {
		t.Fatalf("30,000 paths: %v, want one worker-total refusal counting 30000 stages", errs)
	}
	if ok := compileT(t, Input{Body: manyPaths(40)}); slices.Contains(ok.Findings.Rules(), RuleWorkerTotal) {
		t.Fatalf("40 paths refused by worker-total")
	}
}

// BenchmarkCompileHostile compiles the 30,000-path document and a
// 4,000-path one (under the stage bound, so every check runs).
func BenchmarkCompileHostile(b *testing.B) {
	for _, n := range []int{4_000, 30_000} {
		doc := manyPaths(n)
		b.Run(fmt.Sprintf("paths=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := Compile(Input{Body: doc}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
