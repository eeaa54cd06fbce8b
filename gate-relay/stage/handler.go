package stage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/budget"
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
}

// call returns a context for one kv call or transaction: detached from the
// stop signal (a claim in flight finishes its call) but bounded.
func (h *handler) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(h.ctx), callTimeout)
}

func (h *handler) run() {
	s := h.s
	s.c.popped.Add(int64(len(h.msgs)))
	if len(h.msgs) == 0 {
		return
	}
	h.classify()
	if h.window[0].kind == poison {
		h.nackHead()
		return
	}
	for i := range h.window {
		if h.window[i].kind == poison {
			h.window = h.window[:i]
			break
		}
	}
	h.buildBatch()
	h.park = budget.Parking{MaxPark: s.cfg.MaxPark}
	h.admit()
}

// classify sorts each message into work, foreign or poison, in order.
func (h *handler) classify() {
	st := &h.s.cfg.Stage
	rule := h.s.cfg.Node.Cost
	h.window = make([]entry, len(h.msgs))
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
func (h *handler) buildBatch() {
	n := h.s.cfg.Node
	path := h.s.cfg.Stage.Path
	var touched []int
	h.batch.Items = make([]budget.Item, 0, len(h.window))
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
			key := b.Key
			if b.ScopeBy != "" {
				v, ok := cost.Scope(e.msg.Data, b.ScopeBy)
				if !ok {
					continue
				}
				key = plan.ScopedKey(b.Key, v)
			}
			ceiling, ok := b.Ceilings[path]
			if !ok {
				ceiling = plan.Ceiling(b.CountSub, h.s.cfg.Stage.Share)
			}
			touched = append(touched, h.batch.Counter(key, ceiling, b.WindowSubSeconds, b.ID))
		}
		e.item = len(h.batch.Items)
		h.batch.Add(e.cost, touched)
	}
}

// admit is the admission loop: charge the whole window, refund and cut to
// the prefix that fits on refusal, park or release when nothing fits.
func (h *handler) admit() {
	s := h.s
	items := len(h.batch.Items)
	if !h.batch.Charges() {
		h.settle(items, nil)
		return
	}
	for {
		ch, ok := h.charge(items)
		if !ok {
			return
		}
		if ch.OK() {
			h.settle(items, ch)
			return
		}
		h.refund(ch, 0)
		h.recordRefusal(ch)
		n := budget.Prefix(&h.batch, ch)
		if n == 0 {
			if lead := h.settleEnd(0); lead > 0 {
				h.settle(0, nil)
				return
			}
			if !h.parkFor(ch) {
				return
			}
			continue
		}
		s.c.deferred.Add(1)
		want := n
		retry := false
		for attempt := 1; attempt <= PrefixAttempts; attempt++ {
			pc, ok := h.charge(want)
			if !ok {
				return
			}
			if pc.OK() {
				h.settle(want, pc)
				return
			}
			h.refund(pc, 0)
			next := min(budget.Prefix(&h.batch, pc), want)
			if next == 0 || attempt == PrefixAttempts {
				if !h.parkFor(pc) {
					return
				}
				retry = true
				break
			}
			want = next
		}
		if !retry {
			return
		}
	}
}

// charge charges the first n items; a failed call releases the claim.
func (h *handler) charge(n int) (*budget.Charge, bool) {
	ctx, cancel := h.call()
	defer cancel()
	ch, err := h.s.cfg.Limiter.Charge(ctx, &h.batch, n)
	if err != nil {
		h.s.c.released.Add(1)
		h.s.c.leaked.Add(1)
		h.s.log.Warn("budget call failed; releasing the claim (the lease redelivers it)", "err", err, "partition", h.msgs[0].Partition)
		return nil, false
	}
	return ch, true
}

// refund gives back items [from, N) of a charge.
func (h *handler) refund(ch *budget.Charge, from int) {
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
		h.s.log.Warn("refund call failed; the counters over-count until their window ends", "err", err)
		return
	}
	if rep.Refused > 0 {
		h.s.log.Warn("refund refused (the counter moved on); over-count of at most one sub-window", "refused", rep.Refused)
	}
}

// recordRefusal notes the first refused counter's budget as the stage's
// last refusal and traces it in the denial ring.
func (h *handler) recordRefusal(ch *budget.Charge) {
	refused := ch.Refused()
	if len(refused) == 0 {
		return
	}
	s := h.s
	now := s.cfg.Clock.Now().UnixMilli()
	id := h.batch.Counters[refused[0]].BudgetID
	s.refusal.Store(&store.Refusal{Budget: id, At: now})
	if s.cfg.Denials != nil {
		s.cfg.Denials.Add(store.Denial{At: now, Application: s.cfg.App, Graph: s.cfg.Graph, Node: s.cfg.Stage.Node,
			Path: s.cfg.Stage.Path, Op: "", Outcome: "denied", BudgetID: id})
	}
}

// parkFor parks while the park budget allows, true to retry; false means
// the claim was released (budget exhausted or the stage is stopping).
func (h *handler) parkFor(ch *budget.Charge) bool {
	s := h.s
	wait := budget.Wait(ch, s.cfg.Clock.Now())
	if !h.park.Fits(wait) {
		return h.release()
	}
	sleep := min(budget.ParkSleep(wait, h.rnd), ParkRecheck)
	sleep = max(sleep, budget.MinParkSleep)
	s.c.parked.Add(1)
	t := time.NewTimer(sleep)
	defer t.Stop()
	select {
	case <-h.ctx.Done():
		s.c.released.Add(1)
		return false
	case <-t.C:
	}
	h.park.Spent(sleep)
	return true
}

// release returns without settling: the broker redelivers after the lease
// and charges no retry budget. Never a nack for pacing.
func (h *handler) release() bool {
	h.s.c.released.Add(1)
	if h.park.Exhausted() {
		h.s.log.Warn("held the claim for the whole park budget and the window still does not fit; releasing", "parkedMs", h.park.Total.Milliseconds(), "partition", h.msgs[0].Partition)
	}
	return false
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
	// One allocation each for the operations, the pushes and every stamped
	// payload of the settle (payloads are capped slices of one arena).
	t = &queen.Transaction{Operations: make([]queen.TxnOp, 0, end+2)}
	now := s.cfg.Clock.Now().UnixMilli()
	pushes := make([]queen.PushItem, 0, min(admitted, end)*len(dests))
	stamps := make([]Stamp, len(dests))
	size := 0
	for i, d := range dests {
		stamps[i] = Stamp{Graph: s.cfg.Graph, Path: s.cfg.Stage.Path, Hop: s.cfg.Stage.Hop + 1, Node: d.Node, At: now}
		size += stamps[i].overhead()
	}
	arenaSize := 0
	for i := 0; i < end; i++ {
		if h.window[i].kind == work {
			arenaSize += len(dests)*len(h.window[i].msg.Data) + size
		}
	}
	arena := make([]byte, 0, arenaSize)
	for i := 0; i < end; i++ {
		e := &h.window[i]
		t.Ack(e.msg.AckItem(queen.AckCompleted, ""))
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
				txn = plan.DeriveTransactionID(txn, d.Label)
			}
			payload := []byte(e.msg.Data)
			from := len(arena)
			if out, ok := stamps[di].AppendTo(arena, e.msg.Data); ok {
				arena = out
				payload = arena[from:len(arena):len(arena)]
			}
			pushes = append(pushes, queen.PushItem{Queue: d.Queue, Partition: e.msg.Partition, Payload: payload, TransactionID: txn})
		}
	}
	if len(pushes) > 0 {
		t.Push(pushes...)
	}
	h.handBack(t, end)
	return t, end, fwd, foreignN, costSum
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

// commit sends one transaction.
func (h *handler) commit(t *queen.Transaction) error {
	ctx, cancel := h.call()
	defer cancel()
	res, err := h.s.cfg.Client.Transact(ctx, t)
	if err != nil {
		return err
	}
	return res.Err()
}

func isDuplicate(err error) bool {
	var r *queen.Refusal
	if errors.As(err, &r) {
		return r.Duplicate()
	}
	return err != nil && strings.Contains(err.Error(), "QDUP")
}

// settle commits admitted work items (and the foreign messages among
// them) in one transaction; ch is the charge that paid for them (nil when
// nothing was charged).
func (h *handler) settle(admitted int, ch *budget.Charge) {
	s := h.s
	t, end, fwd, foreignN, costSum := h.transaction(admitted)
	if end == 0 {
		return
	}
	err := h.commit(t)
	switch {
	case err == nil:
		h.committed(fwd, foreignN, costSum, ch)
	case isDuplicate(err):
		s.c.duplicates.Add(1)
		s.log.Warn("settle rolled back by a duplicate transaction id; recovering by halving", "partition", h.msgs[0].Partition, "err", err)
		h.recoverDuplicate(admitted, ch)
	default:
		h.failed(end, err)
		if ch != nil {
			h.refund(ch, 0)
		}
		s.c.released.Add(1)
	}
}

// committed counts a committed settle and tells the observer.
func (h *handler) committed(fwd, foreignN int, costSum int64, ch *budget.Charge) {
	s := h.s
	s.c.forwarded.Add(int64(fwd))
	s.c.admitted.Add(int64(fwd))
	s.c.foreign.Add(int64(foreignN))
	s.c.commits.Add(1)
	s.c.cost.Add(costSum)
	s.wedgeMu.Lock()
	s.wedge = nil
	s.wedgeMu.Unlock()
	if s.cfg.Observer != nil && fwd > 0 {
		ev := Settled{App: s.cfg.App, Graph: s.cfg.Graph, Path: s.cfg.Stage.Path, Node: s.cfg.Stage.Node,
			Partition: h.msgs[0].Partition, Items: fwd, Cost: costSum, At: time.Now()}
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

// recoverDuplicate is the halving recovery after a QDUP rollback: settle
// smaller prefixes; at zero, settle the head alone.
func (h *handler) recoverDuplicate(admitted int, ch *budget.Charge) {
	s := h.s
	for want := admitted / 2; want > 0; want /= 2 {
		t, _, fwd, foreignN, costSum := h.transaction(want)
		err := h.commit(t)
		switch {
		case err == nil:
			h.committed(fwd, foreignN, costSum, ch)
			if ch != nil {
				h.refund(ch, want)
			}
			return
		case isDuplicate(err):
			continue
		default:
			s.log.Warn("settle failed during duplicate recovery; the claim comes back after its lease", "err", err)
			if ch != nil {
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
			s.log.Warn("acking the foreign head failed", "err", err)
		}
	} else {
		t, _, fwd, _, costSum := h.transaction(1)
		err := h.commit(t)
		switch {
		case err == nil:
			headForwarded = true
			s.c.forwarded.Add(int64(fwd))
			s.c.admitted.Add(int64(fwd))
			s.c.commits.Add(1)
			s.c.cost.Add(costSum)
		case isDuplicate(err):
			bare := &queen.Transaction{}
			bare.Ack(head.msg.AckItem(queen.AckCompleted, ""))
			h.handBack(bare, 1)
			if err := h.commit(bare); err != nil {
				s.log.Warn("bare ack of an already-forwarded head failed", "err", err)
			}
		default:
			s.log.Warn("settling the head alone failed", "err", err)
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
	escalate := ackRejection(text) && w.Attempts >= WedgeAttempts && !w.Escalated
	if escalate {
		w.Escalated = true
	}
	attempts := w.Attempts
	s.wedgeMu.Unlock()
	if escalate {
		s.c.wedged.Add(1)
		s.log.Error("stage is wedged: the broker keeps refusing the ack at a head that never moves; this is a stuck cursor, not a budget backlog, whatever waitingForBudget says",
			"partition", m.Partition, "attempts", attempts, "err", text,
			"remedy", fmt.Sprintf("POST /api/v1/consumer-groups/%s/queues/%s/seek with body {\"toEnd\":true}, then investigate why the group reads frames older than the broker's transaction window", s.cfg.Stage.Group, s.cfg.Stage.Source))
		return
	}
	s.log.Warn("settle failed; releasing the claim", "partition", m.Partition, "attempts", attempts, "settled", end, "err", text)
}

// ackRejection reports whether a failure text is an ack rejection.
func ackRejection(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "ack_rejected") || strings.Contains(t, "qtxn ack") ||
		strings.Contains(t, "ack") && strings.Contains(t, "unknown transactionid")
}

// nackHead fails the poison head alone, in its own transaction: after the
// queue's retry limit the broker dead-letters it.
func (h *handler) nackHead() {
	s := h.s
	e := &h.window[0]
	reason := fmt.Sprintf("gate: node '%s': %v", s.cfg.Stage.Node, e.err)
	t := &queen.Transaction{}
	t.Ack(e.msg.AckItem(queen.AckFailed, reason))
	if err := h.commit(t); err != nil {
		s.log.Warn("nack of a poison item failed; it will be redelivered", "partition", e.msg.Partition, "transactionId", e.msg.TransactionID, "err", err)
		return
	}
	s.c.deadlettered.Add(1)
	s.log.Warn("poison item failed (dead-lettered after the queue's retry limit)", "partition", e.msg.Partition, "transactionId", e.msg.TransactionID, "reason", reason)
}
