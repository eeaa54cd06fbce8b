package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/stack"
	"github.com/queen-mq/gate/libs/stack/gateapi"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// fleetPushRate is the push door's open-loop rate in the fleet rows,
// spread round-robin over up to fleetPushGraphs graphs: 2 items/s each at
// 1,000 graphs, the issue's "1,000 graphs each relaying a few items per
// second".
const (
	fleetPushRate   = 2000
	fleetPushGraphs = 1000
)

// fleetRun is one fleet of relay replicas started for a step.
type fleetRun struct {
	procs []*stack.Process
	index []int // each one's index in the stack's relays
}

func (f *fleetRun) pids() []int {
	var out []int
	for _, p := range f.procs {
		out = append(out, p.Pid())
	}
	return out
}

func (f *fleetRun) stop() {
	for _, p := range f.procs {
		if p.Running() {
			p.Stop()
		}
	}
}

// fleet (gate-bench scale-fleet, --embedded) declares two-node graphs up
// to each of BENCH_SCALE_GRAPHS (cumulative, no relay running, the PUT
// timed alone), then for each of BENCH_SCALE_REPLICAS starts that many
// relay processes on the one broker and reports: the time from the cold
// start to every graph running; PUT → running p99 of new graphs; idle CPU
// and RSS per replica and for the broker; goroutines per stage run; the
// push door's p99 at 2,000 req/s spread over 1,000 graphs and the relays'
// CPU per forwarded item then, against the same rate into one graph; the
// console's list and overview latency; and, with 3 replicas or more, the
// time until the graphs of one killed with SIGKILL run on as many
// replicas as before. Every graph is deleted at the end.
func (b *Bench) fleet(ctx context.Context) ([]stats.Table, error) {
	t := stats.Table{Title: "scale-fleet — N two-node graphs on R relay processes, one broker (placement, cold start, idle cost, load spread, a replica killed)",
		Header: []string{"graphs", "replicas", "PUT p50 ms", "PUT p99 ms", "gate-api CPU ms/PUT", "cold start → all running s", "PUT → running p99 ms",
			"idle CPU % per replica", "RSS MB per replica", "broker idle CPU %", "broker RSS MB", "goroutines/stage",
			"push p99 ms @2000/s", "relay CPU µs/item (1 graph)", "list p50/p99 ms", "overview p50/p99 ms", "kill -9 → re-placed s"}}
	if b.st == nil {
		return []stats.Table{t}, fmt.Errorf("scale-fleet starts relay processes: it needs --embedded")
	}
	if b.relay != nil {
		b.relay.p.Stop()
		defer func() {
			if err := b.useRelay(context.WithoutCancel(ctx), "riders"); err != nil {
				b.logf("scale-fleet: restarting the bench's relay: %v", err)
			}
		}()
	}
	st := store.New(b.q, b.cfg.KVNamespace)
	var declared []string
	defer func() {
		for _, g := range declared {
			b.forget(g)
		}
	}()
	put := func(graph string, count int) (time.Duration, error) {
		c, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		t0 := time.Now()
		if _, err := b.api.Declare(c, b.cfg.App, graph, b.fleetDoc(graph, count)); err != nil {
			return 0, fmt.Errorf("declaring %s: %w", graph, err)
		}
		declared = append(declared, graph)
		return time.Since(t0), nil
	}
	// The relays take GATE_RELAY_REPLICAS_PER_GRAPH from the environment
	// the bench runs in; the probe expects the same number.
	perGraph, err := knob.ReplicasPerGraph.Read(os.Getenv)
	if err != nil {
		return []stats.Table{t}, err
	}
	// perGraphText names it in the notes (0 = every replica).
	perGraphText := strconv.Itoa(perGraph)
	if perGraph == 0 {
		perGraphText = "0, every replica"
		perGraph = 1 << 20 // every replica: min(perGraph, R) below
	}
	for _, n := range b.cfg.ScaleGraphs {
		var lat []time.Duration
		apiCPU := startCPU(b.st.API().Pid())
		for i := len(declared); i < n; i++ {
			d, err := put(b.graphName("fleet-"+strconv.Itoa(i)), 100)
			if err != nil {
				return []stats.Table{t}, err
			}
			lat = append(lat, d)
		}
		perPut := "-"
		if d, ok := apiCPU.stop(); ok && len(d) == 1 && len(lat) > 0 {
			perPut = fmt.Sprintf("%.2f", float64(d[0].Microseconds())/1000/float64(len(lat)))
		}
		for _, r := range b.cfg.ScaleReplicas {
			row, notes, err := b.fleetStep(ctx, st, declared, r, min(perGraph, r), put)
			for _, n := range notes {
				t.Note("%d graphs, %d replicas: %s", len(declared), r, n)
			}
			if err != nil {
				return []stats.Table{t}, err
			}
			t.Add(append([]string{strconv.Itoa(n), strconv.Itoa(r), ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), perPut}, row...)...)
			t.Figure(fmt.Sprintf("put p99 ms at %d", n), float64(quantile(lat, 0.99).Microseconds())/1000)
		}
	}
	t.Note("PUT p50/p99: the step's PUTs with no relay running (GATE_DECLARE_WAIT_MS=0), and gate-api's CPU over them ÷ their number; PUT → running: %d new graphs PUT one at a time with the fleet up, each until a push answers running (gate-api's view of the relays' status)", scaleSample)
	t.Note("cold start: from starting the first relay process to every declared graph running on a live replica (the relays' status rows, as gate-api reads them); each graph runs on min(GATE_RELAY_REPLICAS_PER_GRAPH=%s, R) replicas", perGraphText)
	t.Note("idle: over BENCH_IDLE_SECONDS after a settle of BENCH_IDLE_SETTLE_SECONDS (%s here; the relays spread each stage's first long-poll and doze check over the second half of the poll timeout, so 30 s measures the steady idle); goroutines/stage = the replicas' go_goroutines summed ÷ the stages they run (2 per graph per replica running it)", b.cfg.IdleSettle)
	t.Note("push: open loop at %d req/s over BENCH_SECONDS through the door, round-robin over the first %d graphs; relay CPU per item: the replicas' CPU over that window ÷ the stage forwards it made (two per item, summed over stages), and in brackets the same rate into one graph with budgets that never refuse", fleetPushRate, fleetPushGraphs)
	t.Note("list: GET /api/graphs?limit=50 and /api/targets?limit=50; overview: GET /api/overview; 20 requests each, one at a time")
	t.Note("kill -9 (R ≥ 3): one replica killed with SIGKILL; the time until every graph it ran is run by min(GATE_RELAY_REPLICAS_PER_GRAPH=%s, live replicas) replicas again. Bound: its header expires after 3 × GATE_STATUS_SECONDS (%s here, 15 s by default), then each replica re-places within one GATE_SIGNAL_POLL_MS (500 ms) and starts the graphs it gained; a graph on more than one replica keeps running on the others meanwhile", perGraphText, 3*b.cfg.StatusPeriod)
	return []stats.Table{t}, ctx.Err()
}

// fleetDoc is a two-node graph; count is its budgets' count per second.
func (b *Bench) fleetDoc(graph string, count int) map[string]any {
	return map[string]any{"version": 1, "nodes": map[string]any{
		"in":  map[string]any{"ingress": true, "budgets": []any{map[string]any{"id": "in", "count": count, "timeMs": 1000}}},
		"out": map[string]any{"budgets": []any{map[string]any{"id": "out", "count": count / 2, "timeMs": 1000}}, "egress": b.egressQueue(graph, "")},
	}, "paths": []any{map[string]any{"name": "main", "nodes": []any{"in", "out"}}}}
}

// fleetStep runs one row: r relays started cold over declared.
func (b *Bench) fleetStep(ctx context.Context, st *store.Store, declared []string, r, perGraph int, put func(string, int) (time.Duration, error)) (row, notes []string, err error) {
	b.logf("scale-fleet: %d graphs, %d replicas: cold start…", len(declared), r)
	f := &fleetRun{}
	defer f.stop()
	t0 := time.Now()
	for range r {
		p, err := b.st.StartRelay(ctx, "GATE_ADMISSION=riders", fmt.Sprintf("GATE_RELAY_REPLICAS_PER_GRAPH=%d", min(perGraph, 1000)))
		if err != nil {
			return nil, nil, fmt.Errorf("starting relay replica %d of %d: %w", len(f.procs)+1, r, err)
		}
		f.procs = append(f.procs, p)
		f.index = append(f.index, len(b.st.Relays())-1)
	}
	want := map[string]bool{}
	for _, g := range declared {
		want[g] = true
	}
	cold := "not in 120 s"
	// The probe follows the relays' change logs as gate-api does: reading
	// every status row each 200 ms would load the broker it measures.
	rd := st.NewStatusReader(store.StatusReaderConfig{})
	// The console's graph list, one request at a time, while the fleet
	// starts: it reads the status gate-api is busy reading.
	listCtx, stopList := context.WithCancel(ctx)
	listed := make(chan []time.Duration, 1)
	go func() {
		var d []time.Duration
		hc := b.api.HTTPClient()
		for listCtx.Err() == nil {
			t1 := time.Now()
			if body, status, err := getStatus(listCtx, hc, b.cfg.GateURL+"/api/graphs?limit=50"); err == nil && status == http.StatusOK && len(body) > 0 {
				d = append(d, time.Since(t1))
			}
			select {
			case <-listCtx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
		listed <- d
	}()
	// Progress every 10 s: the graphs gate-api's view shows running, and
	// what each replica says it runs (its gate_relay_graph_running), so a
	// slow start tells the relays' starting from the status's lag.
	logged := time.Now()
	if waitFor(ctx, 120*time.Second, func() bool {
		ok, covered := b.placed(ctx, rd, want, 1)
		if time.Since(logged) >= 10*time.Second {
			logged = time.Now()
			var own []string
			for _, p := range f.procs {
				own = append(own, strconv.Itoa(int(relayMetrics(ctx, p.HealthURL)["gate_relay_graph_running"])))
			}
			b.logf("scale-fleet: cold start %.0f s: %d of %d graphs running in the status; the replicas run %s; the broker holds %s", time.Since(t0).Seconds(), covered, len(want), strings.Join(own, " / "), openFilesNote(b.queenPid()))
		}
		return ok
	}) {
		cold = fmt.Sprintf("%.1f", time.Since(t0).Seconds())
	}
	stopList()
	if d := <-listed; len(d) > 0 {
		notes = append(notes, fmt.Sprintf("list during the cold start (GET /api/graphs?limit=50 every 250 ms, %d answers): p50 %s / p99 %s ms", len(d), ms(quantile(d, 0.5)), ms(quantile(d, 0.99))))
	}
	// PUT → running of new graphs, the fleet up.
	var toRun []time.Duration
	never := false
	for i := range scaleSample {
		g := b.graphName(fmt.Sprintf("fleet-new-%d-%d", r, i))
		d, err := put(g, 100)
		if err != nil {
			return nil, nil, err
		}
		want[g] = true
		t1 := time.Now()
		if !never && waitFor(ctx, 30*time.Second, func() bool { return b.pushRunning(ctx, g) }) {
			toRun = append(toRun, time.Since(t1)+d)
		} else {
			never = true
		}
	}
	toRunP99 := ms(quantile(toRun, 0.99))
	if never {
		toRunP99 = "not in 30 s"
	}
	b.logf("scale-fleet: idle…")
	time.Sleep(b.cfg.IdleSettle)
	relayCPU := startCPU(f.pids()...)
	brokerCPU := startCPU(b.queenPid())
	wall := time.Now()
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-time.After(b.cfg.IdleSeconds):
	}
	secs := time.Since(wall).Seconds()
	var idle, rss []string
	if d, ok := relayCPU.stop(); ok {
		for _, c := range d {
			idle = append(idle, fmt.Sprintf("%.1f", 100*c.Seconds()/secs))
		}
	}
	brokerIdle := "-"
	if d, ok := brokerCPU.stop(); ok && len(d) == 1 {
		brokerIdle = fmt.Sprintf("%.1f", 100*d[0].Seconds()/secs)
	}
	goroutines := 0
	for _, p := range f.procs {
		rss = append(rss, mb(rssOf(p.Pid())))
		m := relayMetrics(ctx, p.HealthURL)
		goroutines += int(m["go_goroutines"])
	}
	perStage := "-"
	if stages := 2 * len(want) * perGraph; goroutines > 0 && stages > 0 {
		perStage = fmt.Sprintf("%.2f", float64(goroutines)/float64(stages))
	}
	b.logf("scale-fleet: push door at %d req/s…", fleetPushRate)
	spread := declared[:min(len(declared), fleetPushGraphs)]
	p99, perItem, note := b.fleetLoad(ctx, st, f, spread)
	notes = append(notes, fmt.Sprintf("push over %d graphs: %s", len(spread), note))
	one := b.graphName(fmt.Sprintf("fleet-one-%d-%d", len(declared), r))
	if _, err := put(one, 1_000_000); err != nil {
		return nil, nil, err
	}
	want[one] = true
	perItemOne := "not running in 30 s"
	if waitFor(ctx, 30*time.Second, func() bool { return b.pushRunning(ctx, one) }) {
		var note string
		_, perItemOne, note = b.fleetLoad(ctx, st, f, []string{one})
		notes = append(notes, "push into one graph: "+note)
	} else {
		// The spread load's backlog still holds the fleet: say so and go
		// on with the rows that do not push.
		notes = append(notes, fmt.Sprintf("push into one graph: %s did not answer running within 30 s of its PUT (the spread row's backlog)", one))
	}
	list := b.latencies(ctx, 20, "/api/graphs?limit=50", "/api/targets?limit=50")
	overview := b.latencies(ctx, 20, "/api/overview")
	killed := "-"
	if r >= 3 {
		killed = b.fleetKill(ctx, st, f, want, perGraph)
	}
	if n, limit := openFiles(b.queenPid()); limit > 0 && n >= limit*9/10 {
		notes = append(notes, fmt.Sprintf("the broker holds %d open files of its limit %d: every relay keeps one connection per waiting ingress stage of the graphs it is primary for (a parked long-poll; a standby's stages doze and check), so about one connection per graph plus the relays' other calls; past the limit the broker cannot accept, and the fleet stalls", n, limit))
	}
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		notes = append(notes, "load average at the row's end: "+strings.Join(strings.Fields(string(l))[:3], " "))
	}
	return []string{cold, toRunP99, strings.Join(idle, " / "), strings.Join(rss, " / "), brokerIdle, mb(rssOf(b.queenPid())), perStage,
		p99, perItem + " (" + perItemOne + ")", list, overview, killed}, notes, nil
}

// fleetLoad pushes fleetPushRate req/s through the door round-robin over
// graphs for BENCH_SECONDS and answers the p99, the relays' CPU per stage
// forward over the window (and 3 s after, for what was queued to be
// forwarded; the forwards read from the replicas' /metrics), and a note: the rate reached, the answers, the driver's slips.
func (b *Bench) fleetLoad(ctx context.Context, st *store.Store, f *fleetRun, graphs []string) (p99, perItem, note string) {
	// forwarded sums gate_relay_stage_forwarded_total over the running
	// replicas' /metrics: a counter per process that only grows while the
	// window runs (the status rows it was read from before come and go with
	// their TTL and placement, which made the difference negative).
	forwarded := func() float64 {
		n := 0.0
		for _, p := range f.procs {
			if p.Running() {
				n += relayMetrics(ctx, p.HealthURL)["gate_relay_stage_forwarded_total"]
			}
		}
		return n
	}
	before := forwarded()
	hc := &http.Client{Timeout: 5 * time.Second}
	doorBefore, doorErr := scrape(ctx, hc, b.cfg.GateURL+"/metrics")
	cpu := startCPU(f.pids()...)
	var seq atomic.Int64
	call := func(ctx context.Context) (int, int) {
		g := graphs[int(seq.Add(1))%len(graphs)]
		_, err := b.api.Push(ctx, b.cfg.App, g, "in", gateapi.PushBody{Payload: json.RawMessage(`{"fleet":1}`)})
		if err != nil {
			if s := gateapi.StatusOf(err); s != 0 {
				return s, 0
			}
			return 0, 0
		}
		return http.StatusOK, 1
	}
	res := stats.OpenLoop(ctx, "fleet", fleetPushRate, 4096, b.cfg.Warmup, b.cfg.Seconds, call)
	doorAfter, err := scrape(ctx, hc, b.cfg.GateURL+"/metrics")
	split := "gate-api's histograms unread"
	if doorErr == nil && err == nil {
		split = doorSplit(doorBefore, doorAfter)
	}
	time.Sleep(3 * time.Second)
	d, ok := cpu.stop()
	after := forwarded()
	items := after - before
	p99 = stats.Ms(res.Latency.P99)
	if res.OK() < 0.99 {
		p99 += fmt.Sprintf(" (%.1f%% 2xx)", 100*res.OK())
	}
	var total time.Duration
	for _, c := range d {
		total += c
	}
	note = fmt.Sprintf("%.0f req/s, p50 %s ms, answers %s, %d sends slipped > 50 ms, %d skipped at the in-flight cap; %.0f stage forwards, relays' CPU %.1f s",
		res.ReqPerSec(), stats.Ms(res.Latency.P50), stats.Statuses(res.Statuses), res.Slipped, res.Capped, items, total.Seconds())
	note += "; " + split
	if !ok || before < 0 || after < 0 || items <= 0 {
		return p99, "-", note
	}
	return p99, fmt.Sprintf("%.0f", float64(total.Microseconds())/items), note
}

// fleetKill kills the fleet's first replica with SIGKILL and answers how
// long until every graph it ran is run by perGraph live replicas again.
func (b *Bench) fleetKill(ctx context.Context, st *store.Store, f *fleetRun, want map[string]bool, perGraph int) string {
	victim := f.procs[0]
	all, err := st.Statuses(ctx)
	if err != nil {
		return "status unreadable"
	}
	var id string
	ran := map[string]bool{}
	// The victim's replica id is GATE_RELAY_ID's default, {hostname}-{pid}.
	suffix := "-" + strconv.Itoa(victim.Pid())
	for _, rs := range all {
		if strings.HasSuffix(rs.Replica, suffix) {
			id = rs.Replica
			for _, g := range rs.Graphs {
				if g.Running && g.App == b.cfg.App && want[g.Graph] {
					ran[g.Graph] = true
				}
			}
		}
	}
	if id == "" || len(ran) == 0 {
		return "victim runs nothing"
	}
	b.logf("scale-fleet: kill -9 %s (%d graphs)…", id, len(ran))
	t0 := time.Now()
	if err := b.st.KillRelay(f.index[0]); err != nil {
		return "kill failed: " + err.Error()
	}
	rd := st.NewStatusReader(store.StatusReaderConfig{})
	if !waitFor(ctx, 60*time.Second, func() bool {
		all, err := rd.Read(ctx)
		if err != nil {
			return false
		}
		runners := map[string]int{}
		for _, rs := range all {
			if rs.Replica == id {
				continue
			}
			for _, g := range rs.Graphs {
				if g.Running && ran[g.Graph] && g.App == b.cfg.App {
					runners[g.Graph]++
				}
			}
		}
		for g := range ran {
			if runners[g] < perGraph {
				return false
			}
		}
		return true
	}) {
		return "not in 60 s"
	}
	return fmt.Sprintf("%.1f", time.Since(t0).Seconds())
}

// placed reports whether every graph of want runs on at least n live
// replicas, as the relays' status rows say, and how many do.
func (b *Bench) placed(ctx context.Context, rd *store.StatusReader, want map[string]bool, n int) (bool, int) {
	all, err := rd.Read(ctx)
	if err != nil {
		return false, 0
	}
	runners := map[string]int{}
	for _, rs := range all {
		for _, g := range rs.Graphs {
			if g.Running && g.App == b.cfg.App && want[g.Graph] {
				runners[g.Graph]++
			}
		}
	}
	covered := 0
	for g := range want {
		if runners[g] >= n {
			covered++
		}
	}
	return covered == len(want), covered
}

// pushRunning pushes one item to graph's node "in" and reports whether the
// answer says a relay runs the graph.
func (b *Bench) pushRunning(ctx context.Context, graph string) bool {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := b.api.Push(c, b.cfg.App, graph, "in", wire.PushBody{Payload: json.RawMessage(`{"scale":1}`)})
	return err == nil && p.Running
}

// latencies GETs each path n times, one at a time, and answers the p50 and
// p99 over all of them ("-" when none answered 200).
func (b *Bench) latencies(ctx context.Context, n int, paths ...string) string {
	hc := b.api.HTTPClient()
	var d []time.Duration
	for _, p := range paths {
		for range n {
			t0 := time.Now()
			body, status, err := getStatus(ctx, hc, b.cfg.GateURL+p)
			if err != nil || status != http.StatusOK || len(body) == 0 {
				continue
			}
			d = append(d, time.Since(t0))
		}
	}
	if len(d) == 0 {
		return "-"
	}
	return ms(quantile(d, 0.5)) + " / " + ms(quantile(d, 0.99))
}

func getStatus(ctx context.Context, hc *http.Client, url string) ([]byte, int, error) {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	return body, res.StatusCode, err
}

// relayMetrics reads the few series the fleet rows use from a relay's
// /metrics: go_goroutines, process_resident_memory_bytes, and
// gate_relay_stage_forwarded_total summed over its stages.
func relayMetrics(ctx context.Context, base string) map[string]float64 {
	out := map[string]float64{}
	body, err := get(ctx, base+"/metrics")
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(l, " ")
		if i := strings.IndexByte(l, '{'); i > 0 {
			name = l[:i]
			if j := strings.LastIndexByte(l, ' '); j > i {
				rest, ok = l[j+1:], true
			}
		}
		if !ok {
			continue
		}
		switch name {
		case "go_goroutines", "process_resident_memory_bytes", "gate_relay_stage_forwarded_total", "gate_relay_graph_running":
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				out[name] += v
			}
		}
	}
	return out
}

// openFiles is how many files pid holds open and its soft limit on them
// (0, 0 when /proc cannot say).
func openFiles(pid int) (n, limit int) {
	if pid <= 0 {
		return 0, 0
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return len(fds), 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				limit, _ = strconv.Atoi(f[0])
			}
		}
	}
	return len(fds), limit
}

// openFilesNote says "N of L open files" for the progress log.
func openFilesNote(pid int) string {
	n, limit := openFiles(pid)
	if limit == 0 {
		return fmt.Sprintf("%d open files", n)
	}
	return fmt.Sprintf("%d of %d open files", n, limit)
}
