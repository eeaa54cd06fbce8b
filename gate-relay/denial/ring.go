package denial

import (
	"sync"

	"github.com/queen-mq/gate/libs/store"
)

// Capacity is the ring's size: 500 entries, the oldest dropped first.
const Capacity = 500

// Ring is a bounded ring of denials, safe for concurrent use. The zero
// value is an empty ring of Capacity entries.
type Ring struct {
	mu    sync.Mutex
	buf   []store.Denial
	next  int
	total uint64
}

// Add records one denial, dropping the oldest entry when full.
func (r *Ring) Add(d store.Denial) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) < Capacity {
		r.buf = append(r.buf, d)
	} else {
		r.buf[r.next] = d
	}
	r.next = (r.next + 1) % Capacity
	r.total++
}

// Total is the number of denials ever added (a cursor for Since).
func (r *Ring) Total() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Newest returns up to n entries, newest first (n ≤ 0: all kept).
func (r *Ring) Newest(n int) []store.Denial {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.newest(n)
}

func (r *Ring) newest(n int) []store.Denial {
	k := len(r.buf)
	if n <= 0 || n > k {
		n = k
	}
	out := make([]store.Denial, 0, n)
	for i := 1; i <= n; i++ {
		idx := r.next - i
		if idx < 0 {
			idx += k
		}
		out = append(out, r.buf[idx])
	}
	return out
}

// Since returns the entries added after cursor (a previous Total), newest
// first, and the new cursor. Entries that were already dropped are lost.
func (r *Ring) Since(cursor uint64) ([]store.Denial, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cursor >= r.total {
		return nil, r.total
	}
	return r.newest(int(min(r.total-cursor, uint64(Capacity)))), r.total
}
