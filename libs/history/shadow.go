package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ShadowRetention keeps a shadow's per-minute results (and the state of a
// shadow no longer evaluated).
const ShadowRetention = 31 * 24 * time.Hour

// ShadowSecond is the items one node forwarded on one path in one second,
// summed over every relay recorder.
type ShadowSecond struct {
	Node, Path          string
	Second, Items, Cost int64
}

// ShadowArrivals reads the recorded seconds of every node of app/graph in
// [since, until) of the given sessions (the Watch session, or the shadow's
// own recording session), summed over recorders, ordered by second.
func (db *DB) ShadowArrivals(ctx context.Context, app, graph string, sessions []int64, since, until int64) ([]ShadowSecond, error) {
	rows, err := db.pool.Query(ctx, `SELECT node, path, second, sum(items)::bigint, sum(cost)::bigint FROM watch_samples
		WHERE application = $1 AND graph = $2 AND session = ANY($3) AND second >= $4 AND second < $5
		GROUP BY node, path, second ORDER BY second, node, path`, app, graph, sessions, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading the shadow's arrivals of %s/%s: %w", app, graph, err)
	}
	defer rows.Close()
	var out []ShadowSecond
	for rows.Next() {
		var s ShadowSecond
		if err := rows.Scan(&s.Node, &s.Path, &s.Second, &s.Items, &s.Cost); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ShadowMinute is one node's shadow result for one minute.
type ShadowMinute struct {
	Node string
	// Minute is the minute's start (ms).
	Minute                                  int64
	Arrived, Admitted, Delayed, Backlog     int64
	DelayP50Ms, DelayMaxMs, OldestWaitingMs int64
	// Approximate are the items judged without their scope value or op;
	// Missing the items per scoped budget that carried no value at its
	// scopeBy (nil when none).
	Approximate int64
	Missing     map[string]int64
}

// ShadowState is what the evaluation of one graph's candidate carries.
type ShadowState struct {
	// Since identifies the candidate (its creation, ms).
	Since int64
	// Through is the next second to evaluate (ms).
	Through int64
	// State is the evaluator's state (JSON).
	State []byte
}

// ShadowState reads the carried state of app/graph; found is false when
// there is none.
func (db *DB) ShadowState(ctx context.Context, app, graph string) (st ShadowState, found bool, err error) {
	err = db.pool.QueryRow(ctx, `SELECT since, through, state FROM shadow_state WHERE application = $1 AND graph = $2`, app, graph).
		Scan(&st.Since, &st.Through, &st.State)
	if errors.Is(err, pgx.ErrNoRows) {
		return ShadowState{}, false, nil
	}
	if err != nil {
		return ShadowState{}, false, fmt.Errorf("history: reading the shadow state of %s/%s: %w", app, graph, err)
	}
	return st, true, nil
}

// WriteShadow stores the minutes evaluated and the state after them in one
// transaction (a minute evaluated twice is replaced).
func (db *DB) WriteShadow(ctx context.Context, app, graph string, st ShadowState, minutes []ShadowMinute, now time.Time) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("history: writing the shadow of %s/%s: %w", app, graph, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	b := &pgx.Batch{}
	for _, m := range minutes {
		missing := m.Missing
		if missing == nil {
			missing = map[string]int64{}
		}
		b.Queue(`INSERT INTO shadow_minutes (application, graph, since, node, minute, arrived, admitted, delayed, backlog, delay_p50_ms, delay_max_ms, oldest_waiting_ms, approximate, missing)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (application, graph, since, node, minute) DO UPDATE SET arrived = EXCLUDED.arrived, admitted = EXCLUDED.admitted,
				delayed = EXCLUDED.delayed, backlog = EXCLUDED.backlog, delay_p50_ms = EXCLUDED.delay_p50_ms,
				delay_max_ms = EXCLUDED.delay_max_ms, oldest_waiting_ms = EXCLUDED.oldest_waiting_ms,
				approximate = EXCLUDED.approximate, missing = EXCLUDED.missing`,
			app, graph, st.Since, m.Node, m.Minute, m.Arrived, m.Admitted, m.Delayed, m.Backlog, m.DelayP50Ms, m.DelayMaxMs, m.OldestWaitingMs, m.Approximate, missing)
	}
	b.Queue(`INSERT INTO shadow_state (application, graph, since, through, state, updated) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (application, graph) DO UPDATE SET since = EXCLUDED.since, through = EXCLUDED.through, state = EXCLUDED.state, updated = EXCLUDED.updated`,
		app, graph, st.Since, st.Through, string(st.State), now.UnixMilli())
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("history: writing the shadow of %s/%s: %w", app, graph, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("history: writing the shadow of %s/%s: %w", app, graph, err)
	}
	return nil
}

// ShadowMinutes reads the results of the candidate created at since for
// minutes in [from, until), by node then minute.
func (db *DB) ShadowMinutes(ctx context.Context, app, graph string, since, from, until int64) ([]ShadowMinute, error) {
	rows, err := db.pool.Query(ctx, `SELECT node, minute, arrived, admitted, delayed, backlog, delay_p50_ms, delay_max_ms, oldest_waiting_ms, approximate, missing
		FROM shadow_minutes WHERE application = $1 AND graph = $2 AND since = $3 AND minute >= $4 AND minute < $5
		ORDER BY node, minute`, app, graph, since, from, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading the shadow results of %s/%s: %w", app, graph, err)
	}
	defer rows.Close()
	var out []ShadowMinute
	for rows.Next() {
		var m ShadowMinute
		if err := rows.Scan(&m.Node, &m.Minute, &m.Arrived, &m.Admitted, &m.Delayed, &m.Backlog, &m.DelayP50Ms, &m.DelayMaxMs, &m.OldestWaitingMs, &m.Approximate, &m.Missing); err != nil {
			return nil, err
		}
		if len(m.Missing) == 0 {
			m.Missing = nil
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// DeleteShadowState forgets the carried state of app/graph (the candidate
// was removed); its minutes stay until retention.
func (db *DB) DeleteShadowState(ctx context.Context, app, graph string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM shadow_state WHERE application = $1 AND graph = $2`, app, graph); err != nil {
		return fmt.Errorf("history: deleting the shadow state of %s/%s: %w", app, graph, err)
	}
	return nil
}

// PruneShadow deletes shadow minutes older than ShadowRetention, the
// states not updated for as long and keyed counts older than
// KeySampleRetention; it returns the rows deleted.
func (db *DB) PruneShadow(ctx context.Context, now time.Time) (int64, error) {
	cut := now.UnixMilli() - ShadowRetention.Milliseconds()
	a, err := db.pool.Exec(ctx, `DELETE FROM shadow_minutes WHERE minute < $1`, cut)
	if err != nil {
		return 0, fmt.Errorf("history: shadow retention: %w", err)
	}
	b, err := db.pool.Exec(ctx, `DELETE FROM shadow_state WHERE updated < $1`, cut)
	if err != nil {
		return 0, fmt.Errorf("history: shadow retention: %w", err)
	}
	c, err := db.pool.Exec(ctx, `DELETE FROM shadow_key_samples WHERE second < $1`, now.UnixMilli()-KeySampleRetention.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("history: shadow retention: %w", err)
	}
	return a.RowsAffected() + b.RowsAffected() + c.RowsAffected(), nil
}

// KeySampleRetention keeps a keyed shadow candidate's per-value counts:
// gate-recorder evaluates each minute about a minute after it ends, so
// three hours cover a recorder restart; they are the largest history rows
// per second (docs/benchmarks.md, 2026-12-03), so they are kept no longer.
// A recorder down for longer judges the seconds it missed without their
// values (approximate).
const KeySampleRetention = 3 * time.Hour

// KeySample is one second's items of one recorder, node and path with one
// recorded scope and op (a keyed shadow candidate's recording), or its
// overflow: the items past the relay's cap on distinct values.
type KeySample struct {
	App, Graph, Node, Path string
	Session                int64
	Recorder               string
	Second                 int64
	// Scope is the recorded scope object (shadow.AppendScope), Op the
	// item's op ("" when not recorded); both "" for the overflow.
	Scope, Op   string
	Overflow    bool
	Items, Cost int64
}

func writeKeySamples(ctx context.Context, tx pgx.Tx, in []KeySample) error {
	if len(in) == 0 {
		return nil
	}
	// One row per key, the last one given winning (ON CONFLICT cannot
	// touch a row twice in one statement).
	type key struct {
		rec, path, scope, op string
		sec                  int64
		overflow             bool
	}
	rows := lastPerKey(in, func(s KeySample) key { return key{s.Recorder, s.Path, s.Scope, s.Op, s.Second, s.Overflow} })
	n := len(rows)
	app, graph, node, path, rec, scope, op := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	session, second, items, cost := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	overflow := make([]bool, n)
	for i, s := range rows {
		app[i], graph[i], node[i], path[i], rec[i], scope[i], op[i] = s.App, s.Graph, s.Node, s.Path, s.Recorder, s.Scope, s.Op
		session[i], second[i], items[i], cost[i], overflow[i] = s.Session, s.Second, s.Items, s.Cost, s.Overflow
	}
	_, err := tx.Exec(ctx, `INSERT INTO shadow_key_samples (application, graph, node, path, session, recorder, second, scope, op, overflow, items, cost)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::boolean[], $11::bigint[], $12::bigint[])
		ON CONFLICT (recorder, path, second, overflow, scope, op) DO UPDATE SET items = EXCLUDED.items, cost = EXCLUDED.cost`,
		app, graph, node, path, session, rec, second, scope, op, overflow, items, cost)
	if err != nil {
		return fmt.Errorf("history write: shadow_key_samples: %w", err)
	}
	return nil
}

// ShadowKeySecond is the items one node forwarded on one path in one
// second with one recorded scope and op, summed over every relay
// recorder (the overflow is not here: it is what the totals hold beyond
// these).
type ShadowKeySecond struct {
	Node, Path  string
	Second      int64
	Scope, Op   string
	Items, Cost int64
}

// ShadowKeyArrivals reads the keyed counts of app/graph in [since, until)
// of the given sessions, summed over recorders, ordered by second, node,
// path, scope and op.
func (db *DB) ShadowKeyArrivals(ctx context.Context, app, graph string, sessions []int64, since, until int64) ([]ShadowKeySecond, error) {
	rows, err := db.pool.Query(ctx, `SELECT node, path, second, scope, op, sum(items)::bigint, sum(cost)::bigint FROM shadow_key_samples
		WHERE application = $1 AND graph = $2 AND session = ANY($3) AND second >= $4 AND second < $5 AND NOT overflow
		GROUP BY node, path, second, scope, op ORDER BY second, node, path, scope, op`, app, graph, sessions, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading the shadow's keyed arrivals of %s/%s: %w", app, graph, err)
	}
	defer rows.Close()
	var out []ShadowKeySecond
	for rows.Next() {
		var s ShadowKeySecond
		if err := rows.Scan(&s.Node, &s.Path, &s.Second, &s.Scope, &s.Op, &s.Items, &s.Cost); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
