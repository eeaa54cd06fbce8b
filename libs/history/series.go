package history

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Sealed series: once an hour of per-second samples can no longer change
// (SealAfter, as for the roll-up hours), the hourly pass packs each
// (application, graph, node, session, path) series' seconds of the hour,
// summed over recorders, into one watch_series row. A replay then reads a
// sealed hour of a path as one row instead of 3,600, and only the hours
// not sealed yet (the last few) from watch_samples. Nothing is lost: a
// packed second keeps its items, its cost, how many rows it summed and
// whether every row had one per-item cost (what "Try a limit" checks).
//
// The body is, per second with a sample, in ascending order, five
// unsigned varints: the second's offset from the previous one (the first
// from the hour's start), in seconds; the items; the cost; the rows
// summed; and the unit — 0 when the rows disagree on a per-item cost
// (or a row has a cost but no items), 1 when every row is empty (0 items,
// 0 cost), else the one per-item cost + 2.

const (
	unitMixed = 0
	unitEmpty = 1
)

// packedSecond is one second of a series as the body keeps it.
type packedSecond struct {
	second            int64 // ms
	items, cost, rows int64
	unit              uint64
}

// foldUnit is the unit of a second after a row of items and cost joins a
// second of unit u.
func foldUnit(u uint64, items, cost int64) uint64 {
	var row uint64
	switch {
	case items == 0 && cost == 0:
		return u
	case items > 0 && cost >= 0 && cost%items == 0:
		row = uint64(cost/items) + 2
	default:
		return unitMixed
	}
	switch u {
	case unitEmpty:
		return row
	case row:
		return u
	default:
		return unitMixed
	}
}

// atCost reports whether every row of a second of unit u costs items ×
// costPerItem.
func atCost(u uint64, costPerItem int64) bool {
	return u == unitEmpty || (u != unitMixed && costPerItem >= 0 && u == uint64(costPerItem)+2)
}

func appendPacked(body []byte, prev int64, s packedSecond) []byte {
	body = binary.AppendUvarint(body, uint64((s.second-prev)/1000))
	body = binary.AppendUvarint(body, uint64(s.items))
	body = binary.AppendUvarint(body, uint64(s.cost))
	body = binary.AppendUvarint(body, uint64(s.rows))
	return binary.AppendUvarint(body, s.unit)
}

var errBadBody = errors.New("history: a sealed series body does not decode")

// unpackEach calls visit with the seconds in [since, until) of a body of
// hour, in order; costPerItem ≥ 0 judges Uniform against it, < 0 leaves it
// true. It decodes in place: no second is allocated.
func unpackEach(hour int64, body []byte, since, until, costPerItem int64, visit func(SecondTraffic)) error {
	at := hour
	for len(body) > 0 {
		var v [5]uint64
		for i := range v {
			x, n := binary.Uvarint(body)
			if n <= 0 {
				return errBadBody
			}
			v[i], body = x, body[n:]
		}
		at += int64(v[0]) * 1000
		if at >= hour+hourMs {
			return errBadBody
		}
		if at < since || at >= until {
			continue
		}
		visit(SecondTraffic{Second: at, Items: int64(v[1]), Cost: int64(v[2]), Rows: int(v[3]),
			Uniform: costPerItem < 0 || atCost(v[4], costPerItem)})
	}
	return nil
}

// sealChunk is how many hours one sealing query reads at most: one day,
// the span of one sample partition.
const sealChunk = 24

// SealSeries packs every hour of per-second samples that ended at least
// SealAfter before now and is not sealed yet into watch_series (oldest
// first, from the oldest sample partition), returning how many hours it
// sealed. gate-recorder runs it hourly with SealHours; replays read sealed
// hours packed.
func (db *DB) SealSeries(ctx context.Context, now time.Time) (int, error) {
	limit := floorHour(now.Add(-SealAfter).UnixMilli())
	var from *int64
	if err := db.pool.QueryRow(ctx, `SELECT max(hour) + $1 FROM watch_series_seals`, hourMs).Scan(&from); err != nil {
		return 0, fmt.Errorf("history: finding the first hour of samples to seal: %w", err)
	}
	if from == nil {
		days, err := db.Partitions(ctx)
		if err != nil {
			return 0, fmt.Errorf("history: finding the first hour of samples to seal: %w", err)
		}
		if len(days) == 0 {
			return 0, nil
		}
		from = &days[0]
	}
	n := 0
	for h := *from; h+hourMs <= limit; {
		to := min(limit, h+sealChunk*hourMs)
		if err := db.sealSeries(ctx, h, to); err != nil {
			return n, fmt.Errorf("history: sealing the samples of %s to %s: %w", time.UnixMilli(h).UTC(), time.UnixMilli(to).UTC(), err)
		}
		n += int((to - h) / hourMs)
		h = to
	}
	return n, nil
}

// sealSeries packs the samples of the whole hours in [from, to) and seals
// those hours, in one transaction.
func (db *DB) sealSeries(ctx context.Context, from, to int64) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `SELECT application, graph, node, session, path, second, items, cost FROM watch_samples
		WHERE second >= $1 AND second < $2 ORDER BY application, graph, node, session, path, second`, from, to)
	if err != nil {
		return err
	}
	type key struct {
		app, graph, node, path string
		session, hour          int64
	}
	var (
		keys    []key
		bodies  [][]byte
		seconds []int32
		items   []int64
		cur     key
		open    bool
		body    []byte
		prev    int64
		sec     packedSecond
		nsec    int32
		nitems  int64
		started bool
	)
	flushSecond := func() {
		if started {
			body = appendPacked(body, prev, sec)
			prev = sec.second
			nsec++
			nitems += sec.items
			started = false
		}
	}
	flushSeries := func() {
		flushSecond()
		if open {
			keys, bodies, seconds, items = append(keys, cur), append(bodies, body), append(seconds, nsec), append(items, nitems)
		}
		open, body, nsec, nitems = false, nil, 0, 0
	}
	for rows.Next() {
		var k key
		var second, it, cost int64
		if err := rows.Scan(&k.app, &k.graph, &k.node, &k.session, &k.path, &second, &it, &cost); err != nil {
			rows.Close()
			return err
		}
		k.hour = floorHour(second)
		if !open || k != cur {
			flushSeries()
			cur, open, prev = k, true, k.hour
		}
		if started && sec.second != second {
			flushSecond()
		}
		if !started {
			sec, started = packedSecond{second: second, unit: unitEmpty}, true
		}
		sec.items += it
		sec.cost += cost
		sec.rows++
		sec.unit = foldUnit(sec.unit, it, cost)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	flushSeries()
	const batch = 2000
	for i := 0; i < len(keys); i += batch {
		j := min(len(keys), i+batch)
		apps, graphs, nodes, paths := make([]string, 0, j-i), make([]string, 0, j-i), make([]string, 0, j-i), make([]string, 0, j-i)
		sessions, hours := make([]int64, 0, j-i), make([]int64, 0, j-i)
		for _, k := range keys[i:j] {
			apps, graphs, nodes, paths = append(apps, k.app), append(graphs, k.graph), append(nodes, k.node), append(paths, k.path)
			sessions, hours = append(sessions, k.session), append(hours, k.hour)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO watch_series (application, graph, node, session, path, hour, seconds, items, body)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::int[], $8::bigint[], $9::bytea[])
			ON CONFLICT (application, graph, node, session, path, hour) DO UPDATE SET seconds = EXCLUDED.seconds,
				items = EXCLUDED.items, body = EXCLUDED.body`,
			apps, graphs, nodes, sessions, paths, hours, seconds[i:j], items[i:j], bodies[i:j]); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO watch_series_seals (hour) SELECT h FROM generate_series($1::bigint, $2::bigint - 1, $3::bigint) h
		ON CONFLICT DO NOTHING`, from, to, hourMs); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// seriesSealed lists the sealed hours of samples that overlap [since, until).
func (db *DB) seriesSealed(ctx context.Context, since, until int64) (map[int64]bool, error) {
	return db.hourSet(ctx, `SELECT hour FROM watch_series_seals WHERE hour + $3 > $1 AND hour < $2`, since, until, hourMs)
}

// splitSealed divides [since, until) into the sealed hours it overlaps
// and the stretches to read from the samples.
func splitSealed(sealed map[int64]bool, since, until int64) (hours []int64, ranges [][2]int64) {
	return splitHours(since, until, func(_, h int64) bool { return sealed[h] })
}

// sealedPack is the body of one sealed hour of one path.
type sealedPack struct {
	hour int64
	body []byte
}

// sealedPacks reads the packed bodies of one node and session in the given
// sealed hours (path "" for every path), ordered by hour, and how many
// seconds they hold in all.
func (db *DB) sealedPacks(ctx context.Context, app, graph, node, path string, session int64, hours []int64) ([]sealedPack, int, error) {
	if len(hours) == 0 {
		return nil, 0, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT hour, seconds, body FROM watch_series
		WHERE application = $1 AND graph = $2 AND node = $3 AND session = $4 AND ($5 = '' OR path = $5) AND hour = ANY($6)
		ORDER BY hour`,
		app, graph, node, session, path, hours)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var packs []sealedPack
	total := 0
	for rows.Next() {
		var p sealedPack
		var n int
		if err := rows.Scan(&p.hour, &n, &p.body); err != nil {
			return nil, 0, err
		}
		packs, total = append(packs, p), total+n
	}
	return packs, total, rows.Err()
}

// eachSealedHour calls visit with the seconds in [since, until) of the
// packs of one hour, in order. One pack (one path) decodes straight
// through; several (path "": every path) interleave, so they are decoded
// into scratch, sorted and summed second by second. It returns scratch
// for reuse.
func eachSealedHour(packs []sealedPack, since, until, costPerItem int64, scratch []SecondTraffic, visit func(SecondTraffic)) ([]SecondTraffic, error) {
	if len(packs) == 1 {
		return scratch, unpackEach(packs[0].hour, packs[0].body, since, until, costPerItem, visit)
	}
	scratch = scratch[:0]
	collect := func(s SecondTraffic) { scratch = append(scratch, s) }
	for _, p := range packs {
		if err := unpackEach(p.hour, p.body, since, until, costPerItem, collect); err != nil {
			return scratch, err
		}
	}
	sort.SliceStable(scratch, func(i, j int) bool { return scratch[i].Second < scratch[j].Second })
	k := 0
	for _, s := range scratch {
		if k > 0 && scratch[k-1].Second == s.Second {
			o := &scratch[k-1]
			o.Items += s.Items
			o.Cost += s.Cost
			o.Rows += s.Rows
			o.Uniform = o.Uniform && s.Uniform
			continue
		}
		scratch[k] = s
		k++
	}
	for _, s := range scratch[:k] {
		visit(s)
	}
	return scratch, nil
}
