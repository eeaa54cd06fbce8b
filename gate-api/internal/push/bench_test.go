package push_test

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
)

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPush drives the push front door over HTTP against the harness
// broker with single-item pushes from many concurrent producers, and
// reports pushes/s, the p50/p99 latency of one push on the wire and the
// CPU one push costs the whole process.
//
//	GATE_TEST_REQUIRE_LIVE=1 go test -run '^$' -bench BenchmarkPush -benchtime 20000x ./gate-api/internal/push
func BenchmarkPush(b *testing.B) { benchPush(b, false, true) }

// BenchmarkPushTxn is BenchmarkPush with a distinct txn on every push: the
// door also records each item for explain by transaction id (a kv write
// beside the push, coalesced with the other pushes' records).
func BenchmarkPushTxn(b *testing.B) { benchPush(b, true, true) }

// BenchmarkPushTxnNoRecords is BenchmarkPushTxn with the records off
// (GATE_ITEM_RECORD_SECONDS=0): what the record costs.
func BenchmarkPushTxnNoRecords(b *testing.B) { benchPush(b, true, false) }

func benchPush(b *testing.B, txn, records bool) {
	h := apitest.New(b, func(c *config.Config) {
		if !records {
			c.ItemRecordSeconds = 0
		}
	})
	h.Expect(h.Do(http.MethodPut, h.GraphURL("bench"), h.Target("bench", 1_000_000)), http.StatusOK)
	h.Run("relay-1", "bench", 1)
	url := h.URL + h.GraphURL("bench") + "/nodes/limit/push"
	var seq atomic.Int64
	body := func() []byte {
		if !txn {
			return []byte(`{"op":"bench","payload":{"n":1}}`)
		}
		return []byte(`{"op":"bench","txn":"t-` + strconv.FormatInt(seq.Add(1), 10) + `","payload":{"n":1}}`)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var mu sync.Mutex
	var all []time.Duration
	b.SetParallelism(4)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			t0 := time.Now()
			resp, err := client.Post(url, "application/json", bytes.NewReader(body()))
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
	// CPU per push across producer, gate-api and broker (one process):
	// the throughput this machine gives when nothing else runs on it.
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu-µs/push")
}
