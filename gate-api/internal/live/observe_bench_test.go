package live_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
)

// BenchmarkObserve is POST …/observe on a mirrored 50/s budget, the
// answer restating the vendor's 20 with a remaining count that moves (the
// steady state: a getMany and a counter raise per answer), from 16
// clients. gate-bench observe measures it end to end at 2,000 req/s; this
// is the one to profile (-cpuprofile).
func BenchmarkObserve(b *testing.B) {
	h := apitest.New(b)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("v"), mirroredTarget(h, "v", "x-ratelimit")), http.StatusOK)
	url := h.URL + h.GraphURL("v") + "/nodes/limit/observe"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.SetParallelism(benchParallelism())
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			body := fmt.Appendf(nil, `{"status":200,"headers":{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"%d","X-RateLimit-Reset":"1","Content-Type":"application/json"}}`, i%20)
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// benchParallelism is BENCH_OBSERVE_PARALLELISM (default 8) clients per
// CPU.
func benchParallelism() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_OBSERVE_PARALLELISM")); err == nil && n > 0 {
		return n
	}
	return 8
}
