package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/stack"
	"github.com/queen-mq/gate/libs/stack/gateapi"
)

// ErrSetup wraps failures before any scenario ran.
var ErrSetup = errors.New("setup failed")

// Bench is one gate-bench run against one stack.
type Bench struct {
	cfg Config
	api *gateapi.Client
	q   *queen.Client // the broker, directly (the relay talks to it directly too)
	st  *stack.Stack
	// relays are the embedded relays by admission path ("riders",
	// "separate"); relay is the one running now (nil when not embedded).
	relays map[string]*benchRelay
	relay  *benchRelay
	runID  string
	// overhead remembers the Gate relay's wide-open items/s for the peers.
	gateWide float64
}

// Outcome is what Run did.
type Outcome struct {
	Tables []stats.Table `json:"tables"`
	// Incomplete names the scenarios that failed, with why.
	Incomplete []string `json:"incomplete,omitempty"`
	// Machine describes where it ran.
	Machine string `json:"machine"`
}

// Run sets up (starting the embedded stack if asked), then runs every
// scenario in order, stopping at the first error.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	cfg.StatusPeriod = cmp.Or(cfg.StatusPeriod, time.Second)
	b := &Bench{cfg: cfg, runID: strconv.FormatInt(time.Now().Unix()%100000, 10)}
	out := Outcome{Machine: Machine()}
	if cfg.Embedded {
		logger := slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
		b.logf("starting the embedded stack (miniqueen, gate-api, gate-relay; broker calls counted by the relay's own client)…")
		env := []string{"GATE_STATUS_SECONDS=" + strconv.Itoa(int(cfg.StatusPeriod/time.Second))}
		if slices.Contains(cfg.Scenarios, "scale") || slices.Contains(cfg.Scenarios, "scale-fleet") {
			// A PUT answers once stored: the scale scenario times the
			// PUT and the wait for a relay apart.
			env = append(env, "GATE_DECLARE_WAIT_MS=0")
		}
		st, err := stack.Start(ctx, stack.Config{Relays: -1, NoReuse: true, Logger: logger, Env: env, ReconcileSeconds: int(cfg.ReconcilePeriod / time.Second)})
		if err != nil {
			return out, fmt.Errorf("%w: starting the embedded stack: %w", ErrSetup, err)
		}
		defer st.Stop()
		b.st = st
		if err := b.useRelay(ctx, "riders"); err != nil {
			return out, fmt.Errorf("%w: starting gate-relay: %w", ErrSetup, err)
		}
		cfg.GateURL, cfg.QueenURL = st.GateURL(), st.QueenURL()
		b.cfg = cfg
		b.logf("stack up: gate-api %s, broker %s, relay %s", cfg.GateURL, cfg.QueenURL, b.relay.p.HealthURL)
	}
	b.api = gateapi.New(cfg.GateURL, nil)
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := b.api.Health(hctx)
	cancel()
	if err != nil {
		return out, fmt.Errorf("%w: gate-api /health at %s is not 200 (%v); start a stack (make run) or pass --embedded", ErrSetup, cfg.GateURL, err)
	}
	if b.q, err = queen.New(cfg.QueenURL, queen.WithHTTPClient(&http.Client{Transport: queen.NewTransport()})); err != nil {
		return out, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	for _, name := range cfg.Scenarios {
		b.logf("scenario %s…", name)
		t0 := time.Now()
		tables, err := b.scenario(ctx, name)
		for i := range tables {
			tables[i].Scenario = name
			tables[i].Write(cfg.Out)
		}
		out.Tables = append(out.Tables, tables...)
		if err != nil {
			out.Incomplete = append(out.Incomplete, name+": "+err.Error())
			b.logf("scenario %s failed after %.0f s: %v", name, time.Since(t0).Seconds(), err)
			break
		}
		b.logf("scenario %s done in %.0f s", name, time.Since(t0).Seconds())
	}
	return out, nil
}

// benchRelay is one embedded relay process and its call counts.
type benchRelay struct {
	p     *stack.Process
	index int
	calls *relayCalls
}

// useRelay makes the embedded relay on admission path mode (GATE_ADMISSION)
// the only one running: the other is stopped gracefully first, and this one
// is started, or restarted, on its own port.
func (b *Bench) useRelay(ctx context.Context, mode string) error {
	return b.useRelayEnv(ctx, mode, "GATE_ADMISSION="+mode)
}

// useRelayEnv is useRelay for a relay known by key and started with env.
func (b *Bench) useRelayEnv(ctx context.Context, mode string, env ...string) error {
	if b.st == nil {
		return fmt.Errorf("switching the relay's admission path needs --embedded")
	}
	if b.relay != nil && b.relays[mode] == b.relay && b.relay.p.Running() {
		return nil
	}
	if b.relay != nil {
		b.relay.p.Stop()
	}
	if b.relays == nil {
		b.relays = map[string]*benchRelay{}
	}
	r := b.relays[mode]
	if r == nil {
		p, err := b.st.StartRelay(ctx, env...)
		if err != nil {
			return err
		}
		r = &benchRelay{p: p, index: len(b.st.Relays()) - 1, calls: newRelayCalls(p)}
		b.relays[mode] = r
	} else if err := b.st.RestartRelay(ctx, r.index); err != nil {
		return err
	}
	b.relay = r
	return nil
}

// snap is the running embedded relay's broker calls; false when there is
// no embedded relay or its /metrics did not answer.
func (b *Bench) snap(ctx context.Context) (Snapshot, bool) {
	if b.relay == nil {
		return Snapshot{}, false
	}
	s, err := b.relay.calls.snap(ctx)
	if err != nil {
		b.logf("%v", err)
		return Snapshot{}, false
	}
	return s, true
}

func (b *Bench) scenario(ctx context.Context, name string) ([]stats.Table, error) {
	switch name {
	case "health":
		return b.health(ctx)
	case "push":
		return b.push(ctx)
	case "drain":
		return b.drain(ctx)
	case "throughput":
		return b.throughput(ctx)
	case "contention":
		return b.contention(ctx)
	case "throttled":
		return b.throttled(ctx)
	case "idle":
		return b.idle(ctx)
	case "overhead":
		return b.overhead(ctx)
	case "peers":
		return b.peers(ctx)
	case "watch":
		return b.watch(ctx)
	case "observe":
		return b.observe(ctx)
	case "mirrored":
		return b.mirrored(ctx)
	case "settle":
		return b.settle(ctx)
	case "scale":
		return b.scale(ctx)
	case "scale-fleet":
		return b.fleet(ctx)
	}
	return nil, fmt.Errorf("unknown scenario %q", name)
}

func (b *Bench) logf(format string, a ...any) {
	fmt.Fprintf(b.cfg.Log, "gate-bench: "+format+"\n", a...)
}

// WriteJSON writes the outcome to path.
func WriteJSON(path string, o Outcome) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(o); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// graphName is bench-{what}-{runId}.
func (b *Bench) graphName(what string) string { return "bench-" + what + "-" + b.runID }

// egressQueue is bench.{app}.{graph}.out (plus a suffix for multi-node
// graphs).
func (b *Bench) egressQueue(graph, suffix string) string {
	return "bench." + b.cfg.App + "." + graph + suffix + ".out"
}

// node is a one-node graph node: Gate-owned ingress with partitions, one
// budget, an egress queue.
func node(count, timeMs int64, subWindows, batch, partitions int, sharedKey, egress string) map[string]any {
	bud := map[string]any{"id": "b", "count": count, "timeMs": timeMs}
	if subWindows > 0 {
		bud["subWindows"] = subWindows
	}
	if sharedKey != "" {
		bud["sharedKey"] = sharedKey
	}
	n := map[string]any{
		"ingress": map[string]any{"partitions": partitions},
		"budgets": []any{bud},
		"egress":  egress,
	}
	if batch > 0 {
		n["batch"] = batch
	}
	return n
}

// oneNode is a graph of one node "n" on one path "main".
func oneNode(n map[string]any) map[string]any {
	return map[string]any{"version": 1, "nodes": map[string]any{"n": n},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"n"}}}}
}

func (b *Bench) declare(ctx context.Context, graph string, doc map[string]any) (gateapi.Declared, error) {
	return b.declareWatch(ctx, graph, doc, nil)
}

// declareWatch is declare that calls stored (when not nil) with gate-api's
// answer as soon as the document is stored, before waiting for a relay to
// run it, so a caller can start watching the graph's counters in time.
func (b *Bench) declareWatch(ctx context.Context, graph string, doc map[string]any, stored func(gateapi.Declared)) (gateapi.Declared, error) {
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	d, err := b.api.Declare(c, b.cfg.App, graph, doc)
	if err != nil {
		return d, fmt.Errorf("declaring %s: %w", graph, err)
	}
	if stored != nil {
		stored(d)
	}
	// gate-api answers 200 once the document is stored; pushes before a
	// relay reports the graph running are queued (Gate-Relay: none) and
	// wait, which would measure a backlog rather than the relay, so wait
	// for that.
	var last string
	if !waitFor(ctx, 60*time.Second, func() bool {
		v, err := b.api.View(c, b.cfg.App, graph)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("running=%v, %d stages", v.Running, len(v.Stages))
		return v.Running && len(v.Stages) > 0
	}) {
		return d, fmt.Errorf("declared %s, but no relay ran it within 60 s (%s)", graph, last)
	}
	return d, nil
}

func (b *Bench) forget(graph string) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = b.api.Delete(c, b.cfg.App, graph)
}

// counters sums the view's stage counters of graph (every stage).
func (b *Bench) counters(ctx context.Context, graph string) (gateapi.Counters, int, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := b.api.View(c, b.cfg.App, graph)
	if err != nil {
		return gateapi.Counters{}, 0, err
	}
	var sum gateapi.Counters
	for _, s := range v.Stages {
		x := s.Counters
		sum.Forwarded += x.Forwarded
		sum.Commits += x.Commits
		sum.Popped += x.Popped
		sum.Parked += x.Parked
		sum.Deferred += x.Deferred
		sum.Released += x.Released
	}
	return sum, len(v.Stages), nil
}

// fill pushes n items straight into queue with the Queen client, 500 per
// call over partitions partitions, with 4 writers; payload(i) is each body.
func (b *Bench) fill(ctx context.Context, queue string, n, partitions int, payload func(i int) []byte) (float64, error) {
	t0 := time.Now()
	const per = 500
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := 0; i < n; i += per {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := range next {
				items := make([]queen.PushItem, 0, per)
				for i := from; i < min(from+per, n); i++ {
					items = append(items, queen.PushItem{Queue: queue, Partition: "p" + strconv.Itoa(i%partitions), Payload: payload(i)})
				}
				if _, err := b.q.Push(ctx, items); err != nil {
					select {
					case errs <- fmt.Errorf("filling %s: %w", queue, err):
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(n) / time.Since(t0).Seconds(), ctx.Err()
}

func seqPayload(i int) []byte { return []byte(`{"i":` + strconv.Itoa(i) + `}`) }

// paddedPayload returns seqPayload, or with size > 0 a payload of about
// size bytes: {"i":N,"pad":"xx…"}.
func paddedPayload(size int) func(i int) []byte {
	if size <= 0 {
		return seqPayload
	}
	return func(i int) []byte {
		b := append([]byte(`{"i":`), strconv.Itoa(i)...)
		b = append(b, `,"pad":"`...)
		for len(b) < size-2 {
			b = append(b, 'x')
		}
		return append(b, `"}`...)
	}
}

// drainer pops queue (group, autoAck) with workers until stopped, keeping
// each item's _gate.at and _gate-free "sent" field.
type drainer struct {
	mu     sync.Mutex
	at     []int64
	sent   []int64
	popped int
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

func (b *Bench) startDrainer(ctx context.Context, queue, group string, workers, batch int) *drainer {
	return b.drainQueue(ctx, queue, group, workers, batch, true)
}

// startCounter is a drainer that does not decode payloads: it keeps each
// item's arrival time (ms) in place of _gate.at, so every runner it
// measures pays the same consumer work whatever its payloads carry.
func (b *Bench) startCounter(ctx context.Context, queue, group string, workers, batch int) *drainer {
	return b.drainQueue(ctx, queue, group, workers, batch, false)
}

func (b *Bench) drainQueue(ctx context.Context, queue, group string, workers, batch int, decode bool) *drainer {
	ctx, cancel := context.WithCancel(ctx)
	d := &drainer{stop: cancel}
	for w := 0; w < workers; w++ {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			for ctx.Err() == nil {
				cl, err := b.q.Pop(ctx, queen.PopRequest{Queue: queue, ConsumerGroup: group, SubscriptionMode: queen.SubscribeAll,
					Batch: batch, Wait: true, Timeout: 500 * time.Millisecond, AutoAck: true})
				if err != nil || cl.Empty() {
					if err != nil && ctx.Err() == nil {
						time.Sleep(50 * time.Millisecond)
					}
					continue
				}
				ats := make([]int64, 0, len(cl.Messages))
				sents := make([]int64, 0, len(cl.Messages))
				if !decode {
					now := time.Now().UnixMilli()
					for range cl.Messages {
						ats = append(ats, now)
					}
					d.mu.Lock()
					d.at = append(d.at, ats...)
					d.popped += len(cl.Messages)
					d.mu.Unlock()
					continue
				}
				for _, m := range cl.Messages {
					var v struct {
						Sent int64 `json:"sent"`
						Gate struct {
							At int64 `json:"at"`
						} `json:"_gate"`
					}
					_ = json.Unmarshal(m.Data, &v)
					ats = append(ats, v.Gate.At)
					sents = append(sents, v.Sent)
				}
				d.mu.Lock()
				d.at = append(d.at, ats...)
				d.sent = append(d.sent, sents...)
				d.popped += len(cl.Messages)
				d.mu.Unlock()
			}
		}()
	}
	return d
}

func (d *drainer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.popped
}

func (d *drainer) close() ([]int64, []int64) {
	d.stop()
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at, d.sent
}

// waitFor polls cond every 200 ms until it is true or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cond() {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return cond()
}
