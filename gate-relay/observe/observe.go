package observe

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/queen-mq/gate/gate-relay/denial"
	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/shadow"
	"github.com/queen-mq/gate/libs/store"
)

// Defaults of Config.
const (
	// DefaultPeriod is the flush period (gate-runtime §8.2: 10 s).
	DefaultPeriod = 10 * time.Second
	// DefaultTTL is a handover row's TTL; rows are refreshed at half of it.
	DefaultTTL = 15 * time.Minute
	// MaxSeconds is the distinct seconds one stage buffers (an hour).
	MaxSeconds = 3600
	// MaxMinutes is the minutes one stage buffers (an hour).
	MaxMinutes = 60
	// MaxTraces is the pending denials per node.
	MaxTraces = 500
	// tracesPerRow bounds one traces row (well under the 64 KiB value cap).
	tracesPerRow = 100
	callTimeout  = 10 * time.Second
)

// Runtime is one graph running on this replica, as the relay reports it.
type Runtime struct {
	App, Graph string
	// Started identifies the runtime (a swap starts a new one).
	Started time.Time
	// Counters is true when minute roll-ups are on (counters or Watch).
	Counters bool
	// Watch is set for a graph in Watch with a stamped startedAt.
	Watch *WatchInfo
	// Stages are the runtime's stages with their counters now.
	Stages []StageInfo
}

// WatchInfo is a Watch's session and end (Unix ms).
type WatchInfo struct {
	Session, Until int64
}

// StageInfo is one stage of a runtime.
type StageInfo struct {
	Path, Node string
	// PathIndex is the path's position in the plan.
	PathIndex int
	Counters  store.Counters
}

// Source lists the runtimes of this replica (the relay).
type Source interface {
	Runtimes() []Runtime
}

// Config is what a Handover runs with.
type Config struct {
	// Client and Namespace are the broker and GATE_KV_NAMESPACE.
	Client    *queen.Client
	Namespace string
	// Replica is the relay replica id (written into every row).
	Replica string
	// Source lists runtimes; Denials is the relay's ring (optional).
	Source  Source
	Denials *denial.Ring
	// Period is the flush period; TTL the rows' TTL.
	Period, TTL time.Duration
	// KeysPerSecond caps the distinct (scope values, op) one node records
	// per second while a scoped or op-filtered shadow candidate is set
	// (GATE_SHADOW_KEYS_PER_SECOND; 0 is shadow.DefaultKeysPerSecond);
	// further items are counted in the second's overflow.
	KeysPerSecond int
	// Clock is when settles happen and when flushes run (nil is the wall
	// clock); Logger defaults to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
}

// WithDefaults returns c with its zero fields filled: DefaultPeriod,
// DefaultTTL, shadow.DefaultKeysPerSecond, the wall clock,
// slog.Default(). A negative duration or cap counts as zero.
func (c Config) WithDefaults() Config {
	c.KeysPerSecond = cmp.Or(max(c.KeysPerSecond, 0), shadow.DefaultKeysPerSecond)
	c.Period = cmp.Or(max(c.Period, 0), DefaultPeriod)
	c.TTL = cmp.Or(max(c.TTL, 0), DefaultTTL)
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

type graphKey struct{ app, graph string }

// graphRec is one runtime's recorders.
type graphRec struct {
	rt      Runtime
	started time.Time
	// session is the recording session the recorders were minted for (the
	// Watch's, or a shadow candidate's; 0 = none).
	session int64
	closed  int64
	nodes   map[string]*nodeRec
}

// nodeRec is one recorder: a node of one runtime on this replica.
type nodeRec struct {
	id      string
	app     string
	graph   string
	node    string
	created int64
	closed  int64
	watch   *WatchInfo
	counts  bool
	stages  map[string]*stageBuf
	traces  []handover.Trace
	nextSeq uint64
	// keySec and distinct count the distinct keyed values recorded in
	// the current second (keys.go).
	keySec   int64
	distinct int
}

// written is a row this replica wrote and has not seen committed.
type written struct {
	body []byte
	at   time.Time
	row  handover.Row
}

// Handover keeps the observations and hands them over. Build with New;
// Observe is the stage Observer; Start flushes every Period until Stop (or
// the end of Start's context), then once more.
type Handover struct {
	service.Base

	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	graphs  map[graphKey]*graphRec
	retired []*graphRec
	cursor  uint64
	written map[string]*written
	// lazy is when Observe last synced on a settle of an unknown runtime.
	lazy time.Time
	// shadows are the graphs with a shadow candidate (shadow.go): the
	// candidate's since, read once per flush; needs what a scoped or
	// op-filtered candidate needs recorded per node.
	shadows map[graphKey]int64
	needs   map[graphKey]map[string]shadow.Need
	// scopeBuf and keyBuf are addKeys' scratch (under mu).
	scopeBuf, keyBuf []byte
}

// New returns a Handover for cfg.
func New(cfg Config) *Handover {
	cfg = cfg.WithDefaults()
	h := &Handover{cfg: cfg, log: cfg.Logger, graphs: map[graphKey]*graphRec{}, written: map[string]*written{}}
	if cfg.Denials != nil {
		h.cursor = cfg.Denials.Total()
	}
	return h
}

// Observe records one committed settle in the current second (Watch) and
// minute (counters). It is the stage Observer: quick, never blocking on
// the broker.
func (h *Handover) Observe(ev stage.Settled) {
	if ev.Items <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	nowT := h.cfg.Clock.Now()
	g := h.graphs[graphKey{ev.App, ev.Graph}]
	if g == nil || g.nodes[ev.Node] == nil {
		// A runtime that started since the last flush: mint its recorders
		// now rather than lose its first seconds (at most every 100 ms).
		if nowT.Sub(h.lazy) < 100*time.Millisecond && !nowT.Before(h.lazy) {
			return
		}
		h.lazy = nowT
		h.sync(nowT.UnixMilli())
		if g = h.graphs[graphKey{ev.App, ev.Graph}]; g == nil {
			return
		}
	}
	n := g.nodes[ev.Node]
	if n == nil || (n.watch == nil && !n.counts) {
		return
	}
	b := n.stages[ev.Path]
	if b == nil {
		return
	}
	now := nowT.UnixMilli()
	if n.watch != nil && now < n.watch.Until && n.closed == 0 {
		b.addSecond(now-now%1000, int64(ev.Items), ev.Cost, MaxSeconds)
		if need, ok := h.needs[graphKey{ev.App, ev.Graph}][ev.Node]; ok && ev.Forwarded != nil {
			h.addKeys(n, b, now-now%1000, need, ev.Forwarded, h.cfg.KeysPerSecond)
		}
	}
	if n.counts {
		b.addMinute(now-now%60000, int64(ev.Items), 0, float64(ev.Cost), MaxMinutes)
	}
}

// Start flushes every Period, on its own goroutine, until Stop or the end
// of ctx; then it flushes once more (bounded by callTimeout), so what was
// observed up to the stop is handed over. The first flush is one Period
// after Start. Starting a running handover does nothing.
func (h *Handover) Start(ctx context.Context) error {
	ctx, ok := h.StartInit(ctx)
	if !ok {
		return nil
	}
	tick := h.cfg.Clock.NewTicker(h.cfg.Period)
	h.Go(func() {
		defer tick.Stop()
		h.loop(ctx, tick.C())
	})
	h.Ready()
	return nil
}

func (h *Handover) loop(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
			_ = h.Flush(fctx)
			cancel()
			return
		case <-tick:
			if err := h.Flush(ctx); err != nil && ctx.Err() == nil {
				h.log.Warn("history handover: flush failed; observations stay buffered", "error", err)
			}
		}
	}
}

// sync brings the recorders in line with the runtimes: new runtimes get a
// recorder per node, gone or swapped ones are closed.
func (h *Handover) sync(now int64) {
	seen := map[graphKey]bool{}
	for _, rt := range h.cfg.Source.Runtimes() {
		k := graphKey{rt.App, rt.Graph}
		seen[k] = true
		rt.Watch = h.sampling(k, rt.Watch, now)
		session := int64(0)
		if rt.Watch != nil {
			session = rt.Watch.Session
		}
		g := h.graphs[k]
		if g != nil && (!g.started.Equal(rt.Started) || g.session != session) {
			h.retire(g, now)
			g = nil
		}
		if g == nil {
			g = &graphRec{rt: rt, started: rt.Started, session: session, nodes: map[string]*nodeRec{}}
			h.graphs[k] = g
		}
		g.rt = rt
		for _, st := range rt.Stages {
			n := g.nodes[st.Node]
			if n == nil {
				n = &nodeRec{id: handover.NewRecorderID(), app: rt.App, graph: rt.Graph, node: st.Node, created: now, watch: rt.Watch, counts: rt.Counters, stages: map[string]*stageBuf{}}
				g.nodes[st.Node] = n
			}
			b := n.stages[st.Path]
			if b == nil {
				b = newStageBuf(st.Path, st.PathIndex)
				n.stages[st.Path] = b
			}
			if n.counts {
				denied := st.Counters.Deferred + st.Counters.Released
				if b.lastDenied >= 0 && denied > b.lastDenied {
					b.addMinute(now-now%60000, 0, denied-b.lastDenied, 0, MaxMinutes)
				}
				b.lastDenied = denied
			}
		}
	}
	for k, g := range h.graphs {
		if !seen[k] {
			h.retire(g, now)
			delete(h.graphs, k)
		}
	}
}

func (h *Handover) retire(g *graphRec, now int64) {
	g.closed = now
	for _, n := range g.nodes {
		n.closed = now
	}
	h.retired = append(h.retired, g)
}

// denials assigns the ring's new entries to their node's recorder.
func (h *Handover) denials() {
	if h.cfg.Denials == nil {
		return
	}
	list, cursor := h.cfg.Denials.Since(h.cursor)
	h.cursor = cursor
	for i := len(list) - 1; i >= 0; i-- { // oldest first
		d := list[i]
		g := h.graphs[graphKey{d.Application, d.Graph}]
		if g == nil {
			continue
		}
		n := g.nodes[d.Node]
		if n == nil {
			continue
		}
		n.nextSeq++
		n.traces = append(n.traces, handover.Trace{Seq: n.nextSeq, At: d.At, Path: d.Path, Op: d.Op, Outcome: d.Outcome, BudgetID: d.BudgetID})
		if len(n.traces) > MaxTraces {
			n.traces = n.traces[len(n.traces)-MaxTraces:]
		}
	}
}

// recorders is every live and retired recorder.
func (h *Handover) recorders() []*nodeRec {
	var out []*nodeRec
	for _, g := range h.graphs {
		for _, n := range g.nodes {
			out = append(out, n)
		}
	}
	for _, g := range h.retired {
		for _, n := range g.nodes {
			out = append(out, n)
		}
	}
	return out
}

// rows builds every row the buffers call for, keyed.
func (h *Handover) rows(now int64) map[string]handover.Row {
	out := map[string]handover.Row{}
	complete := now - now%1000
	for _, n := range h.recorders() {
		base := handover.Row{V: handover.Format, Recorder: n.id, Replica: h.cfg.Replica, App: n.app, Graph: n.graph, Node: n.node}
		paths := make([]string, 0, len(n.stages))
		for p := range n.stages {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		if n.watch != nil {
			through := min(complete, n.watch.Until)
			if n.closed > 0 {
				through = min(through, n.closed-n.closed%1000)
			}
			var lost int64
			for _, p := range paths {
				b := n.stages[p]
				lost += b.lost
				for blk, samples := range b.blocks(complete) {
					r := base
					r.Kind, r.Session, r.Path, r.Samples = handover.KindSamples, n.watch.Session, p, samples
					out[handover.SamplesKey(n.id, b.pathIndex, blk)] = r
				}
				kb := base
				kb.Session = n.watch.Session
				b.keyRows(out, kb, complete)
			}
			r := base
			r.Kind, r.Session = handover.KindWatch, n.watch.Session
			r.Watch = &handover.Watch{Started: n.created, Until: n.watch.Until, ClosedAt: n.closed, Through: max(through, n.created-n.created%1000), Lost: lost}
			out[handover.WatchKey(n.id)] = r
		}
		if n.counts {
			minutes := map[int64][]handover.Lane{}
			for _, p := range paths {
				for m, c := range n.stages[p].minutes {
					minutes[m] = append(minutes[m], handover.Lane{Path: p, Admitted: c.admitted, Denied: c.denied, Cost: c.cost})
				}
			}
			for m, lanes := range minutes {
				r := base
				r.Kind, r.Minute, r.Lanes = handover.KindRollup, m, lanes
				out[handover.RollupKey(n.id, m)] = r
			}
		}
		for i := 0; i < len(n.traces); i += tracesPerRow {
			chunk := n.traces[i:min(i+tracesPerRow, len(n.traces))]
			r := base
			r.Kind, r.Traces = handover.KindTraces, append([]handover.Trace(nil), chunk...)
			out[handover.TracesKey(n.id, chunk[0].Seq)] = r
		}
	}
	return out
}

// forget drops what a committed row held.
func (h *Handover) forget(r handover.Row, now int64) {
	for _, n := range h.recorders() {
		if n.id != r.Recorder {
			continue
		}
		switch r.Kind {
		case handover.KindSamples:
			if b := n.stages[r.Path]; b != nil {
				b.forgetSamples(r.Samples)
			}
		case handover.KindRollup:
			if r.Minute+60000 <= now {
				for _, l := range r.Lanes {
					if b := n.stages[l.Path]; b != nil {
						b.forgetMinute(r.Minute, l)
					}
				}
			}
		case handover.KindKeys:
			if b := n.stages[r.Path]; b != nil && r.Keys != nil {
				b.forgetKeys(r.Keys)
			}
		case handover.KindTraces:
			last := r.Traces[len(r.Traces)-1].Seq
			i := 0
			for i < len(n.traces) && n.traces[i].Seq <= last {
				i++
			}
			n.traces = n.traces[i:]
		}
		return
	}
}

// pending reports whether a recorder still holds anything to hand over.
func (n *nodeRec) pending() bool {
	if len(n.traces) > 0 {
		return true
	}
	for _, b := range n.stages {
		if len(b.seconds) > 0 || len(b.minutes) > 0 || len(b.keys) > 0 {
			return true
		}
	}
	return false
}

// Flush is one pass: sync recorders, take new denials, learn which rows
// gate-recorder committed (gone before their TTL) and forget them, then
// write every new or changed row (and refresh old ones) in kv batches.
func (h *Handover) Flush(ctx context.Context) error {
	h.readShadows(ctx)
	h.mu.Lock()
	nowT := h.cfg.Clock.Now()
	now := nowT.UnixMilli()
	h.sync(now)
	h.denials()
	keys := make([]string, 0, len(h.written))
	for k := range h.written {
		keys = append(keys, k)
	}
	h.mu.Unlock()

	present, err := h.present(ctx, keys)
	if err != nil {
		return err
	}

	h.mu.Lock()
	for _, k := range keys {
		w := h.written[k]
		if w == nil || present[k] {
			continue
		}
		delete(h.written, k)
		if nowT.Sub(w.at) < h.cfg.TTL {
			h.forget(w.row, now)
		}
	}
	rows := h.rows(now)
	type put struct {
		key  string
		body []byte
		row  handover.Row
	}
	var puts []put
	// A row this replica wrote whose content it no longer holds (its
	// seconds dropped past the hour bound and counted as lost) is deleted,
	// so what is reported lost is never also written.
	var stale []string
	for k, w := range h.written {
		if _, ok := rows[k]; !ok && w.row.Kind == handover.KindSamples {
			stale = append(stale, k)
		}
	}
	for k, r := range rows {
		body, err := json.Marshal(r)
		if err != nil {
			continue
		}
		if w := h.written[k]; w != nil && bytes.Equal(w.body, body) && nowT.Sub(w.at) < h.cfg.TTL/2 {
			continue
		}
		puts = append(puts, put{k, body, r})
	}
	// Forget retired runtimes with nothing left to hand over.
	kept := h.retired[:0]
	for _, g := range h.retired {
		busy := false
		for _, n := range g.nodes {
			if n.pending() {
				busy = true
			}
		}
		if busy {
			kept = append(kept, g)
		}
	}
	h.retired = kept
	h.mu.Unlock()

	for i := 0; i < len(stale); i += handover.MaxOpsPerCall {
		chunk := stale[i:min(i+handover.MaxOpsPerCall, len(stale))]
		ops := make([]queen.KVOp, 0, len(chunk))
		for _, k := range chunk {
			ops = append(ops, queen.KVDelete(h.cfg.Namespace, k, queen.DeleteOpts{}))
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := h.cfg.Client.KV(cctx, ops...)
		cancel()
		if err != nil {
			return err
		}
		h.mu.Lock()
		for _, k := range chunk {
			delete(h.written, k)
		}
		h.mu.Unlock()
	}
	ttl := int64(h.cfg.TTL / time.Second)
	for i := 0; i < len(puts); i += handover.MaxOpsPerCall {
		chunk := puts[i:min(i+handover.MaxOpsPerCall, len(puts))]
		ops := make([]queen.KVOp, 0, len(chunk))
		for _, p := range chunk {
			ops = append(ops, queen.KVPut(h.cfg.Namespace, p.key, p.body, queen.PutOpts{TTLSeconds: ttl}))
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := h.cfg.Client.KV(cctx, ops...)
		cancel()
		if err != nil {
			return err
		}
		h.mu.Lock()
		for j, p := range chunk {
			if j < len(res.Results) && res.Results[j].Applied {
				h.written[p.key] = &written{body: p.body, at: nowT, row: p.row}
			}
		}
		h.mu.Unlock()
	}
	return nil
}

// present reads which of keys still exist in kv.
func (h *Handover) present(ctx context.Context, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	const per = 500
	for i := 0; i < len(keys); i += per {
		chunk := keys[i:min(i+per, len(keys))]
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := h.cfg.Client.KV(cctx, queen.KVGetMany(h.cfg.Namespace, chunk...))
		cancel()
		if err != nil {
			return nil, err
		}
		if err := res.Err(); err != nil {
			return nil, err
		}
		if len(res.Results) == 0 {
			continue
		}
		r := res.Results[0]
		if r.Truncated {
			// Keys cut by the read budget are neither present nor
			// missing: treat them as present (nothing is forgotten).
			missing := map[string]bool{}
			for _, m := range r.Missing {
				missing[m] = true
			}
			for _, k := range chunk {
				if !missing[k] {
					out[k] = true
				}
			}
			continue
		}
		for _, row := range r.Rows {
			out[row.Key] = true
		}
	}
	return out, nil
}

// Stats is what the buffers hold now, for tests and metrics.
type Stats struct {
	Recorders, Seconds, Minutes, Traces int
	// KeyCells are the keyed counts held (a keyed shadow's recording).
	KeyCells int
	Lost     int64
}

// Stats counts the buffers.
func (h *Handover) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	var s Stats
	for _, n := range h.recorders() {
		s.Recorders++
		s.Traces += len(n.traces)
		for _, b := range n.stages {
			s.Seconds += len(b.seconds)
			s.Minutes += len(b.minutes)
			s.KeyCells += b.keyCells
			s.Lost += b.lost
		}
	}
	return s
}

// SourceFunc adapts a function to Source.
type SourceFunc func() []Runtime

// Runtimes calls f.
func (f SourceFunc) Runtimes() []Runtime { return f() }

// SetDenials attaches the relay's denial ring (entries added from now on
// are handed over).
func (h *Handover) SetDenials(r *denial.Ring) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg.Denials = r
	if r != nil {
		h.cursor = r.Total()
	}
}
