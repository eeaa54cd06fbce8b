package stage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
)

// MaxHeld is the most claims one stage holds at once. A held claim costs
// a lease renewal every RenewEvery (the broker has no batch renewal), so
// the cap bounds what a stage blocked on many partitions asks of the
// broker: at most MaxHeld/3 renewals a second, plus one counter read a
// second. A claim refused while the hold is full is released without an
// ack: its lease lapses and it comes back after GATE_LEASE_SECONDS, never
// holding the worker.
const MaxHeld = 16

// hold is a stage's held claims: claims whose head cannot be admitted
// within a second (a scoped key spent for an hour, a long backoff). The
// broker's lease is what keeps every other worker of the group off their
// partition, so the stage keeps that lease renewed while its workers go
// back to popping other partitions, and retries each held claim when its
// window opens. One read of the head counters of every held claim, at
// most every ParkRecheck (sooner when a window is known to open sooner),
// decides which to retry, so a lift (the counters deleted) wakes them
// within about a second and a partition blocked for an hour costs a
// renewal every RenewEvery and a share of one read a second, never a loop
// of claims and releases. A claim is held for at most GATE_MAX_PARK_MS in
// all (the handler's own park included) and then handed back with a
// retry ack, as a parked one is. Nothing held is ever nacked.
type hold struct {
	s *Stage
	// rnd jitters the rechecks at a window's end (ParkSleep).
	rnd *rand.Rand

	mu     sync.Mutex
	claims []*handler
	closed bool
	// ctx is the stage's run (set by start); nil until the stage starts,
	// and then no runner is started (tests drive check themselves).
	ctx context.Context
	// running is true while a runner goroutine rechecks the claims. A
	// hold runs one only while it keeps claims: an idle stage holds no
	// goroutine for its hold.
	running bool
	// last is the instant of the last recheck.
	last time.Time
	// readFailing counts failed rechecks in a row (logged once a streak).
	readFailing int
	// count is len(claims), for Status without the lock.
	count atomic.Int64
}

func newHold(s *Stage) *hold {
	seed := uint64(s.cfg.Clock.Now().UnixNano())
	return &hold{s: s, rnd: rand.New(rand.NewPCG(seed, seed^0x5bd1e995))}
}

// start makes adds start a runner under ctx (the stage's run).
func (hd *hold) start(ctx context.Context) {
	hd.mu.Lock()
	hd.ctx, hd.closed = ctx, false
	hd.mu.Unlock()
}

// add takes h into the hold, reporting false when the hold is full or
// closed (the caller releases the claim). The handler gets buffers of its
// own: the worker's are reused for its next claim.
func (hd *hold) add(h *handler, opens time.Time) bool {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.closed || len(hd.claims) >= MaxHeld || (hd.ctx != nil && hd.ctx.Err() != nil) {
		return false
	}
	if hd.ctx != nil && !hd.running {
		ctx := hd.ctx
		if !hd.s.Go(func() { hd.run(ctx) }) {
			return false
		}
		hd.running = true
	}
	h.held, h.opens = true, opens
	h.window = slices.Clone(h.window)
	h.sc, h.rnd = nil, nil
	hd.s.c.held.Add(1)
	hd.claims = append(hd.claims, h)
	hd.count.Store(int64(len(hd.claims)))
	return true
}

// remove drops h from the hold and stops its lease renewal.
func (hd *hold) remove(h *handler) {
	hd.mu.Lock()
	if i := slices.Index(hd.claims, h); i >= 0 {
		hd.claims = slices.Delete(hd.claims, i, i+1)
	}
	hd.count.Store(int64(len(hd.claims)))
	hd.mu.Unlock()
	h.held = false
	h.lease.stop()
}

// snapshot is the held claims, oldest first.
func (hd *hold) snapshot() []*handler {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return slices.Clone(hd.claims)
}

// len is how many claims are held now.
func (hd *hold) len() int { return int(hd.count.Load()) }

// run rechecks the held claims until the hold is empty (the next add
// starts a runner again) or ctx ends, when it lets go of every claim still
// held (its lease lapses; nothing is acked or nacked).
func (hd *hold) run(ctx context.Context) {
	for {
		hd.mu.Lock()
		if len(hd.claims) == 0 && ctx.Err() == nil {
			hd.running = false
			hd.mu.Unlock()
			return
		}
		hd.mu.Unlock()
		if clock.Sleep(ctx, hd.s.cfg.Clock, hd.next(hd.s.cfg.Clock.Now())) != nil {
			hd.close()
			return
		}
		hd.check(ctx)
	}
}

// next is how long until the next recheck: ParkRecheck after the last one,
// sooner when a held claim's window is known to open sooner (a few
// milliseconds after its end, jittered so the holds of several replicas do
// not all read at the same instant) or its park budget ends sooner; never
// less than budget.MinParkSleep.
func (hd *hold) next(now time.Time) time.Duration {
	due := hd.last.Add(ParkRecheck)
	if hd.last.IsZero() || due.Before(now) {
		due = now.Add(ParkRecheck)
	}
	for _, h := range hd.snapshot() {
		if !h.opens.IsZero() {
			if at := h.opens.Add(holdJitter(hd.rnd)); at.Before(due) {
				due = at
			}
		}
		if end := h.since.Add(hd.s.cfg.MaxPark); end.Before(due) {
			due = end
		}
	}
	return max(due.Sub(now), budget.MinParkSleep)
}

// check is one recheck: claims whose lease was lost are dropped, claims
// held for the whole park budget are handed back, and one read of every
// other claim's head counters decides which to retry (oldest first).
func (hd *hold) check(ctx context.Context) {
	s := hd.s
	now := s.cfg.Clock.Now()
	hd.last = now
	claims := hd.snapshot()
	var keys []string
	waiting := claims[:0:0]
	for _, h := range claims {
		switch {
		case h.lease.gone():
			hd.remove(h)
			s.c.released.Add(1)
			s.log.Warn("a held claim lost its lease (the broker no longer knows it); letting it go, it comes back to whichever worker claims it next", "partition", h.msgs[0].Partition)
		case now.Sub(h.since) >= s.cfg.MaxPark:
			hd.remove(h)
			h.release()
		default:
			waiting = append(waiting, h)
			keys = h.batch.ItemKeys(0, keys)
		}
	}
	if len(waiting) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, callTimeout)
	live, err := s.cfg.Limiter.ReadKeys(rctx, keys)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			hd.readFailing++
			if hd.readFailing == 1 || hd.readFailing%60 == 0 {
				s.log.Warn("reading the counters of the held claims failed; they stay held and are read again within a second", "error", err, "held", len(waiting), "failures", hd.readFailing)
			}
		}
		return
	}
	hd.readFailing = 0
	for _, h := range waiting {
		if ctx.Err() != nil {
			return
		}
		// A limit per key changed while the claim was held (raised at
		// runtime) is judged now, not when the window it waits for ends.
		h.followKeys()
		fits, opens := h.batch.Opens(0, live, now)
		if !fits {
			h.opens = opens
			continue
		}
		hd.retry(h)
	}
}

// retry runs a held claim's admission again. A claim that settles or is
// released leaves the hold; one refused again stays (its window end
// updated by the refusal). A panic abandons the claim (its lease lapses),
// never the stage.
func (hd *hold) retry(h *handler) {
	s := hd.s
	defer func() {
		if r := recover(); r != nil {
			hd.remove(h)
			s.c.released.Add(1)
			s.log.Error("retrying a held claim failed; the claim is abandoned and comes back after its lease", "panic", fmt.Sprint(r))
		}
	}()
	h.keep = false
	_ = h.admit() // a held claim is never passed to the hold again
	if !h.keep {
		hd.remove(h)
	}
}

// close lets go of every claim still held: its renewal stops and its lease
// lapses (a stopping stage acks nothing it did not settle).
func (hd *hold) close() {
	hd.mu.Lock()
	hd.closed = true
	claims := hd.claims
	hd.claims = nil
	hd.count.Store(0)
	hd.mu.Unlock()
	for _, h := range claims {
		h.held = false
		h.lease.stop()
		hd.s.c.released.Add(1)
	}
}

// holdJitter is how long after a held claim's window end the hold reads:
// uniform in [5 ms, 25 ms). A hold is one reader per stage, so the spread
// a parked handler needs (up to 200 ms, budget.ParkSleep) would only delay
// the window: every millisecond after its end is one the counter stands
// idle.
func holdJitter(rnd *rand.Rand) time.Duration {
	return 5*time.Millisecond + time.Duration(rnd.Int64N(20))*time.Millisecond
}
