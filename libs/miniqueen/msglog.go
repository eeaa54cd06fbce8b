package miniqueen

import "sort"

// maxChunk is the largest chunk of a partition's message log. Chunks start
// small (a partition with a few messages stays small) and double up to it.
const maxChunk = 4096

type msgChunk struct {
	base int64 // offset of msgs[0]
	msgs []message
}

// msgLog stores a partition's retained messages in chunks, so appending
// never copies old messages and reclaiming the front frees whole chunks. A
// message, once appended and committed, is never written again: readers
// outside the lock may keep sub-slices of a chunk.
type msgLog struct {
	chunks []msgChunk
}

// find returns the chunk holding off (which must be retained).
func (l *msgLog) find(off int64) *msgChunk {
	n := len(l.chunks)
	if c := &l.chunks[n-1]; off >= c.base {
		return c
	}
	i := sort.Search(n, func(i int) bool { return l.chunks[i].base > off }) - 1
	return &l.chunks[i]
}

func (l *msgLog) at(off int64) *message {
	c := l.find(off)
	return &c.msgs[off-c.base]
}

func (l *msgLog) push(off int64, m message) {
	n := len(l.chunks)
	if n > 0 {
		c := &l.chunks[n-1]
		if len(c.msgs) < cap(c.msgs) {
			c.msgs = append(c.msgs, m)
			return
		}
	}
	size := 16
	if n > 0 {
		size = min(maxChunk, 2*cap(l.chunks[n-1].msgs))
	}
	msgs := make([]message, 1, size)
	msgs[0] = m
	l.chunks = append(l.chunks, msgChunk{base: off, msgs: msgs})
}

// dropBefore forgets every message with an offset below base.
func (l *msgLog) dropBefore(base int64) {
	k := 0
	for k < len(l.chunks) && l.chunks[k].base+int64(len(l.chunks[k].msgs)) <= base {
		k++
	}
	if k > 0 {
		rest := l.chunks[k:]
		if len(rest) == 0 {
			l.chunks = nil
		} else {
			l.chunks = append(make([]msgChunk, 0, len(rest)+4), rest...)
		}
	}
}

// truncate forgets every message at or after next (transaction undo).
func (l *msgLog) truncate(next int64) {
	for len(l.chunks) > 0 {
		c := &l.chunks[len(l.chunks)-1]
		if c.base >= next {
			l.chunks = l.chunks[:len(l.chunks)-1]
			continue
		}
		c.msgs = c.msgs[:next-c.base]
		return
	}
}

// span returns the k messages from off on; a read-only sub-slice when they
// sit in one chunk, a copy otherwise.
func (l *msgLog) span(off int64, k int64) []message {
	c := l.find(off)
	lo := off - c.base
	if lo+k <= int64(len(c.msgs)) {
		return c.msgs[lo : lo+k : lo+k]
	}
	out := make([]message, 0, k)
	for i := int64(0); i < k; i++ {
		out = append(out, *l.at(off + i))
	}
	return out
}

// fifo is an append-only queue stored in fixed-size chunks: pushing never
// copies old elements and popping the front frees whole chunks.
type fifo[T any] struct {
	chunks [][]T
	head   int // popped elements of chunks[0]
	n      int
}

const fifoChunk = 1024

func (f *fifo[T]) len() int { return f.n }

func (f *fifo[T]) push(v T) {
	k := len(f.chunks)
	if k == 0 || len(f.chunks[k-1]) == cap(f.chunks[k-1]) {
		size := fifoChunk
		if k == 0 {
			size = 16
		} else if c := cap(f.chunks[k-1]); c < fifoChunk {
			size = min(fifoChunk, 4*c)
		}
		f.chunks = append(f.chunks, make([]T, 0, size))
		k++
	}
	f.chunks[k-1] = append(f.chunks[k-1], v)
	f.n++
}

func (f *fifo[T]) front() *T { return &f.chunks[0][f.head] }

func (f *fifo[T]) pop() {
	var zero T
	f.chunks[0][f.head] = zero
	f.head++
	f.n--
	if f.head == len(f.chunks[0]) && (len(f.chunks) > 1 || f.n == 0) {
		f.chunks[0] = nil
		f.chunks = f.chunks[1:]
		f.head = 0
		if len(f.chunks) == 0 {
			f.chunks = nil
		}
	}
}

// truncate keeps the first n elements (n <= len), for transaction undo.
func (f *fifo[T]) truncate(n int) {
	for f.n > n {
		last := len(f.chunks) - 1
		c := f.chunks[last]
		floor := 0 // elements of this chunk that are already popped
		if last == 0 {
			floor = f.head
		}
		drop := min(f.n-n, len(c)-floor)
		f.chunks[last] = c[:len(c)-drop]
		f.n -= drop
		if len(f.chunks[last]) == floor {
			f.chunks = f.chunks[:last]
			if last == 0 {
				f.chunks, f.head = nil, 0
			}
		}
	}
}
