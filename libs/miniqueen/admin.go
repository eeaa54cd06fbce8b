package miniqueen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Status   string `json:"status"`
		Database string `json:"database"`
		Engine   string `json:"engine"`
		Version  string `json:"version"`
	}{"healthy", "connected", "segments-rust", s.version})
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "engine": "segments-rust"})
}

type counters struct {
	Queues     int   `json:"queues"`
	Partitions int   `json:"partitions"`
	Messages   int64 `json:"messages"`
	Leases     int   `json:"leases"`
	KVKeys     int   `json:"kvKeys"`
	DLQ        int   `json:"dlq"`
}

func (s *Server) counters() counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := counters{Queues: len(s.queues), Leases: len(s.leases), DLQ: len(s.dlq)}
	for _, q := range s.queues {
		c.Partitions += len(q.partList)
		for _, p := range q.partList {
			c.Messages += p.retained()
		}
	}
	for _, m := range s.kv {
		c.KVKeys += len(m.entries)
	}
	return c
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.counters())
}

func (s *Server) handlePrometheus(w http.ResponseWriter, r *http.Request) {
	c := s.counters()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "miniqueen_queues %d\nminiqueen_partitions %d\nminiqueen_messages_retained %d\nminiqueen_leases %d\nminiqueen_kv_keys %d\nminiqueen_dlq_messages %d\n",
		c.Queues, c.Partitions, c.Messages, c.Leases, c.KVKeys, c.DLQ)
	for _, c := range s.Calls() {
		fmt.Fprintf(w, "miniqueen_requests_total{route=%s} %d\n", strconv.Quote(c.Pattern), c.N)
	}
}

// applyOptions sets the options in raw onto o (replace: start from the
// defaults; merge: start from the stored set, explicit null resets).
func applyOptions(o *queueOptions, raw map[string]json.RawMessage) string {
	d := defaultQueueOptions()
	ints := map[string]*int64{
		"leaseTime": &o.LeaseTime, "retryLimit": &o.RetryLimit, "retryDelay": &o.RetryDelay,
		"priority": &o.Priority, "maxSize": &o.MaxSize, "ttl": &o.TTL,
		"delayedProcessing": &o.DelayedProcessing, "windowBuffer": &o.WindowBuffer,
		"retentionSeconds": &o.RetentionSeconds, "completedRetentionSeconds": &o.CompletedRetentionSeconds,
		"maxWaitTimeSeconds": &o.MaxWaitTimeSeconds, "dedupWindowSeconds": &o.DedupWindowSeconds,
		"minPopWaitTime": &o.MinPopWaitTime, "retentionSinkHoldMaxSeconds": &o.RetentionSinkHoldMaxSeconds,
	}
	defInts := map[string]int64{
		"leaseTime": d.LeaseTime, "retryLimit": d.RetryLimit, "retryDelay": d.RetryDelay,
		"ttl": d.TTL, "dedupWindowSeconds": d.DedupWindowSeconds, "retentionSinkHoldMaxSeconds": d.RetentionSinkHoldMaxSeconds,
	}
	bools := map[string]*bool{
		"deadLetterQueue": &o.DeadLetterQueue, "dlqAfterMaxRetries": &o.DLQAfterMaxRetries,
		"retentionEnabled": &o.RetentionEnabled, "encryptionEnabled": &o.EncryptionEnabled,
	}
	defBools := map[string]bool{"deadLetterQueue": true, "dlqAfterMaxRetries": true}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if dst, ok := ints[k]; ok {
			if isNull(v) {
				*dst = defInts[k]
				continue
			}
			n, ok := parseInt(v)
			if !ok {
				return fmt.Sprintf("options.%s must be an integer, got %s", k, string(v))
			}
			lo := int64(0)
			if k == "leaseTime" {
				lo = 1
			}
			if k == "priority" {
				lo = -1 << 62
			}
			if n < lo {
				return fmt.Sprintf("options.%s must be >= %d, got %d", k, lo, n)
			}
			if k == "minPopWaitTime" {
				n = max(0, min(n, 60000))
			}
			*dst = n
			continue
		}
		if dst, ok := bools[k]; ok {
			if isNull(v) {
				*dst = defBools[k]
				continue
			}
			if err := json.Unmarshal(v, dst); err != nil {
				return fmt.Sprintf("options.%s must be a boolean, got %s", k, string(v))
			}
			continue
		}
		if k == "retentionSinkHold" {
			o.RetentionSinkHold = ""
			if !isNull(v) {
				if err := json.Unmarshal(v, &o.RetentionSinkHold); err != nil {
					return "options.retentionSinkHold must be a string"
				}
			}
		}
	}
	return ""
}

var optionKeys = map[string]bool{
	"leaseTime": true, "retryLimit": true, "retryDelay": true, "deadLetterQueue": true, "dlqAfterMaxRetries": true,
	"priority": true, "maxSize": true, "ttl": true, "delayedProcessing": true, "windowBuffer": true,
	"retentionEnabled": true, "retentionSeconds": true, "completedRetentionSeconds": true,
	"maxWaitTimeSeconds": true, "dedupWindowSeconds": true, "encryptionEnabled": true, "minPopWaitTime": true,
	"retentionSinkHold": true, "retentionSinkHoldMaxSeconds": true,
}

func (s *Server) handleConfigure(w http.ResponseWriter, r *http.Request) {
	var top map[string]json.RawMessage
	if err := decodeBody(r, &top, false); err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	var name, ns, task, mode string
	for k, dst := range map[string]*string{"queue": &name, "namespace": &ns, "task": &task, "mode": &mode} {
		if v, ok := top[k]; ok && !isNull(v) {
			if err := json.Unmarshal(v, dst); err != nil {
				badRequest(w, "%s must be a string", k)
				return
			}
		}
	}
	if name == "" {
		badRequest(w, "queue is required")
		return
	}
	opts := map[string]json.RawMessage{}
	for k, v := range top {
		if optionKeys[k] {
			opts[k] = v
		}
	}
	if v, ok := top["options"]; ok && !isNull(v) {
		var nested map[string]json.RawMessage
		if err := json.Unmarshal(v, &nested); err != nil {
			badRequest(w, "options must be an object")
			return
		}
		for k, v := range nested {
			opts[k] = v
		}
	}
	s.mu.Lock()
	existing := s.queues[name]
	var o queueOptions
	if mode == "merge" && existing != nil {
		o = existing.opts
	} else {
		o = defaultQueueOptions()
	}
	if msg := applyOptions(&o, opts); msg != "" {
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"error": msg})
		return
	}
	q := s.queueFor(name, true, nil)
	q.opts = o
	if _, ok := top["namespace"]; ok {
		q.namespace = ns
	}
	if _, ok := top["task"]; ok {
		q.task = task
	}
	resp := struct {
		Configured  bool         `json:"configured"`
		QueueID     string       `json:"queueId"`
		PartitionID *string      `json:"partitionId"`
		Queue       string       `json:"queue"`
		Namespace   string       `json:"namespace"`
		Task        string       `json:"task"`
		Storage     string       `json:"storage"`
		Options     queueOptions `json:"options"`
	}{true, q.id, nil, q.name, q.namespace, q.task, "segments", q.opts}
	s.wake(q, nil)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

type partStats struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
}

// worstCommitted is the queue-level cursor of p: the minimum committed among
// named groups, else the queue-mode cursor (§10.4).
func (s *Server) worstCommitted(q *queue, p *partition) int64 {
	named := false
	worst := int64(1 << 62)
	for g := range q.subs {
		if g == queueModeGroup {
			continue
		}
		named = true
		c := p.cursors[g]
		if c == nil {
			return -1
		}
		worst = min(worst, c.committed)
	}
	for g, c := range p.cursors {
		if g != queueModeGroup && q.subs[g] == nil {
			named = true
			worst = min(worst, c.committed)
		}
	}
	if named {
		return worst
	}
	if c := p.cursors[queueModeGroup]; c != nil {
		return c.committed
	}
	return -1
}

// processing is the live leased span of a cursor, capped at pending.
func processing(c *cursor, now time.Time) int64 {
	if c == nil || !c.leaseLive(now) {
		return 0
	}
	n := c.batchEnd - max(c.committed, c.p.base-1)
	return max(0, min(n, c.pending()))
}

func (s *Server) handleQueueList(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	ns, task := qv.Get("namespace"), qv.Get("task")
	limit, _ := strconv.Atoi(qv.Get("limit"))
	offset, _ := strconv.Atoi(qv.Get("offset"))
	if limit <= 0 {
		limit = 100
	}
	type item struct {
		ID         string    `json:"id"`
		Name       string    `json:"name"`
		Namespace  string    `json:"namespace"`
		Task       string    `json:"task"`
		CreatedAt  string    `json:"createdAt"`
		Partitions int       `json:"partitions"`
		Messages   partStats `json:"messages"`
	}
	s.mu.Lock()
	now := s.now()
	var all []item
	for _, q := range s.queues {
		if ns != "" && q.namespace != ns || task != "" && q.task != task {
			continue
		}
		it := item{ID: q.id, Name: q.name, Namespace: q.namespace, Task: q.task, CreatedAt: fmtCreated(q.createdAt), Partitions: len(q.partList)}
		for _, p := range q.partList {
			st := s.partStats(q, p, now)
			it.Messages.Total += st.Total
			it.Messages.Pending += st.Pending
			it.Messages.Processing += st.Processing
			it.Messages.Completed += st.Completed
		}
		all = append(all, it)
	}
	s.mu.Unlock()
	sort.Slice(all, func(a, b int) bool { return all[a].Name < all[b].Name })
	total := len(all)
	if offset > len(all) {
		offset = len(all)
	}
	all = all[offset:]
	if len(all) > limit {
		all = all[:limit]
	}
	if all == nil {
		all = []item{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": all, "total": total, "limit": limit, "offset": offset})
}

func (s *Server) partStats(q *queue, p *partition, now time.Time) partStats {
	pending := pendingFrom(p, s.worstCommitted(q, p))
	var proc int64
	for _, c := range p.cursors {
		proc += processing(c, now)
	}
	proc = min(proc, pending)
	total := p.retained()
	return partStats{Total: total, Pending: pending, Processing: proc, Completed: max(0, total-pending)}
}

func (s *Server) handleQueueDetail(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	s.mu.Lock()
	q := s.queues[name]
	if q == nil {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Queue not found", "queue": name})
		return
	}
	now := s.now()
	type part struct {
		ID        string    `json:"id"`
		Name      string    `json:"name"`
		CreatedAt string    `json:"createdAt"`
		Stats     partStats `json:"stats"`
	}
	type qinfo struct {
		ID                        string       `json:"id"`
		Name                      string       `json:"name"`
		Namespace                 string       `json:"namespace"`
		Task                      string       `json:"task"`
		CreatedAt                 string       `json:"createdAt"`
		RetentionSeconds          int64        `json:"retentionSeconds"`
		CompletedRetentionSeconds int64        `json:"completedRetentionSeconds"`
		Config                    queueOptions `json:"config"`
	}
	parts := make([]part, 0, len(q.partList))
	var totals partStats
	for _, p := range q.partList {
		st := s.partStats(q, p, now)
		parts = append(parts, part{ID: p.id, Name: p.name, CreatedAt: fmtCreated(p.createdAt), Stats: st})
		totals.Total += st.Total
		totals.Pending += st.Pending
		totals.Processing += st.Processing
		totals.Completed += st.Completed
	}
	info := qinfo{q.id, q.name, q.namespace, q.task, fmtCreated(q.createdAt), q.opts.RetentionSeconds, q.opts.CompletedRetentionSeconds, q.opts}
	s.mu.Unlock()
	sort.Slice(parts, func(a, b int) bool { return parts[a].Name < parts[b].Name })
	writeJSON(w, http.StatusOK, map[string]any{
		"queue": info, "name": q.name, "retentionSeconds": info.RetentionSeconds,
		"partitions": parts, "totals": totals,
	})
}

func (s *Server) handleQueueDelete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	s.mu.Lock()
	q := s.queues[name]
	if q != nil {
		s.deleteQueue(q)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"deleted": q != nil, "queue": name})
}

func (s *Server) deleteQueue(q *queue) {
	for _, p := range q.partList {
		delete(s.partByID, p.id)
		for _, c := range p.cursors {
			s.releaseLease(c, nil)
		}
	}
	delete(s.queues, q.name)
	s.wake(q, nil)
}

func (s *Server) handleDepth(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	group := r.URL.Query().Get("group")
	s.mu.Lock()
	q := s.queues[name]
	if q == nil {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Queue not found", "queue": name})
		return
	}
	now := s.now()
	type part struct {
		Partition  string `json:"partition"`
		Pending    int64  `json:"pending"`
		Processing int64  `json:"processing"`
		Ready      int64  `json:"ready"`
	}
	parts := make([]part, 0, len(q.partList))
	var pend, proc int64
	var pp, pr int
	for _, p := range q.partList {
		var pe, pc int64
		if group != "" {
			c := p.cursors[group]
			committed := int64(-1)
			if c != nil {
				committed = c.committed
			}
			pe = pendingFrom(p, committed)
			pc = min(processing(c, now), pe)
		} else {
			pe = pendingFrom(p, s.worstCommitted(q, p))
			for _, c := range p.cursors {
				pc += processing(c, now)
			}
			pc = min(pc, pe)
		}
		parts = append(parts, part{p.name, pe, pc, pe - pc})
		pend += pe
		proc += pc
		if pe > 0 {
			pp++
		}
		if pe-pc > 0 {
			pr++
		}
	}
	s.mu.Unlock()
	sort.Slice(parts, func(a, b int) bool { return parts[a].Partition < parts[b].Partition })
	var g any
	if group != "" {
		g = group
	}
	writeJSON(w, http.StatusOK, struct {
		Queue             string `json:"queue"`
		Group             any    `json:"group"`
		Pending           int64  `json:"pending"`
		Processing        int64  `json:"processing"`
		Ready             int64  `json:"ready"`
		PartitionsPending int    `json:"partitionsPending"`
		PartitionsReady   int    `json:"partitionsReady"`
		Conflation        bool   `json:"conflation"`
		EffectivePending  int64  `json:"effectivePending"`
		EffectiveReady    int64  `json:"effectiveReady"`
		Partitions        []part `json:"partitions"`
	}{name, g, pend, proc, pend - proc, pp, pr, false, pend, pend - proc, parts})
}

// groupSummary is one (group, queue) row of the consumer-groups list.
type groupSummary struct {
	Name                  string   `json:"name"`
	QueueName             string   `json:"queueName"`
	Topics                []string `json:"topics"`
	Members               int      `json:"members"`
	PartitionCursors      int      `json:"partitionCursors"`
	PartitionsWithLag     int      `json:"partitionsWithLag"`
	TotalLag              int64    `json:"totalLag"`
	MaxTimeLag            int64    `json:"maxTimeLag"`
	State                 string   `json:"state"`
	Storage               string   `json:"storage"`
	SubscriptionMode      string   `json:"subscriptionMode"`
	SubscriptionTimestamp string   `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt *string  `json:"subscriptionCreatedAt"`
	Conflation            bool     `json:"conflation"`
}

// groupRows lists every (group, queue) pair known, sorted.
func (s *Server) groupRows(only string) []groupSummary {
	now := s.now()
	var out []groupSummary
	for _, q := range s.queues {
		groups := map[string]bool{}
		for g := range q.subs {
			groups[g] = true
		}
		for _, p := range q.partList {
			for g := range p.cursors {
				groups[g] = true
			}
		}
		for g := range groups {
			if only != "" && g != only {
				continue
			}
			row := groupSummary{Name: g, QueueName: q.name, Topics: []string{q.name}, Storage: "segments", SubscriptionMode: "all", SubscriptionTimestamp: fmtPG(time.Unix(0, 0))}
			if sub := q.subs[g]; sub != nil {
				ts := time.Unix(0, 0)
				if sub.mode != "all" {
					ts = sub.ts
					if sub.mode == "new" {
						ts = sub.createdAt
					}
				}
				row.SubscriptionMode = sub.mode
				row.SubscriptionTimestamp = fmtPG(ts)
				ca := fmtPG(sub.createdAt)
				row.SubscriptionCreatedAt = &ca
			}
			consumed := false
			for _, p := range q.partList {
				c := p.cursors[g]
				if c == nil {
					continue
				}
				row.Members++
				consumed = consumed || c.consumed
				pend := c.pending()
				if pend > 0 {
					row.PartitionsWithLag++
					row.TotalLag += pend
					off := max(c.committed+1, p.base)
					age := int64(now.Sub(p.msgAt(off).createdAt()) / time.Second)
					row.MaxTimeLag = max(row.MaxTimeLag, age)
				}
			}
			row.PartitionCursors = row.Members
			switch {
			case row.MaxTimeLag > 300:
				row.State = "Lagging"
			case consumed:
				row.State = "Stable"
			default:
				row.State = "Dead"
			}
			out = append(out, row)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Name != out[b].Name {
			return out[a].Name < out[b].Name
		}
		return out[a].QueueName < out[b].QueueName
	})
	if out == nil {
		out = []groupSummary{}
	}
	return out
}

func (s *Server) handleGroupList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rows := s.groupRows("")
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, rows)
}

func (s *Server) handleGroupLagging(w http.ResponseWriter, r *http.Request) {
	minLag := int64(3600)
	if v := r.URL.Query().Get("minLagSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			badRequest(w, "minLagSeconds must be an integer >= 0")
			return
		}
		minLag = n
	}
	s.mu.Lock()
	rows := s.groupRows("")
	s.mu.Unlock()
	out := []groupSummary{}
	for _, row := range rows {
		if row.MaxTimeLag >= minLag && row.TotalLag > 0 {
			out = append(out, row)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGroupDetail(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	type part struct {
		Partition       string  `json:"partition"`
		PartitionID     string  `json:"partitionId"`
		CommittedOffset int64   `json:"committedOffset"`
		OffsetLag       int64   `json:"offsetLag"`
		TimeLagSeconds  int64   `json:"timeLagSeconds"`
		LeaseActive     bool    `json:"leaseActive"`
		LeaseExpiresAt  *string `json:"leaseExpiresAt"`
		RetryCount      int64   `json:"retryCount"`
		LastConsumedAt  *string `json:"lastConsumedAt"`
	}
	type qd struct {
		QueueName  string `json:"queueName"`
		TotalLag   int64  `json:"totalLag"`
		Partitions []part `json:"partitions"`
	}
	s.mu.Lock()
	now := s.now()
	var qs []qd
	for _, q := range s.queues {
		var d qd
		found := q.subs[g] != nil
		for _, p := range q.partList {
			c := p.cursors[g]
			if c == nil {
				continue
			}
			found = true
			pt := part{Partition: p.name, PartitionID: p.id, CommittedOffset: c.committed, OffsetLag: c.pending(), LeaseActive: c.leaseLive(now), RetryCount: c.retries}
			if pt.OffsetLag > 0 {
				pt.TimeLagSeconds = int64(now.Sub(p.msgAt(max(c.committed+1, p.base)).createdAt()) / time.Second)
			}
			if pt.LeaseActive {
				e := fmtLease(c.leaseExp)
				pt.LeaseExpiresAt = &e
			}
			if c.consumed {
				lc := fmtPG(c.lastConsumedAt)
				pt.LastConsumedAt = &lc
			}
			d.TotalLag += pt.OffsetLag
			d.Partitions = append(d.Partitions, pt)
		}
		if found {
			d.QueueName = q.name
			if d.Partitions == nil {
				d.Partitions = []part{}
			}
			sort.Slice(d.Partitions, func(a, b int) bool { return d.Partitions[a].Partition < d.Partitions[b].Partition })
			qs = append(qs, d)
		}
	}
	s.mu.Unlock()
	if qs == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Consumer group not found", "consumerGroup": g})
		return
	}
	sort.Slice(qs, func(a, b int) bool { return qs[a].QueueName < qs[b].QueueName })
	writeJSON(w, http.StatusOK, map[string]any{"name": g, "queues": qs})
}

func (s *Server) handleGroupDelete(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	qname := r.PathValue("queue")
	meta := true
	if v := r.URL.Query().Get("deleteMetadata"); v != "" {
		meta = isTrue(v)
	}
	s.mu.Lock()
	n := 0
	for _, q := range s.queues {
		if qname != "" && q.name != qname {
			continue
		}
		for _, p := range q.partList {
			if c := p.cursors[g]; c != nil {
				s.releaseLease(c, nil)
				delete(p.cursors, g)
				n++
			}
		}
		if meta {
			delete(q.subs, g)
		}
		s.wake(q, nil)
	}
	s.mu.Unlock()
	resp := map[string]any{"success": true, "consumerGroup": g, "deletedPartitions": n, "metadataDeleted": meta}
	if qname != "" {
		resp["queueName"] = qname
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleSeek(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	qname := r.PathValue("queue")
	pname := r.PathValue("partition")
	onePart := strings.Contains(r.Pattern, "{partition}")
	var body struct {
		ToEnd     bool   `json:"toEnd"`
		Timestamp string `json:"timestamp"`
	}
	if err := decodeBody(r, &body, onePart); err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	var ts time.Time
	if !onePart {
		if !body.ToEnd && body.Timestamp == "" {
			badRequest(w, "Must specify toEnd=true or a timestamp")
			return
		}
		if body.ToEnd && body.Timestamp != "" {
			badRequest(w, "Specify only one of toEnd=true or a timestamp")
			return
		}
		if body.Timestamp != "" {
			t, ok := parseInstant(body.Timestamp)
			if !ok {
				badRequest(w, "timestamp %q is not RFC 3339", body.Timestamp)
				return
			}
			ts = t
		}
	}
	s.mu.Lock()
	q := s.queues[qname]
	if q == nil {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Queue not found", "queue": qname})
		return
	}
	n := 0
	for _, p := range q.partList {
		if onePart && p.name != pname {
			continue
		}
		c := s.cursorFor(p, g, nil)
		s.releaseLease(c, nil)
		c.retries = 0
		if onePart || body.ToEnd {
			c.committed = p.lastOffset()
		} else {
			c.committed = seedAt(p, subscription{mode: "timestamp", ts: ts})
		}
		n++
	}
	if onePart && n == 0 {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Partition not found", "queue": qname, "partition": pname})
		return
	}
	s.wake(q, nil)
	s.mu.Unlock()
	resp := map[string]any{"success": true, "consumerGroup": g, "queueName": qname, "partitionsUpdated": n}
	if onePart {
		resp["partition"] = pname
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleSubscription(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	var body struct {
		SubscriptionTimestamp string `json:"subscriptionTimestamp"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		badRequest(w, "bad body: %v", err)
		return
	}
	ts, ok := parseInstant(body.SubscriptionTimestamp)
	if !ok {
		badRequest(w, "subscriptionTimestamp must be an RFC 3339 instant")
		return
	}
	s.mu.Lock()
	n := 0
	for _, q := range s.queues {
		if sub := q.subs[g]; sub != nil {
			sub.mode = "timestamp"
			sub.ts = ts
			n++
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": g, "queuesUpdated": n, "subscriptionTimestamp": fmtPG(ts)})
}

func (s *Server) handleDLQ(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	qname, g := qv.Get("queue"), qv.Get("consumerGroup")
	limit, offset := 100, 0
	if v := qv.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	if v := qv.Get("offset"); v != "" {
		offset, _ = strconv.Atoi(v)
	}
	if limit <= 0 {
		limit = 100
	}
	type row struct {
		ID            string          `json:"id"`
		TransactionID string          `json:"transactionId"`
		PartitionID   string          `json:"partitionId"`
		Queue         string          `json:"queue"`
		Partition     string          `json:"partition"`
		ConsumerGroup string          `json:"consumerGroup"`
		ErrorMessage  string          `json:"errorMessage"`
		RetryCount    int64           `json:"retryCount"`
		Data          json.RawMessage `json:"data"`
		CreatedAt     string          `json:"createdAt"`
		FailedAt      string          `json:"failedAt"`
	}
	s.mu.Lock()
	var rows []row
	for _, d := range s.dlq {
		if qname != "" && d.queue != qname || g != "" && d.group != g {
			continue
		}
		data := d.data
		if len(bytes.TrimSpace(data)) == 0 {
			data = json.RawMessage("null")
		}
		rows = append(rows, row{d.id, d.txn, d.partitionID, d.queue, d.partition, d.group, d.errMsg, d.retries, data, fmtCreated(d.created), fmtCreated(d.failed)})
	}
	s.mu.Unlock()
	all := len(rows)
	offset = min(max(offset, 0), len(rows))
	rows = rows[offset:]
	if len(rows) > limit {
		rows = rows[:limit]
	}
	if rows == nil {
		rows = []row{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"messages":   rows,
		"pagination": map[string]int{"limit": limit, "offset": offset, "total": all},
		"total":      len(rows),
	})
}
