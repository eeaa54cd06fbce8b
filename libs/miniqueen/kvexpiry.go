package miniqueen

import (
	"container/heap"
	"time"
)

// kvExpiry is the kv store's expiry index: a min-heap of (expiry, ns, key)
// that sweepKV pops up to the clock, so a sweep costs the keys that
// expired, not every key stored. The sweep used to walk every entry of
// every namespace once a clock second: at ten thousand graphs (documents,
// status rows, change-log rows) that walk was a steady share of an idle
// broker's CPU.
//
// An item is a hint, not a promise: the key may have been rewritten with
// a later expiry, made forever, or deleted since; the sweep deletes the
// key only when its current entry is no longer live. The invariant that
// makes the sweep complete: every stored entry with an expiry t has an
// item (ns, key, t) not yet popped. kvPut keeps it by adding an item
// whenever it stores an entry whose expiry differs from the one it
// replaces (an incr of a live counter keeps its expiry, so a hot counter
// adds no item per incr).
type kvExpiry []kvExpiryItem

type kvExpiryItem struct {
	at      time.Time
	ns, key string
}

func (h kvExpiry) Len() int           { return len(h) }
func (h kvExpiry) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h kvExpiry) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *kvExpiry) Push(x any)        { *h = append(*h, x.(kvExpiryItem)) }
func (h *kvExpiry) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = kvExpiryItem{}
	*h = old[:len(old)-1]
	return it
}

// note records that ns/key now holds e (replacing old, nil when none).
// The index keeps ns and key: they must be the store's own (kvPut).
func (h *kvExpiry) note(ns, key string, old, e *kvEntry) {
	if expiryChanged(old, e) {
		heap.Push(h, kvExpiryItem{at: e.exp, ns: ns, key: key})
	}
}

// expiryChanged reports whether e (replacing old, nil when new) has an
// expiry old did not: one note keeps an item for.
func expiryChanged(old, e *kvEntry) bool {
	return e != nil && !e.exp.IsZero() && (old == nil || !old.exp.Equal(e.exp))
}

// due pops every item whose expiry is not after now, calling fn with it.
func (h *kvExpiry) due(now time.Time, fn func(ns, key string)) {
	for h.Len() > 0 && !(*h)[0].at.After(now) {
		it := heap.Pop(h).(kvExpiryItem)
		fn(it.ns, it.key)
	}
	if cap(*h) > 1024 && h.Len() < cap(*h)/4 {
		*h = append(kvExpiry(nil), (*h)...)
	}
}
