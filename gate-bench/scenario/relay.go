package scenario

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/plan"
)

// relayRun is one "prefill, then declare, then wait" measurement.
type relayRun struct {
	Backlog        int
	FillPerSec     float64
	AdmittedPerSec float64
	Forwarded      int64
	Commits        int64
	Seconds        float64
	Calls          Snapshot
	Concurrency    int
	Done           bool
	// Counted says Calls were read from the relay's own counts.
	Counted bool
}

// prefillAndRelay fills every node's Gate-owned ingress queue with per items
// before declaring doc (so the relay starts on a full backlog), declares,
// drains the egress queues with 8 poppers, and polls the view every 500 ms
// until everything is forwarded, 12 × BENCH_SECONDS pass, or 20 polls in a
// row show no progress.
func (b *Bench) prefillAndRelay(ctx context.Context, graph string, doc map[string]any, nodes []string, egress []string, per, partitions int) (relayRun, error) {
	return b.prefillAndRelayThen(ctx, graph, doc, nodes, egress, per, partitions, nil)
}

// prefillAndRelayThen is prefillAndRelay with then, when set, called right
// after the declare (before the wait; its time counts).
func (b *Bench) prefillAndRelayThen(ctx context.Context, graph string, doc map[string]any, nodes []string, egress []string, per, partitions int, then func(context.Context) error) (relayRun, error) {
	var rr relayRun
	var fillRate float64
	for _, n := range nodes {
		r, err := b.fill(ctx, plan.IngressQueue(b.cfg.App, graph, n), per, partitions, seqPayload)
		if err != nil {
			return rr, err
		}
		fillRate += r
	}
	rr.FillPerSec = fillRate / float64(len(nodes))
	rr.Backlog = per * len(nodes)
	var drains []*drainer
	for _, q := range egress {
		drains = append(drains, b.startDrainer(ctx, q, "bench-workers", max(1, 8/len(egress)), 200))
	}
	popped := func() int {
		n := 0
		for _, d := range drains {
			n += d.count()
		}
		return n
	}
	before, counted := b.snap(ctx)
	t0 := time.Now()
	d, err := b.declare(ctx, graph, doc)
	if err != nil {
		for _, d := range drains {
			d.close()
		}
		return rr, err
	}
	for _, s := range d.Resolved.Stages {
		rr.Concurrency += int(s.Concurrency)
	}
	if then != nil {
		if err := then(ctx); err != nil {
			for _, d := range drains {
				d.close()
			}
			return rr, err
		}
	}
	deadline := t0.Add(12 * b.cfg.Seconds)
	last, stale := -1, 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		n := popped()
		if n >= rr.Backlog {
			rr.Done = true
			break
		}
		if n == last {
			if stale++; stale > 20 {
				break
			}
		} else {
			stale = 0
		}
		last = n
	}
	var ats []int64
	for _, d := range drains {
		a, _ := d.close()
		ats = append(ats, a...)
	}
	if after, ok := b.snap(ctx); ok && counted {
		rr.Calls, rr.Counted = after.Sub(before), true
	}
	rr.Seconds = time.Since(t0).Seconds()
	if len(ats) > 1 {
		rr.Seconds = float64(slices.Max(ats)-slices.Min(ats)) / 1000
	}
	rr.AdmittedPerSec = spanRate(ats)
	// The view's counters lag by the relay's status period; wait for them.
	waitFor(ctx, 5*time.Second, func() bool {
		c, _, err := b.counters(ctx, graph)
		rr.Forwarded, rr.Commits = c.Forwarded, c.Commits
		return err == nil && c.Forwarded >= int64(len(ats))
	})
	return rr, ctx.Err()
}

// fullClaims rounds n up to a whole number of full claims on every
// partition, so items/commit can reach the batch: 30 000 items over 16
// partitions at batch 200 would otherwise end every partition on a 75-item
// claim and cap the average at 187.5.
func fullClaims(n, partitions, batch int) int {
	per := partitions * batch
	return (n + per - 1) / per * per
}

func verdict(perSec float64) string {
	switch {
	case perSec >= 10_000:
		return "TARGET"
	case perSec >= 2_800:
		return "above floor"
	}
	return "BELOW FLOOR"
}

func ratio(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(a)/float64(b))
}

// throughput measures the relay on a prefilled backlog per batch size.
func (b *Bench) throughput(ctx context.Context) ([]stats.Table, error) {
	t := stats.Table{Title: "throughput — one stage on a prefilled backlog, wide budget, per batch (admitted/s over the first-to-last commit span)",
		Header: []string{"batch", "backlog", "fill/s", "admitted/s", "items/commit", "admission calls/claim", "verdict"}}
	for _, batch := range b.cfg.Batches {
		graph := b.graphName("tp-b" + strconv.Itoa(batch))
		egress := b.egressQueue(graph, "")
		doc := oneNode(node(1_000_000, 1000, 0, batch, 16, "", egress))
		rr, err := b.prefillAndRelay(ctx, graph, doc, []string{"n"}, []string{egress}, fullClaims(b.cfg.Backlog, 16, batch), 16)
		b.forget(graph)
		if err != nil {
			return []stats.Table{t}, err
		}
		calls := "-"
		if rr.Counted {
			calls = ratio(rr.Calls.Incr, rr.Commits)
		}
		v := verdict(rr.AdmittedPerSec)
		if !rr.Done {
			v += fmt.Sprintf(" (stopped at %d of %d)", rr.Forwarded, rr.Backlog)
		}
		t.Add(strconv.Itoa(batch), strconv.Itoa(rr.Backlog), stats.Num(rr.FillPerSec), stats.Num(rr.AdmittedPerSec), ratio(rr.Forwarded, rr.Commits), calls, v)
		t.Figure("batch "+strconv.Itoa(batch)+" admitted/s", rr.AdmittedPerSec)
	}
	t.Note("verdict: TARGET ≥ 10 000/s, above floor ≥ 2 800/s; items/commit = forwarded/commits (healthy near the batch)")
	return []stats.Table{t}, ctx.Err()
}

// contention runs 1, 2, 4, 8 single-node paths spending one shared key.
func (b *Bench) contention(ctx context.Context) ([]stats.Table, error) {
	t := stats.Table{Title: "contention — k single-node paths on one shared key (200 000/s), prefilled over 8 partitions",
		Header: []string{"stages", "backlog", "admitted/s", "per stage/s", "commits/s", "admission calls/s"}}
	total := min(b.cfg.Backlog, 20_000)
	for _, k := range []int{1, 2, 4, 8} {
		graph := b.graphName("ct" + strconv.Itoa(k))
		nodes := map[string]any{}
		var paths []any
		var names, egress []string
		for i := 0; i < k; i++ {
			n := "n" + strconv.Itoa(i)
			q := b.egressQueue(graph, "."+n)
			nodes[n] = node(200_000, 1000, 0, 0, 8, "bench-contended-"+b.runID, q)
			paths = append(paths, map[string]any{"name": "p" + strconv.Itoa(i), "nodes": []any{n}})
			names, egress = append(names, n), append(egress, q)
		}
		doc := map[string]any{"version": 1, "nodes": nodes, "paths": paths}
		rr, err := b.prefillAndRelay(ctx, graph, doc, names, egress, total/k, 8)
		b.forget(graph)
		if err != nil {
			return []stats.Table{t}, err
		}
		calls := "-"
		if rr.Counted {
			calls = stats.Num(float64(rr.Calls.Incr) / rr.Seconds)
		}
		t.Add(strconv.Itoa(k), strconv.Itoa(rr.Backlog), stats.Num(rr.AdmittedPerSec), stats.Num(rr.AdmittedPerSec/float64(k)),
			stats.Num(float64(rr.Commits)/rr.Seconds), calls)
		t.Figure("k="+strconv.Itoa(k)+" admitted/s", rr.AdmittedPerSec)
	}
	t.Note("admitted/s should stay flat as stages are added: one counter row, one incr per claim")
	return []stats.Table{t}, ctx.Err()
}

// idle declares a 7-stage shared graph, pushes nothing and counts the
// relay's broker calls.
func (b *Bench) idle(ctx context.Context) ([]stats.Table, error) {
	t := stats.Table{Title: "idle — a 7-stage graph with nothing to do: what the relay costs the broker",
		Header: []string{"window s", "broker calls", "per hour", "pops", "kv calls", "parked long-polls", "expected/h at 30 s polls"}}
	if b.relay == nil {
		t.Note("skipped: the relay's broker calls are only read with --embedded (from the embedded relay's /metrics)")
		return []stats.Table{t}, nil
	}
	graph := b.graphName("idle")
	nodes := map[string]any{}
	var paths []any
	for i := 0; i < 7; i++ {
		n := "n" + strconv.Itoa(i)
		nodes[n] = node(1000, 1000, 0, 0, 16, "bench-idle-"+b.runID, b.egressQueue(graph, "."+n))
		paths = append(paths, map[string]any{"name": "p" + strconv.Itoa(i), "nodes": []any{n}})
	}
	d, err := b.declare(ctx, graph, map[string]any{"version": 1, "nodes": nodes, "paths": paths})
	if err != nil {
		return nil, err
	}
	defer b.forget(graph)
	workers := 0
	for _, s := range d.Resolved.Stages {
		workers += int(s.Concurrency)
	}
	time.Sleep(b.cfg.IdleSettle)
	before, ok := b.snap(ctx)
	if !ok {
		return []stats.Table{t}, fmt.Errorf("idle: the relay's /metrics did not answer")
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(b.cfg.IdleSeconds):
	}
	after, ok := b.snap(ctx)
	if !ok {
		return []stats.Table{t}, fmt.Errorf("idle: the relay's /metrics did not answer")
	}
	calls := after.Sub(before)
	secs := time.Since(t0).Seconds()
	perHour := float64(calls.Total) * 3600 / secs
	t.Add(stats.Num(secs), strconv.FormatInt(calls.Total, 10), stats.Num(perHour), strconv.FormatInt(calls.Pop, 10),
		strconv.FormatInt(calls.KV, 10), strconv.Itoa(workers), strconv.Itoa(workers*120))
	t.Note("v1 made 275 000 broker calls per hour at idle; the calls here also include the relay's status publishes and store reads (kv calls)")
	t.Note("counted by the relay's own client (gate_relay_broker_calls_total); gate-api's own reads are not in the figure")
	t.Figure("calls per hour", perHour)
	return []stats.Table{t}, ctx.Err()
}
