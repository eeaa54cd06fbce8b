package history

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// Sample is one second of one Watch recorder on one path: the items and
// cost forwarded by the node's stage of that path in that second.
type Sample struct {
	App, Graph, Node, Path string
	// Session is watch.startedAt (Unix ms).
	Session int64
	// Recorder is the relay recorder id (replica × runtime × node).
	Recorder string
	// Second is the start of the second (Unix ms, a multiple of 1000).
	Second int64
	// Items and Cost are what was forwarded in that second.
	Items, Cost int64
}

// Recorder is one relay recorder of a Watch (gate-runtime §5.2).
type Recorder struct {
	// ID is the recorder id.
	ID string
	// App, Graph and Node name the observed node.
	App, Graph, Node string
	// Session is watch.startedAt; Started the recorder's creation (ms).
	Session, Started int64
	// Through is the end (ms) of the seconds the recorder has handed over:
	// every second before it is complete in history, except Lost items.
	Through int64
	// Lost is how many items the recorder dropped (buffer full during a
	// database outage).
	Lost int64
}

// RollupCount is one source's running total for one stage and minute.
type RollupCount struct {
	// Recorder is the source (a relay recorder id).
	Recorder string
	// App, Target (graph.node) and Lane (the path) name the stage.
	App, Target, Lane string
	// Minute is the start of the minute (ms).
	Minute int64
	// Admitted, Denied (deferred + released) and Cost are the source's
	// totals for the minute so far.
	Admitted, Denied int64
	Cost             float64
}

// Trace is one denial.
type Trace struct {
	// Ref identifies the denial across replays (recorder id and sequence).
	Ref string
	// At is when it happened (ms).
	At int64
	// App, Target (graph.node), Lane (path), Op, Outcome ("denied") and
	// BudgetID describe it.
	App, Target, Lane, Op, Outcome, BudgetID string
}

// Batch is what one handover commits, in one transaction.
type Batch struct {
	Samples   []Sample
	Recorders []Recorder
	Rollups   []RollupCount
	Traces    []Trace
	// KeySamples are a keyed shadow candidate's per-value counts.
	KeySamples []KeySample
}

// Empty reports whether b writes nothing.
func (b *Batch) Empty() bool {
	return len(b.Samples) == 0 && len(b.Recorders) == 0 && len(b.Rollups) == 0 && len(b.Traces) == 0 && len(b.KeySamples) == 0
}

// Write commits b in one transaction with replacement semantics: writing
// the same batch again leaves the same rows. Samples replace per
// (recorder, path, second); recorder rows keep the greatest through and
// lost; roll-ups add the change of each source's minute total (so two
// sources add up, one source written twice adds once); traces insert once
// per ref. The partitions of the samples' days are created if absent.
func (db *DB) Write(ctx context.Context, b Batch) error {
	if b.Empty() {
		return nil
	}
	for _, s := range b.Samples {
		if err := db.ensureDay(ctx, DayStart(s.Second)); err != nil {
			return err
		}
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("history write: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := lockSources(ctx, tx, b); err != nil {
		return err
	}
	if err := writeSamples(ctx, tx, b.Samples); err != nil {
		return err
	}
	if err := writeRecorders(ctx, tx, b.Recorders); err != nil {
		return err
	}
	if err := writeRollups(ctx, tx, b.Rollups); err != nil {
		return err
	}
	if err := writeTraces(ctx, tx, b.Traces); err != nil {
		return err
	}
	if err := writeKeySamples(ctx, tx, b.KeySamples); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("history write: commit: %w", err)
	}
	return nil
}

// lockSources serialises two writers of the same roll-up source (two
// gate-recorder processes draining the same handover): the change each
// adds is computed from the source's previous total under this lock.
func lockSources(ctx context.Context, tx pgx.Tx, b Batch) error {
	seen := map[string]bool{}
	var ids []string
	for _, r := range b.Rollups {
		if !seen[r.Recorder] {
			seen[r.Recorder] = true
			ids = append(ids, r.Recorder)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", "gate-rollup:"+id); err != nil {
			return fmt.Errorf("history write: locking source %s: %w", id, err)
		}
	}
	return nil
}

func writeSamples(ctx context.Context, tx pgx.Tx, in []Sample) error {
	if len(in) == 0 {
		return nil
	}
	// One row per key, the last one given winning (ON CONFLICT cannot
	// touch a row twice in one statement).
	type key struct {
		rec, path string
		sec       int64
	}
	rows := lastPerKey(in, func(s Sample) key { return key{s.Recorder, s.Path, s.Second} })
	n := len(rows)
	app, graph, node, path, rec := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	session, second, items, cost := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, s := range rows {
		app[i], graph[i], node[i], path[i], rec[i] = s.App, s.Graph, s.Node, s.Path, s.Recorder
		session[i], second[i], items[i], cost[i] = s.Session, s.Second, s.Items, s.Cost
	}
	_, err := tx.Exec(ctx, `INSERT INTO watch_samples (application, graph, node, path, session, recorder, second, items, cost)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[])
		ON CONFLICT (recorder, path, second) DO UPDATE SET items = EXCLUDED.items, cost = EXCLUDED.cost`,
		app, graph, node, path, session, rec, second, items, cost)
	if err != nil {
		return fmt.Errorf("history write: watch_samples: %w", err)
	}
	return nil
}

func writeRecorders(ctx context.Context, tx pgx.Tx, in []Recorder) error {
	if len(in) == 0 {
		return nil
	}
	byID := map[string]Recorder{}
	var order []string
	for _, r := range in {
		if o, ok := byID[r.ID]; ok {
			r.Through, r.Lost = max(r.Through, o.Through), max(r.Lost, o.Lost)
		} else {
			order = append(order, r.ID)
		}
		byID[r.ID] = r
	}
	n := len(order)
	id, app, graph, node := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	session, started, through, lost := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, k := range order {
		r := byID[k]
		id[i], app[i], graph[i], node[i] = r.ID, r.App, r.Graph, r.Node
		session[i], started[i], through[i], lost[i] = r.Session, r.Started, r.Through, r.Lost
	}
	_, err := tx.Exec(ctx, `INSERT INTO watch_recorders (recorder, application, graph, node, session, started, through, lost)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
		ON CONFLICT (recorder) DO UPDATE SET through = GREATEST(watch_recorders.through, EXCLUDED.through),
			lost = GREATEST(watch_recorders.lost, EXCLUDED.lost)`,
		id, app, graph, node, session, started, through, lost)
	if err != nil {
		return fmt.Errorf("history write: watch_recorders: %w", err)
	}
	return nil
}

func writeRollups(ctx context.Context, tx pgx.Tx, in []RollupCount) error {
	if len(in) == 0 {
		return nil
	}
	type key struct {
		rec, app, target, lane string
		minute                 int64
	}
	rows := lastPerKey(in, func(r RollupCount) key { return key{r.Recorder, r.App, r.Target, r.Lane, r.Minute} })
	n := len(rows)
	rec, app, target, lane := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	minute, admitted, denied, cost := make([]int64, n), make([]int64, n), make([]int64, n), make([]float64, n)
	for i, r := range rows {
		rec[i], app[i], target[i], lane[i] = r.Recorder, r.App, r.Target, r.Lane
		minute[i], admitted[i], denied[i], cost[i] = r.Minute, r.Admitted, r.Denied, r.Cost
	}
	// The CTEs read rollup_sources as it was before this statement: prev
	// is the source's previous total, the roll-up gains the difference.
	_, err := tx.Exec(ctx, `WITH inc AS (
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::float8[])
				AS t(recorder, application, target, lane, minute, admitted, denied, cost_est)
		), prev AS (
			SELECT inc.*, COALESCE(s.admitted, 0) AS pa, COALESCE(s.denied, 0) AS pd, COALESCE(s.cost_est, 0) AS pc
			FROM inc LEFT JOIN rollup_sources s USING (recorder, application, target, lane, minute)
		), src AS (
			INSERT INTO rollup_sources (recorder, application, target, lane, minute, admitted, denied, cost_est)
			SELECT recorder, application, target, lane, minute, admitted, denied, cost_est FROM inc
			ON CONFLICT (recorder, application, target, lane, minute) DO UPDATE
				SET admitted = EXCLUDED.admitted, denied = EXCLUDED.denied, cost_est = EXCLUDED.cost_est
		)
		INSERT INTO rollups (application, target, lane, minute, admitted, denied, cost_est)
		SELECT application, target, lane, minute, sum(admitted - pa), sum(denied - pd), sum(cost_est - pc)
		FROM prev GROUP BY application, target, lane, minute
		ON CONFLICT (application, target, lane, minute) DO UPDATE SET
			admitted = rollups.admitted + EXCLUDED.admitted,
			denied = rollups.denied + EXCLUDED.denied,
			cost_est = rollups.cost_est + EXCLUDED.cost_est`,
		rec, app, target, lane, minute, admitted, denied, cost)
	if err != nil {
		return fmt.Errorf("history write: rollups: %w", err)
	}
	return nil
}

func writeTraces(ctx context.Context, tx pgx.Tx, in []Trace) error {
	if len(in) == 0 {
		return nil
	}
	n := len(in)
	ref, app, target, lane, op, outcome, budget := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	at := make([]int64, n)
	for i, t := range in {
		ref[i], app[i], target[i], lane[i], op[i], outcome[i], budget[i], at[i] = t.Ref, t.App, t.Target, t.Lane, t.Op, t.Outcome, t.BudgetID, t.At
	}
	_, err := tx.Exec(ctx, `INSERT INTO traces (ref, application, target, lane, op, outcome, budget_id, at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
		ON CONFLICT (ref) DO NOTHING`, ref, app, target, lane, op, outcome, budget, at)
	if err != nil {
		return fmt.Errorf("history write: traces: %w", err)
	}
	return nil
}

// Snapshot is one node's queue snapshot for one minute (§6.2).
type Snapshot struct {
	App, Graph, Node string
	// Minute is floor(At to the minute); At when it was taken (ms).
	Minute, At int64
	// Body is the snapshot ({"available": false} when it failed).
	Body json.RawMessage
}

// PutSnapshots upserts snapshots, replacing a stored one only when the new
// one is newer.
func (db *DB) PutSnapshots(ctx context.Context, in []Snapshot) error {
	if len(in) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	for _, s := range in {
		batch.Queue(`INSERT INTO snapshots (application, graph, node, minute, at, body) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (application, graph, node, minute) DO UPDATE SET at = EXCLUDED.at, body = EXCLUDED.body
			WHERE snapshots.at < EXCLUDED.at`, s.App, s.Graph, s.Node, s.Minute, s.At, []byte(s.Body))
	}
	if err := db.pool.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("history: writing snapshots: %w", err)
	}
	return nil
}

// Annotation labels (gate-runtime §6.2).
const (
	LabelCreated         = "Created"
	LabelWatchStarted    = "Watch started"
	LabelLimitsActivated = "Limits activated"
	LabelUpdated         = "Configuration updated"
	// A node held or released by hand (the backoff route), with who and why.
	LabelBackoffApplied = "Backoff applied"
	LabelBackoffLifted  = "Backoff lifted"
)

// Annotation modes.
const (
	ModeWatch   = "watch"
	ModeEnforce = "enforce"
)

// Change is the body of a configuration annotation.
type Change struct {
	Label   string `json:"label"`
	Version uint32 `json:"version"`
	Mode    string `json:"mode"`
	// Node, By, Reason and Seconds describe a backoff annotation: the
	// node held or released, who did it, the optional reason they gave
	// and the hold in seconds (absent on configuration changes).
	Node    string `json:"node,omitempty"`
	By      string `json:"by,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Seconds int64  `json:"seconds,omitempty"`
}

// ConfigEvent is one configuration annotation.
type ConfigEvent struct {
	App, Graph string
	// At is when the declare succeeded (ms).
	At     int64
	Change Change
}

// Annotation is the change a successful declare annotates, or false when
// the document did not change: wasWatch/isWatch are the mode before and
// after; existed says whether there was a previous document.
func Annotation(existed, wasWatch, isWatch bool, version uint32) Change {
	mode := ModeEnforce
	if isWatch {
		mode = ModeWatch
	}
	c := Change{Label: LabelUpdated, Version: version, Mode: mode}
	switch {
	case !existed:
		c.Label = LabelCreated
	case !wasWatch && isWatch:
		c.Label = LabelWatchStarted
	case wasWatch && !isWatch:
		c.Label = LabelLimitsActivated
	}
	return c
}

// AddConfigEvent inserts one annotation.
func (db *DB) AddConfigEvent(ctx context.Context, e ConfigEvent) error {
	body, err := json.Marshal(e.Change)
	if err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO config_events (application, graph, at, body) VALUES ($1, $2, $3, $4)`, e.App, e.Graph, e.At, body); err != nil {
		return fmt.Errorf("history: writing a configuration annotation: %w", err)
	}
	return nil
}

// lastPerKey keeps one element per key of in, the last one given, at the
// place its key first appeared: a batch upsert (ON CONFLICT) cannot touch
// one row twice in a statement.
func lastPerKey[T any, K comparable](in []T, key func(T) K) []T {
	idx := make(map[K]int, len(in))
	rows := make([]T, 0, len(in))
	for _, v := range in {
		k := key(v)
		if i, ok := idx[k]; ok {
			rows[i] = v
			continue
		}
		idx[k] = len(rows)
		rows = append(rows, v)
	}
	return rows
}
