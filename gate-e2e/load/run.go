package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/stack"
	"github.com/queen-mq/gate/libs/stack/gateapi"
	"github.com/queen-mq/gate/libs/window"
	"github.com/queen-mq/gate/libs/wire"
)

// ErrSetup wraps failures before judging could start (no stack, declare
// refused): exit 2, not a failed gate.
var ErrSetup = errors.New("setup failed")

// Run executes one scenario against the stack in cfg (or an embedded one)
// and returns the judged report. A non-nil error means the run could not be
// judged at all.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	logger := slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var st *stack.Stack
	if cfg.Embedded {
		relays := 1
		if cfg.Scenario == ScenarioReplicas {
			relays = 2
		}
		fmt.Fprintf(cfg.Log, "gate-e2e: starting the embedded stack (miniqueen, gate-api, %d gate-relay)…\n", relays)
		var err error
		st, err = stack.Start(ctx, stack.Config{Relays: relays, RelayCmd: cfg.RelayCmd, Logger: logger, NoReuse: true, Env: []string{"GATE_STATUS_SECONDS=1"}})
		if err != nil {
			return Report{}, fmt.Errorf("%w: starting the embedded stack: %w", ErrSetup, err)
		}
		defer st.Stop()
		cfg.GateURL, cfg.QueenURL = st.GateURL(), st.QueenURL()
		fmt.Fprintf(cfg.Log, "gate-e2e: stack up: gate-api %s, broker %s\n", cfg.GateURL, cfg.QueenURL)
	}
	r := &runner{cfg: cfg, stack: st, api: gateapi.New(cfg.GateURL, nil)}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := r.api.Health(hctx)
	cancel()
	if err != nil {
		return Report{}, fmt.Errorf("%w: gate-api does not answer at %s (%v); start a stack (make run) or pass --embedded", ErrSetup, cfg.GateURL, err)
	}
	qc, err := queen.New(cfg.QueenURL)
	if err != nil {
		return Report{}, fmt.Errorf("%w: broker client: %w", ErrSetup, err)
	}
	r.q = qc
	if cfg.Scenario == ScenarioVendor && cfg.VendorSettle {
		return r.vendorSettle(ctx)
	}
	if cfg.Scenario == ScenarioVendor {
		return r.vendor(ctx)
	}
	if (cfg.Scenario == ScenarioReplicas || cfg.Scenario == ScenarioChaos) && st == nil {
		// Somebody else's stack: add (and, for chaos, kill) relays of our own.
		st, err = stack.Attach(stack.Config{QueenURL: cfg.QueenURL, RelayCmd: cfg.RelayCmd, Logger: logger}, cfg.GateURL)
		if err != nil {
			return Report{}, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		defer st.Stop()
		if _, err := st.StartRelay(ctx); err != nil {
			return Report{}, fmt.Errorf("%w: starting an extra gate-relay: %w", ErrSetup, err)
		}
		r.stack = st
	}
	return r.run(ctx)
}

type runner struct {
	cfg   Config
	stack *stack.Stack
	api   *gateapi.Client
	q     *queen.Client

	graph  string
	runID  string
	params Params
	key    string
	egress string

	mu     sync.Mutex
	obs    Observation
	pushed atomic.Int64
	failed atomic.Int64
	drain  atomic.Int64
	lastKV atomic.Int64
}

// declare names the run's graph (the configured name, with the run id
// unless --exact-name), declares doc(graph) and returns the answer and the
// deferred delete of the graph. Every scenario starts with it.
func (r *runner) declare(ctx context.Context, doc func(graph string) map[string]any) (gateapi.Declared, func(), error) {
	cfg := r.cfg
	r.runID = strconv.FormatInt(time.Now().Unix()%100000, 10)
	r.graph = cfg.Graph
	if !cfg.ExactName {
		r.graph = cfg.Graph + "-" + r.runID
	}
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	decl, err := r.api.Declare(dctx, cfg.App, r.graph, doc(r.graph))
	cancel()
	if err != nil {
		return decl, func() {}, fmt.Errorf("%w: declaring %s/%s: %w", ErrSetup, cfg.App, r.graph, err)
	}
	return decl, func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.api.Delete(c, cfg.App, r.graph); err != nil {
			fmt.Fprintf(cfg.Log, "gate-e2e: deleting %s/%s: %v\n", cfg.App, r.graph, err)
		}
	}, nil
}

func (r *runner) run(ctx context.Context) (Report, error) {
	cfg := r.cfg
	decl, cleanup, err := r.declare(ctx, func(graph string) map[string]any {
		return Document(cfg.App, graph, cfg.Rate, cfg.WindowS, cfg.Batch)
	})
	if err != nil {
		return Report{}, err
	}
	defer cleanup()
	ip, ok := decl.Resolved.Node(NodeIP)
	if !ok {
		return Report{}, fmt.Errorf("%w: the declare answer has no node %q", ErrSetup, NodeIP)
	}
	b, ok := ip.Budget(BindingBudget)
	if !ok || b.Key == "" {
		return Report{}, fmt.Errorf("%w: the declare answer has no budget %q with a key on node %q", ErrSetup, BindingBudget, NodeIP)
	}
	r.key = b.Key
	r.egress = wire.Str(ip.EgressQueue)
	if r.egress == "" {
		r.egress = EgressQueue(cfg.App, r.graph)
	}
	count := int64(cfg.Rate * cfg.WindowS)
	countSub := b.CountSub
	if countSub == 0 {
		n := uint32(cfg.WindowS)
		countSub = plan.Subdivide(count, int64(cfg.WindowS)*1000, &n).CountSub
	}
	ttl := b.WindowSubSeconds
	if ttl == 0 {
		ttl = 1
	}
	r.params = Params{
		Rate: cfg.Rate, WindowS: cfg.WindowS, Count: count, CountSub: countSub, TTLMs: ttl * 1000,
		FastCeiling: ceilingOf(b, PathFast, countSub, ShareFast),
		BulkCeiling: ceilingOf(b, PathBulk, countSub, ShareBulk),
	}
	ingress := map[string]string{}
	for _, name := range []string{NodeFast, NodeBulk} {
		n, _ := decl.Resolved.Node(name)
		ingress[name] = wire.Str(n.IngressQueue)
	}
	if err := r.waitRunning(ctx); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}

	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	var bg sync.WaitGroup
	consumeCtx, stopConsumers := context.WithCancel(runCtx)
	defer stopConsumers()
	for i := 0; i < cfg.Consumers; i++ {
		bg.Add(1)
		go func() { defer bg.Done(); r.consume(consumeCtx) }()
	}
	bg.Add(2)
	go func() { defer bg.Done(); r.sampleKV(runCtx) }()
	go func() { defer bg.Done(); r.sampleView(runCtx) }()

	r.obs.StartMs = time.Now().UnixMilli()
	r.obs.ExpectAll = cfg.Scenario == ScenarioChaos
	r.readAdmission(ctx, "start", r.relayRefs()...)
	fmt.Fprintf(cfg.Log, "gate-e2e: %s on %s/%s: ceiling %d per %d s (%d per %d ms sub-window; fast ≤ %d, bulk ≤ %d), pushing %d with %d producers over %d partitions\n",
		cfg.Scenario, cfg.App, r.graph, count, cfg.WindowS, countSub, r.params.TTLMs, r.params.FastCeiling, r.params.BulkCeiling, cfg.Total, cfg.Producers, cfg.Partitions)
	prog := newProgress(cfg, cfg.Total)
	var chaos sync.WaitGroup
	if cfg.Scenario == ScenarioChaos {
		chaos.Add(1)
		go func() { defer chaos.Done(); r.chaos(runCtx) }()
	}
	pushStart := time.Now()
	r.push(runCtx, ingress, prog)
	pushSecs := time.Since(pushStart).Seconds()
	fmt.Fprintf(cfg.Log, "gate-e2e: pushed %d (%d failed) in %.1f s (%.0f/s)\n", r.pushed.Load(), r.failed.Load(), pushSecs, float64(r.pushed.Load())/pushSecs)

	horizon := time.Now().Add(time.Duration(cfg.Seconds) * time.Second)
	if cfg.Scenario == ScenarioBackoff {
		bctx, cancel := context.WithCancel(runCtx)
		defer cancel()
		go r.backoff(bctx, time.Now().Add(time.Duration(cfg.Seconds)*time.Second/3))
	}
	prog.phase("sampling", cfg.Seconds)
	tick := time.NewTicker(time.Second)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case now := <-tick.C:
			prog.tick(r.admittedSoFar(), r.drain.Load(), r.lastKV.Load())
			if !now.Before(horizon) {
				done = true
			}
			if r.obs.ExpectAll && r.allDelivered() {
				done = true
			}
		}
	}
	tick.Stop()
	r.mu.Lock()
	r.obs.EndMs = time.Now().UnixMilli()
	r.mu.Unlock()
	prog.finish()
	// Keep draining briefly so items committed before the horizon are seen.
	drainUntil := time.Now().Add(2 * time.Second)
	for time.Now().Before(drainUntil) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	stopAll()
	chaos.Wait()
	bg.Wait()
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("interrupted: %w", err)
	}
	// The end read: a relay that switched from riders to separate during
	// the run says so now (chaos restarts are done by here).
	r.readAdmission(ctx, "end", r.relayRefs()...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.Dump != "" {
		if err := WriteDump(r.cfg.Dump, Dump{Params: r.params, Observation: r.obs}); err != nil {
			fmt.Fprintf(r.cfg.Log, "gate-e2e: GATE_E2E_DUMP: %v\n", err)
		}
	}
	rep := Judge(r.obs, r.params)
	rep.Graph = r.graph
	return rep, nil
}

// ceilingOf reads a path's ceiling from the plan, else computes it.
func ceilingOf(b gateapi.Budget, path string, countSub int64, share float64) int64 {
	if c, ok := b.Ceilings[path]; ok {
		return c
	}
	return plan.Ceiling(countSub, share)
}

// waitRunning polls the view until the graph runs with its ip stages.
func (r *runner) waitRunning(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := r.api.View(c, r.cfg.App, r.graph)
		cancel()
		if err == nil && v.Running && len(v.StagesAt(NodeIP)) == 2 {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("running=%v with %d ip stages", v.Running, len(v.StagesAt(NodeIP)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("graph %s/%s not running with both ip stages within 60 s: %v", r.cfg.App, r.graph, last)
}

// push floods the ingress with cfg.Producers producers.
func (r *runner) push(ctx context.Context, ingress map[string]string, prog *progress) {
	cfg := r.cfg
	var wg sync.WaitGroup
	for w := 0; w < cfg.Producers; w++ {
		n := cfg.Total / cfg.Producers
		if w < cfg.Total%cfg.Producers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n && ctx.Err() == nil; i++ {
				node := NodeBulk
				if (i+w)%5 == 0 {
					node = NodeFast
				}
				id := r.runID + "-" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				part := "conn-" + strconv.Itoa((i+w)%cfg.Partitions)
				payload, _ := json.Marshal(map[string]string{"path": node, "id": id})
				if err := r.pushOne(ctx, ingress[node], node, part, payload); err != nil {
					r.failed.Add(1)
					continue
				}
				r.pushed.Add(1)
				prog.add(1)
				r.mu.Lock()
				r.obs.Pushed = append(r.obs.Pushed, Pushed{ID: id, Path: node, AtMs: time.Now().UnixMilli()})
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// pushOne sends one item, retrying a transient failure up to three times.
func (r *runner) pushOne(ctx context.Context, queue, node, partition string, payload []byte) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt*200) * time.Millisecond)
		}
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		if r.cfg.Direct {
			var res []queen.PushResult
			res, err = r.q.Push(c, []queen.PushItem{{Queue: queue, Partition: partition, Payload: payload}})
			if err == nil && len(res) == 1 && !res[0].Stored() {
				err = fmt.Errorf("push %s: %s %s", queue, res[0].Status, res[0].Error)
			}
		} else {
			_, err = r.api.Push(c, r.cfg.App, r.graph, node, gateapi.PushBody{Op: "calendar.push", Partition: partition, Payload: payload})
		}
		cancel()
		if err == nil {
			return nil
		}
		if s := gateapi.StatusOf(err); s != 0 && s < 500 && s != http.StatusTooManyRequests {
			return err
		}
	}
	return err
}

// consume pops the egress as a user's worker would and records every item.
func (r *runner) consume(ctx context.Context) {
	for ctx.Err() == nil {
		claim, err := r.q.Pop(ctx, queen.PopRequest{
			Queue: r.egress, ConsumerGroup: ConsumerGroup, SubscriptionMode: queen.SubscribeAll,
			Batch: 100, Wait: true, Timeout: 500 * time.Millisecond, AutoAck: true,
		})
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		if claim.Empty() {
			continue
		}
		recv := time.Now().UnixMilli()
		items := make([]Item, 0, len(claim.Messages))
		for _, m := range claim.Messages {
			var d struct {
				ID   string `json:"id"`
				Gate struct {
					Path string `json:"path"`
					At   int64  `json:"at"`
				} `json:"_gate"`
			}
			_ = json.Unmarshal(m.Data, &d)
			// The broker's commit instant places an item in the window its
			// charge landed in on either admission path (the kv rows' expiry
			// is on the same clock); the relay's _gate.at is the fallback.
			at := d.Gate.At
			if t, err := m.CreatedAt.Time(); err == nil && !t.IsZero() {
				at = t.UnixMilli()
			}
			items = append(items, Item{ID: d.ID, Path: d.Gate.Path, AtMs: at, RecvMs: recv})
		}
		r.drain.Add(int64(len(items)))
		r.mu.Lock()
		r.obs.Items = append(r.obs.Items, items...)
		r.mu.Unlock()
	}
}

// sampleKV reads the shared counter every 100 ms, and once more just before
// the live window expires, so each window's final value is read late.
func (r *runner) sampleKV(ctx context.Context) {
	var expires int64
	for ctx.Err() == nil {
		now := time.Now().UnixMilli()
		next := now + 100
		if expires > now+25 && expires-20 < next {
			next = expires - 20
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(next-now) * time.Millisecond):
		}
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := r.q.KV(c, queen.KVGetMany(r.cfg.KVNamespace, r.key))
		cancel()
		at := time.Now().UnixMilli()
		if err != nil || len(res.Results) != 1 {
			continue
		}
		s := window.Sample{AtMs: at}
		for _, row := range res.Results[0].Rows {
			if row.Key != r.key {
				continue
			}
			s.Value, _ = row.Int64()
			if t, err := row.ExpiresAt.Time(); err == nil && !row.ExpiresAt.IsZero() {
				s.ExpiresAtMs = t.UnixMilli()
			}
		}
		expires = s.ExpiresAtMs
		r.lastKV.Store(s.Value)
		r.mu.Lock()
		r.obs.KV = append(r.obs.KV, s)
		r.mu.Unlock()
	}
}

// sampleView reads the graph view's ip stages every second.
func (r *runner) sampleView(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := r.api.View(c, r.cfg.App, r.graph)
		cancel()
		if err != nil {
			continue
		}
		s := ViewSample{AtMs: time.Now().UnixMilli(), Refusals: map[string]int64{}, Forwarded: map[string]int64{}}
		for _, st := range v.StagesAt(NodeIP) {
			s.Refusals[st.Path] = st.Counters.Refusals()
			s.Forwarded[st.Path] = st.Counters.Forwarded
		}
		r.mu.Lock()
		r.obs.Views = append(r.obs.Views, s)
		r.mu.Unlock()
	}
}

func (r *runner) admittedSoFar() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.obs.Items))
}

func (r *runner) allDelivered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.obs.Items) >= len(r.obs.Pushed) && len(r.obs.Pushed) > 0 && r.pushed.Load()+r.failed.Load() >= int64(r.cfg.Total)
}

// chaos kills relay 0 with SIGKILL at random moments and restarts it.
func (r *runner) chaos(ctx context.Context) {
	rng := rand.New(rand.NewPCG(uint64(r.cfg.Seed), 7))
	span := time.Duration(r.cfg.Total/r.cfg.Rate) * time.Second
	if span < 4*time.Second {
		span = 4 * time.Second
	}
	gap := span / time.Duration(r.cfg.Kills+1)
	for k := 0; k < r.cfg.Kills; k++ {
		wait := gap/2 + time.Duration(rng.Int64N(int64(gap)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		idx := len(r.stack.Relays()) - 1
		at := time.Now().UnixMilli()
		if err := r.stack.KillRelay(idx); err != nil {
			fmt.Fprintf(r.cfg.Log, "gate-e2e: chaos: %v\n", err)
			return
		}
		down := 300*time.Millisecond + time.Duration(rng.Int64N(int64(1700*time.Millisecond)))
		select {
		case <-ctx.Done():
		case <-time.After(down):
		}
		rctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := r.stack.RestartRelay(rctx, idx)
		cancel()
		until := time.Now().UnixMilli()
		fmt.Fprintf(r.cfg.Log, "gate-e2e: chaos: killed relay %d (SIGKILL), restarted after %.1f s (err=%v)\n", idx, float64(until-at)/1000, err)
		// The restarted relay probes again and may land on the other path.
		if rs := r.stack.Relays(); err == nil && idx < len(rs) {
			r.readAdmission(context.WithoutCancel(ctx), fmt.Sprintf("after restart %d", k+1), relayRef{name: rs[idx].Name, url: rs[idx].HealthURL})
		}
		// The claims the killed relay held come back only when their lease
		// lapses: the disturbance lasts at least that long.
		until = max(until, at+leaseMs())
		r.mu.Lock()
		r.obs.Events = append(r.obs.Events, Event{AtMs: at, What: "relay killed", UntilMs: until})
		r.mu.Unlock()
	}
}

// relayRefs lists every relay the run uses: the ones the stack started (all
// of them when embedded, the extra one when attached to somebody else's
// stack) and those GATE_E2E_RELAYS names; a stack gate-e2e did not start
// and whose relays are not listed is one unknown entry.
func (r *runner) relayRefs() []relayRef {
	var refs []relayRef
	if r.stack != nil {
		for _, p := range r.stack.Relays() {
			refs = append(refs, relayRef{name: p.Name, url: p.HealthURL})
		}
	}
	for _, u := range r.cfg.RelayURLs {
		refs = append(refs, relayRef{name: u, url: u})
	}
	if !r.cfg.Embedded && len(r.cfg.RelayURLs) == 0 {
		refs = append(refs, relayRef{name: "the stack's own relays"})
	}
	return refs
}

// admissionWait bounds how long a read waits for a relay to run the graph.
const admissionWait = 15 * time.Second

// readAdmission records what each relay reports running, and says so.
func (r *runner) readAdmission(ctx context.Context, when string, refs ...relayRef) {
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, ref := range refs {
		a := readAdmission(ctx, hc, ref, when, graphRef{r.cfg.App, r.graph}, admissionWait)
		what := a.Path
		if what == "" {
			what = "unknown: " + a.Error
		}
		fmt.Fprintf(r.cfg.Log, "gate-e2e: admission %s: %s runs %s\n", when, a.Relay, what)
		r.mu.Lock()
		r.obs.Admission = append(r.obs.Admission, a)
		r.mu.Unlock()
	}
}

// leaseMs is the relays' work lease (GATE_LEASE_SECONDS, default 10 s).
func leaseMs() int64 {
	if n, err := strconv.Atoi(os.Getenv("GATE_LEASE_SECONDS")); err == nil && n > 0 {
		return int64(n) * 1000
	}
	return 10_000
}

// backoff reports a vendor 429 on the shared node at the given moment.
func (r *runner) backoff(ctx context.Context, at time.Time) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(at)):
	}
	t := time.Now().UnixMilli()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := r.api.Backoff(c, r.cfg.App, r.graph, NodeIP, r.cfg.BackoffSeconds, "gate-e2e")
	cancel()
	if err != nil {
		fmt.Fprintf(r.cfg.Log, "gate-e2e: backoff: %v\n", err)
		return
	}
	fmt.Fprintf(r.cfg.Log, "gate-e2e: backoff: vendor 429 reported on %s, Retry-After %d s\n", NodeIP, r.cfg.BackoffSeconds)
	r.mu.Lock()
	r.obs.Backoff = &Event{AtMs: t, What: "backoff", UntilMs: t + int64(r.cfg.BackoffSeconds)*1000}
	r.mu.Unlock()
}
