package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/stack/gateapi"
)

// health is the floor: closed-loop GET /health at each concurrency.
func (b *Bench) health(ctx context.Context) ([]stats.Table, error) {
	t := stats.Table{Title: "health — closed-loop GET /health (the floor of any API call)", Header: stats.LatencyHeader}
	hc := b.api.HTTPClient()
	url := b.cfg.GateURL + "/health"
	call := func(ctx context.Context) (int, int) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		res, err := hc.Do(req)
		if err != nil {
			return 0, 0
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, 1
	}
	for _, c := range b.cfg.Conc {
		r := stats.ClosedLoop(ctx, fmt.Sprintf("closed c=%d", c), c, b.cfg.Warmup, b.cfg.Seconds, call)
		t.Add(stats.LatencyRow(r)...)
		t.Figure(fmt.Sprintf("closed c=%d req/s", c), r.ReqPerSec())
	}
	return []stats.Table{t}, ctx.Err()
}

// pushCall pushes one item through the front door of app/graph/n, stamped
// with its send time.
func (b *Bench) pushCall(graph string) stats.Call {
	return func(ctx context.Context) (int, int) {
		payload := []byte(`{"sent":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `}`)
		_, err := b.api.Push(ctx, b.cfg.App, graph, "n", gateapi.PushBody{Payload: payload})
		if err != nil {
			if s := gateapi.StatusOf(err); s != 0 {
				return s, 0
			}
			return 0, 0
		}
		return http.StatusOK, 1
	}
}

// directCall pushes one item straight into queue with the client,
// round-robin over 16 partitions, stamped with its send time: the push row
// without gate-api.
func (b *Bench) directCall(queue string) stats.Call {
	var seq atomic.Int64
	return func(ctx context.Context) (int, int) {
		payload := []byte(`{"sent":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `}`)
		part := strconv.FormatInt(seq.Add(1)%16, 10)
		if _, err := b.q.Push(ctx, []queen.PushItem{{Queue: queue, Partition: part, Payload: payload}}); err != nil {
			if s := queen.StatusOf(err); s != 0 {
				return s, 0
			}
			return 0, 0
		}
		return http.StatusOK, 1
	}
}

// push is the front door: closed loop per concurrency, then open loop at
// 25% and 50% of the best closed-loop rate; then the same 50% straight into
// the ingress (no gate-api, the relay consuming) and into a queue nobody
// reads (the driver and the broker alone), which say what the door and the
// relay add to the machine's own tail.
func (b *Bench) push(ctx context.Context) ([]stats.Table, error) {
	graph := b.graphName("push")
	if _, err := b.declare(ctx, graph, oneNode(node(200_000, 1000, 0, 0, 16, "", b.egressQueue(graph, "")))); err != nil {
		return nil, err
	}
	defer b.forget(graph)
	t := stats.Table{Title: "push — POST …/nodes/n/push on a one-node graph at 200 000/s (API latency: the push on the wire)", Header: stats.LatencyHeader}
	hc := b.api.HTTPClient()
	var perCall, loads []string
	// measure runs one row, noting how busy the machine and each process
	// were during it and, for a row through the door, how many pushes each
	// of the door's broker calls carried meanwhile.
	measure := func(throughDoor bool, row func() stats.Result) stats.Result {
		var before doorCalls
		var err1 error
		if throughDoor {
			before, err1 = snapDoor(ctx, hc, b.cfg.GateURL)
		}
		load := startLoad(b.procs())
		r := row()
		if l := load.stop(); l != "" {
			loads = append(loads, r.Label+": "+l)
		}
		if !throughDoor {
			return r
		}
		after, err2 := snapDoor(ctx, hc, b.cfg.GateURL)
		if d := (doorCalls{after.Calls - before.Calls, after.Items - before.Items}); err1 == nil && err2 == nil && d.Calls > 0 {
			perCall = append(perCall, fmt.Sprintf("%s %.1f", r.Label, float64(d.Items)/float64(d.Calls)))
		} else if err := cmp.Or(err1, err2); err != nil {
			perCall = append(perCall, fmt.Sprintf("%s unknown (%v)", r.Label, err))
		}
		return r
	}
	door := func(row func() stats.Result) stats.Result { return measure(true, row) }
	direct := func(row func() stats.Result) stats.Result { return measure(false, row) }
	best := 0.0
	for _, c := range b.cfg.Conc {
		r := door(func() stats.Result {
			return stats.ClosedLoop(ctx, fmt.Sprintf("closed c=%d", c), c, b.cfg.Warmup, b.cfg.Seconds, b.pushCall(graph))
		})
		t.Add(stats.LatencyRow(r)...)
		best = max(best, r.ReqPerSec())
		if r.OK() < 0.99 {
			t.Note("closed c=%d: only %.1f%% answered 2xx", c, 100*r.OK())
		}
	}
	t.Figure("closed best req/s", best)
	for _, pct := range []float64{25, 50} {
		rate := best * pct / 100
		if rate < 1 {
			continue
		}
		r := door(func() stats.Result {
			return stats.OpenLoop(ctx, fmt.Sprintf("open %.0f%% (%.0f/s)", pct, rate), rate, 4096, b.cfg.Warmup, b.cfg.Seconds, b.pushCall(graph))
		})
		t.Add(stats.LatencyRow(r)...)
		t.Figure(fmt.Sprintf("open %.0f%% p99 ms", pct), float64(r.Latency.P99)/float64(time.Millisecond))
		if r.Slipped > 0 || r.Capped > 0 {
			t.Note("open %.0f%%: driver slipped > 50 ms on %d sends, skipped %d at the 4096 in-flight cap", pct, r.Slipped, r.Capped)
		}
	}
	if half := best / 2; half >= 1 {
		r := direct(func() stats.Result {
			return stats.OpenLoop(ctx, fmt.Sprintf("ingress 50%% (%.0f/s)", half), half, 4096, b.cfg.Warmup, b.cfg.Seconds, b.directCall(plan.IngressQueue(b.cfg.App, graph, "n")))
		})
		t.Add(stats.LatencyRow(r)...)
		t.Figure("ingress 50% p99 ms", float64(r.Latency.P99)/float64(time.Millisecond))
		// A node name the graph does not have: no relay reads its queue.
		alone := plan.IngressQueue(b.cfg.App, graph, "alone")
		r = direct(func() stats.Result {
			return stats.OpenLoop(ctx, fmt.Sprintf("broker alone 50%% (%.0f/s)", half), half, 4096, b.cfg.Warmup, b.cfg.Seconds, b.directCall(alone))
		})
		t.Add(stats.LatencyRow(r)...)
		t.Figure("broker alone 50% p99 ms", float64(r.Latency.P99)/float64(time.Millisecond))
		if _, err := b.q.DeleteQueue(ctx, alone); err != nil {
			b.logf("push: deleting %s: %v", alone, err)
		}
		if b.st != nil {
			// The door again with a relay that pops again at once after a
			// thin claim (the default lingers GATE_STAGE_LINGER_MS).
			if err := b.useRelayEnv(ctx, "riders-no-linger", "GATE_ADMISSION=riders", "GATE_STAGE_LINGER_MS=0"); err != nil {
				return []stats.Table{t}, fmt.Errorf("push: starting a relay without a linger: %w", err)
			}
			r := door(func() stats.Result {
				return stats.OpenLoop(ctx, "open 50%, no linger", half, 4096, b.cfg.Warmup, b.cfg.Seconds, b.pushCall(graph))
			})
			t.Add(stats.LatencyRow(r)...)
			t.Figure("open 50% no linger p99 ms", float64(r.Latency.P99)/float64(time.Millisecond))
			if err := b.useRelay(ctx, "riders"); err != nil {
				return []stats.Table{t}, err
			}
			t.Note("no-linger row: the relay pops again at once after a thin claim (GATE_STAGE_LINGER_MS=0); the other rows run the default: while claims are under a quarter of the batch the stage pops once per %d ms, its workers taking turns", knob.StageLingerMs.Default)
		}
		t.Note("ingress row: the same rate straight into the node's ingress with the client, the relay consuming; broker alone: into a queue no relay reads (the driver and the broker on the same cores)")
	}
	if len(perCall) > 0 {
		t.Note("pushes per broker call of the door (GATE_PUSH_BATCH caps it): %s", strings.Join(perCall, ", "))
	}
	if len(loads) > 0 {
		t.Note("CPU during each row (the machine's busy share of all %d cores; each process as a share of one core): %s", runtime.NumCPU(), strings.Join(loads, "; "))
	}
	t.Note("targets (reported, not asserted): ≥ 3000 req/s closed loop; p99 < 20 ms open loop at half that rate")
	t.Note("closed loop finds saturation and understates latency; open loop measures from each send's due time")
	return []stats.Table{t}, ctx.Err()
}

// drain prefills a backlog through the front door, waits until Gate has
// admitted it, then pops it with the SDK as a user's workers would.
func (b *Bench) drain(ctx context.Context) ([]stats.Table, error) {
	graph := b.graphName("drain")
	egress := b.egressQueue(graph, "")
	if _, err := b.declare(ctx, graph, oneNode(node(1_000_000, 1000, 0, 0, 16, "", egress))); err != nil {
		return nil, err
	}
	defer b.forget(graph)
	n := b.cfg.Backlog
	t0 := time.Now()
	fr := floodN(ctx, 64, n, b.pushCall(graph))
	pushed, failed := int64(fr.ok), fr.failed
	fill := float64(pushed) / time.Since(t0).Seconds()
	admitted := waitFor(ctx, 5*time.Minute, func() bool {
		c, _, err := b.counters(ctx, graph)
		return err == nil && c.Forwarded >= pushed
	})
	if !admitted {
		return nil, fmt.Errorf("drain: Gate did not admit the %d-item backlog within 5 minutes", pushed)
	}
	t := stats.Table{Title: fmt.Sprintf("drain — SDK pops of a %d-item admitted backlog (batch 100, 500 ms long-poll), one consumer group per row", pushed), Header: stats.LatencyHeader}
	t.Note("prefill: %d pushed (%d failed) through the front door by 64 workers at %.0f/s", pushed, failed, fill)
	for i, c := range b.cfg.Conc {
		if i > 0 {
			// A drained queue keeps nothing for a new group to read: refill
			// the egress with the SDK so every row pops the same backlog.
			if _, err := b.fill(ctx, egress, int(pushed), 16, seqPayload); err != nil {
				return []stats.Table{t}, err
			}
		}
		group := "bench-drain-c" + strconv.Itoa(c)
		call := func(ctx context.Context) (int, int) {
			cl, err := b.q.Pop(ctx, queen.PopRequest{Queue: egress, ConsumerGroup: group, SubscriptionMode: queen.SubscribeAll,
				Batch: 100, Wait: true, Timeout: 500 * time.Millisecond, AutoAck: true})
			if err != nil {
				return 0, 0
			}
			return http.StatusOK, len(cl.Messages)
		}
		var got atomic.Int64
		counted := func(ctx context.Context) (int, int) {
			st, n := call(ctx)
			got.Add(int64(n))
			return st, n
		}
		r := stats.ClosedLoopUntil(ctx, fmt.Sprintf("consumers=%d", c), c, 0, b.cfg.Seconds, counted, func() bool { return got.Load() >= pushed })
		t.Add(stats.LatencyRow(r)...)
		t.Figure(fmt.Sprintf("consumers=%d msgs/s", c), r.UnitsPerSec())
	}
	t.Note("rows after the first pop a backlog refilled straight into the egress with the SDK (%d items), since the first row drained Gate's", pushed)
	t.Note("units/s = messages popped per second; a row ends when its backlog is drained or after BENCH_SECONDS")
	return []stats.Table{t}, ctx.Err()
}

// throttled floods a node at 2000 per 10 s and measures admission latency
// (push → committed to egress), which is the ceiling working, not slowness.
func (b *Bench) throttled(ctx context.Context) ([]stats.Table, error) {
	graph := b.graphName("throttled")
	egress := b.egressQueue(graph, "")
	if _, err := b.declare(ctx, graph, oneNode(node(2000, 10_000, 1, 200, 16, "", egress))); err != nil {
		return nil, err
	}
	defer b.forget(graph)
	n := min(b.cfg.Backlog, 4000)
	d := b.startDrainer(ctx, egress, "bench-throttled", 4, 200)
	t0 := time.Now()
	flood := floodN(ctx, 32, n, b.pushCall(graph))
	sent := flood.ok
	floodSecs := time.Since(t0).Seconds()
	wait := max(b.cfg.Seconds, 20*time.Second)
	waitFor(ctx, wait+time.Duration(float64(n)/200)*time.Second, func() bool { return d.count() >= sent })
	ats, sents := d.close()
	var lat []time.Duration
	for i := range ats {
		if ats[i] > 0 && sents[i] > 0 {
			lat = append(lat, time.Duration(ats[i]-sents[i])*time.Millisecond)
		}
	}
	s := stats.Summarize(lat)
	t := stats.Table{Title: "throttled — 2000 per 10 s (one sub-window), flooded at concurrency 32: admission latency = push → committed to egress",
		Header: []string{"row", "items", "per s", "p50 ms", "p90 ms", "p99 ms", "max ms"}}
	t.Add("flood", strconv.Itoa(sent), stats.Num(float64(sent)/floodSecs), "", "", "", "")
	t.Add("admission", strconv.Itoa(len(lat)), "", stats.Ms(s.P50), stats.Ms(s.P90), stats.Ms(s.P99), stats.Ms(s.Max))
	t.Note("expected: the first 2000 leave at once, the rest wait for the next 10 s window: %d items at 200/s ≈ %.0f s to clear; this latency is the ceiling working", sent, float64(sent)/200)
	t.Figure("admission p50 ms", float64(s.P50)/float64(time.Millisecond))
	t.Figure("admission p99 ms", float64(s.P99)/float64(time.Millisecond))
	if len(lat) < sent {
		return []stats.Table{t}, fmt.Errorf("throttled: %d of %d items reached the egress within %v", len(lat), sent, wait)
	}
	return []stats.Table{t}, ctx.Err()
}

type floodResult struct{ ok, failed int }

// floodN runs call n times with conc in flight.
func floodN(ctx context.Context, conc, n int, call stats.Call) floodResult {
	jobs := make(chan struct{})
	res := make(chan bool, conc)
	go func() {
		defer close(jobs)
		for i := 0; i < n && ctx.Err() == nil; i++ {
			jobs <- struct{}{}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				st, _ := call(ctx)
				res <- st == http.StatusOK
			}
		}()
	}
	go func() { wg.Wait(); close(res) }()
	var fr floodResult
	for ok := range res {
		if ok {
			fr.ok++
		} else {
			fr.failed++
		}
	}
	return fr
}

// mustJSON is json.Marshal for values that cannot fail.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// procs are the processes of a push row, in the order its CPU note names
// them: this driver, and with --embedded gate-api, the running relay and
// the broker (a pid of 0 where there is none).
func (b *Bench) procs() []namedProc {
	api := 0
	if b.st != nil && b.st.API() != nil {
		api = b.st.API().Pid()
	}
	return []namedProc{{"driver", os.Getpid()}, {"gate-api", api}, {"relay", b.relayPid()}, {"broker", b.queenPid()}}
}
