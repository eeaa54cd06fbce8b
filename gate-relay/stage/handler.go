package stage

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// kind classifies a claimed message.
type kind uint8

const (
	work kind = iota
	foreign
	poison
)

// entry is one message of the window.
type entry struct {
	msg  *queen.Message
	kind kind
	cost int64
	// item is the index in the batch (work entries only), else -1.
	item int
	err  error
}

// handler runs one claim.
type handler struct {
	s    *Stage
	ctx  context.Context
	msgs []queen.Message
	rnd  *rand.Rand

	window []entry
	batch  budget.Batch
	park   budget.Parking
	// sc is the worker's reusable settle buffers (see buffers).
	sc *scratch
	// lease renews the claim's lease (nil for a handler run alone in a
	// test).
	lease *renewal
	// since is when the claim was first refused: the park budget
	// (GATE_MAX_PARK_MS) counts from it, in the handler and in the hold.
	since time.Time
	// held is set while the stage's hold keeps the claim; keep is set by a
	// retry from the hold that was refused again (the hold keeps it), and
	// opens is the head's window end as the last refusal or read saw it.
	held, keep bool
	opens      time.Time
	// paid is the separate-path charge the settle being built forwards
	// (nil riding); ends, row and winBuf are the charge records' windows,
	// claim row id and scratch (charges.go).
	paid   *budget.Charge
	ends   []int64
	row    string
	winBuf []int64
}

// buffers returns the worker's settle buffers, minting them for a handler
// made without (tests).
func (h *handler) buffers() *scratch {
	if h.sc == nil {
		h.sc = &scratch{}
	}
	return h.sc
}

// scratch is one worker's settle buffers, reused claim after claim (and
// attempt after attempt within one): a worker settles one transaction at a
// time and nothing keeps a transaction, its pushes or its payloads once
// Transact has returned (the client encodes the bundle into a body of its
// own before sending).
type scratch struct {
	window []entry
	t      queen.Transaction
	stamps []Stamp
	pushes []queen.PushItem
	arena  []byte
	ids    []byte
	// charges is one item's encoded charge records.
	charges []byte
	// batch is the storage of the last claim's budget.Batch, given back by
	// handleClaim when the claim did not go to the hold (a held claim
	// keeps its own) and taken by the next claim's handler.
	batch budget.Batch
}

// call returns a context for one kv call or transaction: detached from the
// stop signal (a claim in flight finishes its call) but bounded. A client
// that bounds every call at callTimeout or less is bound enough (its
// deadline ends the call first): the context then carries no timer of its
// own, one fewer per call.
func (h *handler) call() (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(h.ctx)
	if d := h.s.cfg.Client.CallTimeout(); d > 0 && d <= callTimeout {
		return ctx, noCancel
	}
	return context.WithTimeout(ctx, callTimeout)
}

func noCancel() {}

// run handles the claim: it returns once the claim was settled, released
// or passed to the stage's hold (held: the worker must not touch h again,
// the hold owns it and its lease renewal from then on).
func (h *handler) run() (held bool) {
	s := h.s
	s.c.popped.Add(int64(len(h.msgs)))
	if len(h.msgs) == 0 {
		return false
	}
	h.classify()
	h.buildBatch()
	if h.window[0].kind == poison {
		h.nackHead()
		return false
	}
	// Everything before the first poison item flows; the poison item is the
	// next claim's head and is nacked alone.
	kept := 0
	for i := range h.window {
		if h.window[i].kind == poison {
			h.window = h.window[:i]
			h.batch.Items = h.batch.Items[:kept]
			break
		}
		if h.window[i].kind == work {
			kept++
		}
	}
	h.park = budget.Parking{MaxPark: s.cfg.MaxPark}
	return h.admit()
}

// classify sorts each message into work, foreign or poison, in order.
func (h *handler) classify() {
	st := &h.s.cfg.Stage
	rule := h.s.cfg.Node.Cost
	sc := h.buffers()
	h.window = slices.Grow(sc.window[:0], len(h.msgs))[:len(h.msgs)]
	sc.window = h.window
	for i := range h.msgs {
		m := &h.msgs[i]
		e := entry{msg: m, item: -1}
		if st.ChecksForeign {
			p, ok := stampedPath(m.Data)
			owned := (ok && p == st.Path) || (!ok && st.OwnsUnstamped)
			if !owned {
				e.kind = foreign
				h.window[i] = e
				continue
			}
		}
		c, err := rule.Of(m.Data)
		if err != nil {
			e.kind, e.err = poison, err
		} else {
			e.cost = c
		}
		h.window[i] = e
	}
}

// buildBatch computes, per work item, the counters it touches.
//
// An item whose scope value makes a kv key longer than the broker takes is
// poison: the broker would refuse its charge forever (413
// kv_key_too_large), so it must not hold up the items around it.
func (h *handler) buildBatch() {
	n := h.s.cfg.Node
	path := h.s.cfg.Stage.Path
	var touched []int
	h.batch.Items = slices.Grow(h.batch.Items[:0], len(h.window))
items:
	for i := range h.window {
		e := &h.window[i]
		if e.kind != work {
			continue
		}
		touched = touched[:0]
		var op string
		opRead := false
		for bi := range n.Budgets {
			b := &n.Budgets[bi]
			if b.WhenOp != nil {
				if !opRead {
					op, opRead = cost.Op(e.msg.Data), true
				}
				if !cost.MatchOp(b.WhenOp, op) {
					continue
				}
			}
			key, ceiling := b.Key, b.Ceiling(path)
			if b.ScopeBy != "" {
				v, ok := cost.Scope(e.msg.Data, b.ScopeBy)
				if !ok {
					continue
				}
				key = plan.ScopedKey(b.Key, v)
				if len(key) > queen.MaxKVKeyBytes {
					e.kind = poison
					e.err = fmt.Errorf("budget '%s' scopes by '%s': its value (%d bytes) makes the kv key %d bytes, over the broker's %d; shorten the value to at most %d bytes", b.ID, b.ScopeBy, len(v), len(key), queen.MaxKVKeyBytes, queen.MaxKVKeyBytes-(len(key)-len(v)))
					continue items
				}
				if count, declared := b.KeyCount(v); declared {
					ceiling = n.KeyCeiling(b, path, count)
				}
			}
			// The plan's ceiling (a document's per-key count for a scoped
			// value); followMeters lowers a mirrored budget's and followKeys
			// sets a runtime key limit's before each attempt.
			k := h.batch.Counter(key, ceiling, b.WindowSubSeconds, b.ID)
			h.batch.Counters[k].Widest = max(h.batch.Counters[k].Widest, b.WidestCeiling())
			touched = append(touched, k)
		}
		e.item = len(h.batch.Items)
		h.batch.Add(e.cost, touched)
	}
}

// followMeters lowers (or restores, never above the plan) the Max of each
// counter of a budget that mirrors a vendor meter to what the vendor last
// stated, before every attempt: a claim that waited for a window (parked
// or held) charges the ceiling of the window it is admitted in, not the
// one it was popped in.
func (h *handler) followMeters() {
	n := h.s.cfg.Node
	if !n.Mirrors() || h.s.cfg.Limiter == nil {
		return
	}
	path := h.s.cfg.Stage.Path
	ctx, cancel := h.call()
	defer cancel()
	for i := range n.Budgets {
		b := &n.Budgets[i]
		if b.VendorMeter == nil {
			continue
		}
		c := h.s.cfg.Limiter.Ceiling(ctx, b, path)
		for k := range h.batch.Counters {
			if h.batch.Counters[k].Key == b.Key {
				h.batch.Counters[k].Max = c
			}
		}
	}
}

// followKeys sets the ceiling of every scoped counter of the window to its
// scope value's own (libs/budget KeyCeilings: a runtime key limit row,
// else the document's keys, else the budget's) before every attempt, so a
// limit changed while the claim waited applies to the window it is
// admitted in. A failed read keeps the counts last known (the document's
// when none was read) and is logged as a warning on the first failure and
// every thousandth after it, so a broker that cannot serve key limit rows
// is seen without a line per attempt.
func (h *handler) followKeys() {
	n := h.s.cfg.Node
	if h.s.cfg.Limiter == nil || h.s.cfg.Limiter.Keys == nil || !n.Scoped() {
		return
	}
	ctx, cancel := h.call()
	defer cancel()
	if err := h.s.cfg.Limiter.KeyCeilings(ctx, n, h.s.cfg.Stage.Path, &h.batch); err != nil {
		if n := h.s.keyReadFailures.Add(1); n == 1 || n%1000 == 0 {
			h.s.log.Warn("reading key limits failed; the counts last known apply to this attempt", "error", err, "failures", n)
		}
	}
}

// admit runs the admission loop of libs/budget (AdmitRound: the window,
// then the prefix that fits, at most budget.PrefixAttempts times) and
// waits as budget.Decide says (park, hold or release) between rounds. A
// rider refusal applied nothing; a separate-call refusal is refunded
// before the prefix is tried. held reports that the claim was passed to
// the stage's hold.
func (h *handler) admit() (held bool) {
	s := h.s
	items := len(h.batch.Items)
	if !h.batch.Charges() {
		h.settle(items, nil)
		return false
	}
	want := items
	for {
		r := budget.AdmitRound(&h.batch, want, h.tryN, h.recordRefusal)
		if r.Prefixed {
			s.c.deferred.Add(1)
		}
		if r.Err != nil {
			// The broker will never take this claim: narrow to the head,
			// and nack a head that fails alone (DLQ after the retry limit)
			// so the rest of the partition flows.
			if r.N > 1 {
				want = 1
				continue
			}
			h.poisonHead(r.Err)
			return false
		}
		if !r.Waits() {
			return false
		}
		if !r.Prefixed && h.settleEnd(0) > 0 {
			// Nothing fits, but the claim starts with items that are not
			// this stage's work: settle those.
			h.settle(0, nil)
			return false
		}
		retry, held := h.wait(r.Refused)
		if !retry {
			return held
		}
		want = items
	}
}

// tryN is try as a budget.Try: the refused charge, nil when the window
// ended, or the permanent error.
func (h *handler) tryN(n int) (*budget.Charge, error) {
	ch, err, done := h.try(n)
	if err != nil {
		return nil, err
	}
	if done {
		return nil, nil
	}
	return ch, nil
}

// try admits the first n items: on the rider path one transaction charges
// and settles them together; otherwise a kv call charges them and the
// settle follows. It returns the refused charge (nothing of it applied or
// left applied) with done false, done true when the claim was settled or
// released, or a permanent error when the broker refused the request
// itself in a way no retry changes (nothing applied).
func (h *handler) try(n int) (_ *budget.Charge, permanentErr error, done bool) {
	s := h.s
	h.followMeters()
	h.followKeys()
	if s.cfg.Admission.Riders() {
		h.paid = nil
		t, end, fwd, foreignN, costSum := h.transaction(n)
		if ch, ok := s.cfg.Limiter.Riders(t, &h.batch, n); ok {
			res, err := h.transact(t)
			switch {
			case err == nil && res.Success:
				h.checkRiders(ch, &res)
				h.committed(end, fwd, foreignN, costSum, ch)
				return nil, nil, true
			case err == nil && s.cfg.Limiter.Refused(&h.batch, ch, res.Refusal):
				if !ch.Decided(&h.batch) && !h.read(ch) {
					return nil, nil, true
				}
				return ch, nil, false
			case err == nil && res.Refusal != nil && res.Refusal.Duplicate():
				s.c.duplicates.Add(1)
				s.log.Warn("settle rolled back by a duplicate transaction id; recovering by halving", "partition", h.msgs[0].Partition, "error", res.Refusal)
				h.recoverDuplicate(n, nil, true)
				return nil, nil, true
			case err == nil && permanent(res.Refusal):
				return nil, res.Refusal, false
			case err == nil:
				h.failed(end, res.Refusal)
				s.c.released.Add(1)
				return nil, nil, true
			case permanent(err):
				return nil, err, false
			case kvDisabled(err):
				s.cfg.Admission.Off("the broker refused the kv riders: " + err.Error())
				return h.try(n)
			default:
				h.lost(end, err, false)
				return nil, nil, true
			}
		}
	}
	ch, err := h.charge(n)
	if err != nil {
		if permanent(err) {
			return nil, err, false
		}
		return nil, nil, true
	}
	if ch.OK() {
		h.settle(n, ch)
		return nil, nil, true
	}
	h.refund(ch, 0)
	return ch, nil, false
}

// checkRiders verifies a committed rider settle's slots. A commit that did
// not apply its riders forwarded uncharged items: they are charged now
// without a ceiling (the counter must say what was forwarded) and the
// relay switches to the separate path.
func (h *handler) checkRiders(ch *budget.Charge, res *queen.TxnResult) {
	s := h.s
	err := s.cfg.Limiter.Committed(&h.batch, ch, res)
	if err == nil {
		return
	}
	s.cfg.Admission.Off(err.Error())
	ctx, cancel := h.call()
	defer cancel()
	if berr := s.cfg.Limiter.Backfill(ctx, &h.batch, ch); berr != nil {
		s.c.leaked.Add(1)
		s.log.Error("a settle committed without its riders and charging it afterwards failed; the counter under-counts this claim", "error", berr, "partition", h.msgs[0].Partition)
		return
	}
	for i, d := range ch.Delta {
		if d > 0 {
			ch.Applied[i] = true
		}
	}
}

// read fills a rider refusal's counter state with one getMany; a failed
// read releases the claim.
func (h *handler) read(ch *budget.Charge) bool {
	ctx, cancel := h.call()
	defer cancel()
	if err := h.s.cfg.Limiter.Read(ctx, &h.batch, ch); err != nil {
		h.s.c.released.Add(1)
		h.s.log.Warn("reading the refused counters failed; releasing the claim (the lease redelivers it)", "error", err, "partition", h.msgs[0].Partition)
		return false
	}
	return true
}

// kvDisabled reports the broker's KV kill switch (403/503 kv_disabled).
func kvDisabled(err error) bool {
	return queen.ReasonOf(err) == "kv_disabled" || queen.CodeOf(err) == "kv_disabled"
}

// definite reports whether a failed call is known to have applied nothing:
// a rollback verdict, or a 4xx refusal of the request. A transport failure,
// a cut answer, a 5xx or a timeout may have committed.
func definite(err error) bool {
	var r *queen.Refusal
	if errors.As(err, &r) {
		return true
	}
	st := queen.StatusOf(err)
	return st >= 400 && st < 500
}

// lost handles a settle whose call failed. A definite failure applied
// nothing: the separate path's charge is refunded. An ambiguous one (the
// answer was cut, the call timed out) may have committed: the charge is
// kept (an over-count of at most one sub-window, never an under-count) and
// counted, and the redelivery and the broker's dedup sort out the items.
// Either way the claim is released.
func (h *handler) lost(end int, err error, refund bool) (refunded bool) {
	s := h.s
	h.failed(end, err)
	s.c.released.Add(1)
	if !definite(err) {
		s.c.ambiguous.Add(1)
		s.log.Warn("the settle's outcome is unknown; its charge is kept, never refunded", "partition", h.msgs[0].Partition, "error", err)
		return false
	}
	return refund
}

// charge charges the first n items with the separate kv call; a failed
// call releases the claim, unless it failed for good (the caller narrows).
func (h *handler) charge(n int) (*budget.Charge, error) {
	ctx, cancel := h.call()
	defer cancel()
	ch, err := h.s.cfg.Limiter.Charge(ctx, &h.batch, n)
	if err != nil {
		if permanent(err) {
			return nil, err
		}
		h.s.c.released.Add(1)
		h.s.c.leaked.Add(1)
		h.s.log.Warn("budget call failed; releasing the claim (the lease redelivers it)", "error", err, "partition", h.msgs[0].Partition)
		return nil, err
	}
	return ch, nil
}

// permanent reports a refusal no retry changes and that applied nothing:
// the request itself was refused (400, 413, 422: a key too long, a payload
// too large, a malformed op), or a rollback for the same reasons.
func permanent(err error) bool {
	var r *queen.Refusal
	if errors.As(err, &r) {
		return r.Reason == queen.ReasonPayloadTooLarge || r.Reason == queen.ReasonBadRequest
	}
	switch queen.StatusOf(err) {
	case 400, 413, 422:
		return !kvDisabled(err)
	}
	return false
}

// poisonHead nacks the claim's head because the broker refused it alone
// for good (err); a head that is not a work item is released instead.
func (h *handler) poisonHead(err error) {
	if h.window[0].kind != work {
		h.s.c.released.Add(1)
		h.s.log.Warn("the broker refuses this claim for good and its head is not a work item; releasing", "error", err, "partition", h.msgs[0].Partition)
		return
	}
	h.window[0].err = err
	h.nackHead()
}

// refund gives back items [from, N) of a separate-call charge (a rider
// charge never needs one).
func (h *handler) refund(ch *budget.Charge, from int) {
	if ch.Riding() {
		return
	}
	refunds, unknown := ch.Refunds(&h.batch, from)
	if unknown > 0 {
		h.s.log.Warn("applied charges with no reported value cannot be refunded", "counters", unknown)
	}
	if len(refunds) == 0 {
		return
	}
	ctx, cancel := h.call()
	defer cancel()
	rep, err := h.s.cfg.Limiter.Refund(ctx, refunds)
	if err != nil {
		h.s.log.Warn("refund call failed; the counters over-count until their window ends", "error", err)
		return
	}
	if rep.Refused > 0 {
		h.s.log.Warn("refund refused (the counter moved on); over-count of at most one sub-window", "refused", rep.Refused)
	}
}

// recordRefusal notes the first refused counter's budget as the stage's
// last refusal, counts the denial by budget and reason (why the counter
// refused: the ceiling, the path's share, a backoff) and traces it in the
// denial ring.
func (h *handler) recordRefusal(ch *budget.Charge) {
	refused := ch.Refused()
	if len(refused) == 0 {
		return
	}
	s := h.s
	at := s.cfg.Clock.Now()
	now := at.UnixMilli()
	id := h.batch.Counters[refused[0]].BudgetID
	s.refusal.Store(&store.Refusal{Budget: id, At: now})
	s.denied.add(id, h.batch.Reason(ch, refused[0], at))
	if s.cfg.Denials != nil {
		s.cfg.Denials.Add(store.Denial{At: now, Application: s.cfg.App, Graph: s.cfg.Graph, Node: s.cfg.Stage.Node,
			Path: s.cfg.Stage.Path, Op: "", Outcome: "denied", BudgetID: id})
	}
}

// wait decides what a refused claim does, true to retry now (gate-runtime
// §2.7, and the stage's hold). A window that turns within ParkRecheck of
// the handler's parking in all is waited out on the claim (the common
// case: the sub-window is full and opens within a second). A longer wait
// (a scoped key spent for an hour, a backoff) must not hold the stage's
// worker: the claim goes to the stage's hold, which keeps its lease
// renewed and retries it when its window opens, while the worker pops
// other partitions; when the hold is full the claim is let go (its lease
// lapses). A claim refused for the whole park budget, in the handler and
// the hold together, is handed back with a retry ack. Zero MaxPark never
// waits: the claim is released at once. Nothing waiting is ever nacked.
// retry says to try the claim again now; held that it went to the hold
// (the caller must not touch h again).
func (h *handler) wait(ch *budget.Charge) (retry, held bool) {
	s := h.s
	now := s.cfg.Clock.Now()
	if h.since.IsZero() {
		h.since = now
	}
	waited := now.Sub(h.since)
	d := budget.Decide(ch, now, budget.Waiting{MaxPark: s.cfg.MaxPark, Recheck: ParkRecheck, Waited: waited, Parked: h.park.Total, Held: h.held})
	switch d.Verdict {
	case budget.Release:
		s.c.released.Add(1)
		return false, false
	case budget.HandBack:
		h.release()
		return false, false
	case budget.Requeue:
		h.keep = true
		h.opens = d.Opens
		return false, false
	case budget.Park:
		// One park sleep is at most ParkRecheck: a claim refused just after
		// a window opened (its wait close to the sub-window) wakes at its
		// end, the jitter cut off, instead of up to 200 ms into the next
		// one with nothing admitted meanwhile.
		sleep := max(budget.ParkSleep(d.Wait, h.rnd), budget.MinParkSleep)
		sleep = min(sleep, ParkRecheck, s.cfg.MaxPark-waited)
		s.c.parked.Add(1)
		if clock.Sleep(h.ctx, s.cfg.Clock, sleep) != nil {
			s.c.released.Add(1)
			return false, false
		}
		h.park.Spent(sleep)
		return true, false
	}
	partition := h.msgs[0].Partition
	if s.hold.add(h, d.Opens) {
		return false, true
	}
	s.c.released.Add(1)
	s.heldFull.Add(1)
	if n := s.heldFull.Load(); n == 1 || n%100 == 0 {
		s.log.Warn("the stage holds as many claims as it may; a refused claim is let go and comes back after its lease", "held", MaxHeld, "partition", partition, "letGo", n)
	}
	return false, false
}

// release hands a claim refused for the whole park budget back with a
// retry ack of its head: it comes back at once, no retry budget charged,
// to whichever worker claims it next. Never a nack for pacing.
func (h *handler) release() {
	s := h.s
	s.c.released.Add(1)
	s.log.Info("held the claim for the whole park budget and the window still does not fit; handing it back", "parkedMs", s.cfg.Clock.Since(h.since).Milliseconds(), "partition", h.msgs[0].Partition)
	t := &queen.Transaction{}
	t.Ack(h.msgs[0].AckItem(queen.AckRetry, ""))
	if err := h.commit(t); err != nil {
		s.log.Warn("handing the claim back failed; it comes back after its lease", "error", err, "partition", h.msgs[0].Partition)
	}
}

// settleEnd is the length of the settled prefix for admitted work items:
// everything before the (admitted+1)-th work item.
func (h *handler) settleEnd(admitted int) int {
	seen := 0
	for i := range h.window {
		if h.window[i].kind == work {
			if seen == admitted {
				return i
			}
			seen++
		}
	}
	return len(h.window)
}

// transaction builds the settle of admitted work items: acks of the
// settled prefix and one push per destination of each admitted item.
func (h *handler) transaction(admitted int) (t *queen.Transaction, end, fwd, foreignN int, costSum int64) {
	s := h.s
	end = h.settleEnd(admitted)
	dests := s.cfg.Stage.Destinations
	sc := h.buffers()
	t = &sc.t
	t.Reset()
	// The settle reads only the verdict and its rider slots.
	t.Lean = true
	t.Operations = slices.Grow(t.Operations, end+2)
	now := s.cfg.Clock.Now().UnixMilli()
	pushes := slices.Grow(sc.pushes[:0], min(admitted, end)*len(dests))
	stamps := sc.stamps[:0]
	size := 0
	signed := h.s.cfg.Signer != nil
	own := h.records()
	h.ends = h.ends[:0]
	if own {
		h.prepareWindows(h.paid)
	}
	for _, d := range dests {
		st := Stamp{Graph: s.cfg.Graph, Path: s.cfg.Stage.Path, Hop: s.cfg.Stage.Hop + 1, Node: d.Node, At: now}
		st.prepare()
		stamps = append(stamps, st)
		size += st.overhead()
		if own {
			// the records: this hop's, with a window per counter, and
			// the signature
			size += len(s.cfg.Stage.Node) + 96 + 16*len(h.batch.Counters)
		}
	}
	// Every stamped payload is a capped slice of one arena, and every
	// derived id a substring of one string: the ids are derived in this
	// first pass, so that they become a string before the pushes take it.
	arenaSize := 0
	idBuf := sc.ids[:0]
	for i := 0; i < end; i++ {
		e := &h.window[i]
		if e.kind != work {
			continue
		}
		arenaSize += len(dests)*len(e.msg.Data) + size
		for di := range dests {
			if dests[di].DerivesTransactionID {
				idBuf = plan.AppendDerivedTransactionID(idBuf, e.msg.TransactionID, dests[di].Label)
			}
		}
	}
	arena := slices.Grow(sc.arena[:0], arenaSize)
	ids := string(idBuf)
	h.ackPrefix(t, end)
	for i := 0; i < end; i++ {
		e := &h.window[i]
		if e.kind != work {
			foreignN++
			continue
		}
		fwd++
		costSum += e.cost
		for di := range dests {
			d := &dests[di]
			txn := e.msg.TransactionID
			if d.DerivesTransactionID {
				txn, ids = ids[:plan.TransactionIDLen], ids[plan.TransactionIDLen:]
			}
			payload := []byte(e.msg.Data)
			from := len(arena)
			if signed && di == 0 {
				sc.charges = h.appendRecords(sc.charges[:0], e, now, own)
			}
			if signed && len(sc.charges) > 0 {
				if out, ok := stamps[di].appendCharged(arena, e.msg.Data, sc.charges, h.s.cfg.Signer, s.cfg.App, txn); ok {
					arena = out
					payload = arena[from:len(arena):len(arena)]
				}
			} else if out, ok := stamps[di].appendClaimed(arena, e.msg.Data); ok {
				arena = out
				payload = arena[from:len(arena):len(arena)]
			}
			pushes = append(pushes, queen.PushItem{Queue: d.Queue, Partition: e.msg.Partition, Payload: payload, TransactionID: txn, PayloadValid: true})
		}
	}
	if len(pushes) > 0 {
		t.Push(pushes...)
	}
	sc.stamps, sc.pushes, sc.arena, sc.ids = stamps, pushes, arena, idBuf
	h.handBack(t, end)
	return t, end, fwd, foreignN, costSum
}

// ackPrefix acks the settled prefix msgs[:end] the way the broker counts
// acks, cumulatively (queen-wire §5.3; conformance
// TestSemantic11_InATransactionTheAckOfTheLastMessageSettlesEveryOneBeforeIt):
// a completed ack of the last settled message of a partition settles every
// earlier one of that partition in the claim, so a settle carries one ack
// per partition, not one per message. Foreign messages in the prefix are
// settled with it, as their own acks did.
func (h *handler) ackPrefix(t *queen.Transaction, end int) {
	var stack [4]int
	last := stack[:0] // the index of each partition's last settled message, highest first
	for i := end - 1; i >= 0; i-- {
		seen := false
		for _, j := range last {
			if h.msgs[j].PartitionID == h.msgs[i].PartitionID {
				seen = true
				break
			}
		}
		if !seen {
			last = append(last, i)
		}
	}
	for k := len(last) - 1; k >= 0; k-- {
		t.Ack(h.msgs[last[k]].AckItem(queen.AckCompleted, ""))
	}
}

// handBack adds to a settle of the first end messages a `retry` ack of the
// first unsettled one, when the settle covers less than the claim. The
// broker then stops the cursor just before it, releases the lease and
// redelivers the tail at once, without charging the retry budget; without
// it the tail would sit leased until the lease lapses (a settled claim's
// lease cannot carry a second transaction). A settle of nothing hands
// nothing back: waiting is park or release.
func (h *handler) handBack(t *queen.Transaction, end int) {
	if end <= 0 || end >= len(h.msgs) {
		return
	}
	t.Ack(h.msgs[end].AckItem(queen.AckRetry, ""))
}

// transact sends one transaction.
func (h *handler) transact(t *queen.Transaction) (queen.TxnResult, error) {
	ctx, cancel := h.call()
	defer cancel()
	return h.s.cfg.Client.Transact(ctx, t)
}

// commit sends one transaction; a rollback is its *queen.Refusal.
func (h *handler) commit(t *queen.Transaction) error {
	res, err := h.transact(t)
	if err != nil {
		return err
	}
	return res.Err()
}

// isDuplicate reports a QDUP rollback (the client's typed refusal).
func isDuplicate(err error) bool {
	var r *queen.Refusal
	return errors.As(err, &r) && r.Duplicate()
}

// isAckRejection reports a rejected ack (the client's typed refusal).
func isAckRejection(err error) bool {
	var r *queen.Refusal
	return errors.As(err, &r) && r.AckRejected()
}

// settle commits admitted work items (and the foreign messages among
// them) in one transaction; ch is the charge that paid for them (nil when
// nothing was charged).
func (h *handler) settle(admitted int, ch *budget.Charge) {
	s := h.s
	h.paid = ch
	t, end, fwd, foreignN, costSum := h.transaction(admitted)
	if end == 0 {
		return
	}
	err := h.commit(t)
	switch {
	case err == nil:
		h.committed(end, fwd, foreignN, costSum, ch)
	case isDuplicate(err):
		s.c.duplicates.Add(1)
		s.log.Warn("settle rolled back by a duplicate transaction id; recovering by halving", "partition", h.msgs[0].Partition, "error", err)
		h.recoverDuplicate(admitted, ch, false)
	default:
		if h.lost(end, err, ch != nil) {
			h.refund(ch, 0)
		}
	}
}

// committed counts a committed settle and tells the observer.
func (h *handler) committed(end, fwd, foreignN int, costSum int64, ch *budget.Charge) {
	s := h.s
	s.c.forwarded.Add(int64(fwd))
	s.c.admitted.Add(int64(fwd))
	s.c.foreign.Add(int64(foreignN))
	s.c.commits.Add(1)
	s.c.cost.Add(costSum)
	s.wedgeMu.Lock()
	s.wedge = nil
	s.wedgeMu.Unlock()
	if fwd > 0 {
		for _, next := range s.feeds {
			next.Wake()
		}
	}
	h.correct(ch)
	if s.cfg.Observer != nil && fwd > 0 {
		ev := Settled{App: s.cfg.App, Graph: s.cfg.Graph, Path: s.cfg.Stage.Path, Node: s.cfg.Stage.Node,
			Partition: h.msgs[0].Partition, Items: fwd, Cost: costSum, At: s.cfg.Clock.Now(), Forwarded: h.forwarded(end)}
		if ch != nil {
			for i, d := range ch.Delta {
				if d > 0 && ch.Applied[i] {
					ev.Windows = append(ev.Windows, Window{Key: h.batch.Counters[i].Key, ExpiresAt: ch.State[i].ExpiresAt, Post: ch.Post[i]})
				}
			}
		}
		s.cfg.Observer(ev)
	}
}

// forwarded is the work items of the window's first end entries, for an
// observer that reads them (a keyed shadow's recording): each payload and
// cost, in order.
func (h *handler) forwarded(end int) iter.Seq2[[]byte, int64] {
	window := h.window[:min(end, len(h.window))]
	return func(yield func([]byte, int64) bool) {
		for i := range window {
			if e := &window[i]; e.kind == work && !yield(e.msg.Data, e.cost) {
				return
			}
		}
	}
}

// recoverDuplicate is the halving recovery after a QDUP rollback: settle
// smaller prefixes; at zero, settle the head alone, and bare-ack a head
// that is already downstream. On the separate path ch paid for admitted
// items and what is not forwarded is refunded; riding, every attempt
// carries its own riders and nothing is ever refunded.
func (h *handler) recoverDuplicate(admitted int, ch *budget.Charge, riding bool) {
	s := h.s
	h.paid = ch
	for want := admitted / 2; want > 0; want /= 2 {
		t, end, fwd, foreignN, costSum := h.transaction(want)
		rc := h.ride(t, want, riding)
		res, err := h.transact(t)
		if err == nil {
			err = res.Err()
		}
		switch {
		case err == nil:
			if rc != nil {
				h.checkRiders(rc, &res)
				h.committed(end, fwd, foreignN, costSum, rc)
				return
			}
			h.committed(end, fwd, foreignN, costSum, ch)
			if ch != nil {
				h.refund(ch, want)
			}
			return
		case isDuplicate(err):
			continue
		default:
			if h.lost(end, err, ch != nil) {
				h.refund(ch, 0)
			}
			return
		}
	}
	head := &h.window[0]
	headForwarded := false
	if head.kind != work {
		t := &queen.Transaction{}
		t.Ack(head.msg.AckItem(queen.AckCompleted, ""))
		h.handBack(t, 1)
		if err := h.commit(t); err == nil {
			s.c.foreign.Add(1)
		} else {
			s.log.Warn("acking the foreign head failed", "error", err)
		}
	} else {
		t, end, fwd, _, costSum := h.transaction(1)
		rc := h.ride(t, 1, riding)
		res, err := h.transact(t)
		if err == nil {
			err = res.Err()
		}
		switch {
		case err == nil:
			headForwarded = true
			if rc != nil {
				h.checkRiders(rc, &res)
				h.committed(end, fwd, 0, costSum, rc)
			} else {
				h.committed(end, fwd, 0, costSum, ch)
			}
		case isDuplicate(err):
			bare := &queen.Transaction{}
			bare.Ack(head.msg.AckItem(queen.AckCompleted, ""))
			h.handBack(bare, 1)
			if err := h.commit(bare); err != nil {
				s.log.Warn("bare ack of an already-forwarded head failed", "error", err)
			}
		default:
			s.log.Warn("settling the head alone failed", "error", err)
			if !definite(err) {
				s.c.ambiguous.Add(1)
				return
			}
		}
	}
	if ch != nil {
		from := 0
		if headForwarded {
			from = 1
		}
		h.refund(ch, from)
	}
}

// ride adds the riders of items [0, n) to t when riding (nil otherwise, or
// when those items touch no counter).
func (h *handler) ride(t *queen.Transaction, n int, riding bool) *budget.Charge {
	if !riding {
		return nil
	}
	ch, ok := h.s.cfg.Limiter.Riders(t, &h.batch, n)
	if !ok {
		return nil
	}
	return ch
}

// failed records a non-duplicate settle failure against the wedge
// detector: five ack rejections at one head escalate once, at ERROR, with
// the seek that fixes it.
func (h *handler) failed(end int, err error) {
	s := h.s
	m := h.window[0].msg
	text := err.Error()
	s.wedgeMu.Lock()
	if s.wedge == nil || s.wedge.Head != m.TransactionID {
		s.wedge = &store.Wedge{Queue: s.cfg.Stage.Source, Group: s.cfg.Stage.Group, Partition: m.Partition, Head: m.TransactionID}
	}
	w := s.wedge
	w.Attempts++
	w.Error = text
	escalate := isAckRejection(err) && w.Attempts >= WedgeAttempts && !w.Escalated
	if escalate {
		w.Escalated = true
	}
	attempts := w.Attempts
	s.wedgeMu.Unlock()
	if escalate {
		s.c.wedged.Add(1)
		s.log.Error("stage is wedged: the broker keeps refusing the ack at a head that never moves; this is a stuck cursor, not a budget backlog, whatever waitingForBudget says",
			"partition", m.Partition, "attempts", attempts, "error", text,
			"remedy", fmt.Sprintf("POST /api/v1/consumer-groups/%s/queues/%s/seek with body {\"toEnd\":true}, then investigate why the group reads frames older than the broker's transaction window", s.cfg.Stage.Group, s.cfg.Stage.Source))
		return
	}
	s.log.Warn("settle failed; releasing the claim", "partition", m.Partition, "attempts", attempts, "settled", end, "error", text)
}

// nackHead fails the poison head alone, in its own transaction: after the
// queue's retry limit the broker dead-letters it. deadlettered counts the
// item once, when the broker says this nack moved it to the DLQ; the
// nacks before that are its delivery attempts.
func (h *handler) nackHead() {
	s := h.s
	e := &h.window[0]
	reason := fmt.Sprintf("gate: node '%s': %v", s.cfg.Stage.Node, e.err)
	t := &queen.Transaction{}
	t.Ack(e.msg.AckItem(queen.AckFailed, reason))
	res, err := h.transact(t)
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		s.log.Warn("nack of a poison item failed; it will be redelivered", "partition", e.msg.Partition, "transactionId", e.msg.TransactionID, "error", err)
		return
	}
	for _, r := range res.Results {
		if r.Type == "ack" && r.DLQ {
			s.c.deadlettered.Add(1)
			s.log.Warn("poison item dead-lettered after the queue's retry limit", "partition", e.msg.Partition, "transactionId", e.msg.TransactionID, "reason", reason)
			return
		}
	}
	s.log.Warn("poison item failed (dead-lettered after the queue's retry limit)", "partition", e.msg.Partition, "transactionId", e.msg.TransactionID, "reason", reason)
}
