package push_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/queen"
)

// BenchmarkPushSpread is BenchmarkPush spread round-robin over N graphs
// (one ingress queue each): what grows with the number of graphs a push
// door serves, rather than with the pushes. Each push carries a txn, so the
// door also records it for explain (as gate-bench scale-fleet does).
//
//	go test -run '^$' -bench BenchmarkPushSpread -benchtime 20000x -cpuprofile cpu.out ./gate-api/internal/push
func BenchmarkPushSpread(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run("graphs="+strconv.Itoa(n), func(b *testing.B) { benchPushSpread(b, n, false) })
	}
}

// BenchmarkPushSpreadConsumed is BenchmarkPushSpread with one consumer
// long-polling each graph's ingress queue (auto-ack, as a relay's first
// stage parks one poll per graph): spread over N graphs, each pushed item
// wakes its own poll, so the broker serves about one claim per item beside
// the door's coalesced pushes, all behind its one lock.
//
//	go test -run '^$' -bench BenchmarkPushSpreadConsumed -benchtime 20000x ./gate-api/internal/push
func BenchmarkPushSpreadConsumed(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run("graphs="+strconv.Itoa(n), func(b *testing.B) { benchPushSpread(b, n, true) })
	}
}

func benchPushSpread(b *testing.B, graphs int, consumed bool) {
	h := apitest.New(b)
	urls := make([]string, graphs)
	for i := range urls {
		name := "g" + strconv.Itoa(i)
		h.Expect(h.Do(http.MethodPut, h.GraphURL(name), h.Target(name, 1_000_000)), http.StatusOK)
		urls[i] = h.URL + h.GraphURL(name) + "/nodes/limit/push"
	}
	var claimed atomic.Int64
	if consumed {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		// Stops the consumers before the harness stops the broker.
		b.Cleanup(func() { cancel(); wg.Wait() })
		for i := range graphs {
			queue := h.Ingress("g"+strconv.Itoa(i), "limit")
			wg.Go(func() {
				for ctx.Err() == nil {
					c, err := h.Client.Pop(ctx, queen.PopRequest{Queue: queue, Wait: true, Timeout: 2 * time.Second, AutoAck: true, Batch: 100})
					if err == nil {
						claimed.Add(int64(len(c.Messages)))
					}
				}
			})
		}
	}
	var seq atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var mu sync.Mutex
	var all []time.Duration
	b.SetParallelism(4)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			i := seq.Add(1)
			body := []byte(`{"op":"bench","txn":"t-` + strconv.FormatInt(i, 10) + `","payload":{"n":1}}`)
			t0 := time.Now()
			resp, err := client.Post(urls[int(i)%graphs], "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			var buf [512]byte
			for {
				if _, err := resp.Body.Read(buf[:]); err != nil {
					break
				}
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("push answered %d", resp.StatusCode)
				return
			}
			lat = append(lat, time.Since(t0))
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "pushes/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu-µs/push")
	if consumed && claimed.Load() == 0 {
		b.Errorf("the consumers claimed nothing of %d pushes", len(all))
	}
}
