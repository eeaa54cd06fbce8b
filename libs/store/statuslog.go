package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/queen"
)

// The change log. Every StatusWriter.Write that stores or deletes graph
// rows also writes change-log rows ("statuslog:{replica}:{epoch}:{seq}",
// seq counting 1, 2, 3… per epoch, zero-padded so keys sort by seq), each
// naming the graphs whose rows that write stored (with their parts count
// and gen) or deleted, and the header names the newest seq in Log. A
// reader that has read a replica up to seq L reads the log rows after L
// by prefix and then only the graph rows they name: its cost follows what
// changed, not how many graphs run. A hole in the log (a row expired, or
// a write the broker refused) sends the reader back to reading every
// graph row, as does a slow timer (the safety net).
const statusLogPrefix = "statuslog:"

// statusLogSeqDigits pads a log seq so the keys of one epoch sort by seq.
const statusLogSeqDigits = 19

// DefaultStatusFullRead is how often a StatusReader re-reads every graph
// row whatever the log says.
const DefaultStatusFullRead = time.Minute

// statusGetManyKeys is how many keys one getMany asks for (the broker
// takes 1,024 keys per call and answers at most 4 MiB).
const statusGetManyKeys = 500

// StatusLogKey is the kv key of change-log row seq of replica's epoch.
func StatusLogKey(replica, epoch string, seq int64) string {
	return statusLogEpochPrefix(replica, epoch) + fmt.Sprintf("%0*d", statusLogSeqDigits, seq)
}

// statusLogEpochPrefix is the prefix of every log row of replica's epoch.
// An epoch is hex without ':', so one replica's prefix never lists
// another's rows, whatever ':' its id holds.
func statusLogEpochPrefix(replica, epoch string) string {
	return statusLogPrefix + replica + ":" + epoch + ":"
}

// statusLogTTL is how long a log row lives: a reader that does not read a
// replica for longer reads every graph row again.
func statusLogTTL(ttl time.Duration) time.Duration { return 4 * ttl }

// statusChange is one graph's rows as one write stored them: Parts rows
// of Gen, or none (Parts 0) when the write deleted them.
type statusChange struct {
	App   string `json:"a"`
	Graph string `json:"g"`
	Parts int    `json:"n,omitempty"`
	Gen   int64  `json:"gen"`
}

// statusLogRow is one change-log row.
type statusLogRow struct {
	Replica string         `json:"replica"`
	Epoch   string         `json:"epoch"`
	Seq     int64          `json:"seq"`
	Changes []statusChange `json:"changes"`
}

type encodedLogRow struct {
	seq   int64
	value json.RawMessage
}

// logRows packs changes into log rows of about StatusRowTarget bytes,
// numbering them from the writer's next seq.
func (w *StatusWriter) logRows(changes []statusChange) ([]encodedLogRow, error) {
	empty, err := json.Marshal(statusLogRow{Replica: w.replica, Epoch: w.epoch, Seq: 1 << 62, Changes: []statusChange{}})
	if err != nil {
		return nil, err
	}
	var out []encodedLogRow
	for i := 0; i < len(changes); {
		size, j := len(empty), i
		for ; j < len(changes); j++ {
			b, err := json.Marshal(changes[j])
			if err != nil {
				return nil, err
			}
			if j > i && size+len(b)+1 > StatusRowTarget {
				break
			}
			size += len(b) + 1
		}
		w.log++
		v, err := json.Marshal(statusLogRow{Replica: w.replica, Epoch: w.epoch, Seq: w.log, Changes: changes[i:j]})
		if err != nil {
			return nil, err
		}
		if len(v) > MaxStatusRowBytes {
			return nil, fmt.Errorf("change-log row %d of replica %q is %d bytes: %w", w.log, w.replica, len(v), ErrStatusRowTooLarge)
		}
		out = append(out, encodedLogRow{seq: w.log, value: v})
		i = j
	}
	return out, nil
}

// StatusReaderConfig is what a StatusReader runs with; WithDefaults fills
// what is left zero.
type StatusReaderConfig struct {
	// FullEvery is how often every graph row is re-read whatever the
	// change log says (DefaultStatusFullRead).
	FullEvery time.Duration
	// Clock times FullEvery (nil is the wall clock).
	Clock clock.Clock
}

// WithDefaults returns c with its zero fields filled.
func (c StatusReaderConfig) WithDefaults() StatusReaderConfig {
	c.FullEvery = cmp.Or(max(c.FullEvery, 0), DefaultStatusFullRead)
	c.Clock = clock.Or(c.Clock)
	return c
}

// StatusReader reads every replica's status like Statuses, but after its
// first read it follows each replica's change log: a read costs the
// headers, plus the log rows and graph rows written since the previous
// read; a new replica, a new epoch or a hole in a log costs one read of
// every graph row, as does FullEvery. A replica whose header is gone is
// dropped at once. Safe for concurrent use (reads are serialised).
type StatusReader struct {
	s   *Store
	cfg StatusReaderConfig

	mu       sync.Mutex
	replicas map[string]*replicaView
	fullAt   time.Time
	last     []RelayStatus
}

// replicaView is what a reader holds of one replica.
type replicaView struct {
	epoch string
	// log is the seq of the newest log row applied.
	log    int64
	graphs map[string]GraphStatus
	// sorted is graphs ordered by app and graph, nil after a change.
	sorted []GraphStatus
}

// NewStatusReader returns a reader over s's status rows.
func (s *Store) NewStatusReader(cfg StatusReaderConfig) *StatusReader {
	return &StatusReader{s: s, cfg: cfg.WithDefaults(), replicas: map[string]*replicaView{}}
}

// Read returns every live replica's status (as Statuses does).
func (r *StatusReader) Read(ctx context.Context) ([]RelayStatus, error) {
	out, _, err := r.ReadChanged(ctx)
	return out, err
}

// ReadChanged is Read, and whether any replica's graphs moved (false:
// every replica's graphs are those of the previous read, only each
// header's At and Denials are new), so a caller that indexes the graphs
// re-indexes them only when they moved. The statuses are shared between
// reads: do not modify them.
func (r *StatusReader) ReadChanged(ctx context.Context) ([]RelayStatus, bool, error) {
	headers, err := r.s.statusHeaders(ctx)
	if err != nil {
		return nil, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Clock.Now()
	moved := false
	for id := range r.replicas {
		if _, live := headers[id]; !live {
			delete(r.replicas, id)
			moved = true
		}
	}
	full := r.last == nil || now.Sub(r.fullAt) >= r.cfg.FullEvery
	for id, h := range headers {
		if full {
			break
		}
		v := r.replicas[id]
		switch {
		case v == nil || v.epoch != h.Epoch || h.Log < v.log:
			full = true
		case h.Log > v.log:
			ok, err := r.follow(ctx, id, v, h.Log)
			if err != nil {
				return nil, false, err
			}
			full = !ok
			moved = true
		}
	}
	if full {
		asm := newStatusAssembly(headers)
		if err := r.s.eachRow(ctx, graphStatusPrefix, asm.add); err != nil {
			return nil, false, fmt.Errorf("reading relay status: %w", err)
		}
		r.replicas = map[string]*replicaView{}
		for _, st := range asm.result() {
			h := headers[st.Replica]
			v := &replicaView{epoch: h.Epoch, log: h.Log, graphs: make(map[string]GraphStatus, len(st.Graphs)), sorted: st.Graphs}
			for _, g := range st.Graphs {
				v.graphs[g.App+"\x00"+g.Graph] = g
			}
			r.replicas[st.Replica] = v
		}
		r.fullAt, moved = now, true
	}
	ids := make([]string, 0, len(headers))
	for id := range headers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]RelayStatus, 0, len(ids))
	for _, id := range ids {
		h := headers[id]
		out = append(out, RelayStatus{Replica: id, At: h.At, Denials: h.Denials, Graphs: r.replicas[id].sortedGraphs()})
	}
	r.last = out
	return out, moved, nil
}

// sortedGraphs is v's graphs ordered by app and graph, kept until the
// next change.
func (v *replicaView) sortedGraphs() []GraphStatus {
	if v.sorted != nil || len(v.graphs) == 0 {
		return v.sorted
	}
	out := make([]GraphStatus, 0, len(v.graphs))
	for _, g := range v.graphs {
		out = append(out, g)
	}
	sortGraphs(out)
	v.sorted = out
	return out
}

// follow applies replica's log rows after v.log (at least up to to) and
// reads the graph rows they name. It answers false when the log has a
// hole before to: the caller reads every row instead.
func (r *StatusReader) follow(ctx context.Context, replica string, v *replicaView, to int64) (bool, error) {
	prefix := statusLogEpochPrefix(replica, v.epoch)
	next := v.log
	hole := false
	latest := map[string]statusChange{}
	err := r.s.eachRowAfter(ctx, prefix, StatusLogKey(replica, v.epoch, v.log), func(row queen.KVRow) {
		if hole {
			return
		}
		var lr statusLogRow
		if json.Unmarshal(row.Value, &lr) != nil || lr.Replica != replica || lr.Epoch != v.epoch ||
			lr.Seq != next+1 || row.Key != StatusLogKey(replica, v.epoch, lr.Seq) {
			hole = true
			return
		}
		next = lr.Seq
		for _, c := range lr.Changes {
			latest[c.App+"\x00"+c.Graph] = c
		}
	})
	if err != nil {
		return false, fmt.Errorf("reading the status change log of replica %q: %w", replica, err)
	}
	if next < to {
		return false, nil
	}
	var keys []string
	for _, c := range latest {
		for p := 0; p < c.Parts; p++ {
			keys = append(keys, GraphStatusKey(c.App, c.Graph, replica, p))
		}
	}
	parts := map[string][]graphStatusRow{}
	err = r.s.getMany(ctx, keys, func(row queen.KVRow) {
		if gr, k, ok := decodeGraphRow(row, replica, v.epoch); ok {
			parts[k] = append(parts[k], gr)
		}
	})
	if err != nil {
		return false, fmt.Errorf("reading the status rows of replica %q: %w", replica, err)
	}
	for k, c := range latest {
		rows := parts[k]
		switch {
		case c.Parts == 0 || len(rows) == 0:
			// Deleted, or deleted again by a write not yet logged.
			delete(v.graphs, k)
		default:
			// Rows of a later write, still being written, are left to the
			// log row that will name them; the graph keeps what was read.
			if g, ok := joinGraphRows(rows, c.Gen); ok {
				v.graphs[k] = g
			}
		}
	}
	v.log, v.sorted = next, nil
	return true, nil
}

// joinGraphRows joins one graph's parts of one write at least as new as
// gen; false when a part is missing or of another write.
func joinGraphRows(rows []graphStatusRow, gen int64) (GraphStatus, bool) {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Part < rows[j].Part })
	first := rows[0]
	if first.Part != 0 || first.Gen < gen || len(rows) != first.Parts {
		return GraphStatus{}, false
	}
	g := first.Graph
	for i, row := range rows[1:] {
		if row.Part != i+1 || row.Gen != first.Gen || row.Parts != first.Parts {
			return GraphStatus{}, false
		}
		g.Stages = append(g.Stages, row.Graph.Stages...)
	}
	return g, true
}

// decodeGraphRow parses one graph status row of replica's epoch and
// answers it with its graph's key ("app\x00graph"); false for a row that
// is unreadable, of another replica or epoch, or whose key and body
// disagree.
func decodeGraphRow(row queen.KVRow, replica, epoch string) (graphStatusRow, string, bool) {
	app, graph, rep, part, ok := splitGraphStatusKey(row.Key)
	if !ok || rep != replica {
		return graphStatusRow{}, "", false
	}
	var r graphStatusRow
	if json.Unmarshal(row.Value, &r) != nil || r.Replica != replica || r.Epoch != epoch || r.Part != part ||
		r.Graph.App != app || r.Graph.Graph != graph || r.Parts < 1 || part >= r.Parts {
		return graphStatusRow{}, "", false
	}
	return r, app + "\x00" + graph, true
}

// getMany reads keys (any number) with getMany calls of at most
// statusGetManyKeys keys, calling fn for every live row; keys the broker
// cut for its read budget are asked again.
func (s *Store) getMany(ctx context.Context, keys []string, fn func(queen.KVRow)) error {
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), statusGetManyKeys)]
		res, err := s.c.KV(ctx, queen.KVGetMany(s.ns, chunk...))
		if err == nil && res.Refused() {
			err = res.Err()
		}
		if err != nil {
			return err
		}
		if len(res.Results) != 1 {
			return fmt.Errorf("the broker answered %d results for 1 getMany", len(res.Results))
		}
		got := res.Results[0]
		if got.Truncated && len(got.Rows) == 0 {
			return fmt.Errorf("the broker answered no row of %d keys (truncated): a row is larger than its read budget", len(chunk))
		}
		answered := make(map[string]bool, len(got.Rows)+len(got.Missing))
		for _, row := range got.Rows {
			answered[row.Key] = true
			fn(row)
		}
		for _, k := range got.Missing {
			answered[k] = true
		}
		var rest []string
		for _, k := range chunk {
			if !answered[k] {
				rest = append(rest, k)
			}
		}
		keys = append(rest, keys[len(chunk):]...)
	}
	return nil
}
