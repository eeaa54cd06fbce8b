package budget

import (
	"math"
	"time"
)

// Table is an in-memory model of the broker's kv counters, for judging
// admission offline (the simulation routes replay recorded traffic
// through it). It follows the broker facts the Limiter relies on: an incr
// applies only when the resulting value passes its guards, a refused incr
// leaves the row alone and reports the current value, the TTL is applied
// only when the row is created, and an expired row reads as 0 and is
// created afresh by the next applied incr. Times are whole milliseconds.
//
// A Table is not safe for concurrent use; the zero value is empty.
type Table struct {
	// ByLoop makes AdmitRuns run the admission loop itself for every
	// window — each try charged, read back and refunded — instead of
	// working its course out from one reading of the counters. The answers
	// and charges are the same; a replay sets it only to check that.
	ByLoop bool

	rows map[string]*tableRow
	// scratch backs the charges Admit makes (they do not escape it), and
	// refused the refused counters of its answer.
	scratch [2]Charge
	refused []int
	// remaining and acc are AdmitRuns' prefix scratch; cur and read its
	// reading of a window's counters (value and row, by counter).
	remaining, acc, cur []int64
	read                []*tableRow
	// gen counts the Forgets that dropped rows: a Batch's remembered rows
	// from an earlier gen are looked up again.
	gen uint64
	// loops counts the windows AdmitRuns judged with the admission loop
	// itself, not in one reading (tests check the reading is taken).
	loops int
}

type tableRow struct {
	key     string
	value   int64
	expires int64 // epoch ms
}

func (t *Table) live(key string, nowMs int64) (*tableRow, bool) {
	r, ok := t.rows[key]
	if !ok || nowMs >= r.expires {
		return nil, false
	}
	return r, true
}

// rowOf is the row of counter i of b (nil when the table has none yet),
// remembered in b for the next call.
func (t *Table) rowOf(b *Batch, i int) *tableRow {
	// A remembered row is the counter's: rows are only ever dropped by
	// Forget (which moves gen on) and b's counters only by Reset (which
	// drops the remembered rows).
	if b.rowsOf == t && b.rowsGen == t.gen && i < len(b.rows) && b.rows[i] != nil {
		return b.rows[i]
	}
	return t.lookUpRow(b, i)
}

// lookUpRow is rowOf's look-up in the table, remembering the row in b.
func (t *Table) lookUpRow(b *Batch, i int) *tableRow {
	if b.rowsOf != t || b.rowsGen != t.gen {
		b.rows, b.rowsOf, b.rowsGen = b.rows[:0], t, t.gen
	}
	r := t.rows[b.Counters[i].Key]
	if r != nil {
		for len(b.rows) <= i {
			b.rows = append(b.rows, nil)
		}
		b.rows[i] = r
	}
	return r
}

// liveOf is live for counter i of b.
func (t *Table) liveOf(b *Batch, i int, nowMs int64) (*tableRow, bool) {
	r := t.rowOf(b, i)
	if r == nil || nowMs >= r.expires {
		return nil, false
	}
	return r, true
}

// incrOf is incr for counter i of b, through b's remembered rows.
func (t *Table) incrOf(b *Batch, i int, delta, lo, hi, nowMs int64) (bool, int64) {
	if t.rowOf(b, i) == nil {
		return t.incr(b.Counters[i].Key, delta, lo, hi, b.Counters[i].TTLSeconds, nowMs)
	}
	r := t.rowOf(b, i)
	var cur int64
	live := nowMs < r.expires
	if live {
		cur = r.value
	}
	next := cur + delta
	if next < lo || next > hi {
		return false, cur
	}
	if !live {
		r.expires = nowMs + max(b.Counters[i].TTLSeconds, 1)*1000
	}
	r.value = next
	return true, next
}

// incr applies delta to key at nowMs when the result lies in [lo, hi]; it
// returns whether it applied and the value after (applied) or the current
// value (refused).
func (t *Table) incr(key string, delta, lo, hi, ttlSeconds, nowMs int64) (bool, int64) {
	var cur int64
	r, live := t.live(key, nowMs)
	if live {
		cur = r.value
	}
	next := cur + delta
	if next < lo || next > hi {
		return false, cur
	}
	if live {
		r.value = next
		return true, next
	}
	// An expired row is created afresh: its value and TTL replaced in
	// place (a replay rotates every counter's window thousands of times).
	if old, ok := t.rows[key]; ok {
		old.value, old.expires = next, nowMs+max(ttlSeconds, 1)*1000
		return true, next
	}
	if t.rows == nil {
		t.rows = make(map[string]*tableRow)
	}
	t.rows[key] = &tableRow{key: key, value: next, expires: nowMs + max(ttlSeconds, 1)*1000}
	return true, next
}

// Forget drops the rows whose window has ended at now and returns how
// many it dropped: an expired row reads as 0 and the next applied incr
// creates it afresh, so no judgement after now changes; only the memory
// of keys seen once (a replay of many scope values) is given back. A
// Batch judged against t before looks its counters' rows up afresh the
// next time (it remembers rows, and a dropped row is no longer t's).
func (t *Table) Forget(now time.Time) int {
	ms := now.UnixMilli()
	n := 0
	for k, r := range t.rows {
		if ms >= r.expires {
			delete(t.rows, k)
			n++
		}
	}
	if n > 0 {
		t.gen++
	}
	return n
}

// Charge charges the first n items of b at now, as Limiter.Charge does
// against the broker: one incr with max = the counter's ceiling per
// counter with a non-zero delta, then a read of every charged counter.
func (t *Table) Charge(b *Batch, n int, now time.Time) *Charge {
	return t.charge(&Charge{}, b, n, now)
}

// charge is Charge into c, reusing its slices.
func (t *Table) charge(c *Charge, b *Batch, n int, now time.Time) *Charge {
	n = min(max(n, 0), len(b.Items))
	t.prepare(c, b, n)
	b.addDeltas(c.Delta, 0, n)
	return t.apply(c, b, now)
}

// prepare sizes c for a charge of n items of b, every slice zero.
func (t *Table) prepare(c *Charge, b *Batch, n int) {
	k := len(b.Counters)
	c.N = n
	c.Delta = resize(c.Delta, k)
	c.Applied = resize(c.Applied, k)
	c.Post = resize(c.Post, k)
	c.PostKnown = resize(c.PostKnown, k)
	c.State = resize(c.State, k)
}

// apply sends the incrs of c.Delta and reads the charged counters back.
func (t *Table) apply(c *Charge, b *Batch, now time.Time) *Charge {
	ms := now.UnixMilli()
	t.incrAll(c, b, ms)
	t.readBack(c, b, ms)
	return c
}

// incrAll sends the incrs of c.Delta.
func (t *Table) incrAll(c *Charge, b *Batch, ms int64) {
	for i, d := range c.Delta {
		if d <= 0 {
			continue
		}
		ok, v := t.incrOf(b, i, d, math.MinInt64, b.Counters[i].Max, ms)
		c.Applied[i] = ok
		if ok {
			c.Post[i], c.PostKnown[i] = v, true
		}
	}
}

// readBack reads every counter c charged into c.State (the getMany after
// the incrs).
func (t *Table) readBack(c *Charge, b *Batch, ms int64) {
	for i, d := range c.Delta {
		if d <= 0 {
			continue
		}
		if r, ok := t.liveOf(b, i, ms); ok {
			c.State[i] = State{Value: r.value, ExpiresAt: time.UnixMilli(r.expires), Known: true}
		} else {
			c.State[i] = State{Value: 0, Known: true}
		}
	}
}

// grow returns s with length k, its elements as they were (zero when
// new).
func grow[T any](s []T, k int) []T {
	if cap(s) < k {
		return make([]T, k)
	}
	return s[:k]
}

// resize returns s with length k, every element zero.
func resize[T any](s []T, k int) []T {
	if cap(s) < k {
		return make([]T, k)
	}
	s = s[:k]
	clear(s)
	return s
}

// Refund sends guarded give-backs as Limiter.Refund does: each applies
// only while the counter still reads exactly what its charge left.
func (t *Table) Refund(refunds []Refund, now time.Time) RefundReport {
	var rep RefundReport
	ms := now.UnixMilli()
	for _, r := range refunds {
		guard := max(r.Post-r.Delta, 0)
		if ok, _ := t.incr(r.Counter.Key, -r.Delta, guard, guard, r.Counter.TTLSeconds, ms); ok {
			rep.Applied++
		} else {
			rep.Refused++
		}
	}
	return rep
}

// Value is a counter as a getMany would read it at now: its value and
// window end, ok false when the row is absent or expired.
func (t *Table) Value(key string, now time.Time) (value int64, expiresAt time.Time, ok bool) {
	r, live := t.live(key, now.UnixMilli())
	if !live {
		return 0, time.Time{}, false
	}
	return r.value, time.UnixMilli(r.expires), true
}

// CounterValue is Value for counter i of b (the row remembered in b).
func (t *Table) CounterValue(b *Batch, i int, now time.Time) (value int64, expiresAt time.Time, ok bool) {
	r, live := t.liveOf(b, i, now.UnixMilli())
	if !live {
		return 0, time.Time{}, false
	}
	return r.value, time.UnixMilli(r.expires), true
}

// Admission is what one window's admission came to.
type Admission struct {
	// N is the number of leading items admitted (and charged).
	N int
	// Refused is the budget id of the first counter that refused the whole
	// window ("" when nothing refused): the relay's lastRefusal.
	Refused string
	// RefusedCounters are the indices of the counters that refused the
	// whole window (valid until the next Admit on the table).
	RefusedCounters []int
	// Wait is how long until every refused counter opens a new window
	// (Wait of the refusing charge); 0 when nothing refused.
	Wait time.Duration
	// Delta is, per counter of the batch, the cost the admitted prefix
	// charged (nil when nothing was charged). It is valid until the next
	// Admit on the table.
	Delta []int64
}

// Admit runs one window of b through the admission loop (AdmitRound) at
// now, the table standing in for the broker: a try charges its prefix,
// and a refusal is refunded before the prefix that fits is tried. The
// result says how many leading items hold a charge; a window that charges
// no counter is admitted whole.
func (t *Table) Admit(b *Batch, now time.Time) Admission {
	items := len(b.Items)
	if !b.Charges() {
		return Admission{N: items}
	}
	var a Admission
	tries := 0
	try := func(n int) (*Charge, error) {
		// The first refusal is kept for the answer (it names the refusing
		// budget and the wait); later tries reuse the other buffer.
		ch := t.charge(&t.scratch[min(tries, 1)], b, n, now)
		tries++
		if ch.OK() {
			a.N, a.Delta = n, ch.Delta
			return nil, nil
		}
		t.refundAll(ch, b, now)
		return ch, nil
	}
	first := true
	AdmitRound(b, items, try, func(ch *Charge) {
		if first {
			first = false
			refused := ch.refusedInto(t.refused[:0])
			t.refused = refused
			a.Refused, a.RefusedCounters, a.Wait = b.Counters[refused[0]].BudgetID, refused, waitFor(ch, refused, now)
		}
	})
	return a
}

// refundAll gives back everything a refused charge applied, as
// Refund(ch.Refunds(b, 0)) does, without building the list.
func (t *Table) refundAll(ch *Charge, b *Batch, now time.Time) {
	ms := now.UnixMilli()
	for i, d := range ch.Delta {
		if d <= 0 || !ch.Applied[i] || !ch.PostKnown[i] {
			continue
		}
		guard := max(ch.Post[i]-d, 0)
		t.incrOf(b, i, -d, guard, guard, ms)
	}
}

// AddN appends n items of one cost touching the same counters (as n calls
// of Add would, sharing one copy of the deduplicated counter list).
func (b *Batch) AddN(cost int64, counters []int, n int) {
	if n <= 0 {
		return
	}
	b.Add(cost, counters)
	ref := b.Items[len(b.Items)-1].Counters
	for range n - 1 {
		b.Items = append(b.Items, Item{Cost: cost, Counters: ref})
	}
}

// ClearItems drops b's items and keeps its counters (and their indices),
// for a window over the same counters.
func (b *Batch) ClearItems() {
	b.Items = b.Items[:0]
	b.refs = b.refs[:0]
}

// Reset empties b for reuse, keeping its storage.
func (b *Batch) Reset() {
	b.rows = b.rows[:0]
	b.Counters = b.Counters[:0]
	b.Items = b.Items[:0]
	b.refs = b.refs[:0]
	clear(b.index)
}
