package history

import (
	"context"
	"fmt"
)

// SecondsAtCost reads the per-second samples of one node and Watch session
// for seconds in [since, until), oldest first, summed over recorders and
// paths, for a node whose every item should cost costPerItem: Uniform is
// false for a second with some row whose cost is not items × costPerItem.
// It is the read "Try a limit" makes (one streaming aggregate over the
// node's index, no per-second distinct count).
func (db *DB) SecondsAtCost(ctx context.Context, app, graph, node string, session, since, until, costPerItem int64) ([]SecondTraffic, error) {
	rows, err := db.pool.Query(ctx, `SELECT second, sum(items), sum(cost), count(*), bool_and(cost = items * $7)
		FROM watch_samples WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4
			AND second >= $5 AND second < $6
		GROUP BY second ORDER BY second`, app, graph, node, session, since, until, costPerItem)
	if err != nil {
		return nil, fmt.Errorf("history: reading samples: %w", err)
	}
	defer rows.Close()
	var out []SecondTraffic
	for rows.Next() {
		var s SecondTraffic
		if err := rows.Scan(&s.Second, &s.Items, &s.Cost, &s.Rows, &s.Uniform); err != nil {
			return nil, fmt.Errorf("history: reading samples: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: reading samples: %w", err)
	}
	return out, nil
}

// PathSeconds reads the per-second samples of one node, path and Watch
// session for seconds in [since, until), oldest first, summed over
// recorders: the arrivals a whole-graph simulation replays. Uniform is
// always true (a payload cost varies by design).
func (db *DB) PathSeconds(ctx context.Context, app, graph, node, path string, session, since, until int64) ([]SecondTraffic, error) {
	rows, err := db.pool.Query(ctx, `SELECT second, sum(items), sum(cost), count(*)
		FROM watch_samples WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4
			AND second >= $5 AND second < $6 AND path = $7
		GROUP BY second ORDER BY second`, app, graph, node, session, since, until, path)
	if err != nil {
		return nil, fmt.Errorf("history: reading samples: %w", err)
	}
	defer rows.Close()
	var out []SecondTraffic
	for rows.Next() {
		s := SecondTraffic{Uniform: true}
		if err := rows.Scan(&s.Second, &s.Items, &s.Cost, &s.Rows); err != nil {
			return nil, fmt.Errorf("history: reading samples: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: reading samples: %w", err)
	}
	return out, nil
}
