package miniqueen

import (
	"math/rand/v2"
	"testing"
)

// TestFifoMatchesASlice drives the chunked queue with random pushes, pops
// and truncations and compares it with a plain slice.
func TestFifoMatchesASlice(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var f fifo[int]
	var ref []int
	next := 0
	for step := 0; step < 200000; step++ {
		switch op := r.IntN(10); {
		case op < 6:
			f.push(next)
			ref = append(ref, next)
			next++
		case op < 9 && len(ref) > 0:
			if got := *f.front(); got != ref[0] {
				t.Fatalf("step %d: front %d want %d", step, got, ref[0])
			}
			f.pop()
			ref = ref[1:]
		case len(ref) > 0:
			n := r.IntN(len(ref) + 1)
			f.truncate(n)
			ref = ref[:n]
		}
		if f.len() != len(ref) {
			t.Fatalf("step %d: len %d want %d", step, f.len(), len(ref))
		}
	}
}

// TestMsgLogMatchesASlice checks lookups, spans, front drops and undo
// truncation of the chunked message log.
func TestMsgLogMatchesASlice(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	var l msgLog
	var base, next int64
	for step := 0; step < 50000; step++ {
		switch op := r.IntN(10); {
		case op < 6:
			l.push(next, message{txn: string(rune(next % 1000))})
			next++
		case op < 8 && next > base:
			base += int64(r.IntN(int(next-base) + 1))
			l.dropBefore(base)
		case op == 8 && next > base:
			next = base + int64(r.IntN(int(next-base)+1))
			l.truncate(next)
		}
		if next > base {
			off := base + int64(r.IntN(int(next-base)))
			if got := l.at(off).txn; got != string(rune(off%1000)) {
				t.Fatalf("step %d: at(%d) = %q", step, off, got)
			}
			k := int64(r.IntN(int(next-off))) + 1
			for i, m := range l.span(off, k) {
				if m.txn != string(rune((off+int64(i))%1000)) {
					t.Fatalf("step %d: span(%d,%d)[%d] wrong", step, off, k, i)
				}
			}
		}
	}
}
