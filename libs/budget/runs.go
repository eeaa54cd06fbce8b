package budget

import (
	"math"
	"time"
)

// Run is N consecutive items of a window of one cost touching the same
// counters (indices into Batch.Counters, each at most once): what N calls
// of Batch.Add with those arguments describe, without one Item per item.
type Run struct {
	Cost     int64
	N        int
	Counters []int
}

// AdmitRuns is Admit for a window given as runs of identical items over
// b's counters (b.Items is not read): the same admission loop
// (AdmitRound's tries and prefixes), the same charges on the table and the
// same answer as Admit of a batch holding those items, in time that grows
// with the runs and counters, not the items. A replay uses it; the relay's
// stage judges real items and does not.
func (t *Table) AdmitRuns(b *Batch, runs []Run, now time.Time) Admission {
	items, charges := 0, false
	for _, r := range runs {
		if r.N <= 0 {
			continue
		}
		items += r.N
		charges = charges || len(r.Counters) > 0
	}
	if !charges {
		return Admission{N: items}
	}
	ms := now.UnixMilli()
	if t.admitWhole(b, runs, items, ms) {
		return Admission{N: items, Delta: t.scratch[0].Delta}
	}
	var a Admission
	tries := 0
	try := func(n int) (*Charge, error) {
		ch := &t.scratch[min(tries, 1)]
		t.prepare(ch, b, min(max(n, 0), items))
		addRunDeltas(ch.Delta, runs, ch.N)
		t.incrAll(ch, b, ms)
		tries++
		if ch.OK() {
			// An admitted try's reading is never looked at: skip it.
			a.N, a.Delta = ch.N, ch.Delta
			return nil, nil
		}
		t.readBack(ch, b, ms)
		t.refundAll(ch, b, now)
		return ch, nil
	}
	prefix := func(ch *Charge) int { return t.prefixRuns(b, runs, ch) }
	first := true
	admitRound(items, try, prefix, func(ch *Charge) {
		if first {
			first = false
			refused := ch.refusedInto(t.refused[:0])
			t.refused = refused
			a.Refused, a.RefusedCounters, a.Wait = b.Counters[refused[0]].BudgetID, refused, waitFor(ch, refused, now)
		}
	})
	return a
}

// addRunDeltas adds the summed cost of the first n items of runs to d, per
// counter.
func addRunDeltas(d []int64, runs []Run, n int) {
	for _, r := range runs {
		if n <= 0 {
			return
		}
		if r.N <= 0 {
			continue
		}
		k := min(r.N, n)
		for _, c := range r.Counters {
			d[c] += r.Cost * int64(k)
		}
		n -= k
	}
}

// prefixRuns is Prefix over runs: how many leading items fit the counters
// as the charge c read them.
func (t *Table) prefixRuns(b *Batch, runs []Run, c *Charge) int {
	k := len(b.Counters)
	t.remaining = remainingInto(resize(t.remaining, k), b, c)
	t.acc = resize(t.acc, k)
	n := 0
	for _, r := range runs {
		if r.N <= 0 {
			continue
		}
		fit := fitRun(t.remaining, t.acc, r.Cost, r.Counters, int64(r.N))
		n += int(fit)
		if fit < int64(r.N) {
			return n
		}
	}
	return n
}

// admitWhole is the admission loop's first try when it ends the window:
// it charges every item of runs at ms and reports true when each counter
// has room for its whole delta (the charge's Delta left in scratch[0], as
// the loop leaves it), and changes nothing and reports false otherwise, so
// that the loop, run from the start, finds the table as it was. A charge
// whose incrs all apply is the same whether its counters are judged before
// or while they are charged: the counters of a batch are distinct rows and
// an applied try's reading is never looked at. Most claims of a replay are
// admitted whole; this spares them the reading, the per-counter flags and
// the time conversions.
func (t *Table) admitWhole(b *Batch, runs []Run, items int, ms int64) bool {
	ch := &t.scratch[0]
	ch.Delta = resize(ch.Delta, len(b.Counters))
	addRunDeltas(ch.Delta, runs, items)
	// The rows looked up by the check are charged by the second pass
	// (a claim's few counters fit on the stack).
	var found [8]*tableRow
	for i, d := range ch.Delta {
		if d <= 0 {
			continue
		}
		var cur int64
		r := t.rowOf(b, i)
		if r != nil && ms < r.expires {
			cur = r.value
		}
		if cur+d > b.Counters[i].Max {
			return false
		}
		if i < len(found) {
			found[i] = r
		}
	}
	for i, d := range ch.Delta {
		if d <= 0 {
			continue
		}
		r := (*tableRow)(nil)
		if i < len(found) {
			r = found[i]
		}
		if r == nil {
			t.incrOf(b, i, d, math.MinInt64, b.Counters[i].Max, ms)
			continue
		}
		// incrOf's applied branch on the row the check read.
		if ms >= r.expires {
			r.value, r.expires = 0, ms+max(b.Counters[i].TTLSeconds, 1)*1000
		}
		r.value += d
	}
	ch.N = items
	return true
}

// CounterEnd is the window end (epoch ms) of counter i of b as a read at
// nowMs sees it, ok false when its row is absent or expired: CounterValue's
// expiry without the time conversions, for a replay reading it per claim.
func (t *Table) CounterEnd(b *Batch, i int, nowMs int64) (endMs int64, ok bool) {
	r, live := t.liveOf(b, i, nowMs)
	if !live {
		return 0, false
	}
	return r.expires, true
}
