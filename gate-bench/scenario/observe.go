package scenario

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/stack/gateapi"
	"github.com/queen-mq/gate/libs/wire"
)

// observeRate is the open-loop rate of the observe rows (issue 26's
// target: p99 < 5 ms at 2,000 req/s).
const observeRate = 2000

// observe measures POST …/nodes/n/observe on a one-node graph whose budget
// mirrors an X-RateLimit meter: an open loop at 2,000 req/s of answers
// that lower the ceiling and raise the counter (each a getMany and one kv
// batch), and of 429s with Retry-After (the backoff's spend and breaker
// write as well).
func (b *Bench) observe(ctx context.Context) ([]stats.Table, error) {
	graph := b.graphName("observe")
	doc := oneNode(node(200_000, 1000, 0, 0, 16, "", b.egressQueue(graph, "")))
	doc["nodes"].(map[string]any)["n"].(map[string]any)["budgets"].([]any)[0].(map[string]any)["vendorMeter"] = map[string]any{"headers": "x-ratelimit"}
	if _, err := b.declare(ctx, graph, doc); err != nil {
		return nil, err
	}
	defer b.forget(graph)
	t := stats.Table{Title: "observe — POST …/nodes/n/observe on a budget that mirrors X-RateLimit-* (a vendor answer lowering the ceiling and raising the counter)", Header: stats.LatencyHeader}
	call := func(status int, extra map[string]string) stats.Call {
		return func(ctx context.Context) (int, int) {
			h := map[string]string{"X-RateLimit-Limit": "150000", "X-RateLimit-Remaining": strconv.Itoa(int(time.Now().UnixNano() % 1000)), "X-RateLimit-Reset": "1", "Content-Type": "application/json"}
			for k, v := range extra {
				h[k] = v
			}
			if _, err := b.api.Observe(ctx, b.cfg.App, graph, "n", wire.ObserveBody{Status: status, Headers: h}); err != nil {
				if s := gateapi.StatusOf(err); s != 0 {
					return s, 0
				}
				return 0, 0
			}
			return http.StatusOK, 1
		}
	}
	closed := stats.ClosedLoop(ctx, "200 closed c=16", 16, b.cfg.Warmup, b.cfg.Seconds, call(http.StatusOK, nil))
	t.Add(stats.LatencyRow(closed)...)
	t.Figure("200 closed c=16 req/s", closed.ReqPerSec())
	for _, row := range []struct {
		label  string
		status int
		extra  map[string]string
	}{
		{fmt.Sprintf("200 open %d/s", observeRate), http.StatusOK, nil},
		{fmt.Sprintf("429 + Retry-After open %d/s", observeRate), http.StatusTooManyRequests, map[string]string{"Retry-After": "1"}},
	} {
		r := stats.OpenLoop(ctx, row.label, observeRate, 4096, b.cfg.Warmup, b.cfg.Seconds, call(row.status, row.extra))
		t.Add(stats.LatencyRow(r)...)
		t.Figure(row.label+" p99 ms", float64(r.Latency.P99)/float64(time.Millisecond))
		if r.OK() < 0.99 {
			t.Note("%s: only %.1f%% answered 2xx", row.label, 100*r.OK())
		}
		if r.Slipped > 0 || r.Capped > 0 {
			t.Note("%s: driver slipped > 50 ms on %d sends, skipped %d at the 4096 in-flight cap", row.label, r.Slipped, r.Capped)
		}
	}
	t.Note("target (reported, not asserted): p99 < 5 ms at %d req/s", observeRate)
	return []stats.Table{t}, ctx.Err()
}
