package history

import (
	"context"
	"fmt"
	"math"
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

// EachPathSecond is PathSeconds without the slice of SecondTraffic: it
// calls reserve once with an upper bound of how many seconds follow (nil
// to skip), then visit with each second, oldest first, decoding the sealed
// hours in place. A whole-graph simulation reads its arrivals this way,
// straight into the replay's input.
func (db *DB) EachPathSecond(ctx context.Context, app, graph, node, path string, session, since, until int64, reserve func(n int), visit func(SecondTraffic)) error {
	if path == "" {
		return fmt.Errorf("history: reading a path's samples needs the path")
	}
	return db.eachSecond(ctx, app, graph, node, path, session, since, until, -1, reserve, visit)
}

// seconds reads the seconds of one node and session in [since, until)
// (path "" for every path) into a slice; see eachSecond.
func (db *DB) seconds(ctx context.Context, app, graph, node, path string, session, since, until, costPerItem int64) ([]SecondTraffic, error) {
	var out []SecondTraffic
	err := db.eachSecond(ctx, app, graph, node, path, session, since, until, costPerItem,
		func(n int) { out = make([]SecondTraffic, 0, n) },
		func(s SecondTraffic) { out = append(out, s) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachSecond calls visit with the seconds of one node and session in
// [since, until) (path "" for every path), oldest first: the sealed hours
// decoded from their packed bodies, the rest from the samples. reserve,
// when not nil, is called first with an upper bound of the seconds to
// come. costPerItem ≥ 0 judges Uniform against it; < 0 leaves it true.
func (db *DB) eachSecond(ctx context.Context, app, graph, node, path string, session, since, until, costPerItem int64, reserve func(int), visit func(SecondTraffic)) error {
	if until <= since {
		return nil
	}
	sealed, err := db.seriesSealed(ctx, since, until)
	if err != nil {
		return fmt.Errorf("history: reading sealed hours of samples: %w", err)
	}
	hours, ranges := splitSealed(sealed, since, until)
	packs, total, err := db.sealedPacks(ctx, app, graph, node, path, session, hours)
	if err != nil {
		return fmt.Errorf("history: reading sealed samples: %w", err)
	}
	if reserve != nil {
		for _, r := range ranges {
			total += int((r[1] - r[0] + 999) / 1000)
		}
		reserve(total)
	}
	var scratch []SecondTraffic
	p := 0
	// sealedBefore visits the sealed hours before limit.
	sealedBefore := func(limit int64) error {
		for p < len(packs) && packs[p].hour < limit {
			q := p + 1
			for q < len(packs) && packs[q].hour == packs[p].hour {
				q++
			}
			if scratch, err = eachSealedHour(packs[p:q], since, until, costPerItem, scratch, visit); err != nil {
				return fmt.Errorf("history: reading sealed samples: %w (%s/%s node %s, hour %d)", err, app, graph, node, packs[p].hour)
			}
			p = q
		}
		return nil
	}
	for _, r := range ranges {
		if err := sealedBefore(r[0]); err != nil {
			return err
		}
		if err := db.rawSeconds(ctx, app, graph, node, path, session, r[0], r[1], costPerItem, visit); err != nil {
			return fmt.Errorf("history: reading samples: %w", err)
		}
	}
	return sealedBefore(math.MaxInt64)
}

// rawSeconds visits the per-second sums of the samples in [since, until).
func (db *DB) rawSeconds(ctx context.Context, app, graph, node, path string, session, since, until, costPerItem int64, visit func(SecondTraffic)) error {
	rows, err := db.pool.Query(ctx, `SELECT second, sum(items)::bigint, sum(cost)::bigint, count(*), $8 < 0 OR bool_and(cost = items * $8)
		FROM watch_samples WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4
			AND second >= $5 AND second < $6 AND ($7 = '' OR path = $7)
		GROUP BY second ORDER BY second`, app, graph, node, session, since, until, path, costPerItem)
	if err != nil {
		return err
	}
	defer rows.Close()
	// One SecondTraffic scanned into row after row: Scan's pointers move
	// it to the heap, so declaring it per row would allocate per second.
	var s SecondTraffic
	for rows.Next() {
		if err := rows.Scan(&s.Second, &s.Items, &s.Cost, &s.Rows, &s.Uniform); err != nil {
			return err
		}
		visit(s)
	}
	return rows.Err()
}
