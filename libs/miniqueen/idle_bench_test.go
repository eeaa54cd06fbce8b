package miniqueen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

// The idle fleet's calls, at ten thousand two-node graphs (issue 24). A
// fleet with nothing to do still calls the broker: each ingress stage
// parks a long-poll that times out and re-polls every 30 s, each dozing
// interior stage checks its source with one pop without wait every 30 s,
// each relay replica writes its status rows and reads the headers, and
// gate-api reads every status row once a minute. Measured on the
// 10,000-graph scale-fleet (3 replicas, status every 5 s) the broker
// served about 420 pops without wait, 225 long-poll timeouts and 37 kv
// calls a second. Each benchmark below is one kind of those calls against
// a broker holding ten thousand graphs' queues and status rows, through
// the real Go client over loopback HTTP.

const idleGraphs = 10_000

// cpuPerOp reports the process's CPU time (client and broker together)
// per operation since cpu0 as "cpu-ns/op": on a shared, loaded machine it
// is steadier than the wall-clock ns/op.
func cpuPerOp(b *testing.B, cpu0 time.Duration, ops int) {
	if ops > 0 {
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(ops), "cpu-ns/op")
	}
}

// idleQueues configures n source queues ("gate.idle.q00000"…) and
// subscribes group to each with one empty pop, as a fleet's stages do
// when they start.
func idleQueues(b *testing.B, client *queen.Client, n int, group string) []string {
	b.Helper()
	ctx := context.Background()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("gate.idle.q%05d", i)
		if _, err := client.Configure(ctx, queen.ConfigureRequest{Queue: names[i], Options: queen.QueueOptions{LeaseTime: queen.Int(30)}}); err != nil {
			b.Fatal(err)
		}
		if _, err := client.Pop(ctx, queen.PopRequest{Queue: names[i], ConsumerGroup: group, Batch: 1}); err != nil {
			b.Fatal(err)
		}
	}
	return names
}

// BenchmarkIdlePopNoWait is a dozing stage's check of its source: one pop
// without wait on an empty queue, round-robin over 10,000 queues. The
// figure is ns and allocations per pop (client and broker together).
func BenchmarkIdlePopNoWait(b *testing.B) {
	client := benchClient(b)
	names := idleQueues(b, client, idleGraphs, "gate.idle")
	ctx := context.Background()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		claim, err := client.Pop(ctx, queen.PopRequest{Queue: names[i%len(names)], ConsumerGroup: "gate.idle", Batch: 200, LeaseSeconds: 30})
		if err != nil {
			b.Fatal(err)
		}
		if !claim.Empty() {
			b.Fatalf("pop of empty queue %s claimed %d messages", names[i%len(names)], len(claim.Messages))
		}
		i++
	}
	cpuPerOp(b, cpu0, i)
}

// BenchmarkIdleLongPollTimeout is an ingress stage's parked long-poll
// timing out: a pop with wait on an empty queue, here with a 1 ms timeout
// so the benchmark measures the park, the timer and the empty answer
// rather than the wait; 100 such polls run at once, round-robin over
// 10,000 queues, while 1,000 more stay parked for the whole run (the
// other ingress stages, whose cost while parked is what they add to
// every wake). The figure is ns per timed-out poll.
func BenchmarkIdleLongPollTimeout(b *testing.B) {
	client := benchClient(b)
	names := idleQueues(b, client, idleGraphs, "gate.idle")
	ctx, cancel := context.WithCancel(context.Background())
	var parked sync.WaitGroup
	for i := range 1000 {
		parked.Add(1)
		go func() {
			defer parked.Done()
			for ctx.Err() == nil {
				_, _ = client.Pop(ctx, queen.PopRequest{Queue: names[len(names)-1-i], ConsumerGroup: "gate.idle", Batch: 200, Wait: true, Timeout: 30 * time.Second})
			}
		}()
	}
	b.Cleanup(func() { cancel(); parked.Wait() })
	var next sync.Mutex
	i := 0
	b.SetParallelism(50) // 2 cores × 50 = 100 polls at once
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			next.Lock()
			q := names[i%(len(names)-1000)]
			i++
			next.Unlock()
			claim, err := client.Pop(context.Background(), queen.PopRequest{Queue: q, ConsumerGroup: "gate.idle", Batch: 200, Wait: true, Timeout: time.Millisecond})
			if err != nil {
				b.Error(err)
				return
			}
			if !claim.Empty() {
				b.Errorf("long-poll of empty queue %s claimed %d messages", q, len(claim.Messages))
				return
			}
		}
	})
	b.StopTimer()
	cpuPerOp(b, cpu0, b.N)
}

// idleStatusRow is a status-row-sized value (what one two-node graph's
// row holds on one replica).
var idleStatusRow = json.RawMessage(`{"replica":"r1","epoch":"9f8e7d6c","gen":12,"part":0,"parts":1,"graph":{"app":"bench","graph":"g00000","running":true,"stages":[{"node":"in","state":"parked","pending":0,"inflight":0,"dozing":false},{"node":"out","state":"dozing","pending":0,"inflight":0,"dozing":true}]}}`)

// idleStatus stores 10,000 graph documents (forever) and 10,000 status
// rows living ttl seconds, the kv a 10,000-graph fleet keeps.
func idleStatus(b *testing.B, client *queen.Client, ttl int64) {
	b.Helper()
	ctx := context.Background()
	for from := 0; from < idleGraphs; from += 100 {
		var ops []queen.KVOp
		for i := from; i < from+100; i++ {
			ops = append(ops,
				queen.KVPut("gate", fmt.Sprintf("graph:bench:g%05d", i), json.RawMessage(`{"nodes":["in","out"]}`), queen.PutOpts{Forever: true}),
				queen.KVPut("gate", fmt.Sprintf("status:bench:g%05d:r1:0", i), idleStatusRow, queen.PutOpts{TTLSeconds: ttl}))
		}
		if _, err := client.KV(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdleStatusFullRead is gate-api's once-a-minute read of every
// status row: getPrefix "status:" with values, 1,000 rows a page, over
// 10,000 rows in a namespace that also holds 10,000 documents. The figure
// is ns per full read (10 pages).
func BenchmarkIdleStatusFullRead(b *testing.B) {
	client := benchClient(b)
	idleStatus(b, client, 100)
	ctx := context.Background()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		n++
		after, rows := "", 0
		for {
			res, err := client.KV(ctx, queen.KVGetPrefix("gate", "status:", queen.PrefixOpts{Limit: 1000, After: after}))
			if err != nil {
				b.Fatal(err)
			}
			r := res.Results[0]
			rows += len(r.Rows)
			if !r.Truncated {
				break
			}
			after = r.NextAfter
		}
		if rows != idleGraphs {
			b.Fatalf("read %d status rows, want %d", rows, idleGraphs)
		}
	}
	cpuPerOp(b, cpu0, n)
}

// BenchmarkIdleStatusHeartbeat is one replica's status beat at idle over
// the same kv: its header put with a TTL, then the read of every header
// (the live replicas) and of its change log after the newest row (empty).
// The figure is ns per beat (two calls).
func BenchmarkIdleStatusHeartbeat(b *testing.B) {
	client := benchClient(b)
	idleStatus(b, client, 100)
	ctx := context.Background()
	header := json.RawMessage(`{"replica":"r1","epoch":"9f8e7d6c","at":"2026-12-03T15:00:00Z","log":7}`)
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		n++
		if _, err := client.KV(ctx, queen.KVPut("gate", "relay:r1", header, queen.PutOpts{TTLSeconds: 15})); err != nil {
			b.Fatal(err)
		}
		res, err := client.KV(ctx,
			queen.KVGetPrefix("gate", "relay:", queen.PrefixOpts{Limit: 100}),
			queen.KVGetPrefix("gate", "statuslog:r1:9f8e7d6c:", queen.PrefixOpts{Limit: 100, After: "statuslog:r1:9f8e7d6c:0000000000000000007"}))
		if err != nil {
			b.Fatal(err)
		}
		if h := len(res.Results[0].Rows); h != 1 {
			b.Fatalf("read %d headers, want 1", h)
		}
	}
	cpuPerOp(b, cpu0, n)
}

// BenchmarkIdleKVSweep is the broker's reclaiming of expired kv keys as an
// idle fleet meets it: a clock second passes between kv calls, so every
// call runs the sweep, over 20,000 stored keys (10,000 documents forever,
// 10,000 status rows with a TTL far ahead) of which none is due. The
// figure is ns per call (a get).
func BenchmarkIdleKVSweep(b *testing.B) {
	srv := miniqueen.RunT(b)
	tr := queen.NewTransport()
	b.Cleanup(tr.CloseIdleConnections)
	client, err := queen.New(srv.URL(), queen.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		b.Fatal(err)
	}
	idleStatus(b, client, 1<<40)
	srv.SetTime(time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC))
	ctx := context.Background()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		n++
		srv.FastForward(time.Second)
		if _, err := client.KV(ctx, queen.KVGet("gate", "graph:bench:g00000")); err != nil {
			b.Fatal(err)
		}
	}
	cpuPerOp(b, cpu0, n)
}
