package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Settling a cost after the call (POST …/nodes/{node}/settle). An item was
// charged its estimated cost E at a node; the worker reports the actual cost
// A once the vendor answered:
//
//   - A < E: E − A goes back to each counter the item was charged to, only
//     into the window it was charged in and only while that window lives,
//     never taking a counter below A (what the item still holds) and so
//     never below what other items hold or below zero;
//   - A > E: A − E is charged to each counter's current window without a
//     ceiling: a debt the window's later items wait for;
//   - a second report of the same message changes nothing: an idempotency
//     row written with putIfAbsent, required, in the same kv call as the
//     counter writes, so the writes and the row apply together or not at
//     all.

// CorrectionPrefix starts the rows in which a relay leaves the true window
// of a claim's charges when the window its stamps name (the one it knew
// when it built the settle) was not the one the charge landed in.
const CorrectionPrefix = "sw:"

// CorrectionKey is the kv key of the correction row of claim row.
func CorrectionKey(row string) string { return CorrectionPrefix + row }

// SettlePrefix starts the idempotency rows of settles.
const SettlePrefix = "settled:"

// SettleKey is the idempotency row of one settled message at a node.
func SettleKey(app, graph, node, txn string) string {
	return SettlePrefix + app + ":" + graph + ":" + node + ":" + txn
}

// SettleSlack is how much longer than its longest window a settle's
// idempotency row lives; a charge older than its longest window plus
// SettleTaken is no longer settled (StaleCharge).
const (
	SettleSlack = 5 * time.Minute
	SettleTaken = 4 * time.Minute
)

// RefundMargin is how close to its end a window takes no refund: the
// refund and the read that proves its window are one kv call, but a window
// that ends while the call is on its way is not refunded into.
const RefundMargin = 100 * time.Millisecond

// NodeCounters returns the counters an item with payload data touched at
// node n on path, as the relay charges them: each budget whose whenOp
// matches the item's op and whose scope value the item has, one counter
// per distinct key, in declaration order. A scope value too long for a kv
// key is an error.
func NodeCounters(n *plan.Node, path string, data []byte) ([]Counter, error) {
	var out []Counter
	var op string
	opRead := false
next:
	for i := range n.Budgets {
		b := &n.Budgets[i]
		if b.WhenOp != nil {
			if !opRead {
				op, opRead = cost.Op(data), true
			}
			if !cost.MatchOp(b.WhenOp, op) {
				continue
			}
		}
		key := b.Key
		if b.ScopeBy != "" {
			v, ok := cost.Scope(data, b.ScopeBy)
			if !ok {
				continue
			}
			key = plan.ScopedKey(b.Key, v)
			if len(key) > queen.MaxKVKeyBytes {
				return nil, fmt.Errorf("budget '%s' scopes by '%s': the item's value makes a kv key of %d bytes, over %d", b.ID, b.ScopeBy, len(key), queen.MaxKVKeyBytes)
			}
		}
		for _, c := range out {
			if c.Key == key {
				continue next
			}
		}
		out = append(out, Counter{Key: key, Max: b.Ceiling(path), TTLSeconds: max(b.WindowSubSeconds, 1), BudgetID: b.ID, Widest: b.WidestCeiling()})
	}
	return out, nil
}

// Settle is one reported actual cost.
type Settle struct {
	// Key is the idempotency row (SettleKey); Record its value.
	Key    string
	Record json.RawMessage
	// Estimated is what the item was charged at the node; Actual what the
	// worker reports.
	Estimated, Actual int64
	// Counters are the counters the item was charged to (NodeCounters),
	// Windows the end of the window each was charged in, epoch ms (0 =
	// unknown), and Row the claim's correction row ("" = none).
	Counters []Counter
	Windows  []int64
	Row      string
	// Now is the caller's clock, for RefundMargin.
	Now time.Time
	// Stats, when set, is the node's settle statistics (SettleStatsKey):
	// the settle counts itself, its estimate and its actual cost there.
	Stats string
}

// SettleStatsKey is the prefix of a node's settle statistics: three kv
// counters (":n", ":est", ":act") that live SettleStatsTTL from the first
// settle after they lapse.
func SettleStatsKey(app, graph, node string) string {
	return "settlestats:" + app + ":" + graph + ":" + node
}

// SettleStatsTTL is how long a node's settle statistics count before they
// start over.
const SettleStatsTTL = 24 * time.Hour

// SettleStats is a node's settles since its statistics started.
type SettleStats struct {
	Settles, Estimated, Actual int64
	// Until is when the statistics lapse (they started at most
	// SettleStatsTTL before).
	Until time.Time
}

// ReadSettleStats reads the settle statistics of each prefix
// (SettleStatsKey) in one getMany; a node never settled is absent.
func ReadSettleStats(ctx context.Context, kv KV, ns string, prefixes []string) (map[string]SettleStats, error) {
	out := map[string]SettleStats{}
	if len(prefixes) == 0 {
		return out, nil
	}
	keys := make([]string, 0, 3*len(prefixes))
	for _, p := range prefixes {
		keys = append(keys, p+":n", p+":est", p+":act")
	}
	rows, err := getMany(ctx, kv, ns, keys)
	if err != nil {
		return nil, fmt.Errorf("%w: reading settle statistics: %w", ErrCall, err)
	}
	byKey := map[string]queen.KVRow{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	for _, p := range prefixes {
		n, ok := byKey[p+":n"]
		if !ok {
			continue
		}
		var st SettleStats
		st.Settles, _ = n.Int64()
		st.Until, _ = n.ExpiresAt.Time()
		if r, ok := byKey[p+":est"]; ok {
			st.Estimated, _ = r.Int64()
		}
		if r, ok := byKey[p+":act"]; ok {
			st.Actual, _ = r.Int64()
		}
		out[p] = st
	}
	return out, nil
}

// Outcomes of one counter of a settle.
const (
	// SettleRefunded: E − A went back into the window the item was charged in.
	SettleRefunded = "refunded"
	// SettleCharged: A − E was charged to the current window.
	SettleCharged = "charged"
	// SettleEven: the estimate was exact; nothing to write.
	SettleEven = "even"
	// SettleWindowEnded: the window the item was charged in has ended (or
	// ends within RefundMargin): nothing is refunded into another.
	SettleWindowEnded = "window-ended"
	// SettleWindowUnknown: the stamp names no window for this counter.
	SettleWindowUnknown = "window-unknown"
	// SettleGuarded: the refund would have taken the counter below what
	// the item still holds; nothing was written.
	SettleGuarded = "guarded"
)

// SettledCounter is what a settle did to one counter.
type SettledCounter struct {
	Key      string
	BudgetID string
	Outcome  string
	// Delta is what was added (negative: refunded); Value the counter after
	// it when it was written; WindowEnd the end of the window written to.
	Delta     int64
	Value     int64
	WindowEnd time.Time
}

// SettleResult is what a settle did.
type SettleResult struct {
	// Duplicate says the message was settled before: nothing changed.
	Duplicate bool
	// Refunded and Charged sum the deltas applied (per counter summed).
	Refunded, Charged int64
	Counters          []SettledCounter
}

// settleTTL is the idempotency row's life: the longest window plus slack.
func settleTTL(cs []Counter) int64 {
	var longest int64 = 1
	for _, c := range cs {
		longest = max(longest, c.TTLSeconds)
	}
	return longest + int64(SettleSlack/time.Second)
}

// StaleCharge reports whether a charge made at (epoch ms) is too old to
// settle at now: its idempotency row could have expired before a repeat.
func StaleCharge(cs []Counter, at int64, now time.Time) bool {
	var longest int64 = 1
	for _, c := range cs {
		longest = max(longest, c.TTLSeconds)
	}
	return now.Sub(time.UnixMilli(at)) > time.Duration(longest)*time.Second+SettleTaken
}

// Settle applies one actual cost (see the package comment above): at most
// three kv calls — a read of the windows (refunds only), the writes with
// the idempotency row, and, only if a refund landed in a window other than
// the one charged (it opened between the read and the write), the
// give-back of that refund.
func (l *Limiter) Settle(ctx context.Context, s Settle) (SettleResult, error) {
	if len(s.Windows) != len(s.Counters) {
		return SettleResult{}, fmt.Errorf("budget: settle with %d windows for %d counters", len(s.Windows), len(s.Counters))
	}
	if s.Actual < 0 || s.Estimated < 0 {
		return SettleResult{}, fmt.Errorf("budget: settle with a negative cost (estimated %d, actual %d)", s.Estimated, s.Actual)
	}
	res := SettleResult{Counters: make([]SettledCounter, len(s.Counters))}
	for i, c := range s.Counters {
		res.Counters[i] = SettledCounter{Key: c.Key, BudgetID: c.BudgetID, Outcome: SettleEven}
	}
	idem := queen.KVPutIfAbsent(l.NS, s.Key, s.Record, queen.PutOpts{TTLSeconds: settleTTL(s.Counters), Required: true})
	ops := []queen.KVOp{idem}
	var write []int
	charged := s.Windows
	switch d := s.Actual - s.Estimated; {
	case d > 0:
		for i, c := range s.Counters {
			ops = append(ops, queen.KVIncr(l.NS, c.Key, d, queen.IncrOpts{TTLSeconds: c.TTLSeconds}))
			write = append(write, i)
			res.Counters[i].Outcome = SettleCharged
		}
	case d < 0:
		windows, err := l.settleWindows(ctx, s)
		if err != nil {
			return SettleResult{}, err
		}
		charged = make([]int64, len(windows))
		for i, w := range windows {
			charged[i] = w.charged
		}
		for i, c := range s.Counters {
			switch w := windows[i]; {
			case w.charged == 0:
				res.Counters[i].Outcome = SettleWindowUnknown
			case w.now != w.charged || time.UnixMilli(w.now).Sub(s.Now) <= RefundMargin:
				res.Counters[i].Outcome = SettleWindowEnded
			default:
				// min: the item still holds Actual; the refund never takes
				// the counter below it, so never below what the others hold.
				ops = append(ops, queen.KVIncr(l.NS, c.Key, d, queen.IncrOpts{TTLSeconds: c.TTLSeconds, Min: queen.Int(s.Actual)}))
				write = append(write, i)
				res.Counters[i].Outcome = SettleRefunded
			}
		}
	}
	if s.Stats != "" {
		day := int64(SettleStatsTTL / time.Second)
		ops = append(ops, queen.KVIncr(l.NS, s.Stats+":n", 1, queen.IncrOpts{TTLSeconds: day}),
			queen.KVIncr(l.NS, s.Stats+":est", s.Estimated, queen.IncrOpts{TTLSeconds: day}),
			queen.KVIncr(l.NS, s.Stats+":act", s.Actual, queen.IncrOpts{TTLSeconds: day}))
	}
	keys := make([]string, 0, len(write))
	for _, i := range write {
		keys = append(keys, s.Counters[i].Key)
	}
	if len(keys) > 0 {
		ops = append(ops, queen.KVGetMany(l.NS, keys...))
	}
	answer, err := l.KV.KV(ctx, ops...)
	if err != nil {
		return SettleResult{}, fmt.Errorf("%w: settling %d counters: %w", ErrCall, len(write), err)
	}
	if r := answer.Refusal; r != nil {
		if r.KVPrecondition() && r.FailedIndex == 0 && r.KVReason == queen.KVExists {
			return SettleResult{Duplicate: true}, nil
		}
		return SettleResult{}, fmt.Errorf("%w: settling %d counters: %w", ErrCall, len(write), r)
	}
	if len(answer.Results) != len(ops) {
		return SettleResult{}, fmt.Errorf("%w: the broker answered %d results for %d ops", ErrCall, len(answer.Results), len(ops))
	}
	ends := map[string]time.Time{}
	if len(keys) > 0 {
		for _, row := range answer.Results[len(ops)-1].Rows {
			ends[row.Key], _ = row.ExpiresAt.Time()
		}
	}
	var undo []queen.KVOp
	var undone []int
	for j, i := range write {
		r := &answer.Results[1+j]
		c := &res.Counters[i]
		d := s.Actual - s.Estimated
		if !r.Applied {
			if d < 0 {
				c.Outcome = SettleGuarded
				if v, err := r.Int64(); err == nil && v == 0 {
					// Nothing to guard in an absent key: the window ended
					// between the read and the write.
					c.Outcome = SettleWindowEnded
				}
			}
			continue
		}
		c.Delta = d
		c.Value, _ = r.Int64()
		c.WindowEnd = ends[c.Key]
		if d < 0 && c.WindowEnd.UnixMilli() != charged[i] {
			// The charged window ended and another opened between the read
			// and the write: give the refund back to it at once.
			undo = append(undo, queen.KVIncr(l.NS, c.Key, -d, queen.IncrOpts{TTLSeconds: s.Counters[i].TTLSeconds}))
			undone = append(undone, i)
			continue
		}
		if d < 0 {
			res.Refunded -= d
		} else {
			res.Charged += d
		}
		l.observe(c.Key, d, c.Value, c.WindowEnd)
	}
	if len(undo) > 0 {
		back, err := l.KV.KV(context.WithoutCancel(ctx), undo...)
		if err != nil || back.Refusal != nil || len(back.Results) != len(undo) {
			return res, fmt.Errorf("%w: giving back %d refunds that landed in a newer window: %v", ErrCall, len(undo), err)
		}
		for _, i := range undone {
			res.Counters[i].Outcome, res.Counters[i].Delta = SettleWindowEnded, 0
		}
	}
	return res, nil
}

// observe tells the Observer of an applied settle write.
func (l *Limiter) observe(key string, delta, post int64, end time.Time) {
	if l.Observer != nil {
		l.Observer(key, delta, post, end)
	}
}

// settleWindow is one counter's charged window and its live one, in ms.
type settleWindow struct{ charged, now int64 }

// settleWindows reads each counter's live window and the claim's
// correction row in one getMany, and settles which window each counter was
// charged in: the correction row's, when it names the counter, else the
// stamp's.
func (l *Limiter) settleWindows(ctx context.Context, s Settle) ([]settleWindow, error) {
	keys := make([]string, 0, len(s.Counters)+1)
	for _, c := range s.Counters {
		keys = append(keys, c.Key)
	}
	if s.Row != "" {
		keys = append(keys, CorrectionKey(s.Row))
	}
	rows, err := getMany(ctx, l.KV, l.NS, dedupe(keys))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %d windows: %w", ErrCall, len(keys), err)
	}
	live := map[string]int64{}
	var corrected map[string]int64
	for _, row := range rows {
		if s.Row != "" && row.Key == CorrectionKey(s.Row) {
			_ = json.Unmarshal(row.Value, &corrected)
			continue
		}
		if t, err := row.ExpiresAt.Time(); err == nil && !t.IsZero() {
			if _, err := row.Int64(); err == nil {
				live[row.Key] = t.UnixMilli()
			}
		}
	}
	out := make([]settleWindow, len(s.Counters))
	for i, c := range s.Counters {
		w := s.Windows[i]
		if v, ok := corrected[c.Key]; ok {
			w = v
		}
		out[i] = settleWindow{charged: w, now: live[c.Key]}
	}
	return out, nil
}

// Correction is the value of a claim's correction row: counter key → the
// end of the window its charge landed in, epoch ms.
type Correction map[string]int64

// WriteCorrection leaves a claim's correction row (see CorrectionKey) for
// as long as its longest window lives, plus slack.
func (l *Limiter) WriteCorrection(ctx context.Context, row string, c Correction, ttlSeconds int64) error {
	body := make([]byte, 0, 64*len(c))
	body = append(body, '{')
	first := true
	for k, v := range c {
		if !first {
			body = append(body, ',')
		}
		first = false
		kb, _ := json.Marshal(k)
		body = append(body, kb...)
		body = append(body, ':')
		body = strconv.AppendInt(body, v, 10)
	}
	body = append(body, '}')
	res, err := l.KV.KV(ctx, queen.KVPut(l.NS, CorrectionKey(row), body, queen.PutOpts{TTLSeconds: ttlSeconds + int64(SettleSlack/time.Second)}))
	if err != nil {
		return fmt.Errorf("%w: writing the correction row %s: %w", ErrCall, row, err)
	}
	if res.Refusal != nil || len(res.Results) != 1 || !res.Results[0].Applied {
		return fmt.Errorf("%w: writing the correction row %s: not applied", ErrCall, row)
	}
	return nil
}
