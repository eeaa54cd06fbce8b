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
//
// Against a table nothing changes between the loop's tries but the tries
// themselves, so the loop's course follows from one reading of the
// window's counters: AdmitRuns takes that reading, works out the answer
// and what the tries and refunds leave on the table, and makes only those
// changes (judge). A window outside what the reading can follow (an item
// of negative cost, a counter below zero) runs the loop itself.
func (t *Table) AdmitRuns(b *Batch, runs []Run, now time.Time) Admission {
	items, charges, negative := 0, false, false
	for _, r := range runs {
		if r.N <= 0 {
			continue
		}
		items += r.N
		charges = charges || len(r.Counters) > 0
		negative = negative || r.Cost < 0
	}
	if !charges {
		return Admission{N: items}
	}
	var a Admission
	if !t.ByLoop && t.judge(&a, b, runs, items, negative, now) {
		return a
	}
	t.loops++
	return t.admitLoop(b, runs, items, now)
}

// admitLoop is AdmitRuns by the admission loop itself: each try charges
// the table, a refused one is read back and refunded, and the prefix that
// fits the reading is tried next.
func (t *Table) admitLoop(b *Batch, runs []Run, items int, now time.Time) Admission {
	ms := now.UnixMilli()
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

// judge is the admission loop over runs worked out from one reading of
// the counters at now, its answer left in a; it reports false, with the
// table and a unchanged, for a window it cannot follow (the loop then runs
// itself).
//
// With every counter read as cur (its live value, 0 when absent or
// expired) and the window's whole cost per counter as d:
//
//   - every counter has room (cur + d ≤ Max): the first try applies and is
//     the answer, as the loop's — its charges are the only change;
//   - otherwise the first try is refused by the counters without room. Its
//     applied incrs are refunded to cur, so each counter reads as before,
//     except that a counter with room whose row was absent or expired now
//     holds an empty window opened at now (the incr created it, the
//     refund kept its TTL). The refused try's reading gives each charged
//     counter max(0, Max − cur) of room, the prefix that fits it is tried
//     next and, since the counters read as they did, applies whenever it
//     is not empty; one refusal, the prefix admitted.
//
// That last step rests on costs ≥ 0 (a prefix then charges no counter
// more than the whole window, and none the window left alone) and values
// ≥ 0 (a refund's guard of max(Post − d, 0) is then cur); a window without
// them, or a prefix that would not apply after all, is left to the loop.
func (t *Table) judge(a *Admission, b *Batch, runs []Run, items int, negative bool, now time.Time) bool {
	ms := now.UnixMilli()
	k := len(b.Counters)
	ch := &t.scratch[0]
	ch.Delta = resize(ch.Delta, k)
	d := ch.Delta
	addRunDeltas(d, runs, items)
	// cur and read are only written and read for the counters the window
	// charges (d > 0), so they are not cleared.
	t.cur, t.read = grow(t.cur, k), grow(t.read, k)
	cur, read := t.cur, t.read
	fits := true
	for i, di := range d {
		if di <= 0 {
			continue
		}
		r := t.rowOf(b, i)
		read[i], cur[i] = r, 0
		if r != nil && ms < r.expires {
			cur[i] = r.value
		}
		if cur[i]+di > b.Counters[i].Max {
			fits = false
		}
	}
	if fits {
		for i, di := range d {
			if di > 0 {
				t.add(b, i, read[i], di, ms)
			}
		}
		ch.N = items
		a.N, a.Delta = items, d
		return true
	}
	if negative {
		return false
	}
	// The refused try's reading: room max(0, Max − cur) on each charged
	// counter; a counter it did not charge is not read (unlimited).
	remaining := resize(t.remaining, k)
	t.remaining = remaining
	for i, di := range d {
		switch {
		case di <= 0:
			remaining[i] = math.MaxInt64
		case cur[i] < 0:
			return false
		default:
			remaining[i] = max(0, b.Counters[i].Max-cur[i])
		}
	}
	n := min(t.fitRuns(remaining, runs, k), items)
	next := &t.scratch[1]
	if n > 0 {
		next.Delta = resize(next.Delta, k)
		addRunDeltas(next.Delta, runs, n)
		for i, di := range next.Delta {
			if di > 0 && (d[i] <= 0 || cur[i]+di > b.Counters[i].Max) {
				return false
			}
		}
	}
	// The loop's course is known: make its changes and give its answer.
	refused := t.refused[:0]
	// A refused counter's wait is its window end less now, computed from
	// whole milliseconds: now's part below its millisecond (ms is now
	// rounded down) is taken off.
	below := time.Duration(now.Nanosecond() % int(time.Millisecond))
	for i, di := range d {
		if di <= 0 {
			continue
		}
		r := read[i]
		live := r != nil && ms < r.expires
		if cur[i]+di > b.Counters[i].Max {
			refused = append(refused, i)
			if live {
				a.Wait = max(a.Wait, time.Duration(r.expires-ms)*time.Millisecond-below)
			}
			continue
		}
		if !live {
			// The first try's incr, then its refund: an empty window
			// opened at now.
			t.incrOf(b, i, 0, 0, 0, ms)
		}
	}
	t.refused = refused
	a.Refused, a.RefusedCounters = b.Counters[refused[0]].BudgetID, refused
	if n > 0 {
		for i, di := range next.Delta {
			if di > 0 {
				t.add(b, i, t.rowOf(b, i), di, ms)
			}
		}
		next.N = n
		a.N, a.Delta = n, next.Delta
	}
	return true
}

// add applies counter i's incr of d at ms, known to fit its ceiling, on
// r, its row (nil when the table has none yet): incrOf's applied branch.
func (t *Table) add(b *Batch, i int, r *tableRow, d, ms int64) {
	if r == nil {
		t.incrOf(b, i, d, math.MinInt64, b.Counters[i].Max, ms)
		return
	}
	if ms >= r.expires {
		r.value, r.expires = 0, ms+max(b.Counters[i].TTLSeconds, 1)*1000
	}
	r.value += d
}

// addRunDeltas adds the summed cost of the first n items of runs to d, per
// counter. Runs over one counter list (a replay's claim: one list for all
// its runs) are summed first and added once; integer sums do not depend
// on their order, so d is the same as added run by run.
func addRunDeltas(d []int64, runs []Run, n int) {
	var sum int64
	var counters []int
	for _, r := range runs {
		if n <= 0 {
			break
		}
		if r.N <= 0 {
			continue
		}
		k := min(r.N, n)
		n -= k
		if !sameCounters(r.Counters, counters) {
			for _, c := range counters {
				d[c] += sum
			}
			sum, counters = 0, r.Counters
		}
		sum += r.Cost * int64(k)
	}
	for _, c := range counters {
		d[c] += sum
	}
}

// sameCounters reports whether a and b are one counter list (the same
// slice).
func sameCounters(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// prefixRuns is Prefix over runs: how many leading items fit the counters
// as the charge c read them.
func (t *Table) prefixRuns(b *Batch, runs []Run, c *Charge) int {
	k := len(b.Counters)
	t.remaining = remainingInto(resize(t.remaining, k), b, c)
	return t.fitRuns(t.remaining, runs, k)
}

// fitRuns is how many leading items of runs fit remaining (room per
// counter, math.MaxInt64 unlimited), as Prefix walks them.
func (t *Table) fitRuns(remaining []int64, runs []Run, k int) int {
	t.acc = resize(t.acc, k)
	n := 0
	for _, r := range runs {
		if r.N <= 0 {
			continue
		}
		fit := fitRun(remaining, t.acc, r.Cost, r.Counters, int64(r.N))
		n += int(fit)
		if fit < int64(r.N) {
			return n
		}
	}
	return n
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
