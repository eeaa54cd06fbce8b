package scenario

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/gate/gate-bench/peer"
	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/stack/gateapi"
	"github.com/queen-mq/gate/libs/window"
	"github.com/redis/go-redis/v9"
)

// gateRun is one gate-relay run of the overhead job.
type gateRun struct {
	rate         float64
	fwd, commits int64
	calls        Snapshot
	counted      bool
	workers      int
	cpu          runCPU
}

// runCPU is the CPU one overhead run cost the process doing the relaying
// and the broker (ok false when either could not be read).
type runCPU struct {
	runner, broker time.Duration
	ok             bool
}

// bareRun is one bare-loop run of the overhead job.
type bareRun struct {
	rate    float64
	commits int
	cpu     runCPU
}

// queenPid is the embedded broker's pid (0 without one).
func (b *Bench) queenPid() int {
	if b.st == nil || b.st.Queen() == nil {
		return 0
	}
	return b.st.Queen().Pid()
}

// relayPid is the running embedded relay's pid (0 without one).
func (b *Bench) relayPid() int {
	if b.relay == nil {
		return 0
	}
	return b.relay.p.Pid()
}

// overhead runs the same relay job with (a) a bare loop with the Queen
// client (pop 200 under a lease → one transaction ack + push, no budgets),
// (b) gate-relay charging as transaction riders and (c) gate-relay charging
// with the separate kv call, a budget wide enough never to refuse, the same
// workers, BENCH_ROUNDS rounds each (the medians are reported: single
// runs on two shared cores are noisy). Every runner's items/s is measured
// the same way: arrivals at the same non-decoding egress consumers, over
// the first-to-last span.
func (b *Bench) overhead(ctx context.Context) ([]stats.Table, error) {
	n := fullClaims(20*b.cfg.Backlog, 16, 200)
	rounds := max(1, b.cfg.Rounds)
	size := len(paddedPayload(b.cfg.PayloadBytes)(n / 2))
	t := stats.Table{Title: fmt.Sprintf("overhead — the same relay job (%d items of about %d B, batch 200, 16 partitions) with and without Gate, median of %d runs each", n, size, rounds),
		Header: []string{"runner", "workers", "items/s", "commits", "items/commit", "admission kv calls/claim", "broker calls/claim", "runner CPU µs/item", "broker CPU µs/item", "share of bare loop"}}
	modes := []string{"riders"}
	if b.st != nil {
		modes = append(modes, "separate")
		defer func() { _ = b.useRelay(context.WithoutCancel(ctx), "riders") }()
	}
	gates := map[string][]gateRun{}
	// bares are the bare-loop runs by runner: "bare", "stamped", "riding",
	// "acklast", "lastonly".
	bares := map[string][]bareRun{}
	workers := 16
	// Each round runs every runner once, in an order rotated round by
	// round, and each run's queues are dropped after it: no runner always
	// goes first or always meets the broker with the others' leftovers.
	runners := append(slices.Clone(modes), "bare")
	for _, x := range bareRows {
		runners = append(runners, x.runner)
	}
	// The broker is one process for the whole bench, and its first job of
	// this size grows its heap and maps from nothing; whichever runner went
	// first would pay that alone. One bare-loop run warms it and is not
	// counted. (Every bare-loop run is a child process of its own; a relay
	// is restarted whenever the runner changes, so only round 0's first
	// runner meets a relay that has been up since the stack started.)
	if _, err := b.overheadBare(ctx, n, -1, workers, "bare"); err != nil {
		return []stats.Table{t}, fmt.Errorf("overhead: warming the broker: %w", err)
	}
	for round := 0; round < rounds; round++ {
		for k := range runners {
			mode := runners[(k+round)%len(runners)]
			if _, bare := bareRunners[mode]; bare {
				r, err := b.overheadBare(ctx, n, round, workers, mode)
				if err != nil {
					return []stats.Table{t}, err
				}
				bares[mode] = append(bares[mode], r)
				continue
			}
			if b.st != nil {
				if err := b.useRelay(ctx, mode); err != nil {
					return []stats.Table{t}, fmt.Errorf("overhead: starting the %s relay: %w", mode, err)
				}
			}
			g, err := b.overheadGate(ctx, n, round, mode)
			if err != nil {
				return []stats.Table{t}, err
			}
			gates[mode] = append(gates[mode], g)
			workers = g.workers
		}
	}
	bareRate := func(r bareRun) float64 { return r.rate }
	gateRate := func(r gateRun) float64 { return r.rate }
	addBare := func(label string, m bareRun, share string) {
		t.Add(label, strconv.Itoa(workers), stats.Num(m.rate), strconv.Itoa(m.commits), "200.0", "0", "2.00",
			perItem(m.cpu.runner, n, m.cpu.ok), perItem(m.cpu.broker, n, m.cpu.ok), share)
	}
	bm := medianBy(bares["bare"], bareRate)
	bare := bm.rate
	addBare("(a) bare loop", bm, "100%")
	var runs []string
	for i, mode := range modes {
		gs := gates[mode]
		g := medianBy(gs, gateRate)
		if mode == "riders" {
			b.gateWide = g.rate
		}
		perClaim, callsPerClaim := "-", "-"
		if g.counted && g.commits > 0 {
			perClaim = fmt.Sprintf("%.2f", float64(g.calls.Incr)/float64(g.commits))
			callsPerClaim = fmt.Sprintf("%.2f", float64(g.calls.Pop+g.calls.Txn+g.calls.Incr)/float64(g.commits))
		}
		share := 100 * g.rate / bare
		label := fmt.Sprintf("(%c) gate-relay, %s", 'b'+i, map[string]string{"riders": "charge as riders", "separate": "separate kv call"}[mode])
		t.Add(label, strconv.Itoa(workers), stats.Num(g.rate), strconv.FormatInt(g.commits, 10), ratio(g.fwd, g.commits), perClaim, callsPerClaim,
			perItem(g.cpu.runner, n, g.cpu.ok), perItem(g.cpu.broker, n, g.cpu.ok), fmt.Sprintf("%.0f%%", share))
		t.Figure(mode+" items/s", g.rate)
		t.Figure(mode+" share %", share)
		if g.commits > 0 {
			t.Figure(mode+" forwarded/commits", float64(g.fwd)/float64(g.commits))
			if g.counted {
				t.Figure(mode+" admission calls/claim", float64(g.calls.Incr)/float64(g.commits))
			}
		}
		runs = append(runs, mode+" "+joinRates(gs, gateRate))
	}
	// The bare-loop rows after Gate's each add one of Gate's costs to the
	// loop, so the table tells them apart.
	for _, x := range bareRows {
		rs := bares[x.runner]
		if len(rs) == 0 {
			continue
		}
		row := 'a' + rune(len(t.Rows))
		m := medianBy(rs, bareRate)
		share := 100 * m.rate / bare
		addBare(fmt.Sprintf("(%c) %s", row, x.label), m, fmt.Sprintf("%.0f%%", share))
		t.Figure(x.figure+" items/s", m.rate)
		t.Figure(x.figure+" share %", share)
		runs = append(runs, x.list+" "+joinRates(rs, bareRate))
		t.Note("row (%c) is %s", row, x.note)
	}
	runs = append(runs, "bare "+joinRates(bares["bare"], bareRate))
	t.Figure("bare items/s", bare)
	// A median of a few runs moves by more than the 10 points the target
	// allows when the host is noisy; the ratio of all runs' means, with
	// the interval their scatter leaves, says how far one table can be
	// trusted.
	bareRates := rates(bares["bare"], bareRate)
	var shares []string
	addShare := func(name string, rs []float64) {
		if len(rs) == 0 {
			return
		}
		r := stats.RatioOfMeans(rs, bareRates)
		shares = append(shares, fmt.Sprintf("%s %.1f%% (%.0f–%.0f%%)", name, 100*r.Of, 100*r.Low, 100*r.High))
		t.Figure(name+" share of means %", 100*r.Of)
		t.Figure(name+" share of means low %", 100*r.Low)
		t.Figure(name+" share of means high %", 100*r.High)
	}
	for _, mode := range modes {
		addShare(mode, rates(gates[mode], gateRate))
	}
	for _, x := range bareRows {
		addShare(x.list, rates(bares[x.runner], bareRate))
	}
	t.Note("share of the bare loop over all %d runs each, as the ratio of the means (bootstrap 95%% interval): %s", rounds, strings.Join(shares, "; "))
	t.Note("runs (sorted items/s): %s", strings.Join(runs, "; "))
	t.Note("CPU µs/item: user + system CPU of the process doing the relaying (gate-relay, or the bare-loop child) and of the broker over the run, from /proc, divided by the items moved (the runs' medians by items/s)")
	t.Note("items/s over the first-to-last arrival at the same 4 egress consumers (which do not decode payloads); the relays talk to the broker directly and count their calls in their own client; broker calls/claim = pops + transactions + incr kv calls per commit")
	t.Note("targets (reported, not asserted): Gate ≥ 90%% of the bare loop; forwarded/commits ≥ 190 at batch 200; 0 admission kv calls per claim on the rider path when nothing is refused, 1 on the separate path")
	return []stats.Table{t}, ctx.Err()
}

// medianBy sorts runs by rate, slowest first, and returns the median run.
func medianBy[T any](runs []T, rate func(T) float64) T {
	slices.SortFunc(runs, func(x, y T) int { return cmp.Compare(rate(x), rate(y)) })
	return runs[len(runs)/2]
}

// rates are the runs' rates, in their order.
func rates[T any](runs []T, rate func(T) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = rate(r)
	}
	return out
}

// joinRates lists the runs' rates in their order, "a/b/c".
func joinRates[T any](runs []T, rate func(T) float64) string {
	out := make([]string, len(runs))
	for i, r := range rates(runs, rate) {
		out[i] = stats.Num(r)
	}
	return strings.Join(out, "/")
}

// bareRows are the bare-loop rows printed after Gate's, in order, each
// adding one more of Gate's costs to the loop so the table tells them
// apart: the runner, its row label, its figure and run-list names, and the
// note that explains it.
var bareRows = []struct{ runner, label, figure, list, note string }{
	{"stamped", "bare loop + the _gate stamp", "stamped bare", "bare+stamp",
		"the bare loop pushing the bytes gate-relay pushes (each payload with a _gate stamp of the same size): what the stamp alone costs the broker and the consumers, with no budget, no derived ids and no riders"},
	{"riding", "bare loop + stamp + riders", "riding bare", "bare+stamp+riders",
		"that loop also charging every transaction as gate-relay's rider path does (one required incr with max and a getMany, built and read by libs/budget)"},
	{"acklast", "bare loop + stamp + riders + one ack per claim", "acklast bare", "bare+stamp+riders+ackLast",
		"that loop also settling each claim with one ack of its last message, as gate-relay does (the broker's ack is cumulative), instead of an ack per message: it does everything gate-relay does to the broker, so between it and (b) is what Gate's own work costs (derived ids, classify, bookkeeping)"},
	{"lastonly", "bare loop + one ack per claim", "lastonly bare", "bare+ackLast",
		"the bare loop settling each claim with that one ack and nothing else of Gate's (no stamp, no riders): the best a hand-written loop does, so between it and (b) is everything Gate adds, the stamp and the charge included"},
}

// bareRunners are the overhead runners that are bare-loop children (the
// others are gate-relay), with what each adds of gate-relay's work to the
// loop: the `_gate` stamp, the rider charge, one cumulative ack per claim.
var bareRunners = map[string]struct{ stamp, riders, ackLast bool }{
	"bare": {}, "stamped": {stamp: true}, "riding": {stamp: true, riders: true},
	"acklast": {stamp: true, riders: true, ackLast: true}, "lastonly": {ackLast: true},
}

// overheadGraph is the graph a runner's run of round is named after. Every
// runner's tag has the same length, so that every run's queue names,
// consumer group and _gate stamp have the same lengths too: the broker and
// the runners scan, copy and store those bytes in every ack and push, and
// shorter names would make one runner look cheaper for its names alone.
func (b *Bench) overheadGraph(runner string, round int) string {
	tag := map[string]string{"riders": "rid", "separate": "sep", "bare": "bar", "stamped": "stm", "riding": "srd", "acklast": "sal", "lastonly": "lon"}[runner]
	return b.graphName("ovh-" + tag + strconv.Itoa(round))
}

// bareNames are the bare loop's source queue and consumer group for graph:
// Gate's ingress queue and stage group names with "bare." for "gate.", so
// they have the same lengths without being Gate-owned.
func (b *Bench) bareNames(graph string) (src, group string) {
	src = "bare." + strings.TrimPrefix(plan.IngressQueue(b.cfg.App, graph, "n"), "gate.")
	group = "bare." + strings.TrimPrefix(plan.Group(b.cfg.App, graph, "main", "n"), "gate.")
	return src, group
}

// overheadBare is one bare-loop run, in a child process: prefill a source
// queue, move it to a destination the same egress consumers count.
func (b *Bench) overheadBare(ctx context.Context, n, round, workers int, runner string) (bareRun, error) {
	graph := b.overheadGraph(runner, round)
	src, group := b.bareNames(graph)
	dst := b.egressQueue(graph, "")
	defer b.dropQueues(src, dst)
	if _, err := b.fill(ctx, src, n, 16, paddedPayload(b.cfg.PayloadBytes)); err != nil {
		return bareRun{}, err
	}
	dd := b.startCounter(ctx, dst, "bench-workers", 4, 200)
	broker := startCPU(b.queenPid())
	job := bareJob{QueenURL: b.cfg.QueenURL, Source: src, Group: group, Dest: dst, Workers: workers, Batch: 200, Total: n, Deadline: 12 * b.cfg.Seconds}
	add := bareRunners[runner]
	if add.stamp {
		job.StampGraph = graph
	}
	job.Riders, job.AckLast = add.riders, add.ackLast
	res, childCPU, err := runBareChild(ctx, job)
	bcpu, bok := broker.stop()
	waitFor(ctx, 10*time.Second, func() bool { return dd.count() >= res.Moved })
	ats, _ := dd.close()
	if err != nil {
		return bareRun{}, fmt.Errorf("overhead: bare loop: %w", err)
	}
	return bareRun{rate: spanRate(ats), commits: res.Commits, cpu: runCPU{runner: childCPU, broker: bcpu[0], ok: bok}}, nil
}

// dropQueues deletes queues a finished run leaves behind, so the broker's
// memory does not grow run after run (best effort).
func (b *Bench) dropQueues(queues ...string) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, q := range queues {
		_, _ = b.q.DeleteQueue(c, q)
	}
}

// overheadGate is one gate-relay run: prefill the ingress, declare a wide
// budget, wait until every item reached the egress.
func (b *Bench) overheadGate(ctx context.Context, n, round int, mode string) (gateRun, error) {
	var g gateRun
	graph := b.overheadGraph(mode, round)
	egress := b.egressQueue(graph, "")
	defer b.dropQueues(plan.IngressQueue(b.cfg.App, graph, "n"), egress)
	if _, err := b.fill(ctx, plan.IngressQueue(b.cfg.App, graph, "n"), n, 16, paddedPayload(b.cfg.PayloadBytes)); err != nil {
		return g, err
	}
	d := b.startCounter(ctx, egress, "bench-workers", 4, 200)
	before, counted := b.snap(ctx)
	cpu := startCPU(b.relayPid(), b.queenPid())
	decl, err := b.declare(ctx, graph, oneNode(node(1_000_000_000, 1000, 0, 200, 16, "", egress)))
	if err != nil {
		d.close()
		return g, err
	}
	g.workers = 1
	if len(decl.Resolved.Stages) > 0 {
		g.workers = max(1, int(decl.Resolved.Stages[0].Concurrency))
	}
	ok := waitFor(ctx, 12*b.cfg.Seconds, func() bool { return d.count() >= n })
	if spent, good := cpu.stop(); good {
		g.cpu = runCPU{runner: spent[0], broker: spent[1], ok: true}
	}
	ats, _ := d.close()
	if after, got := b.snap(ctx); got && counted {
		g.calls, g.counted = after.Sub(before), true
	}
	waitFor(ctx, 5*time.Second, func() bool {
		x, _, err := b.counters(ctx, graph)
		g.fwd, g.commits = x.Forwarded, x.Commits
		return err == nil && x.Forwarded >= int64(len(ats))
	})
	b.forget(graph)
	if !ok {
		return g, fmt.Errorf("overhead: gate-relay (%s) moved %d of %d within %v", mode, len(ats), n, 12*b.cfg.Seconds)
	}
	g.rate = spanRate(ats)
	return g, nil
}

// spanRate is the number of stamps over their first-to-last span.
func spanRate(stamps []int64) float64 {
	if len(stamps) < 2 {
		return 0
	}
	lo, hi := slices.Min(stamps), slices.Max(stamps)
	if hi <= lo {
		return 0
	}
	return float64(len(stamps)) / (float64(hi-lo) / 1000)
}

// peerRow is one contender's figures.
type peerRow struct {
	name string
	// worst1, worst10 are the single-process run's worst sliding 1 s and
	// 10 s windows; util its utilisation over whole 1 s windows (0..1).
	worst1, worst10 int
	util            float64
	wide            float64
	twoNote         string
	twoOK           bool
	skipped         string
}

// peers paces one backlog through one ceiling with Gate, x/time/rate and a
// Redis GCRA limiter.
func (b *Bench) peers(ctx context.Context) ([]stats.Table, error) {
	r := b.cfg.PeerRate
	m := min(b.cfg.Backlog, 5*r)
	w := b.cfg.Threads
	t := stats.Table{Title: fmt.Sprintf("peers — %d items paced through a %d/s ceiling (%d per 10 s), %d workers each popping/pushing with the Queen client", m, r, 10*r, w),
		Header: []string{"limiter", "worst sliding 1 s", "vs 1 s ceiling", "worst sliding 10 s", "vs 10 s ceiling", "utilisation", "items/s when wide", "exact across 2 processes"}}
	var rows []peerRow

	// Gate.
	gr, err := b.gatePeer(ctx, r, m)
	if err != nil {
		return []stats.Table{t}, err
	}
	rows = append(rows, gr)

	// golang.org/x/time/rate: each process has its own bucket.
	tb := func() peer.Limiter { return peer.NewTokenBucket(float64(r), 200) }
	xr, err := b.jobPeer(ctx, "x/time/rate (one process)", "xrate", r, m, w, tb, tb, func() peer.Limiter { return peer.NewTokenBucket(1e9, 1000) })
	if err != nil {
		return []stats.Table{t}, err
	}
	rows = append(rows, xr)

	// Redis GCRA: the state is one key, shared by every process.
	rdb := redis.NewClient(&redis.Options{Addr: b.cfg.RedisAddr})
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	perr := rdb.Ping(pctx).Err()
	cancel()
	if perr != nil {
		rows = append(rows, peerRow{name: "redis_rate GCRA", skipped: fmt.Sprintf("skipped: no Redis at %s (%v); set BENCH_REDIS", b.cfg.RedisAddr, perr)})
	} else {
		key := "gate-bench:" + b.runID
		gc := func() peer.Limiter {
			c := redis.NewClient(&redis.Options{Addr: b.cfg.RedisAddr})
			return peer.NewGCRA(c, key, r, 200)
		}
		gcWide := func() peer.Limiter { return peer.NewGCRA(rdb, key+":wide", 1_000_000_000, 1000) }
		rr, err := b.jobPeer(ctx, "redis_rate GCRA (shared key)", "gcra", r, m, w, gc, gc, gcWide)
		if err != nil {
			return []stats.Table{t}, err
		}
		rows = append(rows, rr)
	}
	for _, p := range rows {
		if p.skipped != "" {
			t.Add(p.name, "-", "-", "-", "-", "-", "-", p.skipped)
			continue
		}
		wide := "-"
		if p.wide > 0 {
			wide = stats.Num(p.wide)
		}
		t.Add(p.name, strconv.Itoa(p.worst1), pct(float64(p.worst1)/float64(r)), strconv.Itoa(p.worst10), pct(float64(p.worst10)/float64(10*r)),
			pct(p.util), wide, p.twoNote)
		t.Figure(p.name+" worst 1s", float64(p.worst1))
		t.Figure(p.name+" worst 10s", float64(p.worst10))
		t.Figure(p.name+" utilisation %", 100*p.util)
		if p.twoNote != "" && !strings.HasPrefix(p.twoNote, "not measured") {
			t.Figure(p.name+" exact across 2 processes", boolFigure(p.twoOK))
		}
	}
	t.Note("worst sliding 1 s / 10 s: most commits inside any half-open [t, t+1 s) / [t, t+10 s) of the single-process run, against %d/s and %d per 10 s", r, 10*r)
	t.Note("utilisation: items ÷ (whole 1 s windows spanned from the first commit to the last × %d), so a fixed-window limiter that fills each window in a burst is not credited with more than 100%%", r)
	t.Note("exact across 2 processes — each limiter against its own declared bound, on the two-process run:")
	t.Note("  Gate (%d per 10 s in ten 1 s sub-windows of %d, fixed windows: a kv TTL cannot be shorter than 1 s): the shared kv counter's peak in every sub-window ≤ %d, read every %v, AND worst sliding 10 s ≤ (N+1)/N × %d = %d", 10*r, r, r, counterPoll, 10*r, window.SlidingBound(int64(r), 10))
	t.Note("  x/time/rate, GCRA (continuous limiters, burst 200): worst sliding 1 s ≤ 110%% of the ceiling (%d)", r+r/10)
	t.Note("  a fixed-window sliding second may straddle two sub-windows, so Gate's 1 s column can exceed the ceiling by design (bounded by 2 × %d)", r)
	t.Note("items/s when wide: Gate's figure comes from the overhead scenario (\"-\" when it did not run first); the others pace the same backlog with a limiter that never waits")
	t.Note("two processes: two runners, each with its own limiter instance (x/time/rate), its own Redis client on the shared key (GCRA), or a second gate-relay process on the same kv counter (Gate)")
	return []stats.Table{t}, ctx.Err()
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

func boolFigure(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// jobPeer measures one limiter: at the ceiling, wide open, and split across
// two runners with their own instances.
func (b *Bench) jobPeer(ctx context.Context, name, tag string, r, m, w int, one, two, wide func() peer.Limiter) (peerRow, error) {
	row := peerRow{name: name}
	run := func(what string, total int, lims ...peer.Limiter) (peer.Result, error) {
		src := "bench." + b.cfg.App + ".peer-" + tag + "-" + what + "-" + b.runID
		if _, err := b.fill(ctx, src, total, 16, seqPayload); err != nil {
			return peer.Result{}, err
		}
		var mu sync.Mutex
		var all peer.Result
		var wg sync.WaitGroup
		errs := make([]error, len(lims))
		for i, l := range lims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := peer.Job{Client: b.q, Source: src, Group: "bench-peer", Dest: src + ".out", Workers: w, Batch: 200,
					Total: total, Limiter: l, Deadline: time.Duration(2*total/r+30) * time.Second}.Run(ctx)
				if err != nil && len(lims) > 1 {
					err = nil // the other runner may have moved the rest
				}
				errs[i] = err
				mu.Lock()
				all.Moved += res.Moved
				all.Commits += res.Commits
				all.Stamps = append(all.Stamps, res.Stamps...)
				if all.FirstMs == 0 || (res.FirstMs > 0 && res.FirstMs < all.FirstMs) {
					all.FirstMs = res.FirstMs
				}
				all.LastMs = max(all.LastMs, res.LastMs)
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return all, fmt.Errorf("%s: %w", name, e)
			}
		}
		return all, nil
	}
	res, err := run("ceil", m, one())
	if err != nil {
		return row, err
	}
	row.worst1, row.worst10 = worstSpan(res.Stamps, 1000), worstSpan(res.Stamps, 10_000)
	row.util = stats.Utilisation(res.Stamps, int64(r), 1000)
	if res, err = run("wide", m, wide()); err != nil {
		return row, err
	}
	row.wide = res.ItemsPerSec()
	if res, err = run("two", m, two(), two()); err != nil {
		return row, err
	}
	row.twoOK, row.twoNote = continuousVerdict(worstSpan(res.Stamps, 1000), r)
	return row, nil
}

// continuousVerdict judges a continuous limiter's two-process run: its
// worst sliding second within its burst, 110% of the ceiling r.
func continuousVerdict(worst1, r int) (bool, string) {
	if worst1 <= r+r/10 {
		return true, fmt.Sprintf("yes (worst 1 s %d ≤ %d)", worst1, r+r/10)
	}
	return false, fmt.Sprintf("no (worst 1 s %d = %.0f%% of the ceiling)", worst1, 100*float64(worst1)/float64(r))
}

// fixedVerdict judges a fixed-window limiter's two-process run: every
// sub-window's counter peak within perSub, and the worst sliding whole
// window within the (N+1)/N bound.
func fixedVerdict(peak, perSub int64, windows int, worst10, bound10 int64) (bool, string) {
	switch {
	case windows == 0:
		return false, "no (the kv counter was never read)"
	case peak > perSub || worst10 > bound10:
		return false, fmt.Sprintf("no (worst sub-window %d of %d, sliding 10 s %d of ≤ %d)", peak, perSub, worst10, bound10)
	}
	return true, fmt.Sprintf("yes (%d sub-windows, worst %d ≤ %d; sliding 10 s %d ≤ %d)", windows, peak, perSub, worst10, bound10)
}

// counterPoll is how often the Gate peer reads its kv counter.
const counterPoll = 20 * time.Millisecond

// counterWatch reads one kv counter every counterPoll until stopped.
type counterWatch struct {
	stop    context.CancelFunc
	done    chan struct{}
	samples []stats.CounterSample
	errs    int
}

// watchCounter starts reading key in the bench's kv namespace.
func (b *Bench) watchCounter(ctx context.Context, key string) *counterWatch {
	ctx, cancel := context.WithCancel(ctx)
	cw := &counterWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(cw.done)
		tick := time.NewTicker(counterPoll)
		defer tick.Stop()
		for {
			c, cancel := context.WithTimeout(ctx, time.Second)
			res, err := b.q.KV(c, queen.KVGetMany(b.cfg.KVNamespace, key))
			at := time.Now().UnixMilli()
			cancel()
			switch {
			case err != nil:
				if ctx.Err() == nil {
					cw.errs++
				}
			case len(res.Results) > 0:
				for _, row := range res.Results[0].Rows {
					v, err := strconv.ParseInt(strings.TrimSpace(string(row.Value)), 10, 64)
					exp, terr := row.ExpiresAt.Time()
					if row.Key != key || err != nil || terr != nil || exp.IsZero() {
						continue
					}
					cw.samples = append(cw.samples, stats.CounterSample{AtMs: at, Value: v, ExpiresAtMs: exp.UnixMilli()})
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return cw
}

// close stops reading and returns the sub-windows seen.
func (cw *counterWatch) close() ([]stats.SubWindow, int) {
	cw.stop()
	<-cw.done
	return stats.SubWindows(cw.samples), cw.errs
}

// gateRunResult is one gate-relay peer run.
type gateRunResult struct {
	ats     []int64
	windows []stats.SubWindow
	readErr int
	perSub  int64
}

// gatePeer paces the backlog with gate-relay: the ceiling run, the wide
// figure from the overhead scenario, and (embedded) a second relay process.
func (b *Bench) gatePeer(ctx context.Context, r, m int) (peerRow, error) {
	row := peerRow{name: "Gate (gate-relay)", wide: b.gateWide}
	run := func(what string) (gateRunResult, error) {
		var g gateRunResult
		graph := b.graphName("peer-" + what)
		egress := b.egressQueue(graph, "")
		doc := oneNode(node(int64(10*r), 10_000, 10, 200, 16, "", egress))
		if _, err := b.fill(ctx, plan.IngressQueue(b.cfg.App, graph, "n"), m, 16, seqPayload); err != nil {
			return g, err
		}
		d := b.startDrainer(ctx, egress, "bench-workers", 4, 200)
		var cw *counterWatch
		_, err := b.declareWatch(ctx, graph, doc, func(decl gateapi.Declared) {
			n, ok := decl.Resolved.Node("n")
			if !ok {
				return
			}
			if bud, ok := n.Budget("b"); ok && bud.Key != "" {
				g.perSub = bud.CountSub
				cw = b.watchCounter(ctx, bud.Key)
			}
		})
		if err != nil {
			d.close()
			if cw != nil {
				cw.close()
			}
			return g, err
		}
		ok := waitFor(ctx, time.Duration(2*m/r+30)*time.Second, func() bool { return d.count() >= m })
		g.ats, _ = d.close()
		if cw != nil {
			// The last sub-window's row lives until its expiry: keep reading
			// past it so its peak is seen.
			sleepCtx(ctx, 1200*time.Millisecond)
			g.windows, g.readErr = cw.close()
		}
		b.forget(graph)
		if !ok {
			return g, fmt.Errorf("gate peer: %d of %d reached the egress", len(g.ats), m)
		}
		return g, nil
	}
	g, err := run("ceil")
	if err != nil {
		return row, err
	}
	row.worst1, row.worst10 = worstSpan(g.ats, 1000), worstSpan(g.ats, 10_000)
	row.util = stats.Utilisation(g.ats, int64(r), 1000)
	if b.st == nil {
		row.twoNote = "not measured (needs --embedded to start a second relay; gate-e2e replicas checks it)"
		return row, nil
	}
	p, err := b.st.StartRelay(ctx)
	if err != nil {
		return row, fmt.Errorf("starting a second gate-relay: %w", err)
	}
	g, err = run("two")
	p.Stop()
	if err != nil {
		return row, err
	}
	perSub := g.perSub
	if perSub <= 0 {
		perSub = int64(r)
	}
	row.twoOK, row.twoNote = fixedVerdict(stats.WorstPeak(g.windows), perSub, len(g.windows),
		int64(worstSpan(g.ats, 10_000)), window.SlidingBound(int64(r), 10))
	row.twoNote += fmt.Sprintf(" [sliding 1 s %d]", worstSpan(g.ats, 1000))
	if g.readErr > 0 {
		row.twoNote += fmt.Sprintf(" [%d counter reads failed]", g.readErr)
	}
	return row, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// worstSpan is the most commits inside one half-open [t, t+spanMs).
func worstSpan(stamps []int64, spanMs int64) int {
	n, _ := window.WorstSpan(stamps, spanMs)
	return n
}
