package miniqueen

import (
	"encoding/json"
	"time"
)

// KVEntry is a live KV key as the broker stores it.
type KVEntry struct {
	// Value is the stored JSON value, verbatim (compacted).
	Value json.RawMessage
	// Int is the counter value when IsInt is true (an incr counter or an
	// integer put); zero otherwise.
	Int   int64
	IsInt bool
	// Version is the opaque write token of the last write.
	Version int64
	// ExpiresAt is when the key stops existing; the zero time means forever.
	ExpiresAt time.Time
	// UpdatedAt is the instant of the last write.
	UpdatedAt time.Time
}

// KV returns the live key (ns, key); ok is false when it is absent or
// expired by the server clock.
func (s *Server) KV(ns, key string) (KVEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.kvGet(ns, key)
	if !e.live(s.now()) {
		return KVEntry{}, false
	}
	return KVEntry{Value: append(json.RawMessage(nil), e.raw...), Int: e.n, IsInt: e.isInt, Version: e.version, ExpiresAt: e.exp, UpdatedAt: e.updated}, true
}

// KVKeys returns the live keys of a namespace in byte order.
func (s *Server) KVKeys(ns string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []string
	if m := s.kv[ns]; m != nil {
		for _, k := range m.keys() {
			if m.entries[k].live(now) {
				out = append(out, k)
			}
		}
	}
	return out
}

// Message status values reported per consumer group.
const (
	StatusPending    = "pending"    // after the group's cursor, not leased
	StatusProcessing = "processing" // inside the group's live lease
	StatusCompleted  = "completed"  // at or before the group's cursor
)

// Message is one retained message of a partition.
type Message struct {
	ID            string
	TransactionID string
	// TraceID is "" when the message has none.
	TraceID     string
	Queue       string
	Partition   string
	PartitionID string
	// Offset is the message's position in its partition, from 0.
	Offset    int64
	Data      json.RawMessage
	CreatedAt time.Time
	// Status maps every consumer group with a cursor on the partition to
	// the message's state for it (StatusPending, StatusProcessing,
	// StatusCompleted). Queue-mode consumption is under "__QUEUE_MODE__".
	Status map[string]string
}

// Messages returns the retained messages of (queue, partition) in offset
// order; nil if the partition does not exist. Reclaimed (completed and
// past retention) messages are gone.
func (s *Server) Messages(queue, partition string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queue]
	if q == nil {
		return nil
	}
	p := q.parts[partition]
	if p == nil {
		return nil
	}
	now := s.now()
	out := make([]Message, p.retained())
	for i := range out {
		off := p.base + int64(i)
		m := p.msgAt(off)
		st := make(map[string]string, len(p.cursors))
		for g, c := range p.cursors {
			switch {
			case off <= c.committed:
				st[g] = StatusCompleted
			case c.leaseLive(now) && off <= c.batchEnd:
				st[g] = StatusProcessing
			default:
				st[g] = StatusPending
			}
		}
		out[i] = Message{
			ID: m.id.String(), TransactionID: m.txn, TraceID: m.trace, Queue: queue, Partition: partition, PartitionID: p.id,
			Offset: off, Data: append(json.RawMessage(nil), m.data...), CreatedAt: m.createdAt(), Status: st,
		}
	}
	return out
}

// Partitions returns the partition names of a queue in creation order.
func (s *Server) Partitions(queue string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queue]
	if q == nil {
		return nil
	}
	out := make([]string, len(q.partList))
	for i, p := range q.partList {
		out[i] = p.name
	}
	return out
}

// Cursor is one consumer group's position on one partition.
type Cursor struct {
	// Committed is the offset of the last settled message (-1: none yet).
	Committed int64
	// Pending is how many retained messages follow Committed.
	Pending int64
	// LeaseID is the live lease on the partition for the group, "" if none
	// (an expired lease reads as none).
	LeaseID        string
	LeaseExpiresAt time.Time
	// BatchEnd is the last offset of the live lease's claim (-1 if none).
	BatchEnd int64
	// Retries is the retry budget spent on the current batch head.
	Retries int64
}

// Cursor returns the position of group (use "" for queue mode) on (queue,
// partition); ok is false when the group never touched that partition.
func (s *Server) Cursor(queue, group, partition string) (Cursor, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queue]
	if q == nil {
		return Cursor{}, false
	}
	p := q.parts[partition]
	if p == nil {
		return Cursor{}, false
	}
	c := p.cursors[normGroup(group)]
	if c == nil {
		return Cursor{}, false
	}
	out := Cursor{Committed: c.committed, Pending: c.pending(), BatchEnd: -1, Retries: c.retries}
	if c.leaseLive(s.now()) {
		out.LeaseID, out.LeaseExpiresAt, out.BatchEnd = c.lease, c.leaseExp, c.batchEnd
	}
	return out, true
}

// DeadLetter is one message moved to the dead-letter queue.
type DeadLetter struct {
	ID, TransactionID, Queue, Partition, ConsumerGroup, Error string
	Data                                                      json.RawMessage
	RetryCount                                                int64
	FailedAt                                                  time.Time
}

// DeadLetters returns the dead-lettered messages of a queue ("" = all) in
// the order they were dead-lettered.
func (s *Server) DeadLetters(queue string) []DeadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []DeadLetter
	for _, d := range s.dlq {
		if queue != "" && d.queue != queue {
			continue
		}
		out = append(out, DeadLetter{d.id, d.txn, d.queue, d.partition, d.group, d.errMsg, append(json.RawMessage(nil), d.data...), d.retries, d.failed})
	}
	return out
}

// Parked is how many long-polls are parked on the broker now (waiting for
// a push, a lease to lapse or their timeout).
func (s *Server) Parked() int { return int(s.parked.Load()) }
