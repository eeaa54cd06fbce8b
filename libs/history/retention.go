package history

import (
	"context"
	"fmt"
	"time"
)

// Retention periods (gate-runtime §5.3, §8.2).
const (
	// WatchRetention keeps samples, recorders, snapshots and annotations.
	WatchRetention = 31 * 24 * time.Hour
	// RollupRetention keeps minute roll-ups.
	RollupRetention = 90 * 24 * time.Hour
	// TraceRetention keeps denial traces.
	TraceRetention = 7 * 24 * time.Hour
	// SourceRetention keeps each source's per-minute totals: a relay
	// hands a minute over for at most an hour (its buffer), so a day is
	// far past the last replay that could need them.
	SourceRetention = 24 * time.Hour
)

// Pruned is what one retention pass removed.
type Pruned struct {
	// PartitionsDropped are the day starts of dropped sample partitions.
	PartitionsDropped []int64
	// Rows removed per table.
	Recorders, Snapshots, ConfigEvents, Rollups, RollupSources, Traces int64
	// Series is the sealed hours of samples removed (with their day).
	Series int64
	// Versions is the graph revisions removed (VersionRetention).
	Versions int64
}

// Prune applies retention as of now: creates the sample partitions of today
// and the next PartitionsAhead days, drops the day partitions older than 31
// days (a DROP, never a DELETE of their rows) and the sealed hours of
// those days, deletes recorders (by
// through), snapshots and annotations (by at) older than 31 days, roll-ups
// older than 90 days (their per-source totals after a day), traces older than 7
// days, and graph revisions older than a year that are not among their
// graph's newest 20 (VersionRetention, VersionsKept).
func (db *DB) Prune(ctx context.Context, now time.Time) (Pruned, error) {
	var p Pruned
	if err := db.EnsurePartitions(ctx, now, PartitionsAhead); err != nil {
		return p, err
	}
	ms := now.UnixMilli()
	watchCut := ms - WatchRetention.Milliseconds()
	var err error
	if p.PartitionsDropped, err = db.dropPartitionsBefore(ctx, watchCut); err != nil {
		return p, err
	}
	del := func(dst *int64, q string, cut int64) error {
		if err != nil {
			return err
		}
		tag, e := db.pool.Exec(ctx, q, cut)
		if e != nil {
			err = fmt.Errorf("history: retention (%s): %w", q, e)
			return err
		}
		*dst = tag.RowsAffected()
		return nil
	}
	_ = del(&p.Recorders, "DELETE FROM watch_recorders WHERE through < $1", watchCut)
	_ = del(&p.Snapshots, "DELETE FROM snapshots WHERE at < $1", watchCut)
	// Sealed samples go with their day's partition.
	var seriesSeals int64
	_ = del(&p.Series, "DELETE FROM watch_series WHERE hour < $1", DayStart(watchCut))
	_ = del(&seriesSeals, "DELETE FROM watch_series_seals WHERE hour < $1", DayStart(watchCut))
	_ = del(&p.ConfigEvents, "DELETE FROM config_events WHERE at < $1", watchCut)
	rollCut := ms - RollupRetention.Milliseconds()
	_ = del(&p.Rollups, "DELETE FROM rollups WHERE minute < $1", rollCut)
	_ = del(&p.RollupSources, "DELETE FROM rollup_sources WHERE minute < $1", ms-SourceRetention.Milliseconds())
	var hours, seals int64
	_ = del(&hours, "DELETE FROM rollup_hours WHERE hour < $1", rollCut)
	_ = del(&seals, "DELETE FROM rollup_seals WHERE hour < $1", rollCut)
	_ = del(&p.Traces, "DELETE FROM traces WHERE at < $1", ms-TraceRetention.Milliseconds())
	if err != nil {
		return p, err
	}
	p.Versions, err = db.pruneVersions(ctx, ms-VersionRetention.Milliseconds())
	return p, err
}
