package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// A replica's status is many small kv rows, never one document: one
// header row per replica ("relay:{replica}", TTL three periods, rewritten
// every period) and one row per graph it runs
// ("status:{app}:{graph}:{replica}:{part}"; a graph with many stages is
// split into parts), each far below the broker's 64 KiB value limit.
// A graph row counts only while its replica's header is live and names the
// same epoch (one per writer), so a dead replica disappears from every view
// when its header expires, and a restarted replica with the same id never
// shows the rows of its previous life. Graph rows are rewritten when what
// they say changed, else every half of their longer TTL: an idle graph
// costs a write every few minutes, not every period.
const (
	statusPrefix      = "relay:"
	graphStatusPrefix = "status:"
)

// MaxStatusDenials bounds the denials a replica publishes in its header
// row.
const MaxStatusDenials = 50

// StatusRowTarget is the size a graph status row is packed to: a graph
// whose stages encode larger is split into parts of about this size.
const StatusRowTarget = 16 << 10

// MaxStatusRowBytes is the most any status row may encode to: the broker's
// kv value limit (65,536 bytes) less room for the row's envelope. A single
// stage larger than this (only possible with thousands of denial reasons)
// keeps the denial counts that fit.
const MaxStatusRowBytes = 60 << 10

// MaxStatusReplicaBytes bounds a replica id: its graph rows' keys must stay
// within the broker's 512-byte key limit with the longest app and graph
// names.
const MaxStatusReplicaBytes = 256

// maxStatusText bounds each free-text field of a status row (a graph's or
// a wedge's error): longer text is cut, marked with an ellipsis.
const maxStatusText = 2048

// Status write batching: at most this many ops and about this many value
// bytes per kv call (the broker takes 256 ops per call).
const (
	statusOpsPerCall   = 200
	statusBytesPerCall = 1 << 20
)

// Counters are one stage's lifetime counters on one replica (the wire
// shape, defined once in libs/wire).
type Counters = wire.Counters

// Refusal is the last budget that refused a stage's whole window.
type Refusal = wire.Refusal

// Denial is one entry of a relay's denial ring.
type Denial = wire.Denial

// Wedge describes a stage whose ack the broker keeps refusing at one head.
type Wedge struct {
	Queue     string `json:"queue"`
	Group     string `json:"group"`
	Partition string `json:"partition"`
	Head      string `json:"head"`
	Attempts  int    `json:"attempts"`
	Error     string `json:"error"`
	Escalated bool   `json:"escalated"`
}

// StageStatus is one stage as one replica runs it.
type StageStatus struct {
	Path        string   `json:"path"`
	Node        string   `json:"node"`
	Hop         int      `json:"hop"`
	Source      string   `json:"source"`
	Group       string   `json:"group"`
	Counters    Counters `json:"counters"`
	LastRefusal *Refusal `json:"lastRefusal,omitempty"`
	Wedge       *Wedge   `json:"wedge,omitempty"`
	// Holding is how many claims the stage holds now, leased while their
	// window does not open (a gauge; 0 is omitted).
	Holding int `json:"holding,omitempty"`
	// Denials are the stage's denials on this replica (lifetime of the
	// graph runtime) by budget and reason, sorted.
	Denials []DenialCount `json:"denials,omitempty"`
}

// DenialCount is how many times one budget refused a stage's window for
// one reason (budget.ReasonCeiling, ReasonShare, ReasonBackoff).
type DenialCount struct {
	Budget string `json:"budget"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// GraphStatus is one graph as one replica runs it.
type GraphStatus struct {
	App     string `json:"application"`
	Graph   string `json:"graph"`
	Version int64  `json:"version"`
	// Running is false when the replica knows the graph but its stages are
	// not running (a failed start); Error then says why.
	Running bool          `json:"running"`
	Error   string        `json:"error,omitempty"`
	Stages  []StageStatus `json:"stages"`
	// Started is epoch milliseconds of the runtime's start.
	Started int64 `json:"started"`
}

// RelayStatus is what one relay replica publishes every few seconds (as
// rows: see StatusWriter), and what Statuses assembles back.
type RelayStatus struct {
	Replica string `json:"replica"`
	// At is epoch milliseconds of the replica's newest header write.
	At      int64         `json:"at"`
	Graphs  []GraphStatus `json:"graphs"`
	Denials []Denial      `json:"denials,omitempty"`
}

// Graph returns the status of app/graph on this replica.
func (r *RelayStatus) Graph(app, graph string) (GraphStatus, bool) {
	for _, g := range r.Graphs {
		if g.App == app && g.Graph == graph {
			return g, true
		}
	}
	return GraphStatus{}, false
}

// statusHeader is a replica's header row.
type statusHeader struct {
	Replica string `json:"replica"`
	At      int64  `json:"at"`
	// Epoch names the writer: graph rows of another epoch are not this
	// replica's (a previous life under the same id).
	Epoch string `json:"epoch"`
	// Graphs is how many graphs the replica runs.
	Graphs int `json:"graphs"`
	// Gen moves whenever the writer wrote or deleted a graph row: a reader
	// that saw this epoch and gen already has every graph row.
	Gen int64 `json:"gen"`
	// Log is the sequence of the newest change-log row this epoch wrote
	// (0: none): a reader that read the log up to Log has every graph row
	// change the header vouches for (see statuslog.go).
	Log     int64    `json:"log,omitempty"`
	Denials []Denial `json:"denials,omitempty"`
}

// graphStatusRow is one part of one graph's status on one replica.
type graphStatusRow struct {
	Replica string `json:"replica"`
	Epoch   string `json:"epoch"`
	// Gen numbers the writer's writes of this graph: every part of one
	// write carries the same Gen, so a reader never mixes two writes.
	Gen   int64       `json:"gen"`
	Part  int         `json:"part"`
	Parts int         `json:"parts"`
	Graph GraphStatus `json:"graph"`
}

// ErrStatusRowTooLarge is a status row that cannot be made to fit the
// broker's value limit (it never happens with legal names; it is reported,
// never written cut).
var ErrStatusRowTooLarge = errors.New("a relay status row does not fit the broker's kv value limit")

// StatusHeaderKey is the kv key of replica's status header row.
func StatusHeaderKey(replica string) string { return statusPrefix + replica }

// GraphStatusKey is the kv key of one part of app/graph's status row on
// replica.
func GraphStatusKey(app, graph, replica string, part int) string {
	return graphStatusPrefix + app + ":" + graph + ":" + replica + ":" + strconv.Itoa(part)
}

// splitGraphStatusKey parses a GraphStatusKey. Application and graph names
// never contain ':'; a replica id may.
func splitGraphStatusKey(key string) (app, graph, replica string, part int, ok bool) {
	rest, found := strings.CutPrefix(key, graphStatusPrefix)
	if !found {
		return "", "", "", 0, false
	}
	app, rest, found = strings.Cut(rest, ":")
	if !found || app == "" {
		return "", "", "", 0, false
	}
	graph, rest, found = strings.Cut(rest, ":")
	if !found || graph == "" {
		return "", "", "", 0, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", "", "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 || strconv.Itoa(n) != rest[i+1:] {
		return "", "", "", 0, false
	}
	return app, graph, rest[:i], n, true
}

// StatusWrite is what one StatusWriter.Write did.
type StatusWrite struct {
	// Rows is the rows written or deleted; Calls the kv calls it took.
	Rows, Calls int
}

// StatusWriter publishes one replica's status as rows, writing only what
// changed (and refreshing the rest before it expires). It is not safe for
// concurrent use; one publisher owns it.
type StatusWriter struct {
	s       *Store
	replica string
	epoch   string
	gen     int64
	// log is the sequence of the newest change-log row written.
	log int64
	// written is what the last applied write of each graph said.
	written map[string]writtenGraph
	// gone is graphs whose rows are still to delete (parts count).
	gone map[string]goneGraph
}

type writtenGraph struct {
	app, graph string
	// status is a copy of what the rows say (compared with
	// SameGraphStatus, which costs far less than encoding the status).
	status GraphStatus
	parts  int
	at     time.Time
}

type goneGraph struct {
	app, graph string
	parts      int
}

// NewStatusWriter returns a writer of replica's status rows with a fresh
// epoch.
func (s *Store) NewStatusWriter(replica string) *StatusWriter {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &StatusWriter{s: s, replica: replica, epoch: hex.EncodeToString(b[:]),
		written: map[string]writtenGraph{}, gone: map[string]goneGraph{}}
}

// graphRowTTL is how long a graph row lives: the header's TTL bounds how
// long a dead replica's rows count; this only bounds how long they occupy
// the broker.
func graphRowTTL(ttl time.Duration) time.Duration { return 20 * ttl }

// ttlSeconds rounds d up to whole seconds, at least one.
func ttlSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

// statusBatch is the ops of one kv call and the graphs they settle.
type statusBatch struct {
	ops     []queen.KVOp
	bytes   int
	written map[string]writtenGraph
	deleted []string
	// changes is what the batch's rows say, for the change log.
	changes []statusChange
}

// Write publishes st (the replica's whole status at now): the rows of
// graphs whose status changed or whose row is half its TTL old, deletes of
// graphs no longer in st, and the header with ttl. A graph whose write
// failed is written again next time. Every kv call is tried; the first
// error is returned (a refusal wrapped as the broker's *queen.Refusal or
// ErrStatusRowTooLarge, so a caller can name the cause).
func (w *StatusWriter) Write(ctx context.Context, st RelayStatus, ttl time.Duration, now time.Time) (StatusWrite, error) {
	if w.replica == "" || st.Replica != w.replica {
		return StatusWrite{}, fmt.Errorf("publishing relay status: the replica id %q is not the writer's %q", st.Replica, w.replica)
	}
	if len(w.replica) > MaxStatusReplicaBytes {
		return StatusWrite{}, fmt.Errorf("publishing relay status: the replica id is %d bytes, the most is %d (GATE_RELAY_ID)", len(w.replica), MaxStatusReplicaBytes)
	}
	rowTTL := graphRowTTL(ttl)
	var firstErr error
	var batches []*statusBatch
	cur := &statusBatch{written: map[string]writtenGraph{}}
	flush := func() {
		if len(cur.ops) > 0 {
			batches = append(batches, cur)
		}
		cur = &statusBatch{written: map[string]writtenGraph{}}
	}
	add := func(ops []queen.KVOp, bytes int) {
		if len(cur.ops)+len(ops) > statusOpsPerCall || (cur.bytes+bytes > statusBytesPerCall && len(cur.ops) > 0) {
			flush()
		}
		cur.ops = append(cur.ops, ops...)
		cur.bytes += bytes
	}
	live := map[string]bool{}
	for _, g := range st.Graphs {
		k := g.App + "/" + g.Graph
		live[k] = true
		prev, had := w.written[k]
		if had && SameGraphStatus(prev.status, g) && now.Sub(prev.at) < rowTTL/2 {
			continue
		}
		w.gen++
		rows, err := splitGraphStatus(graphStatusRow{Replica: w.replica, Epoch: w.epoch, Gen: w.gen, Graph: g})
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("publishing the status of %s/%s: %w", g.App, g.Graph, err)
			}
			continue
		}
		var ops []queen.KVOp
		size := 0
		for i, r := range rows {
			ops = append(ops, queen.KVPut(w.s.ns, GraphStatusKey(g.App, g.Graph, w.replica, i), r, queen.PutOpts{TTLSeconds: ttlSeconds(rowTTL)}))
			size += len(r)
		}
		for i := len(rows); had && i < prev.parts; i++ {
			ops = append(ops, queen.KVDelete(w.s.ns, GraphStatusKey(g.App, g.Graph, w.replica, i), queen.DeleteOpts{}))
		}
		add(ops, size)
		cur.written[k] = writtenGraph{app: g.App, graph: g.Graph, status: CloneGraphStatus(g), parts: len(rows), at: now}
		cur.changes = append(cur.changes, statusChange{App: g.App, Graph: g.Graph, Parts: len(rows), Gen: w.gen})
	}
	for k, prev := range w.written {
		if !live[k] {
			w.gone[k] = goneGraph{app: prev.app, graph: prev.graph, parts: prev.parts}
			delete(w.written, k)
		}
	}
	for k, g := range w.gone {
		if live[k] {
			delete(w.gone, k)
			continue
		}
		var ops []queen.KVOp
		for i := 0; i < g.parts; i++ {
			ops = append(ops, queen.KVDelete(w.s.ns, GraphStatusKey(g.app, g.graph, w.replica, i), queen.DeleteOpts{}))
		}
		add(ops, 0)
		cur.deleted = append(cur.deleted, k)
		w.gen++
		cur.changes = append(cur.changes, statusChange{App: g.app, Graph: g.graph, Gen: w.gen})
	}
	flush()
	var out StatusWrite
	callCtx := ctx
	run := func(ops []queen.KVOp) bool {
		if callCtx.Err() != nil {
			// The caller's deadline passed: these rows are written next
			// time (the log and header still go, below).
			if firstErr == nil {
				firstErr = fmt.Errorf("publishing relay status (%d rows): %w", len(ops), callCtx.Err())
			}
			return false
		}
		out.Calls++
		res, err := w.s.c.KV(callCtx, ops...)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("publishing relay status (%d rows): %w", len(ops), err)
			}
			return false
		}
		out.Rows += len(ops)
		return true
	}
	// The graph rows first; then the change log naming the rows that were
	// stored (a broker applies one call's ops in key order, not in the
	// order sent, so the log goes in calls of its own); the header last,
	// so a reader that sees its Log finds every log row and graph row it
	// names.
	var changed []statusChange
	for _, b := range batches {
		if !run(b.ops) {
			continue
		}
		for k, g := range b.written {
			w.written[k] = g
		}
		for _, k := range b.deleted {
			delete(w.gone, k)
		}
		changed = append(changed, b.changes...)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The graph rows took the caller's whole deadline (a slow broker,
		// thousands of graphs starting at once): the log of what was
		// stored and the header still go, on a deadline of their own, so
		// the replica stays live and its placement does not move.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(ttl/3, time.Second))
		defer cancel()
		callCtx = hctx
	}
	logRows, err := w.logRows(changed)
	if err != nil {
		return out, fmt.Errorf("publishing relay status: %w", err)
	}
	var ops []queen.KVOp
	bytes := 0
	for _, r := range logRows {
		if len(ops) == statusOpsPerCall || (bytes+len(r.value) > statusBytesPerCall && len(ops) > 0) {
			run(ops)
			ops, bytes = nil, 0
		}
		ops = append(ops, queen.KVPut(w.s.ns, StatusLogKey(w.replica, w.epoch, r.seq), r.value, queen.PutOpts{TTLSeconds: ttlSeconds(statusLogTTL(ttl))}))
		bytes += len(r.value)
	}
	if len(ops) > 0 {
		run(ops)
	}
	header, err := encodeHeader(statusHeader{Replica: w.replica, At: st.At, Epoch: w.epoch, Graphs: len(st.Graphs), Gen: w.gen, Log: w.log, Denials: st.Denials})
	if err != nil {
		return out, fmt.Errorf("publishing relay status: %w", err)
	}
	run([]queen.KVOp{queen.KVPut(w.s.ns, StatusHeaderKey(w.replica), header, queen.PutOpts{TTLSeconds: ttlSeconds(ttl)})})
	return out, firstErr
}

// Withdraw deletes every row the writer wrote (at a clean shutdown).
func (w *StatusWriter) Withdraw(ctx context.Context) error {
	ops := []queen.KVOp{queen.KVDelete(w.s.ns, StatusHeaderKey(w.replica), queen.DeleteOpts{})}
	var errs []error
	call := func() {
		if _, err := w.s.c.KV(ctx, ops...); err != nil {
			errs = append(errs, err)
		}
		ops = nil
	}
	rows := func(app, graph string, parts int) {
		for i := 0; i < parts; i++ {
			if len(ops) == statusOpsPerCall {
				call()
			}
			ops = append(ops, queen.KVDelete(w.s.ns, GraphStatusKey(app, graph, w.replica, i), queen.DeleteOpts{}))
		}
	}
	for _, g := range w.written {
		rows(g.app, g.graph, g.parts)
	}
	for _, g := range w.gone {
		rows(g.app, g.graph, g.parts)
	}
	if len(ops) > 0 {
		call()
	}
	w.written, w.gone = map[string]writtenGraph{}, map[string]goneGraph{}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("withdrawing relay status: %w", err)
	}
	return nil
}

// encodeHeader encodes h, dropping the oldest denials until it fits
// MaxStatusRowBytes (denials are a view of the newest; the ring and the
// handover keep them all).
func encodeHeader(h statusHeader) (json.RawMessage, error) {
	if len(h.Denials) > MaxStatusDenials {
		h.Denials = h.Denials[:MaxStatusDenials]
	}
	for {
		b, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		if len(b) <= MaxStatusRowBytes {
			return b, nil
		}
		if len(h.Denials) == 0 {
			return nil, fmt.Errorf("the header of replica %q is %d bytes: %w", h.Replica, len(b), ErrStatusRowTooLarge)
		}
		h.Denials = h.Denials[:len(h.Denials)/2]
	}
}

// cutText bounds a free-text field.
func cutText(s string) string {
	if len(s) <= maxStatusText {
		return s
	}
	i := maxStatusText
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// splitGraphStatus encodes r's graph as one row, or as parts of about
// StatusRowTarget bytes each when its stages do not fit one: every row at
// most MaxStatusRowBytes.
func splitGraphStatus(r graphStatusRow) ([]json.RawMessage, error) {
	g := r.Graph
	g.Error = cutText(g.Error)
	stages := make([]StageStatus, len(g.Stages))
	copy(stages, g.Stages)
	for i := range stages {
		if w := stages[i].Wedge; w != nil {
			c := *w
			c.Error = cutText(c.Error)
			stages[i].Wedge = &c
		}
	}
	encode := func(part, parts int, ss []StageStatus) (json.RawMessage, error) {
		row := r
		row.Part, row.Parts = part, parts
		row.Graph = g
		row.Graph.Stages = ss
		return json.Marshal(row)
	}
	whole, err := encode(0, 1, stages)
	if err != nil {
		return nil, err
	}
	if len(whole) <= StatusRowTarget {
		return []json.RawMessage{whole}, nil
	}
	// Pack stages into parts of about StatusRowTarget bytes.
	empty, err := encode(0, 1, []StageStatus{})
	if err != nil {
		return nil, err
	}
	var groups [][]StageStatus
	var cur []StageStatus
	size := len(empty)
	for _, s := range stages {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if len(empty)+len(b)+8 > MaxStatusRowBytes {
			s = fitStage(s, MaxStatusRowBytes-len(empty)-8)
			b, _ = json.Marshal(s)
		}
		if len(cur) > 0 && size+len(b)+1 > StatusRowTarget {
			groups = append(groups, cur)
			cur, size = nil, len(empty)
		}
		cur = append(cur, s)
		size += len(b) + 1
	}
	groups = append(groups, cur)
	out := make([]json.RawMessage, 0, len(groups))
	for i, ss := range groups {
		b, err := encode(i, len(groups), ss)
		if err != nil {
			return nil, err
		}
		if len(b) > MaxStatusRowBytes {
			return nil, fmt.Errorf("part %d of %s/%s is %d bytes: %w", i, g.App, g.Graph, len(b), ErrStatusRowTooLarge)
		}
		out = append(out, b)
	}
	return out, nil
}

// fitStage keeps the denial counts of s that fit limit bytes (a stage with
// thousands of budget×reason pairs); the counts also go to /metrics.
func fitStage(s StageStatus, limit int) StageStatus {
	for len(s.Denials) > 0 {
		b, _ := json.Marshal(s)
		if len(b) <= limit {
			break
		}
		s.Denials = s.Denials[:len(s.Denials)/2]
	}
	return s
}

// PutStatus publishes st in full (every row, whatever was written before)
// with a time to live; a replica that stops writing disappears from every
// view once ttl passes. A long-running publisher uses a StatusWriter,
// which writes only what changed.
func (s *Store) PutStatus(ctx context.Context, st RelayStatus, ttl time.Duration) error {
	if st.Replica == "" {
		return fmt.Errorf("publishing relay status: the replica id is empty")
	}
	_, err := s.NewStatusWriter(st.Replica).Write(ctx, st, ttl, time.Now())
	return err
}

// DeleteStatus withdraws a replica's status header: its graph rows stop
// counting at once and expire on their own.
func (s *Store) DeleteStatus(ctx context.Context, replica string) error {
	_, err := s.c.KV(ctx, queen.KVDelete(s.ns, StatusHeaderKey(replica), queen.DeleteOpts{}))
	if err != nil {
		return fmt.Errorf("withdrawing relay status: %w", err)
	}
	return nil
}

// Statuses reads the status of every live relay replica, ordered by
// replica id, each replica's graphs ordered by app and graph: every header
// and every graph row, page by page. Unreadable rows, rows of a replica
// without a live header or of another epoch, and graphs with a part
// missing are skipped.
func (s *Store) Statuses(ctx context.Context) ([]RelayStatus, error) {
	headers, err := s.statusHeaders(ctx)
	if err != nil {
		return nil, err
	}
	asm := newStatusAssembly(headers)
	if err := s.eachRow(ctx, graphStatusPrefix, asm.add); err != nil {
		return nil, fmt.Errorf("reading relay status: %w", err)
	}
	return asm.result(), nil
}

// GraphStatuses reads the status of app/graph on every live replica: the
// headers and the graph's own rows only.
func (s *Store) GraphStatuses(ctx context.Context, app, graph string) ([]RelayStatus, error) {
	headers, err := s.statusHeaders(ctx)
	if err != nil {
		return nil, err
	}
	asm := newStatusAssembly(headers)
	if err := s.eachRow(ctx, graphStatusPrefix+app+":"+graph+":", asm.add); err != nil {
		return nil, fmt.Errorf("reading the relay status of %s/%s: %w", app, graph, err)
	}
	return asm.result(), nil
}

// LiveReplicas is the id of every replica whose status header is live,
// sorted: the members placement hashes over.
func (s *Store) LiveReplicas(ctx context.Context) ([]string, error) {
	headers, err := s.statusHeaders(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(headers))
	for id := range headers {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

func (s *Store) statusHeaders(ctx context.Context) (map[string]statusHeader, error) {
	headers := map[string]statusHeader{}
	err := s.eachRow(ctx, statusPrefix, func(row queen.KVRow) {
		var h statusHeader
		if json.Unmarshal(row.Value, &h) != nil || h.Replica == "" || StatusHeaderKey(h.Replica) != row.Key {
			return
		}
		headers[h.Replica] = h
	})
	if err != nil {
		return nil, fmt.Errorf("reading relay status: %w", err)
	}
	return headers, nil
}

// statusAssembly joins graph rows to their replica's header.
type statusAssembly struct {
	headers map[string]statusHeader
	parts   map[string][]graphStatusRow
}

func newStatusAssembly(h map[string]statusHeader) *statusAssembly {
	return &statusAssembly{headers: h, parts: map[string][]graphStatusRow{}}
}

func (a *statusAssembly) add(row queen.KVRow) {
	_, _, replica, _, ok := splitGraphStatusKey(row.Key)
	if !ok {
		return
	}
	h, live := a.headers[replica]
	if !live {
		return
	}
	r, k, ok := decodeGraphRow(row, replica, h.Epoch)
	if !ok {
		return
	}
	k = replica + "\x00" + k
	a.parts[k] = append(a.parts[k], r)
}

func (a *statusAssembly) result() []RelayStatus {
	byReplica := map[string]*RelayStatus{}
	for _, h := range a.headers {
		byReplica[h.Replica] = &RelayStatus{Replica: h.Replica, At: h.At, Denials: h.Denials}
	}
	for _, rows := range a.parts {
		g, complete := joinGraphRows(rows, 0)
		if !complete {
			continue
		}
		st := byReplica[rows[0].Replica]
		st.Graphs = append(st.Graphs, g)
	}
	out := make([]RelayStatus, 0, len(byReplica))
	for _, st := range byReplica {
		sortGraphs(st.Graphs)
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Replica < out[j].Replica })
	return out
}

// sortGraphs orders graphs by application, then graph name.
func sortGraphs(graphs []GraphStatus) {
	sort.Slice(graphs, func(i, j int) bool {
		if graphs[i].App != graphs[j].App {
			return graphs[i].App < graphs[j].App
		}
		return graphs[i].Graph < graphs[j].Graph
	})
}
