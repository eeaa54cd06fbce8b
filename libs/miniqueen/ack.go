package miniqueen

import (
	"sort"
	"strings"
	"time"
)

// ackKind is the meaning of an ack status (§5.2).
type ackKind int

const (
	ackCompleted ackKind = iota
	ackRetry
	ackFailed
	ackDLQ
)

func classifyStatus(status *string) ackKind {
	if status == nil {
		return ackCompleted
	}
	switch *status {
	case "completed", "success", "acked", "ok":
		return ackCompleted
	case "retry":
		return ackRetry
	case "dlq":
		return ackDLQ
	default:
		return ackFailed
	}
}

// ackItem is one acknowledgment, from the ack routes or a transaction.
type ackItem struct {
	txn, partID, lease, group, errMsg string
	status                            *string
}

// ackResult is the verdict on one ackItem.
type ackResult struct {
	success       bool
	err           string
	leaseReleased bool
	dlq           bool
	noop          bool
}

type ackGroupKey struct{ partID, group string }

// applyAcks settles items (recorded in j when j is not nil); acks of one
// (partition, group) are applied together, groups in ascending
// (partitionId, group) order. The caller holds every item's queue.
func (s *Server) applyAcks(items []ackItem, res []ackResult, j *journal) {
	now := s.now()
	if len(items) == 1 {
		s.ackGroup(items, []int{0}, res, now, j)
		return
	}
	groups := map[ackGroupKey][]int{}
	var keys []ackGroupKey
	for i := range items {
		k := ackGroupKey{items[i].partID, items[i].group}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].partID != keys[b].partID {
			return keys[a].partID < keys[b].partID
		}
		return keys[a].group < keys[b].group
	})
	for _, k := range keys {
		s.ackGroup(items, groups[k], res, now, j)
	}
}

func (s *Server) ackGroup(items []ackItem, idx []int, res []ackResult, now time.Time, j *journal) {
	first := items[idx[0]]
	p := s.partition(first.partID)
	if p == nil {
		for _, i := range idx {
			res[i] = ackResult{err: "partition not found: " + first.partID}
		}
		return
	}
	c := s.cursorFor(p, first.group, j)
	j.saveCursor(c)
	live := c.leaseLive(now)
	type valid struct {
		i    int
		off  int64
		kind ackKind
	}
	var ok []valid
	maxDone := int64(-1 << 62)
	barrier := int64(1 << 62)
	barrierKind := ackCompleted
	barrierItem := -1
	for _, i := range idx {
		it := &items[i]
		rec, found := p.txns[it.txn]
		if !found {
			res[i] = ackResult{err: "message not found: transactionId " + it.txn + " in partition " + p.id}
			continue
		}
		off := rec.offset
		kind := classifyStatus(it.status)
		if off <= c.committed {
			if kind == ackCompleted {
				res[i] = ackResult{success: true, noop: true}
			} else {
				res[i] = ackResult{err: "already committed: transactionId " + it.txn}
			}
			continue
		}
		if it.lease != "" {
			if !live || c.lease != it.lease {
				res[i] = ackResult{err: "invalid or expired lease"}
				continue
			}
			if off > c.batchEnd {
				res[i] = ackResult{err: "position beyond the leased batch"}
				continue
			}
		}
		ok = append(ok, valid{i, off, kind})
		if kind == ackCompleted {
			if off > maxDone {
				maxDone = off
			}
		} else if off < barrier || off == barrier && kind > barrierKind {
			barrier, barrierKind, barrierItem = off, kind, i
		}
	}
	if len(ok) == 0 {
		return
	}
	before := c.committed
	released := false
	dlq := false
	if barrierItem >= 0 {
		target := barrier - 1
		if maxDone < target {
			target = maxDone
		}
		if target > c.committed {
			c.committed = target
		}
		switch barrierKind {
		case ackRetry:
		case ackFailed:
			if c.retries < p.q.opts.RetryLimit {
				c.retries++
			} else {
				dlq = p.q.opts.DeadLetterQueue || p.q.opts.DLQAfterMaxRetries
				s.deadLetter(c, barrier, items[barrierItem].errMsg, dlq, now, j)
			}
		case ackDLQ:
			dlq = true
			s.deadLetter(c, barrier, items[barrierItem].errMsg, true, now, j)
		}
		if c.lease != "" {
			s.releaseLease(c, j)
			released = true
		}
	} else {
		if maxDone > c.committed {
			c.committed = maxDone
		}
		leaseDone := c.committed >= c.batchEnd
		if s.ackCount.Load() && c.lease != "" {
			// Queen 0.15.1: the lease ends when as many acks as the batch
			// holds have come, whatever they moved the cursor to.
			c.leaseAcks += int64(len(ok))
			leaseDone = c.leaseAcks >= c.batchEnd-c.leaseFirst+1
		}
		if c.lease != "" && leaseDone {
			s.releaseLease(c, j)
			c.retries = 0
			released = true
		}
	}
	if c.committed > before {
		c.consumed = true
		c.lastConsumedAt = now
	}
	for _, v := range ok {
		r := ackResult{success: true, leaseReleased: released}
		if v.i == barrierItem && dlq {
			r.dlq = true
		}
		res[v.i] = r
	}
	if released || c.committed != before {
		s.wake(p.q, j)
		if j != nil {
			if j.reclaim == nil {
				j.reclaim = map[*partition]bool{}
			}
			j.reclaim[p] = true
		} else {
			s.reclaim(p, now, nil)
		}
	}
}

// deadLetter moves the cursor past the poison message at off, recording it
// in the DLQ when record is true (otherwise it is dropped); inside a unit
// that may roll back (j not nil) the record waits for its commit.
func (s *Server) deadLetter(c *cursor, off int64, errMsg string, record bool, now time.Time, j *journal) {
	p := c.p
	if record && off >= p.base && off < p.next {
		m := p.msgAt(off)
		d := deadLetter{
			id: m.id.String(), txn: m.txn, partitionID: p.id, queue: p.q.name, partition: p.name,
			group: c.group, errMsg: errMsg, retries: c.retries, data: m.data, created: m.createdAt(), failed: now,
		}
		if j != nil {
			j.dead = append(j.dead, d)
		} else {
			s.dlqMu.Lock()
			s.dlq = append(s.dlq, d)
			s.dlqMu.Unlock()
		}
	}
	if off > c.committed {
		c.committed = off
	}
	c.retries = 0
}

// normGroup maps an absent group to queue mode.
func normGroup(g string) string {
	if strings.TrimSpace(g) == "" {
		return queueModeGroup
	}
	return g
}
