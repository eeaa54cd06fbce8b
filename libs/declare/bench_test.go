package declare

import (
	"encoding/json"
	"fmt"
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
