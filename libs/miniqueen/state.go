package miniqueen

import (
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// queueModeGroup is the literal group name the broker stores queue-mode
// (group-less) consumption under.
const queueModeGroup = "__QUEUE_MODE__"

// defaultPartition is the partition a push lands in when it names none.
const defaultPartition = "Default"

// queueOptions is the resolved option set of one queue (§2.2 defaults).
type queueOptions struct {
	LeaseTime                   int64  `json:"leaseTime"`
	RetryLimit                  int64  `json:"retryLimit"`
	RetryDelay                  int64  `json:"retryDelay"`
	DeadLetterQueue             bool   `json:"deadLetterQueue"`
	DLQAfterMaxRetries          bool   `json:"dlqAfterMaxRetries"`
	Priority                    int64  `json:"priority"`
	MaxSize                     int64  `json:"maxSize"`
	TTL                         int64  `json:"ttl"`
	DelayedProcessing           int64  `json:"delayedProcessing"`
	WindowBuffer                int64  `json:"windowBuffer"`
	RetentionEnabled            bool   `json:"retentionEnabled"`
	RetentionSeconds            int64  `json:"retentionSeconds"`
	CompletedRetentionSeconds   int64  `json:"completedRetentionSeconds"`
	MaxWaitTimeSeconds          int64  `json:"maxWaitTimeSeconds"`
	DedupWindowSeconds          int64  `json:"dedupWindowSeconds"`
	EncryptionEnabled           bool   `json:"encryptionEnabled"`
	MinPopWaitTime              int64  `json:"minPopWaitTime"`
	RetentionSinkHold           string `json:"retentionSinkHold"`
	RetentionSinkHoldMaxSeconds int64  `json:"retentionSinkHoldMaxSeconds"`
}

func defaultQueueOptions() queueOptions {
	return queueOptions{
		LeaseTime:                   300,
		RetryLimit:                  3,
		RetryDelay:                  1000,
		DeadLetterQueue:             true,
		DLQAfterMaxRetries:          true,
		TTL:                         3600,
		DedupWindowSeconds:          3600,
		RetentionSinkHoldMaxSeconds: 604800,
	}
}

// subscription is a group's registration on a queue: where its cursors start
// on partitions it meets.
type subscription struct {
	mode      string // "all", "new" or "timestamp"
	ts        time.Time
	createdAt time.Time
}

type queue struct {
	name, id        string
	namespace, task string
	createdAt       time.Time
	opts            queueOptions
	parts           map[string]*partition
	partList        []*partition // creation order
	subs            map[string]*subscription
	notify          chan struct{} // closed on any change a parked pop cares about; nil if nobody waits

	// mu guards the queue, its partitions, their messages and cursors
	// while the server's mu is held shared (lock.go). dead is set when a
	// rolled-back transaction removed the queue it had created: a call
	// that locked it meanwhile starts again. scratch is claim's buffer.
	mu      sync.Mutex
	dead    bool
	scratch []*partition
}

// message is one stored message. It holds as few pointers as possible: a
// broker under load keeps many of them and the GC scans every pointer.
type message struct {
	id      uuid
	txn     string
	trace   string
	data    []byte
	created int64 // unix nanoseconds of the push
}

func (m *message) createdAt() time.Time { return time.Unix(0, m.created).UTC() }

type txnRec struct {
	msgID  uuid
	offset int64
	at     int64  // unix nanoseconds
	call   uint64 // the push call that stored it (in-call duplicate detection)
}

type txnLogRec struct {
	txn    string
	at     int64 // unix nanoseconds
	offset int64
}

type partition struct {
	q         *queue
	name, id  string
	createdAt time.Time
	log       msgLog
	base      int64 // offset of the oldest retained message
	next      int64 // offset the next push gets; last offset = next-1
	lastWrite time.Time
	txns      map[string]txnRec
	txnLog    fifo[txnLogRec]
	cursors   map[string]*cursor
}

func (p *partition) lastOffset() int64 { return p.next - 1 }

func (p *partition) msgAt(off int64) *message { return p.log.at(off) }

// retained is the number of messages still stored.
func (p *partition) retained() int64 { return p.next - p.base }

type cursor struct {
	p         *partition
	group     string
	committed int64
	lease     string
	leaseExp  time.Time
	batchEnd  int64
	// leaseFirst and leaseAcks are the first offset of the leased batch and
	// the completed acks it got (SetLeaseReleasedByAckCount counts them).
	leaseFirst, leaseAcks int64
	retries               int64
	consumed              bool
	lastConsumedAt        time.Time
}

func (c *cursor) leaseLive(now time.Time) bool {
	return c.lease != "" && now.Before(c.leaseExp)
}

// pending is the number of retained messages after the cursor.
func (c *cursor) pending() int64 {
	return pendingFrom(c.p, c.committed)
}

func pendingFrom(p *partition, committed int64) int64 {
	from := committed
	if p.base-1 > from {
		from = p.base - 1
	}
	n := p.lastOffset() - from
	if n < 0 {
		return 0
	}
	return n
}

type deadLetter struct {
	id, txn, partitionID, queue, partition, group string
	errMsg                                        string
	retries                                       int64
	data                                          []byte
	created, failed                               time.Time
}

// journal records the state a transaction or KV batch changed so a lost
// required gate, a duplicate push or a rejected ack can undo all of it.
type journal struct {
	kv         map[kvKey]kvSaved
	cursors    map[*cursor]cursor
	newCursors []*cursor
	leases     map[string][]*cursor
	leaseHad   map[string]bool
	parts      map[*partition]partSaved
	txnOld     []txnUndo
	newParts   []*partition
	newQueues  []*queue
	dead       []deadLetter // dead letters to record at commit
	touched    map[*queue]bool
	reclaim    map[*partition]bool
}

type kvSaved struct {
	e   *kvEntry
	had bool
}

type partSaved struct {
	base      int64
	next      int64
	lastWrite time.Time
	txnLog    int
}

type txnUndo struct {
	p   *partition
	txn string
	old txnRec
	had bool
}

func newJournal() *journal {
	return &journal{}
}

// undo restores every recorded change, newest structures last. The
// caller holds the locks of the call that recorded j.
func (s *Server) undo(j *journal) {
	for k, sv := range j.kv {
		if sv.had {
			s.kvPut(k.ns, k.key, sv.e)
		} else {
			s.kvPut(k.ns, k.key, nil)
		}
	}
	for c, saved := range j.cursors {
		*c = saved
	}
	for _, c := range j.newCursors {
		delete(c.p.cursors, c.group)
	}
	s.idx.Lock()
	for id, refs := range j.leases {
		if j.leaseHad[id] {
			s.leases[id] = refs
		} else {
			delete(s.leases, id)
		}
	}
	s.idx.Unlock()
	for i := len(j.txnOld) - 1; i >= 0; i-- {
		u := j.txnOld[i]
		if u.had {
			u.p.txns[u.txn] = u.old
		} else {
			delete(u.p.txns, u.txn)
		}
	}
	for p, sv := range j.parts {
		p.log.truncate(sv.next)
		p.base = sv.base
		p.next = sv.next
		p.lastWrite = sv.lastWrite
		p.txnLog.truncate(sv.txnLog)
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	for _, p := range j.newParts {
		delete(p.q.parts, p.name)
		for i, x := range p.q.partList {
			if x == p {
				p.q.partList = append(p.q.partList[:i:i], p.q.partList[i+1:]...)
				break
			}
		}
		delete(s.partByID, p.id)
	}
	for _, q := range j.newQueues {
		// Another call may have used the queue between its creation and
		// this call's lock on it (a pop registering its group): the queue
		// then stays. An unused one goes, and a call waiting for its lock
		// sees it dead and looks the name up again.
		if len(q.parts) > 0 || len(q.subs) > 0 || s.queues[q.name] != q {
			continue
		}
		delete(s.queues, q.name)
		q.dead = true
		if q.notify != nil {
			close(q.notify)
			q.notify = nil
		}
	}
}

func (j *journal) saveCursor(c *cursor) {
	if j == nil {
		return
	}
	if j.cursors == nil {
		j.cursors = map[*cursor]cursor{}
	}
	if _, ok := j.cursors[c]; !ok {
		j.cursors[c] = *c
	}
}

// saveLease records lease id's claims in j; the caller holds idx.
func (s *Server) saveLease(id string, j *journal) {
	if j == nil || id == "" {
		return
	}
	if j.leases == nil {
		j.leases = map[string][]*cursor{}
		j.leaseHad = map[string]bool{}
	}
	if _, ok := j.leases[id]; ok {
		return
	}
	refs, had := s.leases[id]
	j.leases[id] = append([]*cursor(nil), refs...)
	j.leaseHad[id] = had
}

// deriveTags gives an implicitly created queue its namespace and task from
// its dotted name (first and second segment).
func deriveTags(name string) (ns, task string) {
	parts := strings.SplitN(name, ".", 3)
	if len(parts) >= 2 {
		ns = parts[0]
		task = parts[1]
	}
	return ns, task
}

// queueFor returns the queue, creating it when create is true (recorded
// in j when j is not nil).
func (s *Server) queueFor(name string, create bool, j *journal) *queue {
	s.idx.RLock()
	q := s.queues[name]
	s.idx.RUnlock()
	if q != nil || !create {
		return q
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	if q := s.queues[name]; q != nil {
		return q
	}
	now := s.now()
	// The name may be a slice of a request's body (see keepArena): the
	// queue outlives the request.
	name = strings.Clone(name)
	ns, task := deriveTags(name)
	q = &queue{
		name:      name,
		id:        s.ids.next(now),
		namespace: ns,
		task:      task,
		createdAt: now,
		opts:      defaultQueueOptions(),
		parts:     map[string]*partition{},
		subs:      map[string]*subscription{},
	}
	s.queues[name] = q
	if j != nil {
		j.newQueues = append(j.newQueues, q)
	}
	return q
}

// partitionFor returns the partition, creating it (and seeding registered
// groups on it) when create is true (recorded in j when j is not nil).
func (s *Server) partitionFor(q *queue, name string, create bool, j *journal) *partition {
	p := q.parts[name]
	if p != nil || !create {
		return p
	}
	now := s.now()
	name = strings.Clone(name) // may be a slice of a request's body
	p = &partition{
		q:         q,
		name:      name,
		id:        s.ids.next(now),
		createdAt: now,
		txns:      map[string]txnRec{},
		cursors:   map[string]*cursor{},
	}
	q.parts[name] = p
	q.partList = append(q.partList, p)
	s.idx.Lock()
	s.partByID[p.id] = p
	s.idx.Unlock()
	if j != nil {
		j.newParts = append(j.newParts, p)
	}
	// A partition created later is seeded from each group's stored
	// subscription; it is empty now, so every group starts before its first
	// message unless the subscription instant is still in the future.
	for g, sub := range q.subs {
		if sub.mode == "timestamp" && sub.ts.After(now) {
			continue
		}
		p.cursors[g] = &cursor{p: p, group: g, committed: -1, batchEnd: -1}
	}
	return p
}

// register records a group's subscription on a queue on first contact and
// seeds a cursor on every existing partition.
func (s *Server) register(q *queue, group string, sub subscription) {
	if _, ok := q.subs[group]; ok {
		return
	}
	now := s.now()
	group = strings.Clone(group) // may be a slice of a request
	sub.createdAt = now
	if group == queueModeGroup {
		sub = subscription{mode: "all", createdAt: now}
	}
	q.subs[group] = &sub
	for _, p := range q.partList {
		if _, ok := p.cursors[group]; ok {
			continue
		}
		c := &cursor{p: p, group: group, batchEnd: -1}
		switch sub.mode {
		case "new":
			c.committed = p.lastOffset()
		default:
			c.committed = seedAt(p, sub)
		}
		p.cursors[group] = c
	}
}

// seedAt is the committed offset a group with sub starts at on p.
func seedAt(p *partition, sub subscription) int64 {
	if sub.mode == "all" {
		return p.base - 1
	}
	// First retained message created at/after ts (for "new": strictly
	// after the registration); tail if none.
	from := nanos(sub.ts)
	if sub.mode == "new" {
		from = nanos(sub.createdAt) + 1
	}
	i := sort.Search(int(p.retained()), func(i int) bool { return p.msgAt(p.base+int64(i)).created >= from })
	return p.base + int64(i) - 1
}

// cursorFor returns the group's cursor on p, creating and seeding it on first
// contact (recorded in j when j is not nil).
func (s *Server) cursorFor(p *partition, group string, j *journal) *cursor {
	if c := p.cursors[group]; c != nil {
		return c
	}
	sub := subscription{mode: "all"}
	if rec := p.q.subs[group]; rec != nil {
		sub = *rec
	}
	group = strings.Clone(group) // may be a slice of a request
	c := &cursor{p: p, group: group, committed: seedAt(p, sub), batchEnd: -1}
	p.cursors[group] = c
	if j != nil {
		j.newCursors = append(j.newCursors, c)
	}
	return c
}

// releaseLease clears c's lease and drops c from the lease index
// (recording both in j when j is not nil).
func (s *Server) releaseLease(c *cursor, j *journal) {
	if c.lease == "" {
		return
	}
	id := c.lease
	j.saveCursor(c)
	s.idx.Lock()
	s.saveLease(id, j)
	refs := s.leases[id]
	out := refs[:0:0]
	for _, r := range refs {
		if r != c {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		delete(s.leases, id)
	} else {
		s.leases[id] = out
	}
	s.idx.Unlock()
	c.lease = ""
	c.leaseExp = time.Time{}
	c.batchEnd = -1
}

// wake tells parked pops of q that something changed; inside a unit that
// may roll back (j not nil) it does so at commit.
func (s *Server) wake(q *queue, j *journal) {
	if j != nil {
		if j.touched == nil {
			j.touched = map[*queue]bool{}
		}
		j.touched[q] = true
		return
	}
	if q.notify != nil {
		close(q.notify)
		q.notify = nil
	}
	s.idx.RLock()
	anyWaits := s.anyNotify != nil
	s.idx.RUnlock()
	if anyWaits {
		s.idx.Lock()
		if s.anyNotify != nil {
			close(s.anyNotify)
			s.anyNotify = nil
		}
		s.idx.Unlock()
	}
}

func (q *queue) waitChan() chan struct{} {
	if q.notify == nil {
		q.notify = make(chan struct{})
	}
	return q.notify
}

// pushItem is one message to store.
type pushItem struct {
	queue, partition string
	txn, trace       string
	data             []byte
}

type pushOutcome struct {
	msgID     uuid
	txn       string
	duplicate bool // already stored within the dedup window (or earlier in the call)
	inCall    bool // the duplicate is an earlier item of the same call
}

// push stores items in order (recorded in j when j is not nil). createdAt
// is shared by every item of one call to one partition. The caller holds
// every item's queue.
func (s *Server) push(items []pushItem, out []pushOutcome, j *journal) {
	now := s.now()
	nowNs := now.UnixNano()
	call := s.pushCall.Add(1)
	keep := keepArena(items)
	for i := range items {
		it := &items[i]
		q := s.queueFor(it.queue, true, j)
		p := s.partitionFor(q, it.partition, true, j)
		s.trimPartition(p, now, j)
		id := s.ids.raw(now)
		txn := it.txn
		if txn == "" {
			txn = id.String()
		} else {
			txn = keep.keepString(txn)
		}
		if it.txn != "" {
			if rec, ok := p.txns[txn]; ok {
				if rec.call == call {
					out[i] = pushOutcome{msgID: rec.msgID, txn: txn, duplicate: true, inCall: true}
					continue
				}
				if nowNs-rec.at < q.opts.DedupWindowSeconds*int64(time.Second) {
					out[i] = pushOutcome{msgID: rec.msgID, txn: txn, duplicate: true}
					continue
				}
			}
		}
		if j != nil {
			if j.parts == nil {
				j.parts = map[*partition]partSaved{}
			}
			if _, ok := j.parts[p]; !ok {
				j.parts[p] = partSaved{base: p.base, next: p.next, lastWrite: p.lastWrite, txnLog: p.txnLog.len()}
			}
			old, had := p.txns[txn]
			j.txnOld = append(j.txnOld, txnUndo{p: p, txn: txn, old: old, had: had})
		}
		off := p.next
		if p.retained() == 0 {
			p.base = off
		}
		p.log.push(off, message{id: id, txn: txn, trace: keep.keepString(it.trace), data: keep.keep(it.data), created: nowNs})
		p.next++
		p.lastWrite = now
		p.txns[txn] = txnRec{msgID: id, offset: off, at: nowNs, call: call}
		p.txnLog.push(txnLogRec{txn: txn, at: nowNs, offset: off})
		out[i] = pushOutcome{msgID: id, txn: txn}
		s.wake(q, j)
	}
}

// keepArena is one allocation sized for what push keeps of items (each
// stored message's transaction id, trace id and payload). The request
// decoder reads a whole body into one arena (newReader), so a message
// holding slices of it held the whole body: a relay's settle — an ack, a
// push, two kv riders and a read — is many times the one item it stores,
// and the broker kept every such body as long as the message. A message
// now keeps only its own bytes, still one allocation per call.
func keepArena(items []pushItem) *arena {
	n := 0
	for i := range items {
		n += len(items[i].txn) + len(items[i].trace) + len(items[i].data)
	}
	return &arena{b: make([]byte, 0, n)}
}

// trimPartition applies the time-based retention rules (retentionSeconds
// with retention on, maxWaitTimeSeconds always) and prunes the dedup index.
func (s *Server) trimPartition(p *partition, now time.Time, j *journal) {
	if j != nil {
		return // never reclaim inside a unit that may roll back
	}
	o := &p.q.opts
	var cut time.Time
	if o.RetentionEnabled && o.RetentionSeconds > 0 {
		cut = now.Add(-time.Duration(o.RetentionSeconds) * time.Second)
	}
	if o.MaxWaitTimeSeconds > 0 {
		c2 := now.Add(-time.Duration(o.MaxWaitTimeSeconds) * time.Second)
		if c2.After(cut) {
			cut = c2
		}
	}
	if !cut.IsZero() {
		var n int64
		for n < p.retained() && p.msgAt(p.base+n).created <= cut.UnixNano() {
			n++
		}
		s.dropFront(p, n)
	}
	s.pruneTxns(p, now)
}

// reclaim drops completed messages every registered group has passed, as
// far as retention allows (never inside a unit that may roll back).
func (s *Server) reclaim(p *partition, now time.Time, j *journal) {
	if j != nil || p.retained() == 0 {
		return
	}
	q := p.q
	if len(q.subs) == 0 {
		return
	}
	low := p.lastOffset()
	for g := range q.subs {
		c := p.cursors[g]
		if c == nil {
			return
		}
		low = min(low, c.committed)
	}
	n := low - p.base + 1
	if n <= 0 {
		return
	}
	o := &q.opts
	if !o.RetentionEnabled && s.keepDone {
		return
	}
	if o.RetentionEnabled {
		if o.CompletedRetentionSeconds <= 0 {
			return // retention on with 0 = keep completed messages
		}
		cut := now.Add(-time.Duration(o.CompletedRetentionSeconds) * time.Second)
		var k int64
		for k < n && p.msgAt(p.base+k).created <= cut.UnixNano() {
			k++
		}
		n = k
	}
	s.dropFront(p, n)
	s.pruneTxns(p, now)
}

func (s *Server) dropFront(p *partition, n int64) {
	if n <= 0 {
		return
	}
	n = min(n, p.retained())
	p.base += n
	p.log.dropBefore(p.base)
}

// pruneTxns forgets transaction ids whose dedup window passed and whose
// message is no longer retained.
func (s *Server) pruneTxns(p *partition, now time.Time) {
	win := time.Duration(p.q.opts.DedupWindowSeconds) * time.Second
	for p.txnLog.len() > 0 {
		r := p.txnLog.front()
		if r.offset >= p.base || now.UnixNano()-r.at < int64(win) {
			return
		}
		if cur, ok := p.txns[r.txn]; ok && cur.offset == r.offset {
			delete(p.txns, r.txn)
		}
		p.txnLog.pop()
	}
}

// claimReq describes one pop.
type claimReq struct {
	group     string
	batch     int
	parts     int
	lease     time.Duration // 0 = queue leaseTime
	autoAck   bool
	partition string // "" = wildcard
	named     bool
}

// claimedPart is what one partition yielded.
type claimedPart struct {
	p    *partition
	msgs []message
}

// claim takes up to req.batch messages from eligible partitions of q in
// random order. next is the earliest instant at which something not
// claimable now may become claimable (zero if unknown).
func (s *Server) claim(q *queue, req claimReq, leaseID *string, out []claimedPart) ([]claimedPart, time.Time) {
	now := s.now()
	var next time.Time
	soon := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	var cands []*partition
	if req.named {
		p := q.parts[req.partition]
		if p == nil {
			return out, next
		}
		cands = q.scratch[:0]
		cands = append(cands, p)
	} else {
		cands = q.scratch[:0]
		for _, p := range q.partList {
			if p.next == 0 {
				continue
			}
			c := p.cursors[req.group]
			if c != nil {
				if c.leaseLive(now) {
					soon(c.leaseExp)
					continue
				}
				if c.committed >= p.lastOffset() {
					continue
				}
			}
			cands = append(cands, p)
		}
	}
	budget := req.batch
	yielded := 0
	o := &q.opts
	for n := len(cands); n > 0 && budget > 0; n-- {
		k := 0
		if n > 1 {
			s.rndMu.Lock()
			k = s.rnd.IntN(n)
			s.rndMu.Unlock()
		}
		p := cands[k]
		cands[k] = cands[n-1]
		s.trimPartition(p, now, nil)
		c := s.cursorFor(p, req.group, nil)
		if c.leaseLive(now) {
			soon(c.leaseExp)
			continue
		}
		if c.lease != "" {
			s.releaseLease(c, nil) // expired: re-offer from committed+1, budget untouched
		}
		start := c.committed + 1
		if start < p.base {
			start = p.base
		}
		avail := p.next - start
		if avail <= 0 {
			if c.committed < p.lastOffset() {
				c.committed = p.lastOffset() // seal a partition retention emptied
			}
			continue
		}
		if o.WindowBuffer > 0 {
			open := p.lastWrite.Add(time.Duration(o.WindowBuffer) * time.Second)
			if now.Before(open) {
				soon(open)
				continue
			}
		}
		take := int64(budget)
		if avail < take {
			take = avail
		}
		if o.DelayedProcessing > 0 {
			d := time.Duration(o.DelayedProcessing) * time.Second
			var m int64
			for m < take {
				ready := p.msgAt(start + m).createdAt().Add(d)
				if now.Before(ready) {
					soon(ready)
					break
				}
				m++
			}
			take = m
			if take == 0 {
				continue
			}
		}
		msgs := p.log.span(start, take)
		if req.autoAck {
			c.committed = start + take - 1
			c.consumed = true
			c.lastConsumedAt = now
		} else {
			if *leaseID == "" {
				*leaseID = s.ids.next(now)
			}
			c.lease = *leaseID
			lt := req.lease
			if lt <= 0 {
				lt = time.Duration(o.LeaseTime) * time.Second
			}
			c.leaseExp = now.Add(lt)
			c.batchEnd = start + take - 1
			c.leaseFirst, c.leaseAcks = start, 0
			s.idx.Lock()
			s.leases[c.lease] = append(s.leases[c.lease], c)
			s.idx.Unlock()
		}
		out = append(out, claimedPart{p: p, msgs: msgs})
		budget -= int(take)
		yielded++
		if req.autoAck {
			s.reclaim(p, now, nil)
		}
		if req.named || yielded >= req.parts {
			break
		}
	}
	q.scratch = cands[:0]
	return out, next
}

// nanos is t.UnixNano clamped to the representable range (years 1678–2262).
func nanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}
