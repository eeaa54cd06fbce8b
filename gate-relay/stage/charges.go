package stage

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"sync"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
)

// Charge records: with a Signer, every item a charging stage forwards
// carries in its stamp what a settle (POST …/nodes/{node}/settle) needs —
// the node, the estimated cost and, per counter, the window the charge
// landed in — signed with the fleet's key. On the rider path the
// transaction is built before the broker charges it, so the window written
// is the one the stage last saw live for that counter (windowCache); when
// the commit's read shows another (the window turned, or was never seen),
// the stage leaves the true ends in the claim's correction row
// (budget.CorrectionKey), which a settle reads.

// chargesMember is how an incoming stamp's records begin.
var chargesMember = []byte(`"charges"`)

// windowCache is the window end, epoch ms, the stage last saw per counter.
type windowCache struct {
	mu   sync.Mutex
	ends map[string]int64
}

// maxCachedWindows bounds the cache (scoped counters are many): past it,
// the cache starts over.
const maxCachedWindows = 1 << 16

func (w *windowCache) get(key string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ends[key]
}

func (w *windowCache) set(key string, end int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ends == nil || len(w.ends) >= maxCachedWindows {
		w.ends = make(map[string]int64)
	}
	w.ends[key] = end
}

// records reports whether this stage writes its own charge records: it
// has a signer, its items touch counters and its node's cost is an
// estimate read from the payload (cost.path). A fixed cost is charged
// exactly as declared, so there is nothing to settle and its items carry
// no record of it (they still carry, signed, the records of the hops
// before).
func (h *handler) records() bool {
	return h.s.cfg.Signer != nil && len(h.batch.Counters) > 0 && h.s.cfg.Node.Cost.Path != ""
}

// prepareWindows sets, per counter of the batch, the window end a stamp
// names: the paying charge's read when it has one (the separate path),
// else the last the stage saw; and mints the claim's row id.
func (h *handler) prepareWindows(paid *budget.Charge) {
	h.ends = h.ends[:0]
	for i := range h.batch.Counters {
		var end int64
		if paid != nil && i < len(paid.State) && !paid.State[i].ExpiresAt.IsZero() {
			end = paid.State[i].ExpiresAt.UnixMilli()
		} else {
			end = h.s.windows.get(h.batch.Counters[i].Key)
		}
		h.ends = append(h.ends, end)
	}
	if h.row == "" {
		var b [9]byte
		_, _ = rand.Read(b[:])
		h.row = base64.RawURLEncoding.EncodeToString(b[:])
	}
}

// appendRecords appends the "charges" array of work entry e: the records
// its incoming stamp carries, when their signature verifies, then this
// stage's own (when own); nothing when there are none.
func (h *handler) appendRecords(b []byte, e *entry, now int64, own bool) []byte {
	s := h.s
	var carried []cost.Charge
	if !bytes.Contains(e.msg.Data, chargesMember) {
		// no earlier records: the common case, not scanned further
	} else if raw, ok := cost.Lookup(e.msg.Data, cost.Root+"."+cost.Stamp+".charges"); ok && len(raw) > 2 {
		if in, ok := cost.StampOf(e.msg.Data); ok {
			st, err := cost.ParseStamp(in)
			if err == nil && s.cfg.Signer.Verify(st, s.cfg.App, e.msg.TransactionID) {
				carried = st.Charges
			} else if n := s.forged.Add(1); n == 1 || n%1000 == 0 {
				s.log.Warn("an item's stamp carries charges that do not verify (written by no relay of this fleet, or altered); they are dropped", "transactionId", e.msg.TransactionID, "failures", n)
			}
		}
	}
	if len(carried) >= cost.MaxCharges {
		carried = carried[len(carried)-cost.MaxCharges+1:]
	}
	b = append(b, '[')
	for _, c := range carried {
		b = c.AppendJSON(b)
		b = append(b, ',')
	}
	var touched []int
	if own && e.item >= 0 && e.item < len(h.batch.Items) {
		touched = h.batch.Items[e.item].Counters
	}
	if len(touched) == 0 {
		// This stage charged the item nothing: only what it carries.
		if len(carried) == 0 {
			return b[:0]
		}
		return append(b[:len(b)-1], ']')
	}
	rec := cost.Charge{Node: s.cfg.Stage.Node, Cost: e.cost, At: now, Row: h.row, Windows: h.winBuf[:0]}
	for _, c := range touched {
		rec.Windows = append(rec.Windows, h.ends[c])
	}
	h.winBuf = rec.Windows
	b = rec.AppendJSON(b)
	return append(b, ']')
}

// correct compares the windows a committed charge landed in with those its
// stamps named: the stage's cache learns them, and a differing one is left
// in the claim's correction row.
func (h *handler) correct(ch *budget.Charge) {
	s := h.s
	if !h.records() || ch == nil || len(h.ends) != len(h.batch.Counters) {
		return
	}
	var fix budget.Correction
	var ttl int64
	for i, d := range ch.Delta {
		if d <= 0 || !ch.Applied[i] || ch.State[i].ExpiresAt.IsZero() {
			continue
		}
		key := h.batch.Counters[i].Key
		end := ch.State[i].ExpiresAt.UnixMilli()
		s.windows.set(key, end)
		if end != h.ends[i] {
			if fix == nil {
				fix = budget.Correction{}
			}
			fix[key] = end
			ttl = max(ttl, h.batch.Counters[i].TTLSeconds)
		}
	}
	if fix == nil {
		return
	}
	ctx, cancel := h.call()
	defer cancel()
	if err := s.cfg.Limiter.WriteCorrection(ctx, h.row, fix, ttl); err != nil {
		s.log.Warn("writing a claim's correction row failed; settles of its items refund nothing", "error", err, "partition", h.msgs[0].Partition)
		return
	}
	s.corrections.Add(1)
}
