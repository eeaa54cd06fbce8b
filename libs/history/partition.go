package history

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// PartitionsAhead is how many UTC days past today get their watch_samples
// partition created in advance (at boot and at every retention pass).
const PartitionsAhead = 3

const (
	dayMs           = int64(24 * time.Hour / time.Millisecond)
	partitionPrefix = "watch_samples_d"
	partitionLayout = "20060102"
)

// partitionCache remembers day partitions known to exist.
type partitionCache struct {
	mu   sync.Mutex
	days map[int64]bool
}

func (c *partitionCache) has(day int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.days[day]
}

func (c *partitionCache) add(day int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.days == nil {
		c.days = map[int64]bool{}
	}
	c.days[day] = true
}

func (c *partitionCache) forgetBefore(day int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d := range c.days {
		if d < day {
			delete(c.days, d)
		}
	}
}

// DayStart is the start (Unix ms) of the UTC day holding ms.
func DayStart(ms int64) int64 { return ms - ((ms%dayMs)+dayMs)%dayMs }

// PartitionName is the watch_samples partition of the UTC day starting at
// day (Unix ms).
func PartitionName(day int64) string {
	return partitionPrefix + time.UnixMilli(day).UTC().Format(partitionLayout)
}

// EnsurePartitions creates the watch_samples partitions of the UTC day of
// from and the next ahead days (creating one that exists is a no-op, also
// when another process creates it at the same moment).
func (db *DB) EnsurePartitions(ctx context.Context, from time.Time, ahead int) error {
	first := DayStart(from.UnixMilli())
	for i := 0; i <= ahead; i++ {
		if err := db.ensureDay(ctx, first+int64(i)*dayMs); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) ensureDay(ctx context.Context, day int64) error {
	if db.parts.has(day) {
		return nil
	}
	q := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF watch_samples FOR VALUES FROM (%d) TO (%d)", PartitionName(day), day, day+dayMs)
	if _, err := db.pool.Exec(ctx, q); err != nil && !isDuplicate(err) {
		return fmt.Errorf("creating partition %s: %w", PartitionName(day), err)
	}
	db.parts.add(day)
	return nil
}

// isDuplicate is PostgreSQL's "already exists" (42P07 duplicate table,
// 42P06 duplicate schema, 23505 on a catalogue index when two sessions
// create the same object at once).
func isDuplicate(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "42P07", "42P06", "23505":
			return true
		}
	}
	return false
}

// Partitions lists the day partitions of watch_samples (their day starts,
// ascending).
func (db *DB) Partitions(ctx context.Context) ([]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent
		JOIN pg_namespace n ON n.oid = p.relnamespace
		WHERE p.relname = 'watch_samples' AND n.nspname = $1`, db.schema)
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	defer rows.Close()
	var days []int64
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		if d, ok := parsePartition(name); ok {
			days = append(days, d)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
	return days, nil
}

func parsePartition(name string) (int64, bool) {
	if len(name) != len(partitionPrefix)+len(partitionLayout) || name[:len(partitionPrefix)] != partitionPrefix {
		return 0, false
	}
	t, err := time.ParseInLocation(partitionLayout, name[len(partitionPrefix):], time.UTC)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// dropPartitionsBefore drops every day partition whose whole day ends at
// or before cutoff (Unix ms), returning the days dropped.
func (db *DB) dropPartitionsBefore(ctx context.Context, cutoff int64) ([]int64, error) {
	days, err := db.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	var dropped []int64
	for _, d := range days {
		if d+dayMs > cutoff {
			continue
		}
		if _, err := db.pool.Exec(ctx, "DROP TABLE IF EXISTS "+PartitionName(d)); err != nil {
			return dropped, fmt.Errorf("dropping partition %s: %w", PartitionName(d), err)
		}
		dropped = append(dropped, d)
	}
	db.parts.forgetBefore(DayStart(cutoff))
	return dropped, nil
}
