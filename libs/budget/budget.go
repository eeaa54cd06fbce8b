package budget

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// KV is the one broker call the limiter makes; *queen.Client implements it.
type KV interface {
	KV(ctx context.Context, ops ...queen.KVOp) (queen.KVResponse, error)
}

// MaxKeysPerCall is the most incr ops one kv call carries; the trailing
// getMany makes 256, the broker's per-call cap.
const MaxKeysPerCall = 255

// ErrCall is wrapped by every charge or refund error: the kv call failed
// (transport, 4xx/5xx, a malformed answer). It is neither an admission nor
// a refusal — a committed charge whose answer was lost cannot be
// compensated, so a caller counts it as leaked and lets the lease redeliver.
var ErrCall = errors.New("budget: kv call failed")

// Counter is one kv counter a window can charge.
type Counter struct {
	// Key is the kv key (scoped keys carry their scope value).
	Key string
	// Max is the path's ceiling on the counter (round(count_sub × share)).
	Max int64
	// TTLSeconds is the sub-window; values below 1 are sent as 1.
	TTLSeconds int64
	// BudgetID is the id of the budget that first minted the key.
	BudgetID string
	// Widest is the highest ceiling any path may charge the counter to
	// (the budget's count_sub for a full-share path); zero is unknown. It
	// only tells a refusal's reason apart (Reason): Max decides.
	Widest int64
}

// Item is one message of a window: its cost and the counters it touches
// (indices into Batch.Counters, each at most once).
type Item struct {
	Cost     int64
	Counters []int
}

// Batch is the charge plan of one window: the distinct counters and, in
// window order, the items that touch them. The zero value is an empty
// window; build it with Counter and Add.
type Batch struct {
	Counters []Counter
	Items    []Item
	index    map[string]int
	// refs backs every Item.Counters (each item a capped sub-slice), so a
	// window of any size costs a few allocations, not one per item.
	refs []int
	// rows are the Table rows of Counters (by index) once a Table has
	// looked them up, and rowsOf that Table: a replay charges the same
	// counters millions of times and a row, once made, stays (an expired
	// one is renewed in place).
	rows    []*tableRow
	rowsOf  *Table
	rowsGen uint64
}

// Counter returns the index of key, minting it with max, ttl and budgetID
// the first time the key is seen (later calls keep the first parameters).
func (b *Batch) Counter(key string, max, ttl int64, budgetID string) int {
	if i, ok := b.index[key]; ok {
		return i
	}
	if b.index == nil {
		b.index = make(map[string]int)
	}
	b.Counters = append(b.Counters, Counter{Key: key, Max: max, TTLSeconds: ttl, BudgetID: budgetID})
	b.index[key] = len(b.Counters) - 1
	return len(b.Counters) - 1
}

// Add appends an item of cost touching counters (duplicates are dropped,
// so a key two budgets share is charged once per item).
func (b *Batch) Add(cost int64, counters []int) {
	start := len(b.refs)
	for _, c := range counters {
		if !slices.Contains(b.refs[start:], c) {
			b.refs = append(b.refs, c)
		}
	}
	end := len(b.refs)
	b.Items = append(b.Items, Item{Cost: cost, Counters: b.refs[start:end:end]})
}

// Charges reports whether any item touches any counter; a window that
// touches none is admitted without a kv call.
func (b *Batch) Charges() bool {
	for i := range b.Items {
		if len(b.Items[i].Counters) > 0 {
			return true
		}
	}
	return false
}

// Deltas returns, per counter, the summed cost of items [from, to).
func (b *Batch) Deltas(from, to int) []int64 {
	d := make([]int64, len(b.Counters))
	b.addDeltas(d, max(from, 0), min(to, len(b.Items)))
	return d
}

// addDeltas adds the summed cost of items [from, to) to d, per counter: a
// run of items AddN appended (one cost, one shared counter list) is
// summed once, as cost × its length.
func (b *Batch) addDeltas(d []int64, from, to int) {
	for i := from; i < to; {
		j := b.runEnd(i, to)
		it := &b.Items[i]
		for _, c := range it.Counters {
			d[c] += it.Cost * int64(j-i)
		}
		i = j
	}
}

// runEnd is the end of the run of items starting at i (before limit):
// the following items of the same cost touching the same counter list
// (the one slice AddN shares).
func (b *Batch) runEnd(i, limit int) int {
	it := &b.Items[i]
	j := i + 1
	for j < limit && sameRun(it, &b.Items[j]) {
		j++
	}
	return j
}

func sameRun(a, b *Item) bool {
	if a.Cost != b.Cost || len(a.Counters) != len(b.Counters) {
		return false
	}
	return len(a.Counters) == 0 || &a.Counters[0] == &b.Counters[0]
}

// State is a counter as the getMany of a charge call read it.
type State struct {
	// Value is the counter's value after the call's incrs.
	Value int64
	// ExpiresAt is the window's end; the zero time means unknown.
	ExpiresAt time.Time
	// Known is false when the call reported nothing for the counter.
	Known bool
}

// Charge is the outcome of charging the first N items of a batch. Slices
// are indexed like Batch.Counters; a counter with Delta 0 was not sent.
type Charge struct {
	// N is the number of items charged.
	N int
	// Delta is what each counter was asked to add.
	Delta []int64
	// Applied says the incr applied (the admission decision per counter).
	Applied []bool
	// Post is the value an applied incr left; PostKnown says it was reported.
	Post      []int64
	PostKnown []bool
	// State is the counter as read after the call (getMany, else the incr's
	// own value with no expiry).
	State []State

	// riders are the counters a rider charge sent, in rider order, and base
	// the flat result slot of the first; lost marks the counters a rider
	// refusal (or the read after it) showed cannot take their delta. All
	// three are nil/zero for a separate-call charge.
	riders []int
	base   int
	lost   []bool
}

// Riding reports whether c was carried as transaction riders (nothing of a
// refused rider charge applied, so it is never refunded).
func (c *Charge) Riding() bool { return c.riders != nil }

// OK reports whether every sent incr applied.
func (c *Charge) OK() bool {
	for i, d := range c.Delta {
		if d > 0 && !c.Applied[i] {
			return false
		}
	}
	return true
}

// Refused returns the indices of counters whose incr did not apply.
func (c *Charge) Refused() []int { return c.refusedInto(nil) }

// refusedInto is Refused appended to out.
func (c *Charge) refusedInto(out []int) []int {
	for i, d := range c.Delta {
		if d > 0 && !c.Applied[i] && (c.lost == nil || c.lost[i]) {
			out = append(out, i)
		}
	}
	return out
}

// Refund is one guarded give-back: incr(key, −Delta) applied only if the
// counter still reads Post, the value the charge left.
type Refund struct {
	Counter Counter
	Delta   int64
	Post    int64
	// ExpiresAt is the window the charge landed in (zero = unknown); it is
	// only reported to the Observer.
	ExpiresAt time.Time
}

// Refunds returns the refunds that give back items [from, N) of a charge:
// per applied counter, the cost those items put on it, guarded by the
// recorded post value. unknown counts applied counters with a non-zero
// give-back whose post value was never reported (they cannot be refunded
// safely and are skipped).
func (c *Charge) Refunds(b *Batch, from int) (out []Refund, unknown int) {
	d := b.Deltas(from, c.N)
	for i, delta := range d {
		if delta <= 0 || !c.Applied[i] {
			continue
		}
		if !c.PostKnown[i] {
			unknown++
			continue
		}
		out = append(out, Refund{Counter: b.Counters[i], Delta: delta, Post: c.Post[i], ExpiresAt: c.State[i].ExpiresAt})
	}
	return out, unknown
}

// Observer sees every counter write that applied: charges with the window
// their getMany reported, refunds with the window of the charge they give
// back. It is called synchronously and must be quick; nil observes nothing.
type Observer func(key string, delta, post int64, expiresAt time.Time)

// Limiter charges and refunds counters in one kv namespace.
type Limiter struct {
	// KV is the broker.
	KV KV
	// NS is the kv namespace of the counters.
	NS string
	// Observer, when set, sees every applied write.
	Observer Observer
	// Meters, when set, lowers the ceiling of every budget that mirrors a
	// vendor meter to what the vendor last stated (Ceiling).
	Meters *Meters
	// Keys, when set, gives scoped counters their runtime key limits
	// (KeyCeilings); nil uses the document's per-key counts alone.
	Keys *KeyLimits
}

// Ceiling is path's ceiling on b as this limiter charges it: the plan's,
// lowered by the budget's vendor meter row when it mirrors one.
func (l *Limiter) Ceiling(ctx context.Context, b *plan.Budget, path string) int64 {
	c := b.Ceiling(path)
	if b.VendorMeter == nil || l.Meters == nil {
		return c
	}
	return l.Meters.Ceiling(ctx, b, c)
}

// Charge charges the first n items of b in one kv call per ≤ 255 counters,
// each call ending with a getMany of its keys. No op is required: each incr
// applies or refuses on its own. A failed call (ErrCall) after earlier
// chunks applied refunds those chunks first.
func (l *Limiter) Charge(ctx context.Context, b *Batch, n int) (*Charge, error) {
	n = min(max(n, 0), len(b.Items))
	k := len(b.Counters)
	c := &Charge{N: n, Delta: b.Deltas(0, n), Applied: make([]bool, k), Post: make([]int64, k), PostKnown: make([]bool, k), State: make([]State, k)}
	var sent []int
	for i, d := range c.Delta {
		if d > 0 {
			sent = append(sent, i)
		}
	}
	for start := 0; start < len(sent); start += MaxKeysPerCall {
		chunk := sent[start:min(start+MaxKeysPerCall, len(sent))]
		if err := l.chargeChunk(ctx, b, c, chunk); err != nil {
			if start > 0 {
				done := &Charge{N: c.N, Delta: make([]int64, k), Applied: c.Applied, Post: c.Post, PostKnown: c.PostKnown, State: c.State}
				for _, i := range sent[:start] {
					done.Delta[i] = c.Delta[i]
				}
				refunds, _ := done.Refunds(b, 0)
				_, _ = l.Refund(context.WithoutCancel(ctx), refunds)
			}
			return nil, err
		}
	}
	return c, nil
}

func (l *Limiter) chargeChunk(ctx context.Context, b *Batch, c *Charge, chunk []int) error {
	ops := make([]queen.KVOp, 0, len(chunk)+1)
	keys := make([]string, 0, len(chunk))
	for _, i := range chunk {
		ct := b.Counters[i]
		ops = append(ops, queen.KVIncr(l.NS, ct.Key, c.Delta[i], queen.IncrOpts{TTLSeconds: max(ct.TTLSeconds, 1), Max: queen.Int(ct.Max)}))
		keys = append(keys, ct.Key)
	}
	ops = append(ops, queen.KVGetMany(l.NS, keys...))
	res, err := l.KV.KV(ctx, ops...)
	if err != nil {
		return fmt.Errorf("%w: charging %d counters: %w", ErrCall, len(chunk), err)
	}
	if res.Refusal != nil {
		return fmt.Errorf("%w: charging %d counters: %w", ErrCall, len(chunk), res.Refusal)
	}
	if len(res.Results) != len(ops) {
		return fmt.Errorf("%w: the broker answered %d results for %d ops", ErrCall, len(res.Results), len(ops))
	}
	rows := map[string]queen.KVRow{}
	for _, r := range res.Results[len(chunk)].Rows {
		rows[r.Key] = r
	}
	for j, i := range chunk {
		r := &res.Results[j]
		v, verr := r.Int64()
		c.Applied[i] = r.Applied
		if r.Applied && verr == nil {
			c.Post[i], c.PostKnown[i] = v, true
		}
		key := b.Counters[i].Key
		if row, ok := rows[key]; ok {
			if rv, err := row.Int64(); err == nil {
				exp, _ := row.ExpiresAt.Time()
				c.State[i] = State{Value: rv, ExpiresAt: exp, Known: true}
			}
		}
		if !c.State[i].Known && verr == nil {
			c.State[i] = State{Value: v, Known: true}
		}
		if r.Applied && l.Observer != nil && c.PostKnown[i] {
			l.Observer(key, c.Delta[i], c.Post[i], c.State[i].ExpiresAt)
		}
	}
	return nil
}

// RefundReport says how a refund batch went.
type RefundReport struct {
	// Applied and Refused count the give-backs; a refused one means the
	// counter moved on (another charge, or a new window) and is left alone:
	// an over-count of at most one sub-window on that key, self-healing.
	Applied, Refused int
}

// Refund sends guarded give-backs, ≤ 255 per kv call: incr(−Delta) with
// min = max = max(Post − Delta, 0), so it applies only while the counter
// still reads exactly what the charge left. Refunds are never retried.
func (l *Limiter) Refund(ctx context.Context, refunds []Refund) (RefundReport, error) {
	var rep RefundReport
	for start := 0; start < len(refunds); start += MaxKeysPerCall {
		chunk := refunds[start:min(start+MaxKeysPerCall, len(refunds))]
		ops := make([]queen.KVOp, 0, len(chunk))
		for _, r := range chunk {
			guard := max(r.Post-r.Delta, 0)
			ops = append(ops, queen.KVIncr(l.NS, r.Counter.Key, -r.Delta, queen.IncrOpts{TTLSeconds: max(r.Counter.TTLSeconds, 1), Min: queen.Int(guard), Max: queen.Int(guard)}))
		}
		res, err := l.KV.KV(ctx, ops...)
		if err != nil {
			return rep, fmt.Errorf("%w: refunding %d counters: %w", ErrCall, len(chunk), err)
		}
		if res.Refusal != nil || len(res.Results) != len(ops) {
			return rep, fmt.Errorf("%w: refunding %d counters: unexpected answer", ErrCall, len(chunk))
		}
		for j, r := range res.Results {
			if r.Applied {
				rep.Applied++
				if l.Observer != nil {
					v, _ := r.Int64()
					l.Observer(chunk[j].Counter.Key, -chunk[j].Delta, v, chunk[j].ExpiresAt)
				}
			} else {
				rep.Refused++
			}
		}
	}
	return rep, nil
}
