package history

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
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

// EachSecondAtCost is SecondsAtCost without the slice: reserve (nil to
// skip) is called once with an upper bound of the seconds to come, then
// visit with each second, oldest first. "Try a limit" reads this way,
// straight into the replay's input.
func (db *DB) EachSecondAtCost(ctx context.Context, app, graph, node string, session, since, until, costPerItem int64, reserve func(n int), visit func(SecondTraffic)) error {
	return db.eachSecond(ctx, app, graph, node, "", session, since, until, max(costPerItem, 0), reserve, visit)
}

// eachSecond calls visit with the seconds of one node and session in
// [since, until) (path "" for every path), oldest first: the sealed hours
// decoded from their packed bodies, the rest from the samples. reserve,
// when not nil, is called first with an upper bound of the seconds to
// come. costPerItem ≥ 0 judges Uniform against it; < 0 leaves it true.
func (db *DB) eachSecond(ctx context.Context, app, graph, node, path string, session, since, until, costPerItem int64, reserve func(int), visit func(SecondTraffic)) error {
	rec, err := db.openRecording(ctx, app, graph, node, path, session, since, until, costPerItem)
	if err != nil {
		return err
	}
	if reserve != nil {
		reserve(rec.Seconds())
	}
	for {
		more, err := rec.Next(ctx, visit)
		if err != nil || !more {
			return err
		}
	}
}

// PathRecording is one node's recorded seconds on one path in a range, read
// in two steps so that a replay can start before the slow half is read:
// OpenPath reads the sealed hours (a packed row each, quick), ReadRest the
// hours not sealed yet from the samples (a sum per second, slower). Next
// then hands the seconds over a piece at a time, oldest first. ReadRest
// may run on another goroutine while Next is called; Next reaching the
// unsealed hours waits for it (or reads them itself if it never ran).
type PathRecording struct {
	db                     *DB
	app, graph, node, path string
	session, since, until  int64
	costPerItem            int64
	packs                  []sealedPack
	// ranges are the stretches to read from the samples; rest their
	// seconds once read, by hour, packed as the sealed hours are (offsets
	// in ms), in ranges' order.
	ranges   [][2]int64
	rest     []restHour
	restOnce sync.Once
	restErr  error
	total    int
	p, r     int // the next pack and range Next hands over
	h        int // the next hour of rest Next hands over
	scratch  []SecondTraffic
}

// restHour is the seconds of one hour of a stretch read from the samples.
type restHour struct {
	from, to int64 // the hour within its stretch
	body     []byte
}

// OpenPath reads the sealed hours of one node, path and Watch session for
// seconds in [since, until), summed over recorders; see PathRecording.
func (db *DB) OpenPath(ctx context.Context, app, graph, node, path string, session, since, until int64) (*PathRecording, error) {
	if path == "" {
		return nil, fmt.Errorf("history: reading a path's samples needs the path")
	}
	return db.openRecording(ctx, app, graph, node, path, session, since, until, -1)
}

func (db *DB) openRecording(ctx context.Context, app, graph, node, path string, session, since, until, costPerItem int64) (*PathRecording, error) {
	rec := &PathRecording{db: db, app: app, graph: graph, node: node, path: path, session: session, since: since, until: until, costPerItem: costPerItem}
	if until <= since {
		return rec, nil
	}
	sealed, err := db.seriesSealed(ctx, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading sealed hours of samples: %w", err)
	}
	var hours []int64
	hours, rec.ranges = splitSealed(sealed, since, until)
	if rec.packs, rec.total, err = db.sealedPacks(ctx, app, graph, node, path, session, hours); err != nil {
		return nil, fmt.Errorf("history: reading sealed samples: %w", err)
	}
	for _, r := range rec.ranges {
		rec.total += int((r[1] - r[0] + 999) / 1000)
	}
	return rec, nil
}

// Seconds is an upper bound of how many seconds Next hands over in all.
func (rec *PathRecording) Seconds() int { return rec.total }

// ReadRest reads the seconds of the hours not sealed yet from the samples,
// holding a connection only while it reads; once read, they are kept
// packed. Called again (or by Next) it reads nothing and answers the
// first call's error.
func (rec *PathRecording) ReadRest(ctx context.Context) error {
	rec.restOnce.Do(func() {
		for _, r := range rec.ranges {
			var cur *restHour
			var prev int64
			err := rec.db.rawSeconds(ctx, rec.app, rec.graph, rec.node, rec.path, rec.session, r[0], r[1], rec.costPerItem, func(s SecondTraffic) {
				if cur == nil || s.Second >= cur.to {
					from := max(r[0], floorHour(s.Second))
					rec.rest = append(rec.rest, restHour{from: from, to: min(r[1], from-from%hourMs+hourMs)})
					cur, prev = &rec.rest[len(rec.rest)-1], from
				}
				unit := uint64(unitMixed)
				if s.Uniform {
					unit = uint64(max(rec.costPerItem, 0)) + 2
				}
				cur.body = appendSecond(cur.body, 1, prev, packedSecond{second: s.Second, items: s.Items, cost: s.Cost, rows: int64(s.Rows), unit: unit})
				prev = s.Second
			})
			if err != nil {
				rec.restErr = fmt.Errorf("history: reading samples: %w", err)
				return
			}
		}
	})
	return rec.restErr
}

// Next calls visit with the next piece of the recording — one sealed hour,
// or one stretch read from the samples — oldest first, and reports whether
// there was one. Reaching the unsealed stretches it waits for ReadRest.
func (rec *PathRecording) Next(ctx context.Context, visit func(SecondTraffic)) (bool, error) {
	if rec.p < len(rec.packs) && (rec.r >= len(rec.ranges) || rec.packs[rec.p].hour < rec.ranges[rec.r][0]) {
		p := rec.p
		q := p + 1
		for q < len(rec.packs) && rec.packs[q].hour == rec.packs[p].hour {
			q++
		}
		var err error
		if rec.scratch, err = eachSealedHour(rec.packs[p:q], rec.since, rec.until, rec.costPerItem, rec.scratch, visit); err != nil {
			return false, fmt.Errorf("history: reading sealed samples: %w (%s/%s node %s, hour %d)", err, rec.app, rec.graph, rec.node, rec.packs[p].hour)
		}
		rec.p = q
		return true, nil
	}
	if rec.r < len(rec.ranges) {
		if err := rec.ReadRest(ctx); err != nil {
			return false, err
		}
		// The stretch's hours with a second, one a call.
		r := rec.ranges[rec.r]
		if rec.h < len(rec.rest) && rec.rest[rec.h].from < r[1] {
			h := &rec.rest[rec.h]
			if err := unpackSeconds(h.from, h.to, 1, h.body, rec.since, rec.until, rec.costPerItem, visit); err != nil {
				return false, fmt.Errorf("history: reading samples: %w", err)
			}
			h.body = nil
			rec.h++
			return true, nil
		}
		rec.r++
		return true, nil
	}
	return false, nil
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
	// One SecondTraffic and one list of its fields scanned into row after
	// row: Scan's variadic list, or a value per row, would allocate per
	// second.
	var s SecondTraffic
	_, err = pgx.ForEachRow(rows, []any{&s.Second, &s.Items, &s.Cost, &s.Rows, &s.Uniform}, func() error {
		visit(s)
		return nil
	})
	return err
}
