package miniqueen

import (
	"slices"
	"strings"
	"time"
)

// The broker's locks. A call that knows which queues it touches — a plain
// push (one queue at a time), a pop on a named queue, an ack, a lease
// extension, a transaction, and the kv routes (no queue, the kv store) —
// holds the server's mu shared, then kvMu when it reads or writes kv, then
// the lock of each of its queues, taken in (name, id) order: a push to
// queue A never waits for a pop on queue B. Every other call (admin and
// test reads, a discovery pop over many queues, the clock) holds mu alone
// and excludes them all. Under the shared side, the leaf locks of Server
// guard what several queues share: the name and id indexes, the lease
// index, the dead letters, the random source.

// shared is the set of locks one call holds on the shared side.
type shared struct {
	s  *Server
	qs []*queue
	kv bool
}

// lockShared holds mu shared, then kvMu when kv, then the queues resolve
// names (in (name, id) order). kvMu comes first so that a transaction
// waiting its turn at kv holds no queue: a push or a pop waits for the one
// kv transaction running, never for a queue of kv transactions. resolve
// runs under mu before any queue is locked and may create queues; when a
// queue it named was removed before its lock was taken (the rolled-back
// transaction that created it), the locks are let go and resolve runs
// again.
func (s *Server) lockShared(kv bool, resolve func() []*queue) *shared {
	for {
		s.mu.RLock()
		qs := orderQueues(resolve())
		h := &shared{s: s}
		if kv {
			s.kvMu.Lock()
			h.kv = true
		}
		live := true
		for _, q := range qs {
			q.mu.Lock()
			h.qs = append(h.qs, q)
			if q.dead {
				live = false
				break
			}
		}
		if live {
			return h
		}
		h.unlock()
	}
}

// unlock lets go of every lock h holds.
func (h *shared) unlock() {
	for i := len(h.qs) - 1; i >= 0; i-- {
		h.qs[i].mu.Unlock()
	}
	if h.kv {
		h.s.kvMu.Unlock()
	}
	h.s.mu.RUnlock()
}

// holds reports whether h holds q's lock.
func (h *shared) holds(q *queue) bool { return slices.Contains(h.qs, q) }

// orderQueues sorts qs by (name, id) and drops repeats, the one order in
// which queue locks are taken.
func orderQueues(qs []*queue) []*queue {
	slices.SortFunc(qs, func(a, b *queue) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return slices.Compact(qs)
}

// partition is the partition with id, nil when there is none.
func (s *Server) partition(id string) *partition {
	s.idx.RLock()
	defer s.idx.RUnlock()
	return s.partByID[id]
}

// leaseQueues appends the queues of the claims lease id holds.
func (s *Server) leaseQueues(id string, qs []*queue) []*queue {
	s.idx.RLock()
	defer s.idx.RUnlock()
	for _, c := range s.leases[id] {
		qs = append(qs, c.p.q)
	}
	return qs
}

// leaseClaims is a copy of the claims lease id holds.
func (s *Server) leaseClaims(id string) []*cursor {
	s.idx.RLock()
	defer s.idx.RUnlock()
	return slices.Clone(s.leases[id])
}

// ackQueues appends the queues of the partitions items name (an unknown
// partition adds none: its ack fails on its own).
func (s *Server) ackQueues(items []ackItem, qs []*queue) []*queue {
	s.idx.RLock()
	defer s.idx.RUnlock()
	for i := range items {
		if p := s.partByID[items[i].partID]; p != nil {
			qs = append(qs, p.q)
		}
	}
	return qs
}

// commit ends a unit that may have rolled back: parked pops of the queues
// it touched wake, partitions it settled reclaim, its dead letters are
// recorded. The caller holds the unit's locks.
func (s *Server) commit(j *journal, now time.Time) {
	for q := range j.touched {
		s.wake(q, nil)
	}
	for p := range j.reclaim {
		s.reclaim(p, now, nil)
	}
	if len(j.dead) > 0 {
		s.dlqMu.Lock()
		s.dlq = append(s.dlq, j.dead...)
		s.dlqMu.Unlock()
	}
}
