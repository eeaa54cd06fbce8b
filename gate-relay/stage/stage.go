package stage

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/gate-relay/denial"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/store"
)

// Fixed stage constants (gate-runtime §8.2).
const (
	// RenewEvery is the lease renewal period while a handler runs; a
	// shorter lease renews at a third of its length.
	RenewEvery = 3 * time.Second
	// ParkRecheck is how long a handler parks on its own claim in all
	// (a window that turns within it: the common sub-window case), and how
	// often the stage's hold rechecks the claims whose window does not, so
	// a lifted backoff (its counters deleted) resumes within about a
	// second instead of at the window end first seen.
	ParkRecheck = time.Second
	// WedgeAttempts is how many ack rejections at one head escalate.
	WedgeAttempts = 5
	// callTimeout bounds one kv call or transaction of a handler.
	callTimeout = 15 * time.Second
)

// Settled describes one committed settle, for an Observer.
type Settled struct {
	// App, Graph, Path and Node name the stage that settled.
	App, Graph, Path, Node string
	// Partition is the source partition.
	Partition string
	// Items and Cost are what was forwarded.
	Items int
	Cost  int64
	// Windows are the counters the items were charged to, with the window
	// end their charge's getMany reported (zero when unknown).
	Windows []Window
	// At is when the commit was acknowledged.
	At time.Time
	// Forwarded yields each forwarded item's payload and cost, in order;
	// it reads the handler's window, so it is valid only during the
	// Observer's call (a keyed shadow's recording reads scope values and
	// ops from it; nothing else pays for it).
	Forwarded iter.Seq2[[]byte, int64]
}

// Window is one charged counter of a settle.
type Window struct {
	// Key is the counter's kv key.
	Key string
	// ExpiresAt is the window's end as the charge's getMany read it.
	ExpiresAt time.Time
	// Post is the value the charge left on the counter.
	Post int64
}

// Observer sees every committed settle (Watch recorders, tests). It is
// called synchronously on the handler's goroutine and must be quick.
type Observer func(Settled)

// Config is everything one stage needs. WithDefaults fills what is left
// zero.
type Config struct {
	// App and Graph name the graph; Stage is the compiled stage and Node its
	// node's entry (budgets and cost rule).
	App, Graph string
	Stage      plan.Stage
	Node       *plan.Node
	// Client is the broker; Limiter charges the node's counters.
	Client  *queen.Client
	Limiter *budget.Limiter
	// Lease is GATE_LEASE_SECONDS and PollTimeout GATE_POLL_TIMEOUT_SECONDS
	// (zero or negative: the knobs' defaults). MaxPark is GATE_MAX_PARK_MS;
	// zero (or negative) never parks: a refused claim is released at once.
	Lease       time.Duration
	PollTimeout time.Duration
	MaxPark     time.Duration
	// SeedFrom is the subscriptionFrom of a new group on an interior
	// source (runtime start − skew); ignored for ingress sources.
	SeedFrom time.Time
	// Clock is the stage's time: park and backoff arithmetic, and every
	// wait of a stage (park, linger, pop backoff, lease renewal); the
	// windows themselves are the broker's kv TTLs. Nil is the wall clock.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Denials receives full-window refusals; nil keeps none.
	Denials *denial.Ring
	// Observer sees committed settles; nil observes nothing.
	Observer Observer
	// Admission is the relay's admission path; nil charges with the
	// separate kv call.
	Admission *Admission
	// Signer, when set, signs the charge records every item this stage
	// forwards carries in its stamp (see charges.go); nil writes none.
	Signer *cost.Signer
	// Linger is how long, after claims of fewer than a quarter of the
	// batch, the stage waits between pops: its workers take turns, one
	// pop per Linger (GATE_STAGE_LINGER_MS; 0 never waits).
	Linger time.Duration
	// Fed is true when the stage's source is an interior queue only the
	// stages of its graph push into, each calling Wake on this process's
	// copy of the stage after it settles (Feeds): a replica that runs the
	// graph runs every stage of it, so whatever its upstream forwards, its
	// own copy of this stage is woken for. Once quiet for DozeAfter, such a
	// stage stops parking long-polls and dozes: its workers return and are
	// started again by a Wake, and worker 0 is started again to check the
	// source with one pop without wait every DozeCheck (what a replica
	// that stopped or died left there). A stage not Fed parks its
	// long-polls always, unless it is Standby.
	Fed bool
	// Standby is the stage's role when it starts (SetStandby changes it):
	// true when its graph runs here as a standby, one of the graph's
	// owners after the first (relay placement). A standby stage starts
	// quiet like a Fed one and, once quiet for DozeAfter, dozes: an
	// ingress stage's worker 0 checks the source with one pop without wait
	// every DozeCheck, and a Fed stage waits for its upstream's Wake
	// with no check at all (its upstream runs here and wakes it, lapsed
	// leases are its own recent claims, taken while it is still awake,
	// and what a dead primary left is taken when this replica is promoted
	// and SetStandby(false) wakes the stage). A claim wakes the stage: it
	// long-polls again until quiet for DozeAfter. False is the primary:
	// its ingress stages park their long-polls always.
	Standby bool
	// DozeCheck is how often a dozing stage with a check (a standby's
	// ingress stage, a primary's Fed stage) checks its source
	// (GATE_DOZE_CHECK_SECONDS; zero or negative: every PollTimeout). The
	// check is a safety net, never the way items normally go through: a
	// standby ingress stage's primary parks a poll that claims what is
	// pushed, and a dead primary's graphs are taken over when its status
	// header expires (the promotion wakes the stage at once); a Fed
	// stage's upstream in this process wakes it after every settle, and a
	// claim whose lease lapses comes back within DozeAfter, while the
	// stage is still awake. So the check bounds only the wait of what a
	// live primary does not claim, or of what a replica that died between
	// its settle and its own interior stage's claim left in an interior
	// queue.
	DozeCheck time.Duration
}

// DozeAfter is how long a Fed or standby stage must have claimed nothing, and been
// woken by nothing, before it dozes: twice the poll timeout, and at least
// twice the lease, so the tail of a claim whose prefix was acked (it comes
// back once its lease lapses) is claimed by a parked poll first.
func (c Config) DozeAfter() time.Duration {
	return max(2*c.PollTimeout, 2*c.Lease)
}

// WithDefaults returns c with its zero fields filled: the lease and poll
// timeout of the knobs' defaults, the wall clock, slog.Default(). A
// negative duration counts as zero.
func (c Config) WithDefaults() Config {
	c.Lease = cmp.Or(max(c.Lease, 0), time.Duration(knob.LeaseSeconds.Default)*time.Second)
	c.PollTimeout = cmp.Or(max(c.PollTimeout, 0), time.Duration(knob.PollTimeoutSeconds.Default)*time.Second)
	c.MaxPark = max(c.MaxPark, 0)
	c.DozeCheck = cmp.Or(max(c.DozeCheck, 0), c.PollTimeout)
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Stage runs one consumer with its workers. Build it with New and run it
// with Start; Stop (or the end of Start's context) stops popping, lets
// each worker settle or release the claim in its hands, and Stopped
// closes once every worker has returned.
type Stage struct {
	service.Base

	cfg     Config
	log     *slog.Logger
	c       counters
	refusal atomic.Pointer[store.Refusal]
	wedgeMu sync.Mutex
	wedge   *store.Wedge
	pace    pace
	hold    *hold
	// heldFull counts claims let go because the hold was full.
	heldFull atomic.Int64
	denied   denials
	// windows is the window end last seen per counter (charges.go);
	// forged counts incoming charge records dropped for a bad signature,
	// corrections the correction rows written.
	windows             windowCache
	forged, corrections atomic.Int64
	// keyReadFailures counts attempts whose key limit rows could not be
	// read (followKeys).
	keyReadFailures atomic.Int64
	// dozer is when the stage last claimed or was woken, its role, and
	// its dozing workers' wake (a Fed or standby stage).
	dozer dozer
	// feeds are the stages whose source this stage's settles push into
	// (Feeds), woken after every settle that forwarded items.
	feeds []*Stage
}

// Feeds names the stages of the same graph whose source this stage's
// settles push into: each is woken (Wake) after a settle that forwarded
// items. Call it before Start.
func (s *Stage) Feeds(next ...*Stage) { s.feeds = append(s.feeds, next...) }

// FeedsTo is the stages Feeds named.
func (s *Stage) FeedsTo() []*Stage { return s.feeds }

// Wake tells the stage that its source just got items: dozing workers go
// back to parked long-polls at once, and the stage stays awake for another
// DozeAfter.
func (s *Stage) Wake() { s.wake() }

// Dozing reports whether a worker of the stage dozes now (a Fed or standby
// stage quiet for DozeAfter: no parked long-poll).
func (s *Stage) Dozing() bool { return s.dozer.asleep.Load() > 0 }

// SetStandby gives the stage its role (Config.Standby) while it runs. A
// promotion (false after true) wakes the stage at once, as Wake does: its
// dozing workers' next pops park, so what a dead primary left is claimed
// at once, and it stays awake for DozeAfter. A demotion (true after false)
// lets the stage doze once it has been quiet for DozeAfter (a stage that
// has not claimed for that long dozes after the pop in flight returns);
// claims in its hands are settled as before. Setting the role it has does
// nothing.
func (s *Stage) SetStandby(standby bool) {
	s.resume(s.dozer.setStandby(standby, s.cfg.Clock.Now()), false)
}

// Standby reports whether the stage runs as a standby now (SetStandby).
func (s *Stage) Standby() bool { return s.dozer.standby.Load() }

// dozer is a Fed or standby stage's quiet time, its role and its dozing
// workers. A dozing worker holds no goroutine: it leaves its state here
// and returns, and a wake starts it again (resume); worker 0's check is a
// timer on the stage's clock that starts it again for one pop without
// wait. At 10,000 graphs a relay's dozing stages were about half of its
// 20,000 goroutines, each a stack of several kilobytes that never did
// anything between two checks.
type dozer struct {
	mu sync.Mutex
	// last is the stage's last claim or Wake, or its start (every stage
	// starts DozeAfter before it: quiet from the first pop on, so a stage
	// demoted before it claimed anything dozes at once).
	last time.Time
	// standby is the stage's role (SetStandby), written only under mu: a
	// promotion ends every doze under the same lock a worker enters one
	// with, so no worker starts a doze after the promotion that woke the
	// others. Standby reads it without the lock.
	standby atomic.Bool
	// ctx is the stage's run (set by Start) that resumed workers run
	// under; nil before the first Start.
	ctx context.Context
	// out are the dozing workers, waiting to be started again.
	out []*worker
	// check is worker 0's check timer while it dozes (nil otherwise) and
	// gen tells its firing apart from one stopped too late: every wake,
	// every armed check and the end of the run move it on.
	check clock.Timer
	gen   uint64
	// asleep counts the workers dozing now (len(out), for Dozing).
	asleep atomic.Int32
}

// worker is the state of one worker that outlives its dozes: its claim
// request, its random source, its prepared pops and where it stands in
// the spread of first polls and checks.
type worker struct {
	i   int
	req queen.PopRequest
	rnd *rand.Rand
	// pops are the worker's pops (without a long-poll, with one), each
	// prepared once: route, query and URL are the same claim after claim.
	pops [2]*queen.PreparedPop
	// spread is true until the worker's first long-poll, which waits a
	// random time in the second half of PollTimeout (firstPoll) and is
	// sent apart.
	spread bool
	// checked is true while the worker's last pop was a doze's check that
	// found nothing: the doze goes on, and its next check is a whole
	// check period away (checkIn).
	checked bool
	// first: a Fed or standby stage's first pop does not wait (see Start);
	// check: the worker was started again by its check timer, and its next
	// pop is the check (no wait).
	first, check bool
}

// setStandby sets the role and returns the dozing workers a promotion
// woke (the caller resumes them).
func (d *dozer) setStandby(standby bool, now time.Time) []*worker {
	d.mu.Lock()
	defer d.mu.Unlock()
	if was := d.standby.Swap(standby); was == standby || standby {
		return nil // the role it had, or a demotion: nobody to wake
	}
	return d.wakeLocked(now)
}

// wake marks now as the stage's last activity and ends every doze,
// returning the workers to resume.
func (d *dozer) wake(now time.Time) []*worker {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wakeLocked(now)
}

func (d *dozer) wakeLocked(now time.Time) []*worker {
	if now.After(d.last) {
		d.last = now
	}
	if len(d.out) == 0 {
		return nil
	}
	out := d.out
	d.releaseLocked()
	return out
}

// releaseLocked lets every dozing worker go (whoever took them starts
// them again, or nobody) and stops the check.
func (d *dozer) releaseLocked() {
	d.stopCheckLocked()
	d.out = nil
	d.asleep.Store(0)
}

// stopCheckLocked stops worker 0's check timer, if armed; a firing that
// is already under way finds gen moved on and does nothing.
func (d *dozer) stopCheckLocked() {
	d.gen++
	if d.check != nil {
		d.check.Stop()
		d.check = nil
	}
}

// wake ends the stage's dozes as of now and starts the dozing workers
// again.
func (s *Stage) wake() {
	s.resume(s.dozer.wake(s.cfg.Clock.Now()), false)
}

// resume starts the dozing workers ws again under the stage's run; check
// says their next pop is a doze's check. Once the run has ended nothing
// starts.
func (s *Stage) resume(ws []*worker, check bool) {
	if len(ws) == 0 {
		return
	}
	s.dozer.mu.Lock()
	ctx := s.dozer.ctx
	s.dozer.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	for _, w := range ws {
		w.check = check
		s.Go(func() { s.work(ctx, w) })
	}
}

// checkDue is worker 0's check timer: unless a wake came first, the
// worker is started again for one pop without wait.
func (s *Stage) checkDue(gen uint64) {
	d := &s.dozer
	d.mu.Lock()
	if d.gen != gen {
		d.mu.Unlock()
		return
	}
	d.check = nil
	var w *worker
	for i, o := range d.out {
		if o.i == 0 {
			w = o
			d.out = append(d.out[:i], d.out[i+1:]...)
			d.asleep.Add(-1)
			break
		}
	}
	d.mu.Unlock()
	if w != nil {
		s.resume([]*worker{w}, true)
	}
}

// runEnded forgets the dozing workers of the run ctx once it ended: their
// check timer stops, and nothing starts them again.
func (s *Stage) runEnded(ctx context.Context) {
	d := &s.dozer
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx != ctx {
		return
	}
	d.releaseLocked()
}

// New validates cfg and returns a stage ready to Start.
func New(cfg Config) (*Stage, error) {
	if cfg.Client == nil || cfg.Limiter == nil || cfg.Node == nil {
		return nil, errors.New("stage: Client, Limiter and Node are required")
	}
	cfg = cfg.WithDefaults()
	log := cfg.Logger.With("app", cfg.App, "graph", cfg.Graph, "path", cfg.Stage.Path, "node", cfg.Stage.Node, "queue", cfg.Stage.Source, "group", cfg.Stage.Group)
	s := &Stage{cfg: cfg, log: log}
	s.hold = newHold(s)
	s.dozer.standby.Store(cfg.Standby)
	return s, nil
}

// Start spawns the stage's workers; they run until Stop or the end of ctx.
// Starting a running stage does nothing.
func (s *Stage) Start(ctx context.Context) error {
	ctx, ok := s.StartInit(ctx)
	if !ok {
		return nil
	}
	// A Fed or standby stage starts quiet: each worker's first pop takes
	// without a wait what an earlier owner left, then the stage dozes
	// until it is woken (its upstream, a claim, a promotion). Waiting
	// DozeAfter with a parked poll first held a connection per interior
	// stage through every cold start: at 10,000 graphs, 10,000 connections
	// on the broker for their first minute. A primary's ingress stage
	// starts quiet too, though it never dozes as one: demoted before it
	// claims anything (a cold start that saw its fellow replicas late),
	// it dozes as soon as its parked poll returns.
	s.dozer.mu.Lock()
	s.dozer.ctx = ctx
	s.dozer.releaseLocked()
	s.dozer.mu.Unlock()
	s.dozer.wake(s.cfg.Clock.Now().Add(-s.cfg.DozeAfter()))
	context.AfterFunc(ctx, func() { s.runEnded(ctx) })
	n := max(int(s.cfg.Stage.Concurrency), 1)
	req := s.popRequest()
	first := s.cfg.Fed || s.Standby()
	for i := 0; i < n; i++ {
		w := &worker{i: i, req: req, spread: true, first: first,
			rnd: rand.New(rand.NewPCG(uint64(s.cfg.Clock.Now().UnixNano()), uint64(i)))}
		s.Go(func() { s.work(ctx, w) })
	}
	s.hold.start(ctx)
	s.Ready()
	return nil
}

// Status is the stage's counters, last refusal and wedge record.
func (s *Stage) Status() store.StageStatus {
	st := store.StageStatus{
		Path: s.cfg.Stage.Path, Node: s.cfg.Stage.Node, Hop: s.cfg.Stage.Hop,
		Source: s.cfg.Stage.Source, Group: s.cfg.Stage.Group, Counters: s.c.snapshot(),
		Holding: s.hold.len(), Denials: s.denied.snapshot(),
	}
	if r := s.refusal.Load(); r != nil {
		rc := *r
		st.LastRefusal = &rc
	}
	s.wedgeMu.Lock()
	if s.wedge != nil {
		w := *s.wedge
		st.Wedge = &w
	}
	s.wedgeMu.Unlock()
	return st
}

// Counters is the stage's counters now.
func (s *Stage) Counters() store.Counters { return s.c.snapshot() }

// Holding is how many claims the stage holds now (see hold).
func (s *Stage) Holding() int { return s.hold.len() }

// popRequest is the stage's claim: wildcard, one partition, long-poll.
func (s *Stage) popRequest() queen.PopRequest {
	req := queen.PopRequest{
		Queue:         s.cfg.Stage.Source,
		ConsumerGroup: s.cfg.Stage.Group,
		Batch:         max(int(s.cfg.Stage.Batch), 1),
		Wait:          true,
		Timeout:       s.cfg.PollTimeout,
		LeaseSeconds:  int(queen.CeilSeconds(s.cfg.Lease)),
	}
	if s.cfg.Stage.SourceIsInterior {
		req.SubscriptionMode = queen.SubscribeNew
		from := s.cfg.SeedFrom
		if from.Before(time.Unix(0, 0)) {
			from = time.Unix(0, 0)
		}
		req.SubscriptionFrom = queen.FormatTimestamp(from)
	} else {
		req.SubscriptionMode = queen.SubscribeAll
	}
	return req
}

// work runs worker w: a parked long-poll, then the claim's handler, until
// ctx ends. An idle stage is a parked poll, never a loop; an idle Fed or
// standby stage dozes instead (doze): the worker returns, and a wake or
// its check starts it again.
func (s *Stage) work(ctx context.Context, w *worker) {
	sc := &scratch{}
	failing := 0
	for ctx.Err() == nil {
		wait := false
		switch {
		case w.check:
			w.check = false
		case !w.first:
			var left bool
			if wait, left = s.doze(w); left {
				return
			}
		}
		w.req.Wait = wait
		var claim queen.Claim
		var err error
		if wait && w.spread {
			w.spread = false
			first := w.req
			first.Timeout = s.firstPoll(w.rnd)
			claim, err = s.cfg.Client.Pop(ctx, first)
		} else {
			claim, err = s.pop(ctx, &w.pops, w.req)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failing++
			if failing == 1 || failing%30 == 0 {
				s.log.Warn("pop failed; retrying", "error", err, "failures", failing)
			}
			if clock.Sleep(ctx, s.cfg.Clock, min(time.Duration(failing)*200*time.Millisecond, 2*time.Second)) != nil {
				return
			}
			continue
		}
		failing = 0
		// After the first pop the doze's first check is spread like any
		// first check (stages started together must not check together).
		w.checked = !wait && claim.Empty() && !w.first
		w.first = false
		if claim.Empty() {
			continue
		}
		// Items: every dozing worker of the stage pops again, and the stage
		// stays awake (a standby one too) until quiet for DozeAfter.
		s.wake()
		s.handleClaim(ctx, claim, w.rnd, sc)
		s.linger(ctx, w.req.Batch, len(claim.Messages))
	}
}

// pop sends req, prepared on its first use into pops (indexed by
// req.Wait).
func (s *Stage) pop(ctx context.Context, pops *[2]*queen.PreparedPop, req queen.PopRequest) (queen.Claim, error) {
	i := 0
	if req.Wait {
		i = 1
	}
	if pops[i] == nil {
		p, err := s.cfg.Client.PreparePop(req)
		if err != nil {
			return queen.Claim{}, err
		}
		pops[i] = p
	}
	return pops[i].Pop(ctx)
}

// firstPoll is the timeout of a worker's first long-poll: a random time
// in [PollTimeout/2, PollTimeout]; every later one waits the whole
// PollTimeout. A fleet's stages start together (a cold start, a
// hand-over), and polls parked together time out together, then again
// every PollTimeout: at 10,000 graphs the broker answered those empty
// pops in bursts every 30 s. Spread once, they stay spread (each worker
// parks again as soon as its poll ends).
func (s *Stage) firstPoll(rnd *rand.Rand) time.Duration {
	return spreadIn(s.cfg.PollTimeout, rnd)
}

// spreadIn is a random time in [t/2, t].
func spreadIn(t time.Duration, rnd *rand.Rand) time.Duration {
	if t < 2 {
		return t
	}
	return t/2 + time.Duration(rnd.Int64N(int64(t/2)+1))
}

// checkIn is how long a doze waits before its check: the first check of
// a doze comes a random time in the second half of the poll timeout (of
// period, when that is shorter), every later one a whole period
// (DozeCheck) after the last. The first comes soon because a doze often
// begins where something may be waiting unannounced: a stage that just
// started (a restart: what its dead predecessor held comes back when the
// lease lapses) or just went quiet. The spread is because the stages of a
// fleet's graphs start together (a cold start, a hand-over): without it
// their checks came in bursts of thousands at once, each needing a
// connection of its own (at 10,000 graphs a third of an idle relay's CPU
// went to dialling and closing those connections). Later checks are the
// long safety net.
func checkIn(first, period time.Duration, checked bool, rnd *rand.Rand) time.Duration {
	if checked {
		return period
	}
	return spreadIn(min(first, period), rnd)
}

// doze is a Fed or standby stage's worker between pops when the stage is
// quiet: the worker leaves its state with the dozer and returns (left),
// holding no goroutine, until a wake (a Wake, a claim of another worker, a
// promotion) starts it again to long-poll; worker 0 is also started again
// after checkIn, for one pop without wait (its check). A standby's Fed
// stage has no check (Config.Standby says why). Otherwise doze reports
// whether the next pop long-polls: a primary's ingress stage, a stage that
// claimed or was woken within DozeAfter, or one that holds claims never
// dozes. The doze is entered under the lock a wake takes, so no wake is
// missed.
func (s *Stage) doze(w *worker) (wait, left bool) {
	if s.hold.len() > 0 {
		return true, false
	}
	d := &s.dozer
	d.mu.Lock()
	defer d.mu.Unlock()
	standby := d.standby.Load()
	if (!s.cfg.Fed && !standby) || s.cfg.Clock.Now().Sub(d.last) < s.cfg.DozeAfter() {
		return true, false
	}
	d.out = append(d.out, w)
	d.asleep.Add(1)
	if w.i == 0 && !(standby && s.cfg.Fed) {
		d.stopCheckLocked()
		gen := d.gen
		d.check = s.cfg.Clock.AfterFunc(checkIn(s.cfg.PollTimeout, s.cfg.DozeCheck, w.checked, w.rnd), func() { s.checkDue(gen) })
	}
	return false, true
}

// handleClaim runs the per-claim pipeline with the lease renewed in the
// background. A claim the handler passes to the stage's hold keeps its
// renewal (the hold stops it); any other claim's renewal stops when the
// handler returns. A panic abandons the claim (the lease lapses), never
// the stage.
func (s *Stage) handleClaim(ctx context.Context, claim queen.Claim, rnd *rand.Rand, sc *scratch) {
	lease := s.renewLease(ctx, claim.LeaseID)
	held := false
	defer func() {
		r := recover()
		if !held {
			lease.stop()
		}
		if r != nil {
			s.c.released.Add(1)
			s.log.Error("handler failed; the claim is abandoned and comes back after its lease", "panic", r)
		}
	}()
	h := &handler{s: s, ctx: ctx, msgs: claim.Messages, rnd: rnd, sc: sc, lease: lease}
	// The worker's batch storage (counters, items, index) serves this
	// claim, and comes back unless the claim went to the hold.
	h.batch, sc.batch = sc.batch, budget.Batch{}
	h.batch.Reset()
	held = h.run()
	if !held {
		sc.batch = h.batch
	}
}

// renewal keeps one claim's lease renewed until stop. It is a timer, not
// a goroutine: most claims settle long before their first renewal is due,
// and a goroutine (with its context and its timer) per claim was a good
// part of what a one-item claim cost. Each renewal runs on the timer's
// own goroutine and arms the next.
type renewal struct {
	s       *Stage
	ctx     context.Context
	leaseID string
	every   time.Duration

	mu      sync.Mutex
	stopped bool
	timer   clock.Timer
	// cancel ends the renewal call in flight and done is closed when it
	// has returned (both nil between calls).
	cancel context.CancelFunc
	done   chan struct{}
	// lost is set when the broker answered that the lease is no longer
	// live (renewed nothing): the claim cannot be settled any more.
	lost atomic.Bool
}

// renewLease starts renewing leaseID every RenewEvery (a third of a
// shorter lease, at least 100 ms) until the renewal is stopped (the claim
// settled, released or let go); the end of the stage's work does not stop
// it (a held claim's renewal is stopped by the hold). An empty lease id
// (an autoAck claim) renews nothing.
func (s *Stage) renewLease(ctx context.Context, leaseID string) *renewal {
	r := &renewal{s: s, ctx: ctx, leaseID: leaseID}
	if leaseID == "" {
		r.stopped = true
		return r
	}
	r.every = max(min(RenewEvery, s.cfg.Lease/3), 100*time.Millisecond)
	r.mu.Lock()
	r.timer = s.cfg.Clock.AfterFunc(r.every, r.renew)
	r.mu.Unlock()
	return r
}

// gone reports whether the broker said the lease is no longer live (false
// for a nil renewal).
func (r *renewal) gone() bool { return r != nil && r.lost.Load() }

// stop ends the renewal: no renewal starts after it, and one in flight is
// cancelled and waited for. A nil renewal (a handler run without one, in
// tests) does nothing; stopping twice does nothing more.
func (r *renewal) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
	}
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// renew extends the lease once (bounded by the renewal period) and arms
// the next renewal, unless the renewal was stopped meanwhile or the broker
// says the lease is gone.
func (r *renewal) renew() {
	s := r.s
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.every)
	done := make(chan struct{})
	r.cancel, r.done = cancel, done
	r.mu.Unlock()
	ext, err := s.cfg.Client.ExtendLease(ctx, r.leaseID, s.cfg.Lease)
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancel, r.done = nil, nil
	close(done)
	switch {
	case r.stopped:
		return
	case err != nil:
		s.log.Warn("lease renewal failed", "lease", r.leaseID, "error", err)
	case !ext.Success:
		r.lost.Store(true)
		return
	}
	r.timer.Reset(r.every)
}

// linger pauses a worker before its next pop after a claim of fewer than
// a quarter of the batch, so under trickle load items gather into fuller
// claims (fewer broker calls per item). The stage's workers take turns:
// while claims are thin the stage as a whole pops once per Linger, so an
// item waits at most about Linger for a pop however many workers share the
// source, and a trickle spread over many workers still gathers, where each
// worker lingering on its own would pop as often as before. A claim full
// enough ends every wait at once and pops without one. A stage without a
// linger pops at once.
func (s *Stage) linger(ctx context.Context, batch int, claimed int) {
	if s.cfg.Linger <= 0 {
		return
	}
	p := &s.pace
	p.mu.Lock()
	if claimed*4 >= batch {
		// Load is up: every waiting worker pops now, and turns start over.
		if p.full != nil {
			close(p.full)
			p.full = nil
		}
		p.next = time.Time{}
		p.mu.Unlock()
		return
	}
	now := s.cfg.Clock.Now()
	turn := now
	if p.next.After(turn) {
		turn = p.next
	}
	turn = turn.Add(s.cfg.Linger)
	p.next = turn
	if p.full == nil {
		p.full = make(chan struct{})
	}
	full := p.full
	p.mu.Unlock()
	t := s.cfg.Clock.NewTimer(turn.Sub(now))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-full:
	case <-t.C():
	}
}

// pace is the workers' turns after thin claims (see linger).
type pace struct {
	mu sync.Mutex
	// next is the last turn handed out.
	next time.Time
	// full is closed when a worker finds a full enough claim.
	full chan struct{}
}
