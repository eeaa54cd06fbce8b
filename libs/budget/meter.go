package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/vendormeter"
)

// The vendor meter protocol: a budget that declares vendorMeter mirrors the
// vendor's own meter. An observation (one vendor answer, read by
// libs/vendormeter) may only make Gate stricter:
//
//   - it lowers the budget's effective ceiling to the vendor's stated limit
//     (never above the plan's ceiling) — a meter row in kv that every relay
//     reads at most MeterRefresh after it was written;
//   - it raises the budget's live counter so that what Gate may still admit
//     in its sub-window is no more than what the vendor says remains —
//     never lowering a counter (an absent counter is started only when the
//     vendor's reset is at least half a sub-window away).
//
// A vendor that states a limit at or above the declared count deletes the
// row: Gate is back at what was declared, never above.

// MeterRefresh is how old a relay's copy of the meter rows may be: a
// lowered ceiling reaches every relay within it (well inside a sub-window,
// which is at least a second).
const MeterRefresh = 250 * time.Millisecond

// MeterRow is the vendor meter row of one budget as kv stores it.
type MeterRow struct {
	// Limit is the vendor's limit, converted to the budget's window
	// (timeMs): what the vendor allows where Declared is declared. It is
	// below Declared (a row is never written otherwise).
	Limit int64 `json:"limit"`
	// VendorLimit and VendorWindowMs are the vendor's own words: its quota
	// and window (0 when it did not say, read as the budget's window).
	VendorLimit    int64 `json:"vendorLimit"`
	VendorWindowMs int64 `json:"vendorWindowMs"`
	// Declared is the budget's count when the row was written.
	Declared int64 `json:"declared"`
	// Since is when the vendor first stated this limit (epoch ms); At when
	// the row was last written (an answer restating the limit rewrites it
	// only once less than half the hold is left); Until when it lapses.
	Since int64 `json:"since"`
	At    int64 `json:"at"`
	Until int64 `json:"until"`
	// Headers and Policy say which meter spoke.
	Headers string `json:"headers"`
	Policy  string `json:"policy,omitempty"`
}

// Sentence is the row in words, as diagnostics and the timeline say it.
func (r MeterRow) Sentence() string {
	return fmt.Sprintf("the vendor enforces %d where %d is declared, since %s", r.Limit, r.Declared, time.UnixMilli(r.Since).UTC().Format(time.RFC3339))
}

// Ceiling lowers a plan ceiling (a path's round(count_sub × share) of a
// budget declaring count) to the row's limit: ceiling × limit / count,
// rounded down, at least 1; never above the plan's ceiling.
func (r MeterRow) Ceiling(planCeiling, count int64) int64 {
	if r.Limit <= 0 || count <= 0 || r.Limit >= count || planCeiling <= 0 {
		return planCeiling
	}
	c := planCeiling * r.Limit / count
	if planCeiling > 1<<31 { // avoid overflow: divide first
		c = planCeiling / count * r.Limit
	}
	return min(max(c, 1), planCeiling)
}

// perWindow converts a vendor limit over window to the budget's timeMs;
// a zero window is the budget's own.
func perWindow(limit int64, window time.Duration, timeMs int64) int64 {
	if window <= 0 || timeMs <= 0 {
		return limit
	}
	ms := window.Milliseconds()
	if ms == timeMs {
		return limit
	}
	// limit × timeMs / ms, rounded down, guarded against overflow.
	if limit > 0 && timeMs > (1<<62)/limit {
		return limit / ms * timeMs
	}
	return limit * timeMs / ms
}

// Observed is what one observation did to a budget.
type Observed struct {
	// Budget is the budget's id; Key its counter.
	Budget, Key string
	// Row is the meter row written (nil: none written or deleted).
	Row *MeterRow
	// Lowered says the effective ceiling is below the plan's; Cleared that
	// a row was deleted because the vendor allows what is declared;
	// Started that this answer stated a new limit (none, or another, was
	// in force).
	Lowered, Cleared, Started bool
	// Ceiling is the effective widest ceiling after the observation.
	Ceiling int64
	// RaisedTo is the counter's value after a raise (0: not raised), and
	// Counter the value read before.
	RaisedTo, Counter int64
	// Note says, in a sentence, what the observation did.
	Note string
}

// ObserveOptions say how long a stated limit holds.
type ObserveOptions struct {
	// Hold is how long a stated limit stays in force when the vendor's
	// reset is sooner; an answer restating it extends it once less than
	// half the hold is left. Zero is DefaultMeterHold.
	Hold time.Duration
}

// DefaultMeterHold is ObserveOptions.Hold's default.
const DefaultMeterHold = 60 * time.Second

// Observe applies one vendor reading to a mirrored budget b (b.VendorMeter
// set; the caller checked): at most two kv calls, a getMany of the meter
// row and the counter, then one batch with the row's put or delete and the
// counter's raise. now is the answer's time.
func (l *Limiter) Observe(ctx context.Context, b *plan.Budget, r vendormeter.Reading, now time.Time, o ObserveOptions) (Observed, error) {
	if b.VendorMeter == nil {
		return Observed{}, fmt.Errorf("budget %q mirrors no vendor meter", b.ID)
	}
	hold := o.Hold
	if hold <= 0 {
		hold = DefaultMeterHold
	}
	widest := b.WidestCeiling()
	out := Observed{Budget: b.ID, Key: b.Key, Ceiling: widest}
	mk := b.VendorMeter.Key
	rows, err := getMany(ctx, l.KV, l.NS, []string{mk, b.Key})
	if err != nil {
		return out, fmt.Errorf("%w: reading the vendor meter of budget %q: %w", ErrCall, b.ID, err)
	}
	var prev *MeterRow
	var prevVersion int64
	var cur Reading
	for _, row := range rows {
		switch row.Key {
		case mk:
			prevVersion = row.Version
			var m MeterRow
			if json.Unmarshal(row.Value, &m) == nil && m.Limit > 0 {
				prev = &m
			}
		case b.Key:
			cur.Found = true
			if v, err := row.Int64(); err == nil {
				cur.Value = v
			} else {
				cur.NotANumber = true
			}
		}
	}
	var ops []queen.KVOp
	putAt := -1
	row := prev
	switch {
	case r.HasLimit:
		limit := perWindow(r.Limit, r.Window, b.TimeMs)
		if limit >= b.Count {
			row = nil
			if prev != nil {
				ops = append(ops, queen.KVDelete(l.NS, mk, queen.DeleteOpts{}))
				out.Cleared = true
			}
			out.Note = fmt.Sprintf("the vendor allows %d where %d is declared: Gate keeps %d", limit, b.Count, b.Count)
			break
		}
		nr := MeterRow{
			Limit: limit, VendorLimit: r.Limit, VendorWindowMs: r.Window.Milliseconds(), Declared: b.Count,
			Since: now.UnixMilli(), At: now.UnixMilli(), Headers: b.VendorMeter.Headers, Policy: r.Policy,
		}
		if prev != nil && prev.Limit == limit {
			nr.Since = prev.Since
			// The same limit restated while more than half the hold is
			// left: the row stands as it is (one kv call per answer in the
			// steady state, not two).
			if time.UnixMilli(prev.Until).Sub(now) > hold/2 && prev.VendorLimit == r.Limit {
				row, out.Row, out.Note = prev, prev, prev.Sentence()
				break
			}
		}
		out.Started = prev == nil || prev.Limit != limit
		until := now.Add(max(hold, r.Reset))
		nr.Until = until.UnixMilli()
		raw, err := json.Marshal(nr)
		if err != nil {
			return out, fmt.Errorf("encoding the meter row: %w", err)
		}
		ttl := max(int64((until.Sub(now)+time.Second-1)/time.Second), 1)
		// A new limit is written only over the row this answer read (or
		// none), so of several workers reporting the change at once one
		// starts it (and annotates it); a restatement writes over any.
		po := queen.PutOpts{TTLSeconds: ttl}
		if out.Started {
			po.Expect = queen.Int(prevVersion)
		}
		putAt = len(ops)
		ops = append(ops, queen.KVPut(l.NS, mk, raw, po))
		row = &nr
		out.Row = &nr
		out.Note = nr.Sentence()
	case prev != nil:
		out.Note = prev.Sentence()
	default:
		out.Note = "the vendor stated no limit; Gate keeps what is declared"
	}
	if row != nil {
		out.Ceiling = row.Ceiling(widest, b.Count)
		out.Lowered = out.Ceiling < widest
	}
	out.Counter = cur.Value
	// A counter with no live window is only started when the vendor's
	// window lasts at least half a sub-window more: a late answer about a
	// window that is nearly over must not hold Gate's next one.
	fresh := cur.Found || !r.HasReset || 2*r.Reset >= time.Duration(max(b.WindowSubSeconds, 1))*time.Second
	if r.HasRemaining && !cur.NotANumber && fresh {
		target := max(out.Ceiling-r.Remaining, 0)
		if target > cur.Value {
			ops = append(ops, queen.KVIncr(l.NS, b.Key, target-cur.Value, queen.IncrOpts{TTLSeconds: max(b.WindowSubSeconds, 1), Max: queen.Int(target)}))
		}
	}
	if len(ops) == 0 {
		return out, nil
	}
	res, err := l.KV.KV(ctx, ops...)
	if err == nil && len(res.Results) != len(ops) {
		err = fmt.Errorf("the broker answered %d results for %d ops", len(res.Results), len(ops))
	}
	if err != nil {
		return out, fmt.Errorf("%w: writing the vendor meter of budget %q: %w", ErrCall, b.ID, err)
	}
	if putAt >= 0 && !res.Results[putAt].Applied {
		// Another answer wrote the row first: it stands, and this one
		// started nothing.
		out.Started = false
	}
	last := res.Results[len(res.Results)-1]
	if last.Op == queen.OpIncr && last.Applied {
		if v, err := last.Int64(); err == nil {
			out.RaisedTo = v
		}
	}
	return out, nil
}

// ReadMeters reads the meter rows of keys in one getMany; absent and
// malformed rows are absent from the map.
func ReadMeters(ctx context.Context, kv KV, ns string, keys []string) (map[string]MeterRow, error) {
	keys = dedupe(keys)
	out := make(map[string]MeterRow, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := getMany(ctx, kv, ns, keys)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %d vendor meter rows: %w", ErrCall, len(keys), err)
	}
	for _, row := range rows {
		var m MeterRow
		if json.Unmarshal(row.Value, &m) == nil && m.Limit > 0 {
			out[row.Key] = m
		}
	}
	return out, nil
}

// Meters is one relay's copy of the vendor meter rows of the budgets its
// stages charge, re-read at most every MeterRefresh by the claim that
// finds it stale. Safe for concurrent use; the zero value is not usable —
// build it with NewMeters.
type Meters struct {
	kv    KV
	ns    string
	clock clock.Clock
	every time.Duration

	mu      sync.Mutex
	keys    map[string]bool
	rows    map[string]MeterRow
	read    time.Time
	reading bool
}

// NewMeters returns a relay's meter cache over kv namespace ns; every ≤ 0
// is MeterRefresh, a nil clock the wall clock.
func NewMeters(kv KV, ns string, c clock.Clock, every time.Duration) *Meters {
	if every <= 0 {
		every = MeterRefresh
	}
	return &Meters{kv: kv, ns: ns, clock: clock.Or(c), every: every, keys: map[string]bool{}, rows: map[string]MeterRow{}}
}

// Ceiling is the effective ceiling of a path whose plan ceiling on the
// mirrored budget b is planCeiling: lowered by the budget's live meter
// row, never raised. A budget that mirrors nothing is the plan's ceiling;
// a failed read keeps the last rows known for another period.
func (m *Meters) Ceiling(ctx context.Context, b *plan.Budget, planCeiling int64) int64 {
	if m == nil || b.VendorMeter == nil {
		return planCeiling
	}
	key := b.VendorMeter.Key
	now := m.clock.Now()
	m.mu.Lock()
	if !m.keys[key] {
		m.keys[key] = true
		m.read = time.Time{} // a new key is read at once
	}
	stale := !m.reading && now.Sub(m.read) >= m.every
	var keys []string
	if stale {
		m.reading = true
		keys = make([]string, 0, len(m.keys))
		for k := range m.keys {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	if stale {
		rows, err := ReadMeters(ctx, m.kv, m.ns, keys)
		m.mu.Lock()
		m.reading = false
		// A failed read keeps the last rows and waits a period before the
		// next try, so a broker in trouble is not asked on every claim.
		m.read = now
		if err == nil {
			m.rows = rows
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	row, ok := m.rows[key]
	m.mu.Unlock()
	if !ok || row.Until <= now.UnixMilli() {
		return planCeiling
	}
	return row.Ceiling(planCeiling, b.Count)
}
