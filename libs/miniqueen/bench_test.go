package miniqueen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

// BenchmarkRelayPattern measures Gate's relay pattern through the real Go
// client over loopback HTTP: a wildcard pop of up to 200 from the source
// queue, then ONE transaction carrying a kv incr (with max), the acks of the
// whole claim and the pushes of the same items to the egress queue. b.N is
// the number of items relayed; the figure is items/s.
func BenchmarkRelayPattern(b *testing.B) {
	const (
		workers    = 2
		partitions = 16
		src        = "gate.bench.src"
		dst        = "gate.bench.dst"
		group      = "gate.bench.relay"
	)
	client := benchClient(b)
	ctx := context.Background()
	if _, err := client.Configure(ctx, queen.ConfigureRequest{Queue: src, Options: queen.QueueOptions{LeaseTime: queen.Int(10), RetryLimit: queen.Int(3)}}); err != nil {
		b.Fatal(err)
	}
	payload := json.RawMessage(`{"op":"price.update","cost":1,"listing":"listing-42"}`)
	for done := 0; done < b.N; {
		n := min(1000, b.N-done)
		items := make([]queen.PushItem, n)
		for i := range items {
			items[i] = queen.PushItem{Queue: src, Partition: fmt.Sprintf("p%d", (done+i)%partitions), Payload: payload, TransactionID: fmt.Sprintf("in-%d", done+i)}
		}
		if _, err := client.Push(ctx, items); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	var moved atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var txn queen.Transaction
			for moved.Load() < int64(b.N) {
				claim, err := client.Pop(ctx, queen.PopRequest{
					Queue: src, ConsumerGroup: group, Batch: 200, Wait: true, Timeout: 50 * time.Millisecond,
					LeaseSeconds: 10, SubscriptionMode: queen.SubscribeAll,
				})
				if err != nil {
					failed.Store(err)
					return
				}
				if claim.Empty() {
					continue
				}
				txn.Reset()
				txn.AddKV(queen.KVIncr("gate", "b:bench", int64(len(claim.Messages)), queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(1 << 50)}))
				pushes := make([]queen.PushItem, len(claim.Messages))
				for i := range claim.Messages {
					m := &claim.Messages[i]
					txn.Ack(m.AckItem(queen.AckCompleted, ""))
					pushes[i] = queen.PushItem{Queue: dst, Partition: m.Partition, Payload: m.Data, TransactionID: "gate:" + m.TransactionID}
				}
				txn.Push(pushes...)
				txn.RequireLease(claim.LeaseID)
				res, err := client.Transact(ctx, &txn)
				if err == nil {
					err = res.Err()
				}
				if err != nil {
					failed.Store(err)
					return
				}
				moved.Add(int64(len(claim.Messages)))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	b.ReportMetric(float64(moved.Load())/b.Elapsed().Seconds(), "items/s")
	// The process CPU time (client and broker together) is reported too:
	// on a shared, loaded machine it is the steadier figure.
	b.ReportMetric(float64(moved.Load())/(cpuTime()-cpu0).Seconds(), "items/cpu-s")
}

// cpuTime is the user+system CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGetPrefixAtTenThousandGraphs measures one full paged listing
// (1,000 rows a page, keys only) of 20,000 status-like rows in a namespace
// that also holds 10,000 documents and 20,000 other keys — what gate-api
// and the relays list at ten thousand graphs on two of three replicas —
// through the Go client over loopback HTTP. The figure is ns per listing.
func BenchmarkGetPrefixAtTenThousandGraphs(b *testing.B) {
	client := benchClient(b)
	ctx := context.Background()
	put := func(format string, n int) {
		for from := 0; from < n; from += 200 {
			var ops []queen.KVOp
			for i := from; i < min(from+200, n); i++ {
				ops = append(ops, queen.KVPut("gate", fmt.Sprintf(format, i), json.RawMessage(`{"v":1}`), queen.PutOpts{Forever: true}))
			}
			if _, err := client.KV(ctx, ops...); err != nil {
				b.Fatal(err)
			}
		}
	}
	put("graph:app:g%05d", 10_000)
	put("relay-status:g%05d:r1", 20_000)
	put("counter:%05d", 20_000)
	b.ResetTimer()
	for b.Loop() {
		after, rows := "", 0
		for {
			res, err := client.KV(ctx, queen.KVGetPrefix("gate", "relay-status:", queen.PrefixOpts{Limit: 1000, KeysOnly: true, After: after}))
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
		if rows != 20_000 {
			b.Fatalf("listed %d rows, want 20000", rows)
		}
	}
}

// benchClient starts a broker for b and returns a Go client of it over
// loopback HTTP, with the default transport closed when b ends.
func benchClient(b *testing.B) *queen.Client {
	b.Helper()
	srv := miniqueen.RunT(b)
	tr := queen.NewTransport()
	b.Cleanup(tr.CloseIdleConnections)
	client, err := queen.New(srv.URL(), queen.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		b.Fatal(err)
	}
	return client
}
