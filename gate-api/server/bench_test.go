package server

import (
	"bytes"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkPush drives the push front door over HTTP against the harness
// broker with single-item pushes from many concurrent producers, and
// reports pushes/s and the p50/p99 latency of one push on the wire.
//
//	GATE_TEST_REQUIRE_LIVE=1 go test -run '^$' -bench BenchmarkPush -benchtime 20000x ./gate-api/server
func BenchmarkPush(b *testing.B) {
	h := newHarness(b)
	h.expect(h.do(http.MethodPut, h.graphURL("bench"), h.target("bench", 1_000_000)), http.StatusOK)
	h.run("relay-1", "bench", 1)
	url := h.url + h.graphURL("bench") + "/nodes/limit/push"
	body := []byte(`{"op":"bench","payload":{"n":1}}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var mu sync.Mutex
	var all []time.Duration
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			t0 := time.Now()
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
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
	elapsed := time.Since(start)
	b.StopTimer()
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "pushes/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
