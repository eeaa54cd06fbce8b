package miniqueen

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/clock"
)

// pushItemWire is one item of POST /api/v1/push or of a transaction push.
type pushItemWire struct {
	Queue         string          `json:"queue"`
	Partition     *string         `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	Data          json.RawMessage `json:"data"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId"`
}

// rawJSON is a raw JSON value kept for later decoding.
type rawJSON = json.RawMessage

// decodeFast reads the body and decodes it with the fast scanner, falling
// back to encoding/json (for its exact errors) when the scanner gives up.
func decodeFast(r *http.Request, fast func([]byte) bool, v any) error {
	b, release, err := readBody(r)
	if err != nil {
		return err
	}
	defer release()
	if len(b) == 0 {
		return errors.New("empty body, expected a JSON object")
	}
	if fast(b) {
		return nil
	}
	return json.Unmarshal(b, v)
}

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Items *[]pushItemWire `json:"items"`
	}
	err := decodeFast(r, func(b []byte) bool {
		items, ok := scanPush(b)
		body.Items = items
		return ok
	}, &body)
	if err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	if body.Items == nil {
		badRequest(w, "push requires an items array: {\"items\":[{\"queue\":…,\"payload\":…}]}")
		return
	}
	wire := *body.Items
	items := make([]pushItem, len(wire))
	for i := range wire {
		it := &wire[i]
		if it.Queue == "" {
			badRequest(w, "items[%d].queue is required", i)
			return
		}
		part := defaultPartition
		if it.Partition != nil && *it.Partition != "" {
			part = *it.Partition
		}
		data := it.Payload
		if data == nil {
			data = it.Data
		}
		if data == nil {
			data = json.RawMessage("null")
		}
		// traceId is dropped on the plain push route (§3).
		items[i] = pushItem{queue: it.Queue, partition: part, txn: it.TransactionID, data: data}
	}
	out := make([]pushOutcome, len(items))
	s.pushEach(items, out)
	jb := getJW()
	defer putJW(jb)
	jb.raw("[")
	for i := range out {
		if i > 0 {
			jb.comma()
		}
		jb.raw(`{"index":`)
		jb.int(int64(i))
		jb.raw(`,"message_id":`)
		jb.uuid(out[i].msgID)
		jb.raw(`,"transaction_id":`)
		jb.str(out[i].txn)
		jb.raw(`,"queueName":`)
		jb.str(items[i].queue)
		if out[i].duplicate {
			jb.raw(`,"status":"duplicate"}`)
		} else {
			jb.raw(`,"status":"queued"}`)
		}
	}
	jb.raw("]")
	writeRaw(w, http.StatusCreated, jb.b)
}

// pushEach stores a plain push queue by queue, each queue's items under
// that queue's lock alone (in their order): a call spread over many queues
// never holds one queue while it waits for another's lock, so it waits for
// one claim or settle at a time, not for a chain of them. A plain push is
// atomic per queue; its dedup (per partition) and answers are the same.
func (s *Server) pushEach(items []pushItem, out []pushOutcome) {
	store := func(name string, items []pushItem, out []pushOutcome) {
		h := s.lockShared(false, func() []*queue { return []*queue{s.queueFor(name, true, nil)} })
		s.push(items, out, nil)
		h.unlock()
	}
	var names []string
	at := map[string][]int{} // queue → its items' indexes, in order
	for i := range items {
		q := items[i].queue
		if _, ok := at[q]; !ok {
			names = append(names, q)
		}
		at[q] = append(at[q], i)
	}
	if len(names) == 1 {
		store(names[0], items, out)
		return
	}
	for _, name := range names {
		idx := at[name]
		sub := make([]pushItem, len(idx))
		for k, i := range idx {
			sub[k] = items[i]
		}
		res := make([]pushOutcome, len(idx))
		store(name, sub, res)
		for k, i := range idx {
			out[i] = res[k]
		}
	}
}

func normMode(m string) string {
	switch strings.ToLower(strings.TrimSpace(m)) {
	case "new", "new-only", "new_only", "newonly":
		return "new"
	default:
		return "all"
	}
}

// popParams are the parsed query parameters of a pop.
type popParams struct {
	req     claimReq
	wait    bool
	timeout time.Duration
	sub     subscription
}

// popKeys are the query parameters a pop reads (read in one pass,
// rawQuery.GetEach), indexed by the pop… constants below.
var popKeys = []string{"batch", "partitions", "timeout", "leaseSeconds", "wait", "autoAck", "consumerGroup", "subscriptionMode", "subscriptionFrom"}

const (
	popBatch = iota
	popPartitions
	popTimeout
	popLease
	popWait
	popAutoAck
	popGroup
	popMode
	popFrom
	popKeyCount
)

func (s *Server) parsePop(q rawQuery) (popParams, string) {
	p := popParams{req: claimReq{batch: 200, parts: 1}, timeout: 30 * time.Second}
	var vals [popKeyCount]string
	q.GetEach(popKeys, vals[:])
	intParam := func(key int, min int64, dst *int64) string {
		name, v := popKeys[key], vals[key]
		if v == "" {
			return ""
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return name + " must be an integer >= " + strconv.FormatInt(min, 10) + ", got " + strconv.Quote(v)
		}
		*dst = n
		return ""
	}
	var batch, parts, timeout, lease int64 = 200, 1, 30000, 0
	for _, e := range []string{
		intParam(popBatch, 1, &batch),
		intParam(popPartitions, 1, &parts),
		intParam(popTimeout, 0, &timeout),
		intParam(popLease, 1, &lease),
	} {
		if e != "" {
			return p, e
		}
	}
	p.req.batch = int(min(batch, 100000))
	p.req.parts = int(min(parts, 100000))
	p.timeout = time.Duration(timeout) * time.Millisecond
	p.req.lease = time.Duration(lease) * time.Second
	p.wait = isTrue(vals[popWait])
	p.req.autoAck = isTrue(vals[popAutoAck])
	p.req.group = normGroup(vals[popGroup])
	mode := vals[popMode]
	from := strings.TrimSpace(vals[popFrom])
	switch {
	case from != "" && strings.EqualFold(from, "now"):
		p.sub = subscription{mode: "new"}
	case from != "":
		if t, ok := parseInstant(from); ok {
			p.sub = subscription{mode: "timestamp", ts: t}
		} else {
			p.sub = subscription{mode: "new"}
		}
	case mode != "":
		p.sub = subscription{mode: normMode(mode)}
	default:
		p.sub = subscription{mode: s.defaultMode}
	}
	return p, ""
}

func isTrue(v string) bool {
	v = strings.ToLower(v)
	return v == "true" || v == "1" || v == "yes"
}

func (s *Server) handlePop(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	p, bad := s.parsePop(rawQuery(r.URL.RawQuery))
	if bad != "" {
		badRequest(w, "%s", bad)
		return
	}
	if part := r.PathValue("partition"); r.Pattern != "" && strings.Contains(r.Pattern, "{partition}") {
		p.req.named = true
		p.req.partition = part
	}
	s.pop(w, r, p, []string{name}, "", "")
}

func (s *Server) handlePopDiscovery(w http.ResponseWriter, r *http.Request) {
	q := rawQuery(r.URL.RawQuery)
	p, bad := s.parsePop(q)
	if bad != "" {
		badRequest(w, "%s", bad)
		return
	}
	ns, task := q.Get("namespace"), q.Get("task")
	if ns == "" && task == "" {
		badRequest(w, "pop without a queue needs namespace and/or task")
		return
	}
	s.pop(w, r, p, nil, ns, task)
}

// pop claims (and long-polls when asked). names is the queue list, or nil
// for discovery by namespace/task.
func (s *Server) pop(w http.ResponseWriter, r *http.Request, p popParams, names []string, ns, task string) {
	// A long-poll ends at the earlier of its timeout on the base clock
	// (baseDeadline) and its timeout on the server's own, injectable,
	// time (clockDeadline).
	baseDeadline := s.base.Now().Add(p.timeout)
	var clockDeadline time.Time
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		qs, unlock := s.lockPop(names, ns, task)
		now := s.now()
		if clockDeadline.IsZero() {
			clockDeadline = now.Add(p.timeout)
		}
		var leaseID string
		var got []claimedPart
		var next time.Time
		budget := p.req.batch
		for _, q := range qs {
			s.register(q, p.req.group, p.sub)
			req := p.req
			req.batch = budget
			req.parts = p.req.parts - len(got)
			before := len(got)
			var nx time.Time
			got, nx = s.claim(q, req, &leaseID, got)
			for _, c := range got[before:] {
				budget -= len(c.msgs)
			}
			if !nx.IsZero() && (next.IsZero() || nx.Before(next)) {
				next = nx
			}
			if budget <= 0 || len(got) >= p.req.parts {
				break
			}
		}
		if len(got) > 0 || !p.wait || !now.Before(clockDeadline) || !s.base.Now().Before(baseDeadline) {
			unlock()
			if len(got) == 0 {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			s.writePop(w, got, leaseID, p.req.group)
			return
		}
		var ch chan struct{}
		if names != nil {
			ch = qs[0].waitChan()
		} else {
			ch = s.anyWaitChan()
		}
		unlock()
		d := baseDeadline.Sub(s.base.Now())
		if cd := clockDeadline.Sub(now); cd < d {
			d = cd
		}
		if !next.IsZero() {
			if nd := next.Sub(now) + time.Millisecond; nd < d {
				d = nd
			}
		}
		if d < time.Millisecond {
			d = time.Millisecond
		}
		if timer == nil {
			timer = s.base.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		s.parked.Add(1)
		select {
		case <-ch:
		case <-timer.C():
		case <-r.Context().Done():
			s.parked.Add(-1)
			return
		case <-s.stopping():
			s.parked.Add(-1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		s.parked.Add(-1)
	}
}

// lockPop takes a pop's locks and returns the queues it looks at and the
// unlock: a named queue's own lock on the shared side, the whole broker for
// a discovery pop (it looks at every queue of a namespace or task).
func (s *Server) lockPop(names []string, ns, task string) ([]*queue, func()) {
	if names != nil {
		h := s.lockShared(false, func() []*queue { return s.popQueues(names, ns, task) })
		return h.qs, h.unlock
	}
	s.mu.Lock()
	return s.popQueues(nil, ns, task), s.mu.Unlock
}

// popQueues resolves the queues a pop looks at; a named queue is created on
// first contact so the group's subscription can be recorded (§4.9).
func (s *Server) popQueues(names []string, ns, task string) []*queue {
	if names != nil {
		return []*queue{s.queueFor(names[0], true, nil)}
	}
	var qs []*queue
	for _, q := range s.queues {
		if (ns == "" || q.namespace == ns) && (task == "" || q.task == task) {
			qs = append(qs, q)
		}
	}
	sort.Slice(qs, func(a, b int) bool { return qs[a].name < qs[b].name })
	s.rnd.Shuffle(len(qs), func(a, b int) { qs[a], qs[b] = qs[b], qs[a] })
	sort.SliceStable(qs, func(a, b int) bool { return qs[a].opts.Priority > qs[b].opts.Priority })
	return qs
}

// anyWaitChan is closed on any change to any queue (discovery pops).
func (s *Server) anyWaitChan() chan struct{} {
	if s.anyNotify == nil {
		s.anyNotify = make(chan struct{})
	}
	return s.anyNotify
}

func (s *Server) writePop(w http.ResponseWriter, got []claimedPart, leaseID, group string) {
	jb := getJW()
	defer putJW(jb)
	first := got[0].p
	jb.raw(`{"success":true,"queue":`)
	jb.str(first.q.name)
	jb.raw(`,"partition":`)
	jb.str(first.name)
	jb.raw(`,"partitionId":`)
	jb.str(first.id)
	jb.raw(`,"leaseId":`)
	jb.str(leaseID)
	jb.raw(`,"consumerGroup":`)
	jb.str(group)
	jb.raw(`,"messages":[`)
	var tail []byte
	n := 0
	lastCreated := int64(-1 << 63)
	var createdBuf []byte
	for _, c := range got {
		t := jw{b: tail[:0]}
		t.raw(`,"partitionId":`)
		t.str(c.p.id)
		t.raw(`,"partition":`)
		t.str(c.p.name)
		t.raw(`,"leaseId":`)
		t.str(leaseID)
		t.raw(`,"consumerGroup":`)
		t.str(group)
		t.raw("}")
		tail = t.b
		for i := range c.msgs {
			m := &c.msgs[i]
			if n > 0 {
				jb.comma()
			}
			n++
			jb.raw(`{"id":`)
			jb.uuid(m.id)
			jb.raw(`,"transactionId":`)
			jb.str(m.txn)
			jb.raw(`,"traceId":`)
			jb.strOrNull(m.trace)
			jb.raw(`,"data":`)
			jb.json(m.data)
			if m.created != lastCreated {
				lastCreated = m.created
				createdBuf = m.createdAt().AppendFormat(createdBuf[:0], createdLayout)
			}
			jb.raw(`,"producerSub":null,"createdAt":"`)
			jb.rawb(createdBuf)
			jb.raw(`"`)
			jb.rawb(tail)
		}
	}
	jb.raw(`],"partitionsClaimed":`)
	jb.int(int64(len(got)))
	jb.raw("}")
	writeRaw(w, http.StatusOK, jb.b)
}

// ackWire is one acknowledgment on the wire.
type ackWire struct {
	Type          string  `json:"type"`
	TransactionID string  `json:"transactionId"`
	PartitionID   string  `json:"partitionId"`
	LeaseID       string  `json:"leaseId"`
	ConsumerGroup string  `json:"consumerGroup"`
	Status        *string `json:"status"`
	Error         string  `json:"error"`
}

func (a *ackWire) item(defaultGroup string) ackItem {
	g := a.ConsumerGroup
	if g == "" {
		g = defaultGroup
	}
	return ackItem{txn: a.TransactionID, partID: a.PartitionID, lease: a.LeaseID, group: normGroup(g), status: a.Status, errMsg: a.Error}
}

func (a *ackWire) check(field string) string {
	if a.TransactionID == "" {
		return field + ".transactionId is required"
	}
	if a.PartitionID == "" {
		return field + ".partitionId is required (transaction ids are unique per partition only)"
	}
	return ""
}

func (s *Server) handleAck(w http.ResponseWriter, r *http.Request) {
	var a ackWire
	if err := decodeBody(r, &a, false); err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	if bad := a.check("ack"); bad != "" {
		badRequest(w, "%s", bad)
		return
	}
	s.ack(w, []ackItem{a.item("")})
}

func (s *Server) handleAckBatch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ConsumerGroup   string     `json:"consumerGroup"`
		Acknowledgments *[]ackWire `json:"acknowledgments"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	if body.Acknowledgments == nil {
		badRequest(w, "ack/batch requires an acknowledgments array")
		return
	}
	items := make([]ackItem, len(*body.Acknowledgments))
	for i := range *body.Acknowledgments {
		a := &(*body.Acknowledgments)[i]
		if bad := a.check("acknowledgments[" + strconv.Itoa(i) + "]"); bad != "" {
			badRequest(w, "%s", bad)
			return
		}
		items[i] = a.item(body.ConsumerGroup)
	}
	s.ack(w, items)
}

func (s *Server) ack(w http.ResponseWriter, items []ackItem) {
	res := make([]ackResult, len(items))
	h := s.lockShared(false, func() []*queue { return s.ackQueues(items, nil) })
	s.applyAcks(items, res, nil)
	h.unlock()
	jb := getJW()
	defer putJW(jb)
	jb.raw("[")
	for i := range res {
		if i > 0 {
			jb.comma()
		}
		r := &res[i]
		jb.raw(`{"index":`)
		jb.int(int64(i))
		jb.raw(`,"transactionId":`)
		jb.str(items[i].txn)
		jb.raw(`,"success":`)
		jb.bool(r.success)
		jb.raw(`,"error":`)
		jb.strOrNull(r.err)
		jb.raw(`,"leaseReleased":`)
		jb.bool(r.leaseReleased)
		jb.raw(`,"dlq":`)
		jb.bool(r.dlq)
		jb.raw(`,"noop":`)
		jb.bool(r.noop)
		jb.raw("}")
	}
	jb.raw("]")
	writeRaw(w, http.StatusOK, jb.b)
}

func (s *Server) handleLeaseExtend(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("leaseId")
	var body struct {
		Seconds *json.Number `json:"seconds"`
	}
	if err := decodeBody(r, &body, true); err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	secs := int64(60)
	if body.Seconds != nil {
		n, err := body.Seconds.Int64()
		if err != nil || n < 1 {
			badRequest(w, "seconds must be an integer >= 1")
			return
		}
		secs = n
	}
	h := s.lockShared(false, func() []*queue { return s.leaseQueues(id, nil) })
	now := s.now()
	renewed := 0
	var exp time.Time
	for _, c := range s.leaseClaims(id) {
		if !h.holds(c.p.q) {
			continue // its queue is not locked: never one of a lease's own claims
		}
		if c.lease != id || !c.leaseLive(now) {
			continue
		}
		if e := now.Add(time.Duration(secs) * time.Second); e.After(c.leaseExp) {
			c.leaseExp = e
		}
		if c.leaseExp.After(exp) {
			exp = c.leaseExp
		}
		renewed++
	}
	h.unlock()
	jb := getJW()
	defer putJW(jb)
	jb.raw(`{"leaseId":`)
	jb.str(id)
	jb.raw(`,"success":`)
	jb.bool(renewed > 0)
	jb.raw(`,"renewed":`)
	jb.int(int64(renewed))
	var e string
	if renewed > 0 {
		e = fmtLease(exp)
	}
	for _, k := range []string{"newExpiresAt", "expiresAt", "lease_expires_at"} {
		jb.raw(`,"`)
		jb.raw(k)
		jb.raw(`":`)
		jb.strOrNull(e)
	}
	jb.raw("}")
	writeRaw(w, http.StatusOK, jb.b)
}

// txnOpWire is one entry of a transaction's operations array.
type txnOpWire struct {
	Type  string          `json:"type"`
	Items *[]pushItemWire `json:"items"`
	pushItemWire
	PartitionID   string  `json:"partitionId"`
	LeaseID       string  `json:"leaseId"`
	ConsumerGroup string  `json:"consumerGroup"`
	Status        *string `json:"status"`
	Error         string  `json:"error"`
}

type txnSlot struct {
	push bool
	item int // index into pushes or acks
}

func (s *Server) handleTransaction(w http.ResponseWriter, r *http.Request) {
	var body txnWire
	s.mu.RLock()
	txID := s.ids.next(s.now())
	s.mu.RUnlock()
	fail := func(status int, reason, msg string) {
		jb := getJW()
		defer putJW(jb)
		jb.raw(`{"transactionId":`)
		jb.str(txID)
		jb.raw(`,"success":false`)
		if reason != "" {
			jb.raw(`,"reason":`)
			jb.str(reason)
		}
		jb.raw(`,"error":`)
		jb.str(msg)
		jb.raw(`,"results":[]}`)
		writeRaw(w, status, jb.b)
	}
	err := decodeFast(r, func(b []byte) bool {
		if scanTxn(b, &body) {
			return true
		}
		body = txnWire{}
		return false
	}, &body)
	if err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	var kvOps []kvOpWire
	if s.ridersOff.Load() || s.kvAbsent.Load() {
		body.KV = nil
	}
	if !isNull(body.KV) {
		if ops, ok := scanKVOps(body.KV); ok {
			kvOps = ops
		} else if err := json.Unmarshal(body.KV, &kvOps); err != nil {
			fail(http.StatusBadRequest, "bad_request", "kv must be an array of KV operations: "+err.Error())
			return
		}
	}
	if !isNull(body.Timers) {
		var timers []json.RawMessage
		if err := json.Unmarshal(body.Timers, &timers); err != nil {
			fail(http.StatusBadRequest, "bad_request", "timers must be an array: "+err.Error())
			return
		}
		if len(timers) > 0 {
			fail(http.StatusBadRequest, "bad_request", "timers are not supported by miniqueen (Gate does not use them)")
			return
		}
	}
	if len(kvOps) > 0 && s.kvOff.Load() {
		fail(http.StatusForbidden, "kv_disabled", "kv_disabled")
		return
	}
	if body.Operations == nil && len(kvOps) == 0 {
		fail(http.StatusBadRequest, "", "transaction requires an operations array")
		return
	}
	var ops []txnOpWire
	if body.Operations != nil {
		ops = *body.Operations
	}
	nPush, nAck := 0, 0
	for i := range ops {
		if ops[i].Items != nil {
			nPush += len(*ops[i].Items)
		} else {
			nPush++
			nAck++
		}
	}
	pushes := make([]pushItem, 0, nPush)
	acks := make([]ackItem, 0, nAck)
	slots := make([]txnSlot, 0, nPush+nAck)
	for i := range ops {
		op := &ops[i]
		switch op.Type {
		case "push":
			list := []pushItemWire{op.pushItemWire}
			if op.Items != nil {
				list = *op.Items
			}
			for k := range list {
				it := &list[k]
				if it.Queue == "" {
					fail(http.StatusBadRequest, "bad_request", "operations["+strconv.Itoa(i)+"]: push item "+strconv.Itoa(k)+" needs a queue")
					return
				}
				part := defaultPartition
				if it.Partition != nil {
					part = *it.Partition
				}
				data := it.Payload
				if data == nil {
					data = it.Data
				}
				if data == nil {
					data = json.RawMessage("{}")
				}
				trace := ""
				if isUUID(it.TraceID) {
					trace = it.TraceID
				}
				slots = append(slots, txnSlot{push: true, item: len(pushes)})
				pushes = append(pushes, pushItem{queue: it.Queue, partition: part, txn: it.TransactionID, trace: trace, data: data})
			}
		case "ack":
			a := ackWire{TransactionID: op.TransactionID, PartitionID: op.PartitionID, LeaseID: op.LeaseID, ConsumerGroup: op.ConsumerGroup, Status: op.Status, Error: op.Error}
			if bad := a.check("operations[" + strconv.Itoa(i) + "]"); bad != "" {
				fail(http.StatusBadRequest, "bad_request", bad)
				return
			}
			slots = append(slots, txnSlot{item: len(acks)})
			acks = append(acks, a.item(""))
		default:
			fail(http.StatusBadRequest, "bad_request", "operations["+strconv.Itoa(i)+"].type "+strconv.Quote(op.Type)+" is not push or ack")
			return
		}
	}
	cmds, kerr := validateKV(kvOps, true, "kv")
	if kerr != nil {
		fail(kerr.status, "bad_request", kerr.reason+": "+kerr.detail)
		return
	}
	// Lease hints: requiredLeases plus every ack's own leaseId.
	hints := map[string]bool{}
	for _, l := range body.RequiredLeases {
		if l != "" {
			hints[l] = true
		}
	}
	for _, a := range acks {
		if a.lease != "" {
			hints[a.lease] = true
		}
	}

	pushOut := make([]pushOutcome, len(pushes))
	ackRes := make([]ackResult, len(acks))
	kvRes := make([]kvRes, len(cmds))
	jb := getJW()
	defer putJW(jb)

	h := s.lockTxn(pushes, acks, hints, len(cmds) > 0)
	now := s.now()
	j := newJournal()
	// Queues the transaction's pushes create were created (and recorded in
	// j) before their locks were taken.
	j.newQueues = h.created
	rollback := func() {
		s.undo(j)
		h.unlock()
	}
	if v := s.execKV(cmds, kvRes, now, j); v != nil {
		rollback()
		jb.raw(`{"transactionId":`)
		jb.str(txID)
		jb.raw(`,"success":false,`)
		writeVerdictFields(jb, v, len(slots)+v.index)
		jb.raw(`,"error":"kv_precondition_failed","results":[]}`)
		writeRaw(w, http.StatusOK, jb.b)
		return
	}
	s.push(pushes, pushOut, j)
	for i := range pushOut {
		if pushOut[i].duplicate && !pushOut[i].inCall {
			rollback()
			fail(http.StatusOK, "duplicate", "QDUP duplicate messages in queue "+strconv.Quote(pushes[i].queue)+" partition "+strconv.Quote(pushes[i].partition)+"; transaction rolled back")
			return
		}
	}
	for _, l := range body.RequiredLeases {
		if l != "" && !s.leaseAlive(l, now, h.shared) {
			rollback()
			fail(http.StatusOK, "ack_rejected", "QTXN required lease "+l+" is not live (expired or released); transaction rolled back")
			return
		}
	}
	for i := range acks {
		if acks[i].lease != "" || len(hints) == 0 {
			continue
		}
		if len(hints) == 1 {
			for l := range hints {
				acks[i].lease = l
			}
			continue
		}
		// Several leases in the bundle: fence against the current holder
		// of the (partition, group) when it is one of them.
		if p := s.partition(acks[i].partID); p != nil {
			if c := p.cursors[acks[i].group]; c != nil && c.lease != "" && hints[c.lease] {
				acks[i].lease = c.lease
			} else {
				acks[i].lease = "-no-live-lease-in-bundle-"
			}
		}
	}
	s.applyAcks(acks, ackRes, j)
	for i := range ackRes {
		if !ackRes[i].success {
			rollback()
			fail(http.StatusOK, "ack_rejected", "QTXN ack failed for partition "+acks[i].partID+" group "+strconv.Quote(acks[i].group)+": "+ackRes[i].err+"; transaction rolled back")
			return
		}
	}
	s.commit(j, now)
	h.unlock()

	jb.raw(`{"transactionId":`)
	jb.str(txID)
	jb.raw(`,"success":true,"results":[`)
	for i, sl := range slots {
		if i > 0 {
			jb.comma()
		}
		jb.raw(`{"index":`)
		jb.int(int64(i))
		if sl.push {
			o := &pushOut[sl.item]
			jb.raw(`,"type":"push","success":true,"transactionId":`)
			jb.str(o.txn)
			jb.raw(`,"messageId":`)
			jb.uuid(o.msgID)
			jb.raw(`,"queueName":`)
			jb.str(pushes[sl.item].queue)
			if o.duplicate {
				jb.raw(`,"duplicate":true`)
			}
		} else {
			a := &ackRes[sl.item]
			jb.raw(`,"type":"ack","success":true,"transactionId":`)
			jb.str(acks[sl.item].txn)
			jb.raw(`,"error":null,"dlq":`)
			jb.bool(a.dlq)
		}
		jb.raw("}")
	}
	for k := range kvRes {
		if len(slots)+k > 0 {
			jb.comma()
		}
		jb.raw(`{"index":`)
		jb.int(int64(len(slots) + k))
		jb.raw(`,"type":"kv","opIndex":`)
		jb.int(int64(k))
		jb.comma()
		writeKVRes(jb, &kvRes[k])
		jb.raw("}")
	}
	jb.raw("]}")
	writeRaw(w, http.StatusOK, jb.b)
}

// leaseAlive reports whether any claim still holds lease id; h holds the
// lease's queues (lockTxn).
func (s *Server) leaseAlive(id string, now time.Time, h *shared) bool {
	return slices.ContainsFunc(s.leaseClaims(id), func(c *cursor) bool { return h.holds(c.p.q) && c.lease == id && c.leaseLive(now) })
}

// txnLocks are the locks a transaction holds and the queues it created
// for its pushes before taking them.
type txnLocks struct {
	*shared
	created []*queue
}

// lockTxn takes a transaction's locks on the shared side: the queues its
// pushes name (created when absent), the queues of the partitions its acks
// name, the queues of the claims its leases (hints) hold, and kvMu when it
// has kv operations.
func (s *Server) lockTxn(pushes []pushItem, acks []ackItem, hints map[string]bool, kv bool) txnLocks {
	var created []*queue
	h := s.lockShared(kv, func() []*queue {
		var qs []*queue
		for i := range pushes {
			if i > 0 && pushes[i].queue == pushes[i-1].queue {
				continue
			}
			q := s.queueFor(pushes[i].queue, false, nil)
			if q == nil {
				j := newJournal()
				q = s.queueFor(pushes[i].queue, true, j)
				created = append(created, j.newQueues...)
			}
			qs = append(qs, q)
		}
		qs = s.ackQueues(acks, qs)
		for l := range hints {
			qs = s.leaseQueues(l, qs)
		}
		return qs
	})
	return txnLocks{shared: h, created: created}
}
