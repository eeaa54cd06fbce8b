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
