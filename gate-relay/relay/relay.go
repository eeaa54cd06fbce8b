package relay

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/gate-relay/denial"
	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/capability"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Config is what a Relay runs with. WithDefaults fills what is left zero.
type Config struct {
	// Client is the broker; Store reads documents from its kv namespace
	// (the same namespace holds the counters).
	Client *queen.Client
	Store  *store.Store
	// Replica is this replica's id.
	Replica string
	// StageBatch, StageConcurrency and LaneCapacity are the compile knobs
	// (0 = defaults, derived workers).
	StageBatch, StageConcurrency, LaneCapacity int
	// Lease, PollTimeout and MaxPark are the stage knobs (package stage
	// says what zero means for each).
	Lease, PollTimeout, MaxPark time.Duration
	// DozeCheck is how often a dozing stage (a standby's ingress stage, a
	// primary's interior stage) checks its source (GATE_DOZE_CHECK_SECONDS;
	// stage.Config.DozeCheck: zero is every PollTimeout).
	DozeCheck time.Duration
	// InteriorSeedSkew seeds new interior groups at start − skew.
	InteriorSeedSkew time.Duration
	// RetryLimit is configured on Gate-owned queues (0 is none; negative
	// is the knob's default).
	RetryLimit int
	// Reconcile is the reconcile period (a keys-only pass, and the whole
	// re-read every wholeEvery periods); SignalPoll the change-signal read
	// period.
	Reconcile, SignalPoll time.Duration
	// Clock is the relay's time: its reconcile and change-signal periods,
	// the stop deadline, and the clock of every stage it runs (nil is the
	// wall clock).
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Observer sees committed settles; BudgetObserver sees applied counter
	// writes. Both optional (tests, Watch recorders).
	Observer       stage.Observer
	BudgetObserver budget.Observer
	// Admission is "riders" (default: the charge rides the settle
	// transaction once a probe proved the broker applies riders) or
	// "separate" (always a kv call before the settle).
	Admission string
	// Linger is GATE_STAGE_LINGER_MS.
	Linger time.Duration
	// ReplicasPerGraph is how many live replicas run each graph
	// (GATE_RELAY_REPLICAS_PER_GRAPH; 0 = every replica runs every graph).
	ReplicasPerGraph int
}

// WithDefaults returns c with its zero fields filled from the knobs'
// defaults (lease, poll timeout, reconcile and signal periods, retry limit
// when negative, admission), the wall clock and slog.Default(). A negative
// duration counts as zero.
func (c Config) WithDefaults() Config {
	c.Lease = cmp.Or(max(c.Lease, 0), time.Duration(knob.LeaseSeconds.Default)*time.Second)
	c.PollTimeout = cmp.Or(max(c.PollTimeout, 0), time.Duration(knob.PollTimeoutSeconds.Default)*time.Second)
	c.Reconcile = cmp.Or(max(c.Reconcile, 0), time.Duration(knob.ReconcileSeconds.Default)*time.Second)
	c.SignalPoll = cmp.Or(max(c.SignalPoll, 0), time.Duration(knob.SignalPollMs.Default)*time.Millisecond)
	if c.RetryLimit < 0 {
		c.RetryLimit = knob.RetryLimit.Default
	}
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Admission = cmp.Or(c.Admission, knob.Admission.Default)
	return c
}

// Relay runs every stored graph on this replica. Build with New, run with
// Start; Stop (or the end of Start's context) stops every graph, and
// Stopped closes when all stages have returned (or, past the poll timeout
// plus two seconds, were detached).
type Relay struct {
	service.Base

	cfg     Config
	client  *queen.Client
	store   *store.Store
	limiter *budget.Limiter
	denials *denial.Ring
	log     *slog.Logger
	admit   *stage.Admission
	// signer signs the stamps' charge records with the fleet's key (kv
	// store.StampKeyKey), read on the first launch that succeeds in it.
	signer atomic.Pointer[cost.Signer]
	// brokerDown is set while the broker did not answer (a store read or
	// a change-signal read failed without an answer), so the next good
	// read re-probes it (the broker may have changed).
	brokerDown bool
	// caps is the last capability probe that finished (nil before one
	// did); problem is the last problem logged, so it is logged once.
	caps    atomic.Pointer[capability.Report]
	problem string
	// statusWrite is the failing status write (nil while writes work);
	// statusFailures counts every failed write.
	statusWrite    atomic.Pointer[wire.RelayStatusWrite]
	statusFailures atomic.Int64

	// seen is the newest revision every change up to which this relay has
	// applied (by a change row or a full re-read); ahead holds revisions
	// above it already applied; gapSince is when a revision above seen
	// was first found without its change row. Loop goroutine only.
	seen     int64
	ahead    map[int64]bool
	gapSince time.Time
	// rows is every stored document's kv row (key → row, with its version
	// token) as this relay last read it: by the last whole listing, a
	// keys-only pass, or one document's read. nil until a whole listing
	// succeeds, and again after one fails (the next period then reads
	// everything). sinceWhole counts the periods since the last whole
	// listing. Loop goroutine only.
	rows       map[string]store.Row
	sinceWhole int
	// unreachableSince is when the live replicas' read first failed
	// without an answer, gaveUp whether every graph was given up for it.
	// Loop goroutine only.
	unreachableSince time.Time
	gaveUp           bool
	// members are the live replicas placement hashes over (this one
	// included; nil until first read): written by the loop goroutine
	// (setMembers), read from any (a graph launched by a starter, a status
	// read). A stored slice is never changed.
	members atomic.Pointer[[]string]

	mu       sync.Mutex
	graphs   map[string]*runtime
	lastErrs map[string]string
	kick     chan struct{}
	changed  chan struct{}
}

// New checks cfg and returns a Relay ready to Start.
func New(cfg Config) (*Relay, error) {
	if cfg.Client == nil || cfg.Store == nil {
		return nil, errors.New("relay: Client and Store are required")
	}
	if cfg.Replica == "" {
		return nil, errors.New("relay: Replica is required")
	}
	cfg = cfg.WithDefaults()
	if cfg.Admission != knob.AdmissionRiders && cfg.Admission != knob.AdmissionSeparate {
		return nil, fmt.Errorf("relay: Admission %q is not riders or separate", cfg.Admission)
	}
	return &Relay{
		admit: stage.NewAdmission(cfg.Admission == knob.AdmissionRiders, cfg.Logger),
		cfg:   cfg, client: cfg.Client, store: cfg.Store,
		limiter: &budget.Limiter{
			KV: cfg.Client, NS: cfg.Store.Namespace(), Observer: cfg.BudgetObserver,
			Meters: budget.NewMeters(cfg.Client, cfg.Store.Namespace(), cfg.Clock, 0),
			Keys:   budget.NewKeyLimits(cfg.Client, cfg.Store.Namespace(), cfg.Clock, 0, 0),
		},
		denials: &denial.Ring{}, log: cfg.Logger,
		graphs: map[string]*runtime{}, lastErrs: map[string]string{},
		kick: make(chan struct{}, 1), changed: make(chan struct{}, 1),
	}, nil
}

// Denials is the process-wide denial ring.
func (r *Relay) Denials() *denial.Ring { return r.denials }

// Replica is this replica's id.
func (r *Relay) Replica() string { return r.cfg.Replica }

// StatusWritten records the outcome of a status write (the publisher's
// Written): a failure makes /health degraded naming it until a write
// succeeds, and counts in /metrics.
func (r *Relay) StatusWritten(err error) {
	if err == nil {
		r.statusWrite.Store(nil)
		return
	}
	n := r.statusFailures.Add(1)
	since := r.cfg.Clock.Now().UnixMilli()
	if prev := r.statusWrite.Load(); prev != nil {
		since = prev.Since
	}
	r.statusWrite.Store(&wire.RelayStatusWrite{Error: err.Error(), Since: since, Failures: n})
}

// StatusWrite is the failing status write (nil while writes work) and the
// failed writes since start.
func (r *Relay) StatusWrite() (*wire.RelayStatusWrite, int64) {
	return r.statusWrite.Load(), r.statusFailures.Load()
}

// Changed receives a value after every reconcile pass that changed what
// runs here (a graph started, swapped, stopped or failed to start), so the
// status can be published at once instead of at the next period. Signals
// coalesce: one pending value stands for any number of changes.
func (r *Relay) Changed() <-chan struct{} { return r.changed }

// signalChanged notes a change of what runs without blocking.
func (r *Relay) signalChanged() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Reconcile asks for a reconcile pass now (it runs on the relay's loop).
func (r *Relay) Reconcile() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Start restores every stored graph and then reconciles on the period and
// on the change signal, on its own goroutine, until Stop or the end of
// ctx, when it stops every graph. Starting a running relay does nothing.
func (r *Relay) Start(ctx context.Context) error {
	ctx, ok := r.StartInit(ctx)
	if !ok {
		return nil
	}
	r.Go(func() { r.loop(ctx) })
	r.Ready()
	return nil
}

func (r *Relay) loop(ctx context.Context) {
	defer r.stopAll()
	r.probe(ctx)
	r.refreshMembers(ctx)
	r.fullPass(ctx)
	full := r.cfg.Clock.NewTicker(r.cfg.Reconcile)
	defer full.Stop()
	signal := r.cfg.Clock.NewTicker(r.cfg.SignalPoll)
	defer signal.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-full.C():
			r.periodicPass(ctx)
		case <-r.kick:
			r.fullPass(ctx)
		case <-signal.C():
			if r.refreshMembers(ctx) {
				r.fullPass(ctx)
				continue
			}
			if r.gaveUp {
				continue
			}
			now, err := r.revision(ctx)
			if unanswered(err) {
				r.brokerDown = true
			}
			switch {
			case err != nil:
			case r.brokerDown:
				r.fullPass(ctx)
			case now != r.seen:
				r.follow(ctx, now)
			}
		}
	}
}

// wholeEvery is how many reconcile periods may pass between two whole
// re-reads of every document: 20 is five minutes at the default 15 s.
// The periods between run keysPass, which already finds every document
// created, deleted or rewritten behind the change log (each write changes
// its row's version), so the whole re-read is the net under that net: a
// broker whose keys-only rows carry no version, a row decoded wrongly. It
// is short of ChangeTTL (10 min), so a relay never trusts the change log
// for longer than its rows live, and 1/20 of the whole re-read's cost is
// about 1% of an idle replica's core at 10,000 graphs.
const wholeEvery = 20

// periodicPass is the reconcile period's pass: the whole re-read every
// wholeEvery periods (and whenever the last one failed), a keys-only pass
// otherwise.
func (r *Relay) periodicPass(ctx context.Context) {
	r.sinceWhole++
	if r.rows == nil || r.sinceWhole >= wholeEvery {
		r.fullPass(ctx)
		return
	}
	r.keysPass(ctx)
}

// fullPass re-reads every document (the safety net, the start, and every
// fallback of follow and keysPass): every change up to the revision read
// before the listing is then applied.
func (r *Relay) fullPass(ctx context.Context) {
	if r.gaveUp {
		return
	}
	r.sinceWhole = 0
	rev, err := r.revision(ctx)
	if r.reconcile(ctx) && err == nil {
		r.seen, r.ahead, r.gapSince = rev, nil, time.Time{}
	}
}

// keysPass is a reconcile period between two whole re-reads: a keys-only
// listing (each stored document's key and row version, no bodies) finds
// the documents created, deleted or rewritten since this relay last read
// them, behind the change log too (a change row that was never written,
// a write straight to kv); only those are read (declareOne), with every
// graph here that is not running (a start that failed is retried every
// period, as the whole pass did). A failed listing or read, a key that
// does not parse, a broker that was down or lacks what Gate needs (the
// whole pass probes it again) falls back to the whole re-read. When every row carries a version, every change up to the
// revision read before the listing is then applied.
func (r *Relay) keysPass(ctx context.Context) {
	if r.gaveUp || ctx.Err() != nil {
		return
	}
	if rep, ok := r.Capabilities(); r.brokerDown || (ok && !rep.OK()) {
		// The whole pass probes the broker again after its good read
		// (one that was down, or lacks what Gate needs, may have changed).
		r.fullPass(ctx)
		return
	}
	rev, revErr := r.revision(ctx)
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	rows, complete, err := r.store.Rows(lctx)
	cancel()
	if err != nil || !complete {
		if err != nil && unanswered(err) {
			r.brokerDown = true
		}
		r.fullPass(ctx)
		return
	}
	// Against the rows last read: one map lookup per stored document, and
	// nothing built while nothing changed (an idle pass at 10,000 graphs).
	versioned, matched := true, 0
	var touched map[string]store.Row
	touch := func(row store.Row) {
		if touched == nil {
			touched = map[string]store.Row{}
		}
		touched[graphKey(row.App, row.Graph)] = row
	}
	for _, row := range rows {
		versioned = versioned && row.Version != 0
		old, had := r.rows[row.Key]
		if had {
			matched++
		}
		if !had || (row.Version != 0 && row.Version != old.Version) {
			touch(row)
			r.rows[row.Key] = row
		}
	}
	if matched < len(r.rows) {
		// Rows gone since: a deleted document.
		listed := make(map[string]bool, len(rows))
		for _, row := range rows {
			listed[row.Key] = true
		}
		for key, old := range r.rows {
			if !listed[key] {
				touch(old)
				delete(r.rows, key)
			}
		}
	}
	r.mu.Lock()
	for _, rt := range r.graphs {
		if !rt.running.Load() {
			touch(store.Row{App: rt.app, Graph: rt.graph})
		}
	}
	r.mu.Unlock()
	names := make([]string, 0, len(touched))
	for k := range touched {
		names = append(names, k)
	}
	sort.Strings(names)
	changed := false
	defer func() {
		if changed {
			r.signalChanged()
		}
	}()
	for _, k := range names {
		if ctx.Err() != nil {
			return
		}
		row := touched[k]
		if !r.owns(row.App, row.Graph) {
			r.mu.Lock()
			_, here := r.graphs[k]
			r.mu.Unlock()
			if !here {
				// Another replica's graph: nothing to read.
				continue
			}
		}
		did, err := r.declareOne(ctx, row.App, row.Graph)
		if err != nil {
			r.fullPass(ctx)
			return
		}
		changed = changed || did
	}
	if versioned && revErr == nil && rev >= r.seen {
		r.seen, r.ahead, r.gapSince = rev, nil, time.Time{}
	}
}

// changeGap is how long a revision may lack its change row (its writer
// between its two calls, or dead) before the relay re-reads everything.
const changeGap = 2 * time.Second

// follow applies the changes after r.seen up to revision now, one
// document each: a PUT costs a relay one read of what changed, however
// many graphs are stored. A change row that does not appear within
// changeGap, or a failed read, falls back to a full pass.
func (r *Relay) follow(ctx context.Context, now int64) {
	if now < r.seen {
		// The signal went backwards (the kv namespace was reset).
		r.fullPass(ctx)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	changes, err := r.store.Changes(cctx, r.seen)
	cancel()
	if err != nil {
		if unanswered(err) {
			r.brokerDown = true
		}
		r.fullPass(ctx)
		return
	}
	changed := false
	for _, c := range changes {
		if r.ahead[c.Rev] {
			continue
		}
		did, err := r.declareOne(ctx, c.App, c.Graph)
		if err != nil {
			r.fullPass(ctx)
			return
		}
		changed = changed || did
		if r.ahead == nil {
			r.ahead = map[int64]bool{}
		}
		r.ahead[c.Rev] = true
	}
	for r.ahead[r.seen+1] {
		delete(r.ahead, r.seen+1)
		r.seen++
	}
	if changed {
		r.signalChanged()
	}
	if r.seen >= now {
		r.gapSince = time.Time{}
		return
	}
	if r.gapSince.IsZero() {
		r.gapSince = r.cfg.Clock.Now()
		return
	}
	if r.cfg.Clock.Since(r.gapSince) >= changeGap {
		r.fullPass(ctx)
	}
}

// declareOne reads app/graph's stored document and runs it (or stops the
// graph when it is gone); did says what runs changed.
func (r *Relay) declareOne(ctx context.Context, app, graph string) (did bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	doc, found, err := r.store.Get(cctx, app, graph)
	cancel()
	if err != nil {
		return false, err
	}
	r.noteRow(app, graph, doc, found)
	k := graphKey(app, graph)
	r.mu.Lock()
	old := r.graphs[k]
	r.mu.Unlock()
	if !found || !r.owns(app, graph) {
		if old == nil {
			return false, nil
		}
		r.mu.Lock()
		delete(r.graphs, k)
		r.mu.Unlock()
		r.stop(old)
		if found {
			r.log.Info("graph placed on other replicas; stopped here", "app", app, "graph", graph)
		} else {
			r.log.Info("graph removed from the store; stopped", "app", app, "graph", graph)
		}
		return true, nil
	}
	if old != nil && old.running.Load() && bytes.Equal(old.body, doc.Body) {
		return false, nil
	}
	r.declare(ctx, k, old, doc)
	return true, nil
}

// noteRow records what a read of app/graph found in rows (when a whole
// listing made them): its row's version, or no rows when nothing is
// stored (the next keys-only pass re-reads a row this misses).
func (r *Relay) noteRow(app, graph string, doc store.Document, found bool) {
	if r.rows == nil {
		return
	}
	if !found {
		delete(r.rows, plan.DocumentKey(app, graph))
		delete(r.rows, plan.LegacyTargetKey(app, graph))
		return
	}
	r.rows[doc.Key] = doc.KeysRow()
}

// probe proves (again) that the broker applies transaction riders: at
// start and after the broker was unreachable (it may be another broker
// now). A failed probe leaves admission on the separate kv call.
func (r *Relay) probe(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := r.admit.Probe(cctx, r.limiter, r.client, plan.RiderProbeKey(r.cfg.Replica))
	if err != nil && !errors.Is(err, budget.ErrRidersIgnored) && ctx.Err() == nil && unanswered(err) {
		// The broker did not answer (rather than answer without riders):
		// probe again after the next good store read.
		r.brokerDown = true
	}
	r.probeCapabilities(ctx)
}

// probeCapabilities checks what Gate needs of the broker (libs/capability)
// and says it once: an ERROR line naming what is missing and the fix when
// that changes, an INFO line when nothing is missing any more. A probe the
// broker did not answer changes nothing and is tried again after the next
// good read.
func (r *Relay) probeCapabilities(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	rep := capability.Probe(cctx, r.client, capability.Options{Namespace: r.store.Namespace(), Owner: r.cfg.Replica, Now: r.cfg.Clock.Now})
	if rep.Err != nil {
		if ctx.Err() == nil {
			r.brokerDown = true
		}
		return
	}
	r.caps.Store(&rep)
	problem := rep.Problem()
	switch {
	case problem != "" && problem != r.problem:
		r.log.Error("the broker is not the broker Gate needs; this relay charges and forwards nothing that needs what it lacks, and /health answers 503 until it has it", "error", problem)
	case problem == "" && r.problem != "":
		r.log.Info("the broker now has everything Gate needs", "queen", r.client.BaseURL())
	}
	r.problem = problem
}

// Capabilities is the last capability probe that finished, and whether
// one has.
func (r *Relay) Capabilities() (capability.Report, bool) {
	if p := r.caps.Load(); p != nil {
		return *p, true
	}
	return capability.Report{}, false
}

// BrokerNeeds is what the last capability probe found, for /health, and
// the problem it names ("" when nothing is missing or no probe finished).
func (r *Relay) BrokerNeeds() ([]wire.BrokerNeed, string) {
	rep, ok := r.Capabilities()
	if !ok {
		return nil, ""
	}
	return rep.Wire(), rep.Problem()
}

// unanswered reports a broker call that got no answer (a transport
// failure, a timeout, a 5xx): the broker may be another one when it
// answers again.
func unanswered(err error) bool {
	st := queen.StatusOf(err)
	return err != nil && (st == 0 || st >= 500)
}

// BrokerCalls is what this relay has sent to the broker (its stages' client
// and its store's).
func (r *Relay) BrokerCalls() queen.Calls {
	c := r.client.Calls()
	// The store may talk over a client (a connection pool) of its own.
	if sc := r.store.Client(); sc != nil && sc != r.client {
		c = c.Add(sc.Calls())
	}
	return c
}

// BrokerHealth reports whether the broker answers its /health as healthy.
func (r *Relay) BrokerHealth(ctx context.Context) error {
	h, err := r.client.Health(ctx)
	if err != nil {
		return err
	}
	if !h.Healthy() {
		return fmt.Errorf("the broker reports status %q, database %q", h.Status, h.Database)
	}
	return nil
}

// Admission is the relay's admission path: "riders" or "separate", and why
// it is on the separate path when riders were wanted.
func (r *Relay) Admission() (mode, why string) { return r.admit.Mode() }

func (r *Relay) revision(ctx context.Context) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return r.store.Revision(cctx)
}

func graphKey(app, graph string) string { return app + "/" + graph }

// reconcile is one pass: read the whole store (a failed read changes
// nothing), re-declare changed or not-running graphs, stop graphs deleted
// from a complete listing, start stored graphs not running here. ok is
// false when the store could not be read or the pass was cut short.
func (r *Relay) reconcile(ctx context.Context) (ok bool) {
	if ctx.Err() != nil {
		return false
	}
	changed := false
	defer func() {
		if changed {
			r.signalChanged()
		}
	}()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	listing, err := r.store.List(lctx)
	cancel()
	if err != nil {
		r.rows = nil
		if unanswered(err) {
			r.brokerDown = true
		}
		if rep, ok := r.Capabilities(); ok && !rep.OK() {
			// The ERROR line already says why (a broker without kv
			// answers every store read 404): probe again, quietly.
			r.probeCapabilities(ctx)
			return false
		}
		r.log.Warn("reading the store failed; keeping what runs", "error", err)
		return false
	}
	if rep, ok := r.Capabilities(); r.brokerDown || (ok && !rep.OK()) {
		r.brokerDown = false
		r.probe(ctx)
	}
	rows := make(map[string]store.Row, len(listing.Documents))
	for _, d := range listing.Documents {
		rows[d.Key] = d.KeysRow()
	}
	r.rows = rows
	stored := map[string]store.Document{}
	elsewhere := map[string]bool{}
	for _, d := range listing.Documents {
		if !r.owns(d.App, d.Graph) {
			elsewhere[graphKey(d.App, d.Graph)] = true
			continue
		}
		k := graphKey(d.App, d.Graph)
		if prev, ok := stored[k]; ok && !prev.Legacy {
			continue
		}
		stored[k] = d
	}
	r.mu.Lock()
	keys := make([]string, 0, len(r.graphs))
	for k := range r.graphs {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	for _, k := range keys {
		if _, ok := stored[k]; ok || (!listing.Complete && !elsewhere[k]) {
			continue
		}
		r.mu.Lock()
		rt := r.graphs[k]
		delete(r.graphs, k)
		r.mu.Unlock()
		r.stop(rt)
		changed = true
		if elsewhere[k] {
			r.log.Info("graph placed on other replicas; stopped here", "app", rt.app, "graph", rt.graph)
		} else {
			r.log.Info("graph removed from the store; stopped", "app", rt.app, "graph", rt.graph)
		}
	}
	names := make([]string, 0, len(stored))
	for k := range stored {
		names = append(names, k)
	}
	sort.Strings(names)
	defer func() {
		// A broker gone for a lease, seen mid-pass, gave every graph up;
		// a start that finished after that is given up too.
		if r.gaveUp {
			r.stopAllGraphs()
		}
	}()
	starts, wait := starters()
	defer wait()
	checked := r.cfg.Clock.Now()
	for _, k := range names {
		if ctx.Err() != nil {
			return false
		}
		// A long pass (a cold start of thousands of graphs) re-reads the
		// members as it goes: replicas that started meanwhile take their
		// share at once instead of after this replica started every graph,
		// and the pass after this one stops what it lost and starts what
		// it gained.
		if now := r.cfg.Clock.Now(); now.Sub(checked) >= r.cfg.SignalPoll {
			checked = now
			if r.refreshMembers(ctx) {
				r.Reconcile()
			}
			if r.gaveUp {
				return false
			}
		}
		doc := stored[k]
		if !r.owns(doc.App, doc.Graph) {
			continue
		}
		r.mu.Lock()
		old := r.graphs[k]
		r.mu.Unlock()
		if old != nil && old.running.Load() && bytes.Equal(old.body, doc.Body) {
			continue
		}
		starts <- func() { r.declare(ctx, k, old, doc) }
		changed = true
	}
	return true
}

// startConcurrency is how many graphs a reconcile pass starts at once: a
// start is a few broker calls in a row (compile's partition read,
// provisioning), so one at a time a cold start of thousands of graphs
// waits on round trips, not on the CPU.
const startConcurrency = 8

// starters runs the funcs sent on the returned channel on
// startConcurrency goroutines; the returned wait closes the channel and
// waits for every func sent.
func starters() (chan<- func(), func()) {
	ch := make(chan func())
	var wg sync.WaitGroup
	for range startConcurrency {
		wg.Go(func() {
			for f := range ch {
				f()
			}
		})
	}
	return ch, func() {
		close(ch)
		wg.Wait()
	}
}

// declare starts doc, swapping out old. A document that does not compile
// leaves a running old version untouched (the error is reported in the
// status). Otherwise old is stopped and the new plan launched; if the
// launch fails (provisioning), the old document is restarted.
func (r *Relay) declare(ctx context.Context, k string, old *runtime, doc store.Document) {
	p, err := r.compile(ctx, doc)
	if err != nil {
		r.reportOnce(k, doc, err)
		if old != nil && old.running.Load() {
			old.setErr("the stored document does not compile; the previous one keeps running: " + err.Error())
			return
		}
		rt := &runtime{app: doc.App, graph: doc.Graph, body: bytes.Clone(doc.Body), legacy: doc.Legacy, started: r.cfg.Clock.Now()}
		rt.setErr(err.Error())
		r.put(k, rt)
		return
	}
	wasRunning := false
	if old != nil {
		wasRunning = old.running.Load()
		r.stop(old)
	}
	rt, err := r.launch(ctx, doc, p)
	if err != nil {
		r.reportOnce(k, doc, err)
		if wasRunning && old.plan != nil {
			prev := store.Document{App: old.app, Graph: old.graph, Body: old.body, Legacy: old.legacy}
			if back, err2 := r.launch(ctx, prev, old.plan); err2 == nil {
				back.setErr("the stored document did not start; the previous one runs: " + err.Error())
				r.put(k, back)
				return
			}
		}
		r.put(k, rt)
		return
	}
	r.mu.Lock()
	delete(r.lastErrs, k)
	r.mu.Unlock()
	r.put(k, rt)
}

// put records rt as the runtime of k with its role under the current
// members (they may have changed while it launched: the role is set
// under the lock applyRoles takes, so no change is missed).
func (r *Relay) put(k string, rt *runtime) {
	r.mu.Lock()
	rt.setStandby(r.standby(rt.app, rt.graph))
	r.graphs[k] = rt
	r.mu.Unlock()
}

// Roles is how many graphs run here as a standby and how many stages doze
// now (no parked poll), for /metrics.
func (r *Relay) Roles() (standbyGraphs, dozingStages int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rt := range r.graphs {
		if rt.standby.Load() {
			standbyGraphs++
		}
		for _, s := range rt.stages {
			if s.Dozing() {
				dozingStages++
			}
		}
	}
	return standbyGraphs, dozingStages
}

// reportOnce logs a start failure once per distinct error.
func (r *Relay) reportOnce(k string, doc store.Document, err error) {
	r.mu.Lock()
	first := r.lastErrs[k] != err.Error()
	r.lastErrs[k] = err.Error()
	r.mu.Unlock()
	if first {
		r.log.Error("graph did not start", "app", doc.App, "graph", doc.Graph, "error", err)
	}
}

// stop cancels rt's stages and awaits them for poll timeout + 2 s.
func (r *Relay) stop(rt *runtime) {
	if rt == nil {
		return
	}
	rt.cancelStages()
	if !rt.await(r.cfg.Clock, r.cfg.PollTimeout+2*time.Second) {
		r.log.Warn("graph stages did not stop in time; detached", "app", rt.app, "graph", rt.graph)
	}
	rt.running.Store(false)
}

// stopAll cancels every graph first, then awaits them.
func (r *Relay) stopAll() {
	r.mu.Lock()
	all := make([]*runtime, 0, len(r.graphs))
	for _, rt := range r.graphs {
		all = append(all, rt)
	}
	r.graphs = map[string]*runtime{}
	r.mu.Unlock()
	for _, rt := range all {
		rt.cancelStages()
	}
	deadline := r.cfg.Clock.Now().Add(r.cfg.PollTimeout + 2*time.Second)
	for _, rt := range all {
		if !rt.await(r.cfg.Clock, max(deadline.Sub(r.cfg.Clock.Now()), 0)) {
			r.log.Warn("graph stages did not stop in time; detached", "app", rt.app, "graph", rt.graph)
		}
		rt.running.Store(false)
	}
}

// Snapshot is this replica's status: the graphs it runs with their
// per-stage counters, and the newest denials.
func (r *Relay) Snapshot() store.RelayStatus {
	r.mu.Lock()
	all := make([]*runtime, 0, len(r.graphs))
	for _, rt := range r.graphs {
		all = append(all, rt)
	}
	r.mu.Unlock()
	st := store.RelayStatus{Replica: r.cfg.Replica, At: r.cfg.Clock.Now().UnixMilli()}
	for _, rt := range all {
		st.Graphs = append(st.Graphs, rt.status())
	}
	sort.Slice(st.Graphs, func(i, j int) bool {
		return graphKey(st.Graphs[i].App, st.Graphs[i].Graph) < graphKey(st.Graphs[j].App, st.Graphs[j].Graph)
	})
	st.Denials = r.denials.Newest(store.MaxStatusDenials)
	return st
}
