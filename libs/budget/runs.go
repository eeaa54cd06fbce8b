package budget

import "time"

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
	var a Admission
	tries, ms := 0, now.UnixMilli()
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
