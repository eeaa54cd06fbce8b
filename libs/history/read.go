package history

import (
	"context"
	"encoding/json"
	"fmt"
)

// MinuteTraffic is one minute of one node: items and cost summed across
// paths and replicas.
type MinuteTraffic struct {
	Minute int64
	Items  int64
	Cost   float64
}

// NodeTraffic is the complete-minute aggregate of one node over a range.
type NodeTraffic struct {
	// Target is graph.node.
	Target string
	// Admitted and Cost are summed over the minutes.
	Admitted int64
	Cost     float64
	// PeakMinuteCost is the largest one-minute cost.
	PeakMinuteCost float64
	// RecordedMinutes is how many minutes have a row.
	RecordedMinutes int
}

// WatchTraffic aggregates the minute roll-ups of targets (graph.node) of
// app over minutes in [since, until) (ms): per target the total items and
// cost, the peak minute cost and the number of minutes with rows. Targets
// with no rows are absent from the answer.
func (db *DB) WatchTraffic(ctx context.Context, app string, targets []string, since, until int64) (map[string]NodeTraffic, error) {
	out := map[string]NodeTraffic{}
	if until <= since || len(targets) == 0 {
		return out, nil
	}
	sealed, err := db.sealedHours(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading sealed hours: %w", err)
	}
	// Whole sealed hours come from rollup_hours; every other stretch of
	// the range from the minute roll-ups.
	hours, ranges := splitHours(since, until, func(c, h int64) bool { return c == h && sealed[h] && h+hourMs <= until })
	merge := func(t NodeTraffic) {
		o, ok := out[t.Target]
		if !ok {
			out[t.Target] = t
			return
		}
		o.Admitted += t.Admitted
		o.Cost += t.Cost
		o.PeakMinuteCost = max(o.PeakMinuteCost, t.PeakMinuteCost)
		o.RecordedMinutes += t.RecordedMinutes
		out[t.Target] = o
	}
	scan := func(q string, args ...any) error {
		rows, err := db.pool.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("history: reading watch traffic: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var t NodeTraffic
			if err := rows.Scan(&t.Target, &t.RecordedMinutes, &t.Admitted, &t.Cost, &t.PeakMinuteCost); err != nil {
				return err
			}
			merge(t)
		}
		return rows.Err()
	}
	if len(hours) > 0 {
		if err := scan(`SELECT target, sum(minutes)::int, sum(items), sum(cost), max(peak_cost) FROM rollup_hours
			WHERE application = $1 AND target = ANY($2) AND hour = ANY($3) GROUP BY target`, app, targets, hours); err != nil {
			return nil, err
		}
	}
	for _, r := range ranges {
		if err := scan(`SELECT target, count(*)::int, sum(a), sum(c), max(c) FROM (
				SELECT target, minute, sum(admitted) AS a, sum(cost_est) AS c FROM rollups
				WHERE application = $1 AND target = ANY($2) AND minute >= $3 AND minute < $4
				GROUP BY target, minute) m
			GROUP BY target`, app, targets, r[0], r[1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RollupRow is one stored roll-up row.
type RollupRow struct {
	App, Target, Lane         string
	Minute                    int64
	Admitted, Denied          int64
	Calls, Throttled          int64
	CostEstimated, CostActual float64
}

// Rollups reads the roll-ups of app (all applications when "") and target
// (all targets when "") for minutes in [since, until), oldest first.
func (db *DB) Rollups(ctx context.Context, app, target string, since, until int64) ([]RollupRow, error) {
	rows, err := db.pool.Query(ctx, `SELECT application, target, lane, minute, admitted, denied, calls, throttled, cost_est, cost_actual
		FROM rollups WHERE ($1 = '' OR application = $1) AND ($2 = '' OR target = $2) AND minute >= $3 AND minute < $4
		ORDER BY minute, application, target, lane`, app, target, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading rollups: %w", err)
	}
	defer rows.Close()
	var out []RollupRow
	for rows.Next() {
		var r RollupRow
		if err := rows.Scan(&r.App, &r.Target, &r.Lane, &r.Minute, &r.Admitted, &r.Denied, &r.Calls, &r.Throttled, &r.CostEstimated, &r.CostActual); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// StoredTrace is one stored denial.
type StoredTrace struct {
	ID int64
	Trace
}

// Traces reads up to limit denials newest first, with outcome when not "".
func (db *DB) Traces(ctx context.Context, outcome string, limit int) ([]StoredTrace, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, COALESCE(ref, ''), at, application, target, lane, op, outcome, budget_id
		FROM traces WHERE ($1 = '' OR outcome = $1) ORDER BY at DESC, id DESC LIMIT $2`, outcome, limit)
	if err != nil {
		return nil, fmt.Errorf("history: reading traces: %w", err)
	}
	defer rows.Close()
	var out []StoredTrace
	for rows.Next() {
		var t StoredTrace
		if err := rows.Scan(&t.ID, &t.Ref, &t.At, &t.App, &t.Target, &t.Lane, &t.Op, &t.Outcome, &t.BudgetID); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// SecondTraffic is one second of one node, summed over recorders and paths.
type SecondTraffic struct {
	Second      int64
	Items, Cost int64
	// Rows is how many (recorder, path) rows were summed.
	Rows int
	// Uniform is false when some row's cost is not items × the first
	// row's per-item cost (the simulation refuses a changing cost).
	Uniform bool
}

// Samples reads the per-second samples of one node and Watch session for
// seconds in [since, until), oldest first; path "" sums every path.
func (db *DB) Samples(ctx context.Context, app, graph, node, path string, session, since, until int64) ([]SecondTraffic, error) {
	rows, err := db.pool.Query(ctx, `SELECT second, sum(items), sum(cost), count(*),
			bool_and(items = 0 OR cost % items = 0) AND count(DISTINCT CASE WHEN items > 0 THEN cost / items END) <= 1
		FROM watch_samples WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4
			AND ($5 = '' OR path = $5) AND second >= $6 AND second < $7
		GROUP BY second ORDER BY second`, app, graph, node, session, path, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading samples: %w", err)
	}
	defer rows.Close()
	var out []SecondTraffic
	for rows.Next() {
		var s SecondTraffic
		if err := rows.Scan(&s.Second, &s.Items, &s.Cost, &s.Rows, &s.Uniform); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// SampleRow is one stored per-second sample, as written.
type SampleRow = Sample

// SampleRows reads the raw sample rows of one node and session in
// [since, until), ordered by second, recorder and path.
func (db *DB) SampleRows(ctx context.Context, app, graph, node string, session, since, until int64) ([]SampleRow, error) {
	rows, err := db.pool.Query(ctx, `SELECT application, graph, node, path, session, recorder, second, items, cost FROM watch_samples
		WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4 AND second >= $5 AND second < $6
		ORDER BY second, recorder, path`, app, graph, node, session, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading samples: %w", err)
	}
	defer rows.Close()
	var out []SampleRow
	for rows.Next() {
		var s SampleRow
		if err := rows.Scan(&s.App, &s.Graph, &s.Node, &s.Path, &s.Session, &s.Recorder, &s.Second, &s.Items, &s.Cost); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Recorders reads the recorders of one node and Watch session.
func (db *DB) Recorders(ctx context.Context, app, graph, node string, session int64) ([]Recorder, error) {
	rows, err := db.pool.Query(ctx, `SELECT recorder, application, graph, node, session, started, through, lost FROM watch_recorders
		WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4 ORDER BY started, recorder`, app, graph, node, session)
	if err != nil {
		return nil, fmt.Errorf("history: reading recorders: %w", err)
	}
	defer rows.Close()
	var out []Recorder
	for rows.Next() {
		var r Recorder
		if err := rows.Scan(&r.ID, &r.App, &r.Graph, &r.Node, &r.Session, &r.Started, &r.Through, &r.Lost); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Snapshots reads the snapshots of a graph (every node) taken at or after
// since (ms), oldest first.
func (db *DB) Snapshots(ctx context.Context, app, graph string, since int64) ([]Snapshot, error) {
	rows, err := db.pool.Query(ctx, `SELECT application, graph, node, minute, at, body FROM snapshots
		WHERE application = $1 AND graph = $2 AND minute >= $3 ORDER BY minute, node`, app, graph, since)
	if err != nil {
		return nil, fmt.Errorf("history: reading snapshots: %w", err)
	}
	defer rows.Close()
	var out []Snapshot
	for rows.Next() {
		var s Snapshot
		var body []byte
		if err := rows.Scan(&s.App, &s.Graph, &s.Node, &s.Minute, &s.At, &body); err != nil {
			return nil, err
		}
		s.Body = json.RawMessage(body)
		out = append(out, s)
	}
	return out, rows.Err()
}

// ConfigEvents reads up to limit annotations of a graph at or after since
// (ms), newest first.
func (db *DB) ConfigEvents(ctx context.Context, app, graph string, since int64, limit int) ([]ConfigEvent, error) {
	rows, err := db.pool.Query(ctx, `SELECT application, graph, at, body FROM config_events
		WHERE application = $1 AND graph = $2 AND at >= $3 ORDER BY at DESC, id DESC LIMIT $4`, app, graph, since, limit)
	if err != nil {
		return nil, fmt.Errorf("history: reading configuration annotations: %w", err)
	}
	defer rows.Close()
	var out []ConfigEvent
	for rows.Next() {
		var e ConfigEvent
		var body []byte
		if err := rows.Scan(&e.App, &e.Graph, &e.At, &body); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(body, &e.Change); err != nil {
			return nil, fmt.Errorf("history: annotation body %s: %w", body, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
