package simulate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
)

// cpuTime is the process's user+system CPU time in nanoseconds: on a busy
// machine wall time per op is inflated, CPU time much less.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

const day = 86400

type obj = map[string]any
type arr = []any

// benchGraph is a candidate at the drafting limit: 20 nodes, 20 paths.
// Ten entry nodes (payload cost, a per-second and a per-minute budget, a
// scoped op budget the replay lists as unsupported) feed ten exit nodes
// two paths each, of two priorities; exits share two keys.
func benchGraph(b *testing.B) string {
	nodes := obj{}
	var paths arr
	for i := range 10 {
		nodes[fmt.Sprintf("entry-%02d", i)] = obj{
			"ingress": obj{"partitions": 8},
			"cost":    obj{"path": "payload.units", "default": 1, "max": 5},
			"budgets": arr{
				obj{"id": "second", "count": 200, "timeMs": 1000},
				obj{"id": "minute", "count": 9000, "timeMs": 60000, "subWindows": 60},
				obj{"id": "per-account", "count": 20, "timeMs": 1000, "scopeBy": "payload.accountId", "whenOp": arr{"write.*"}},
			},
		}
		nodes[fmt.Sprintf("exit-%02d", i)] = obj{
			"budgets": arr{
				obj{"id": "global", "count": 120, "timeMs": 1000},
				obj{"id": "ip", "count": 4000, "timeMs": 10000, "subWindows": 10, "sharedKey": fmt.Sprintf("ip-%d", i%2)},
			},
			"egress": obj{"queue": fmt.Sprintf("bench.out-%02d", i), "group": "workers"},
		}
	}
	for i := range 20 {
		prio := i / 10
		paths = append(paths, obj{"name": fmt.Sprintf("path-%02d", i), "priority": prio,
			"nodes": arr{fmt.Sprintf("entry-%02d", i%10), fmt.Sprintf("exit-%02d", (i+prio)%10)}})
	}
	raw, err := json.Marshal(obj{"version": 1, "nodes": nodes, "paths": paths})
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

// dayOfArrivals is 24 h of per-second arrivals for each path: a quiet base
// with bursts, recorded cost 1–3 per item.
func dayOfArrivals(paths []string, seed uint64) map[string][]Second {
	rnd := rand.New(rand.NewPCG(seed, 99))
	out := map[string][]Second{}
	for _, p := range paths {
		secs := make([]Second, 0, day)
		for s := int64(0); s < day; s++ {
			n := int64(rnd.IntN(40))
			if s%600 < 20 {
				n += 80 // a burst of 20 s every 10 minutes
			}
			if n == 0 {
				continue
			}
			secs = append(secs, Second{T: s * 1000, Items: n, Cost: n * int64(1+rnd.IntN(3))})
		}
		out[p] = secs
	}
	return out
}

// BenchmarkPreviewDay is "Try a limit" over 24 h of per-second samples of
// one node (the replay alone; the route adds the history read).
func BenchmarkPreviewDay(b *testing.B) {
	secs := dayOfArrivals([]string{"main"}, 1)["main"]
	for i := range secs {
		secs[i].Cost = secs[i].Items
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		r := Preview(secs, 0, day*1000, Allowance{Count: 30, Seconds: 1, CostPerItem: 1})
		if r.Items == 0 || len(r.Series) != 1440 {
			b.Fatal("empty replay")
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGraphDay replays 24 h of per-second arrivals on 20 paths through
// the 20-node candidate. Beside time and allocations it reports the peak
// heap in use during one replay (peak-heap-MiB).
func BenchmarkGraphDay(b *testing.B) {
	p := compile(b, benchGraph(b))
	var names []string
	for _, st := range p.Stages {
		if st.Hop == 0 {
			names = append(names, st.Path)
		}
	}
	in := GraphInput{Plan: p, Start: 0, End: day * 1000, Arrivals: dayOfArrivals(names, 2)}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	b.ReportAllocs()
	var peak uint64
	start := cpuTime()
	for b.Loop() {
		r := Graph(in)
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse-min(base, ms.HeapInuse))
		if r.Items == 0 || len(r.Unsupported) != 10 {
			b.Fatalf("replay: %d items, %d unsupported", r.Items, len(r.Unsupported))
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
