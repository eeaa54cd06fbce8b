package budget

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestAdmitRunsIsAdmitOfTheSameItems drives two tables through thousands
// of windows, one judged item by item (Admit over a batch built with AddN)
// and one as runs (AdmitRuns): every answer — items admitted, refusing
// budget and counters, wait, the cost charged per counter — and every
// counter afterwards must be the same, so a replay that uses runs admits
// exactly what the relay's arithmetic admits.
func TestAdmitRunsIsAdmitOfTheSameItems(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			type ctr struct {
				key      string
				max, ttl int64
				id       string
			}
			ctrs := []ctr{
				{"second", 1 + rnd.Int64N(60), 1, "second"},
				{"minute", 20 + rnd.Int64N(400), 60, "minute"},
				{"shared", 10 + rnd.Int64N(200), 10, "ip"},
				{"zero", 0, 1, "closed"},
			}
			var items, runs Table
			var bi, br Batch
			now := time.UnixMilli(1_700_000_000_000)
			for w := range 3000 {
				bi.Reset()
				br.Reset()
				var idx []int
				for _, c := range ctrs {
					idx = append(idx, bi.Counter(c.key, c.max, c.ttl, c.id))
					br.Counter(c.key, c.max, c.ttl, c.id)
				}
				var rs []Run
				for range 1 + rnd.IntN(4) {
					// A run touches a subset of the counters (the closed
					// one rarely), some runs cost nothing, some are empty.
					var cs []int
					for k := range 3 {
						if rnd.IntN(3) > 0 {
							cs = append(cs, idx[k])
						}
					}
					if rnd.IntN(50) == 0 {
						cs = append(cs, idx[3])
					}
					r := Run{Cost: rnd.Int64N(4), N: rnd.IntN(30), Counters: cs}
					rs = append(rs, r)
					bi.AddN(r.Cost, r.Counters, r.N)
				}
				ai := items.Admit(&bi, now)
				ar := runs.AdmitRuns(&br, rs, now)
				if ai.N != ar.N || ai.Refused != ar.Refused || ai.Wait != ar.Wait ||
					!slices.Equal(ai.RefusedCounters, ar.RefusedCounters) || !slices.Equal(ai.Delta, ar.Delta) {
					t.Fatalf("window %d at %d: items %+v, runs %+v (runs %+v)", w, now.UnixMilli(), ai, ar, rs)
				}
				for _, c := range ctrs {
					vi, ei, oki := items.Value(c.key, now)
					vr, er, okr := runs.Value(c.key, now)
					if vi != vr || !ei.Equal(er) || oki != okr {
						t.Fatalf("window %d: counter %s reads %d (%v) after Admit, %d (%v) after AdmitRuns", w, c.key, vi, ei, vr, er)
					}
				}
				now = now.Add(time.Duration(rnd.IntN(400)) * time.Millisecond)
			}
		})
	}
}

// TestAdmitRunsCutsAtTheFirstItemThatDoesNotFit: a prefix, never a
// subset — a cheap run after an expensive one that does not fit waits.
func TestAdmitRunsCutsAtTheFirstItemThatDoesNotFit(t *testing.T) {
	var tb Table
	var b Batch
	c := b.Counter("k", 10, 1, "second")
	now := time.UnixMilli(1_000_000)
	if a := tb.AdmitRuns(&b, []Run{{Cost: 1, N: 1, Counters: []int{c}}}, now); a.N != 1 {
		t.Fatalf("one item of cost 1 under a ceiling of 10: admitted %d", a.N)
	}
	now = now.Add(200 * time.Millisecond)
	a := tb.AdmitRuns(&b, []Run{{Cost: 3, N: 2, Counters: []int{c}}, {Cost: 5, N: 1, Counters: []int{c}}, {Cost: 1, N: 4, Counters: []int{c}}}, now)
	if a.N != 2 || a.Refused != "second" || a.Delta[c] != 6 {
		t.Fatalf("admitted %d (refused %q, charged %v); want the two items of cost 3, refused by second, 6 charged", a.N, a.Refused, a.Delta)
	}
	if v, _, _ := tb.Value("k", now); v != 7 {
		t.Fatalf("counter reads %d after the admission, want 7", v)
	}
	if a.Wait != 800*time.Millisecond {
		t.Fatalf("wait %v, want the 800 ms left of the window", a.Wait)
	}
	if a := tb.AdmitRuns(&b, []Run{{Cost: 1, N: 3, Counters: nil}}, now); a.N != 3 || a.Refused != "" {
		t.Fatalf("runs that charge nothing: admitted %d (refused %q), want all 3", a.N, a.Refused)
	}
}

// TestAdmitRunsWholeWindowsAsTheLoop drives stages that mostly fit (the
// claims AdmitRuns admits without the loop's reading) and sometimes do
// not, several batches sharing keys on one table and windows expiring
// under them, against a reference: the same batches as items through
// Admit, which always runs the loop. Every answer, every counter and every
// window end must agree.
func TestAdmitRunsWholeWindowsAsTheLoop(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			keys := []string{"a", "b", "c", "d", "e"}
			type stage struct {
				runs, ref Batch
				idx       []int
			}
			stages := make([]stage, 3)
			for s := range stages {
				for _, k := range keys {
					if rnd.IntN(2) == 0 {
						continue
					}
					// Ceilings wide enough that most claims fit whole.
					max, ttl := 20+rnd.Int64N(300), 1+rnd.Int64N(5)
					stages[s].idx = append(stages[s].idx, stages[s].runs.Counter(k, max, ttl, "b-"+k))
					stages[s].ref.Counter(k, max, ttl, "b-"+k)
				}
			}
			var fast, ref Table
			now := time.UnixMilli(1_800_000_000_000)
			whole := 0
			for w := range 4000 {
				s := &stages[rnd.IntN(len(stages))]
				s.ref.ClearItems()
				var rs []Run
				items := 0
				for range rnd.IntN(4) {
					var cs []int
					for _, c := range s.idx {
						if rnd.IntN(4) > 0 {
							cs = append(cs, c)
						}
					}
					r := Run{Cost: rnd.Int64N(3), N: rnd.IntN(12) - 1, Counters: cs}
					rs = append(rs, r)
					s.ref.AddN(r.Cost, r.Counters, r.N)
					items += max(r.N, 0)
				}
				ar := fast.AdmitRuns(&s.runs, rs, now)
				ai := ref.Admit(&s.ref, now)
				if ai.N != ar.N || ai.Refused != ar.Refused || ai.Wait != ar.Wait ||
					!slices.Equal(ai.RefusedCounters, ar.RefusedCounters) || !slices.Equal(ai.Delta, ar.Delta) {
					t.Fatalf("window %d at %d: reference %+v, runs %+v (runs %+v)", w, now.UnixMilli(), ai, ar, rs)
				}
				if ar.N == items && items > 0 {
					whole++
				}
				for i, c := range s.runs.Counters {
					vr, er, okr := fast.Value(c.Key, now)
					vi, ei, oki := ref.Value(c.Key, now)
					if vi != vr || !ei.Equal(er) || oki != okr {
						t.Fatalf("window %d: counter %s reads %d (%v) after Admit, %d (%v) after AdmitRuns", w, c.Key, vi, ei, vr, er)
					}
					end, ok := fast.CounterEnd(&s.runs, i, now.UnixMilli())
					if ok != okr || (ok && end != er.UnixMilli()) {
						t.Fatalf("window %d: CounterEnd of %s is %d (%v), Value's end %v (%v)", w, c.Key, end, ok, er, okr)
					}
				}
				now = now.Add(time.Duration(rnd.IntN(300)) * time.Millisecond)
			}
			if whole < 1000 || whole > 3900 {
				t.Fatalf("%d of 4000 windows admitted whole: the test should exercise both the whole and the cut windows", whole)
			}
		})
	}
}

// TestAdmitRunsOneReadingIsTheLoop judges windows that are mostly refused
// and cut three ways on three tables: AdmitRuns (one reading of the
// counters), the same runs through the admission loop itself (admitLoop,
// every try charged, read back and refunded) and, as the independent
// reference, the items through Admit. Stages share keys at different
// ceilings (a counter can read above a stage's own ceiling), some ceilings
// are zero, time often lands exactly on a window's end, some runs cost
// nothing and a few cost less than nothing, and the tables forget expired
// rows now and then. Every answer — items admitted, the refusing budget
// and counters, the wait, the cost charged — and every counter's value and
// window end must agree after every window.
func TestAdmitRunsOneReadingIsTheLoop(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 23))
			keys := []string{"a", "b", "c", "d"}
			type stage struct {
				fast, loop, ref Batch
				idx             []int
			}
			stages := make([]stage, 4)
			for s := range stages {
				for _, k := range keys {
					if rnd.IntN(3) == 0 {
						continue
					}
					max, ttl := rnd.Int64N(40), rnd.Int64N(4)
					if rnd.IntN(10) == 0 {
						max = 0
					}
					stages[s].idx = append(stages[s].idx, stages[s].fast.Counter(k, max, ttl, "b-"+k))
					stages[s].loop.Counter(k, max, ttl, "b-"+k)
					stages[s].ref.Counter(k, max, ttl, "b-"+k)
				}
			}
			var fast, loop, ref Table
			now := time.UnixMilli(1_900_000_000_000)
			cut := 0
			const windows = 3000
			for w := range windows {
				s := &stages[rnd.IntN(len(stages))]
				s.ref.ClearItems()
				var rs []Run
				items := 0
				for range rnd.IntN(4) {
					var cs []int
					for _, c := range s.idx {
						if rnd.IntN(4) > 0 {
							cs = append(cs, c)
						}
					}
					cost := rnd.Int64N(6)
					if rnd.IntN(200) == 0 {
						cost = -1
					}
					r := Run{Cost: cost, N: rnd.IntN(15) - 1, Counters: cs}
					rs = append(rs, r)
					s.ref.AddN(r.Cost, r.Counters, r.N)
					items += max(r.N, 0)
				}
				af := fast.AdmitRuns(&s.fast, rs, now)
				al := loop.admitLoop(&s.loop, rs, items, now)
				ai := ref.Admit(&s.ref, now)
				for _, x := range []struct {
					name string
					a    Admission
				}{{"the loop over runs", al}, {"Admit of the items", ai}} {
					if x.name == "the loop over runs" && !chargesAny(rs) {
						continue
					}
					if af.N != x.a.N || af.Refused != x.a.Refused || af.Wait != x.a.Wait ||
						!slices.Equal(af.RefusedCounters, x.a.RefusedCounters) || !slices.Equal(af.Delta, x.a.Delta) {
						t.Fatalf("window %d at %d: one reading %+v, %s %+v (runs %+v)", w, now.UnixMilli(), af, x.name, x.a, rs)
					}
				}
				if af.Refused != "" {
					cut++
				}
				for _, k := range keys {
					vf, ef, okf := fast.Value(k, now)
					vl, el, okl := loop.Value(k, now)
					vi, ei, oki := ref.Value(k, now)
					if vf != vi || !ef.Equal(ei) || okf != oki || vl != vi || !el.Equal(ei) || okl != oki {
						t.Fatalf("window %d: counter %s reads %d until %v (%v) after one reading, %d until %v (%v) after the loop, %d until %v (%v) after Admit",
							w, k, vf, ef, okf, vl, el, okl, vi, ei, oki)
					}
				}
				// Steps of whole seconds land on window ends.
				step := time.Duration(rnd.IntN(3)) * time.Second
				if rnd.IntN(2) == 0 {
					step = time.Duration(rnd.IntN(700)) * time.Millisecond
				}
				if rnd.IntN(8) == 0 {
					// A clock below the millisecond: the table judges whole
					// milliseconds, a wait counts from now itself.
					step += time.Duration(rnd.IntN(1_000_000))
				}
				now = now.Add(step)
				if rnd.IntN(100) == 0 {
					fast.Forget(now)
					loop.Forget(now)
					ref.Forget(now)
				}
			}
			if cut < windows/4 {
				t.Fatalf("%d of %d windows refused: the test should exercise the cut windows", cut, windows)
			}
			if fast.loops > windows/20 {
				t.Fatalf("%d of %d windows ran the loop: the one reading should judge nearly all of them", fast.loops, windows)
			}
		})
	}
}

// chargesAny reports whether a window of runs charges any counter
// (AdmitRuns admits one that does not without the loop).
func chargesAny(runs []Run) bool {
	for _, r := range runs {
		if r.N > 0 && len(r.Counters) > 0 {
			return true
		}
	}
	return false
}
