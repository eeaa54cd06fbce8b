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
		b.Queue(`INSERT INTO shadow_minutes (application, graph, since, node, minute, arrived, admitted, delayed, backlog, delay_p50_ms, delay_max_ms, oldest_waiting_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (application, graph, since, node, minute) DO UPDATE SET arrived = EXCLUDED.arrived, admitted = EXCLUDED.admitted,
				delayed = EXCLUDED.delayed, backlog = EXCLUDED.backlog, delay_p50_ms = EXCLUDED.delay_p50_ms,
				delay_max_ms = EXCLUDED.delay_max_ms, oldest_waiting_ms = EXCLUDED.oldest_waiting_ms`,
			app, graph, st.Since, m.Node, m.Minute, m.Arrived, m.Admitted, m.Delayed, m.Backlog, m.DelayP50Ms, m.DelayMaxMs, m.OldestWaitingMs)
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
	rows, err := db.pool.Query(ctx, `SELECT node, minute, arrived, admitted, delayed, backlog, delay_p50_ms, delay_max_ms, oldest_waiting_ms
		FROM shadow_minutes WHERE application = $1 AND graph = $2 AND since = $3 AND minute >= $4 AND minute < $5
		ORDER BY node, minute`, app, graph, since, from, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading the shadow results of %s/%s: %w", app, graph, err)
	}
	defer rows.Close()
	var out []ShadowMinute
	for rows.Next() {
		var m ShadowMinute
		if err := rows.Scan(&m.Node, &m.Minute, &m.Arrived, &m.Admitted, &m.Delayed, &m.Backlog, &m.DelayP50Ms, &m.DelayMaxMs, &m.OldestWaitingMs); err != nil {
			return nil, err
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

// PruneShadow deletes shadow minutes older than ShadowRetention and the
// states not updated for as long; it returns the rows deleted.
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
	return a.RowsAffected() + b.RowsAffected(), nil
}
