package observe

import (
	"iter"
	"sort"
	"unicode/utf8"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/shadow"
)

// Bounds of the keyed recording (a scoped or op-filtered shadow
// candidate's per-value counts).
const (
	// MaxKeyCells is the (second, scope, op) counts one stage buffers;
	// past it the oldest second's counts are dropped and its items are
	// judged without their values (approximate), never lost from the
	// totals.
	MaxKeyCells = 500_000
	// keyRowBytes bounds the entries of one keys row (well under the
	// broker's 64 KiB value cap).
	keyRowBytes = 48 << 10
)

// keyCell is one second's items of one recorded scope and op.
type keyCell struct {
	scope, op   string
	items, cost int64
}

// keySecond is one second's keyed counts of one stage: the counts per
// scope and op, and the overflow (items past the distinct-values cap, or
// with a value no key can hold). Once the second is complete its cells
// are cut into rows (chunks), and each row is forgotten once committed.
type keySecond struct {
	cells    map[string]*keyCell
	overflow [2]int64
	chunks   [][]*keyCell
	sealed   bool
	// done marks the chunks committed.
	done []bool
}

// appendKeyOf appends the map key of a scope and op.
func appendKeyOf(dst []byte, scope []byte, op string) []byte {
	dst = append(dst, scope...)
	dst = append(dst, 0)
	return append(dst, op...)
}

// addKeys records the forwarded items of one settle in second sec by their
// scope values and op (need), at most cap distinct a second per node
// (n.distinct), the rest in the overflow.
func (h *Handover) addKeys(n *nodeRec, b *stageBuf, sec int64, need shadow.Need, ev iter.Seq2[[]byte, int64], limit int) {
	ks := b.keys[sec]
	if ks == nil {
		ks = &keySecond{cells: map[string]*keyCell{}}
		b.keys[sec] = ks
		b.keyOrder = insertSorted(b.keyOrder, sec)
	}
	if n.keySec != sec {
		n.keySec, n.distinct = sec, 0
	}
	for data, c := range ev {
		sb, ok := h.scopeBuf[:0], true
		if len(need.Fields) > 0 {
			sb, ok = shadow.AppendScope(sb, need, data)
		}
		h.scopeBuf = sb
		op := ""
		if need.Ops {
			op = cost.Op(data)
			// An op JSON cannot carry byte for byte is not recorded.
			ok = ok && len(op) <= plan.MaxKVKeyBytes && utf8.ValidString(op)
		}
		if !ok {
			ks.overflow[0]++
			ks.overflow[1] += c
			continue
		}
		h.keyBuf = appendKeyOf(h.keyBuf[:0], sb, op)
		cell := ks.cells[string(h.keyBuf)]
		if cell == nil {
			if n.distinct >= limit {
				ks.overflow[0]++
				ks.overflow[1] += c
				continue
			}
			n.distinct++
			cell = &keyCell{scope: string(sb), op: op}
			ks.cells[string(h.keyBuf)] = cell
			b.keyCells++
		}
		cell.items++
		cell.cost += c
	}
	for (b.keyCells > MaxKeyCells || len(b.keyOrder) > MaxSeconds) && len(b.keyOrder) > 1 {
		old := b.keyOrder[0]
		b.keyOrder = b.keyOrder[1:]
		b.keyCells -= len(b.keys[old].cells)
		delete(b.keys, old)
	}
}

func insertSorted(order []int64, sec int64) []int64 {
	if n := len(order); n == 0 || order[n-1] < sec {
		return append(order, sec)
	}
	i := sort.Search(len(order), func(i int) bool { return order[i] >= sec })
	if i < len(order) && order[i] == sec {
		return order
	}
	order = append(order, 0)
	copy(order[i+1:], order[i:])
	order[i] = sec
	return order
}

// seal cuts a complete second's cells into rows, in scope and op order,
// each under keyRowBytes; the overflow rides the first.
func (ks *keySecond) seal() {
	if ks.sealed {
		return
	}
	ks.sealed = true
	cells := make([]*keyCell, 0, len(ks.cells))
	for _, c := range ks.cells {
		cells = append(cells, c)
	}
	sort.Slice(cells, func(i, j int) bool {
		if cells[i].scope != cells[j].scope {
			return cells[i].scope < cells[j].scope
		}
		return cells[i].op < cells[j].op
	})
	var chunk []*keyCell
	size := 0
	for _, c := range cells {
		// An entry's JSON: the scope re-quoted (at most doubled by
		// escapes), the op, two numbers and the punctuation.
		sz := 2*len(c.scope) + 2*len(c.op) + 64
		if len(chunk) > 0 && size+sz > keyRowBytes {
			ks.chunks = append(ks.chunks, chunk)
			chunk, size = nil, 0
		}
		chunk = append(chunk, c)
		size += sz
	}
	if len(chunk) > 0 || len(ks.chunks) == 0 {
		ks.chunks = append(ks.chunks, chunk)
	}
	ks.done = make([]bool, len(ks.chunks))
}

// keyRows adds the rows of b's complete keyed seconds to out.
func (b *stageBuf) keyRows(out map[string]handover.Row, base handover.Row, complete int64) {
	for _, sec := range b.keyOrder {
		if sec >= complete {
			break
		}
		ks := b.keys[sec]
		ks.seal()
		for i, chunk := range ks.chunks {
			if ks.done[i] {
				continue
			}
			r := base
			r.Kind, r.Path = handover.KindKeys, b.path
			k := &handover.Keys{Second: sec, Chunk: i, Entries: make([]handover.KeyEntry, 0, len(chunk))}
			if i == 0 {
				k.Overflow, k.OverflowCost = ks.overflow[0], ks.overflow[1]
			}
			for _, c := range chunk {
				k.Entries = append(k.Entries, handover.KeyEntry{Scope: c.scope, Op: c.op, Items: c.items, Cost: c.cost})
			}
			r.Keys = k
			out[handover.KeysKey(r.Recorder, b.pathIndex, sec, i)] = r
		}
	}
}

// forgetKeys drops a committed keys row's chunk, and its second once every
// chunk is.
func (b *stageBuf) forgetKeys(k *handover.Keys) {
	ks := b.keys[k.Second]
	if ks == nil || !ks.sealed || k.Chunk < 0 || k.Chunk >= len(ks.done) {
		return
	}
	ks.done[k.Chunk] = true
	for _, d := range ks.done {
		if !d {
			return
		}
	}
	b.keyCells -= len(ks.cells)
	delete(b.keys, k.Second)
	for i, s := range b.keyOrder {
		if s == k.Second {
			b.keyOrder = append(b.keyOrder[:i], b.keyOrder[i+1:]...)
			break
		}
	}
}
