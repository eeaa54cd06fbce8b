package history

import (
	"context"
	"fmt"
)

// SecondsAtCost reads the per-second samples of one node and Watch session
// for seconds in [since, until), oldest first, summed over recorders and
// paths, for a node whose every item should cost costPerItem: Uniform is
// false for a second with some row whose cost is not items × costPerItem.
// It is the read "Try a limit" makes: sealed hours packed (SealSeries),
// the rest one streaming aggregate over the node's index.
func (db *DB) SecondsAtCost(ctx context.Context, app, graph, node string, session, since, until, costPerItem int64) ([]SecondTraffic, error) {
	return db.seconds(ctx, app, graph, node, "", session, since, until, max(costPerItem, 0))
}

// PathSeconds reads the per-second samples of one node, path and Watch
// session for seconds in [since, until), oldest first, summed over
// recorders: the arrivals a whole-graph simulation replays. Uniform is
// always true (a payload cost varies by design).
func (db *DB) PathSeconds(ctx context.Context, app, graph, node, path string, session, since, until int64) ([]SecondTraffic, error) {
	if path == "" {
		return nil, fmt.Errorf("history: reading a path's samples needs the path")
	}
	return db.seconds(ctx, app, graph, node, path, session, since, until, -1)
}

// seconds reads the seconds of one node and session in [since, until)
// (path "" for every path): the sealed hours packed, the rest from the
// samples. costPerItem ≥ 0 judges Uniform against it; < 0 leaves it true.
func (db *DB) seconds(ctx context.Context, app, graph, node, path string, session, since, until, costPerItem int64) ([]SecondTraffic, error) {
	if until <= since {
		return nil, nil
	}
	sealed, err := db.seriesSealed(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading sealed hours of samples: %w", err)
	}
	hours, ranges := splitSealed(sealed, since, until)
	packed, err := db.sealedSeconds(ctx, app, graph, node, path, session, since, until, hours, costPerItem)
	if err != nil {
		return nil, fmt.Errorf("history: reading sealed samples: %w", err)
	}
	if len(ranges) == 0 {
		return packed, nil
	}
	out := make([]SecondTraffic, 0, len(packed)+int((until-since)/1000)/max(1, len(hours)+1))
	p := 0
	for _, r := range ranges {
		for p < len(packed) && packed[p].Second < r[0] {
			out = append(out, packed[p])
			p++
		}
		if out, err = db.rawSeconds(ctx, out, app, graph, node, path, session, r[0], r[1], costPerItem); err != nil {
			return nil, fmt.Errorf("history: reading samples: %w", err)
		}
	}
	return append(out, packed[p:]...), nil
}

// rawSeconds appends the per-second sums of the samples in [since, until).
func (db *DB) rawSeconds(ctx context.Context, out []SecondTraffic, app, graph, node, path string, session, since, until, costPerItem int64) ([]SecondTraffic, error) {
	rows, err := db.pool.Query(ctx, `SELECT second, sum(items)::bigint, sum(cost)::bigint, count(*), $8 < 0 OR bool_and(cost = items * $8)
		FROM watch_samples WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4
			AND second >= $5 AND second < $6 AND ($7 = '' OR path = $7)
		GROUP BY second ORDER BY second`, app, graph, node, session, since, until, path, costPerItem)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var s SecondTraffic
		if err := rows.Scan(&s.Second, &s.Items, &s.Cost, &s.Rows, &s.Uniform); err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
