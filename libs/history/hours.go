package history

import (
	"context"
	"fmt"
	"time"
)

// SealAfter is how old an hour must be before it is sealed: a relay hands
// a minute over for at most an hour (its buffer), plus the handover TTL and
// margin.
const SealAfter = 3 * time.Hour

const hourMs = int64(time.Hour / time.Millisecond)

// SealHours writes the hourly aggregates of every hour that ended at least
// SealAfter before now and is not sealed yet (oldest first, from the
// oldest roll-up kept), returning how many hours it sealed. gate-recorder
// runs it hourly; the Watch summary reads sealed hours whole.
func (db *DB) SealHours(ctx context.Context, now time.Time) (int, error) {
	limit := floorHour(now.Add(-SealAfter).UnixMilli()) // hours starting before limit-1h … end by limit
	var from *int64
	if err := db.pool.QueryRow(ctx, `SELECT COALESCE((SELECT max(hour) + $1 FROM rollup_seals), (SELECT min(minute) - min(minute) % $1 FROM rollups))`, hourMs).Scan(&from); err != nil {
		return 0, fmt.Errorf("history: finding the first hour to seal: %w", err)
	}
	if from == nil {
		return 0, nil
	}
	n := 0
	for h := *from; h+hourMs <= limit; h += hourMs {
		tx, err := db.pool.Begin(ctx)
		if err != nil {
			return n, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO rollup_hours (application, target, hour, items, cost, peak_cost, minutes)
			SELECT application, target, $1::bigint, sum(a), sum(c), max(c), count(*) FROM (
				SELECT application, target, minute, sum(admitted) AS a, sum(cost_est) AS c FROM rollups
				WHERE minute >= $1 AND minute < $1 + $2 GROUP BY application, target, minute) m
			GROUP BY application, target
			ON CONFLICT (application, target, hour) DO UPDATE SET items = EXCLUDED.items, cost = EXCLUDED.cost,
				peak_cost = EXCLUDED.peak_cost, minutes = EXCLUDED.minutes`, h, hourMs)
		if err == nil {
			_, err = tx.Exec(ctx, `INSERT INTO rollup_seals (hour) VALUES ($1) ON CONFLICT DO NOTHING`, h)
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return n, fmt.Errorf("history: sealing hour %s: %w", time.UnixMilli(h).UTC(), err)
		}
		n++
	}
	return n, nil
}

func floorHour(ms int64) int64 { return ms - ((ms%hourMs)+hourMs)%hourMs }

// sealedHours lists the sealed hours in [since, until).
func (db *DB) sealedHours(ctx context.Context, since, until int64) (map[int64]bool, error) {
	return db.hourSet(ctx, `SELECT hour FROM rollup_seals WHERE hour >= $1 AND hour + $3 <= $2`, since, until, hourMs)
}

// hourSet runs query, whose one column is an hour (ms), and answers the
// hours it returned as a set.
func (db *DB) hourSet(ctx context.Context, query string, args ...any) (map[int64]bool, error) {
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var h int64
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out[h] = true
	}
	return out, rows.Err()
}

// splitHours walks [since, until) hour by hour: where sealedAt(c, h) holds
// (c is where the walk stands, h the hour it falls in) the hour h is read
// sealed and the walk moves to its end; every other stretch goes into
// ranges, adjacent stretches merged, to read from the finer rows.
func splitHours(since, until int64, sealedAt func(c, h int64) bool) (hours []int64, ranges [][2]int64) {
	for c := since; c < until; {
		h := floorHour(c)
		if sealedAt(c, h) {
			hours = append(hours, h)
			c = min(until, h+hourMs)
			continue
		}
		next := min(until, h+hourMs)
		if n := len(ranges); n > 0 && ranges[n-1][1] == c {
			ranges[n-1][1] = next
		} else {
			ranges = append(ranges, [2]int64{c, next})
		}
		c = next
	}
	return hours, ranges
}
