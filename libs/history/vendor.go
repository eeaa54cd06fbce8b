package history

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// VendorRetention keeps the vendor meter's spans (by their end).
const VendorRetention = WatchRetention

// VendorSpan is one limit a vendor stated for a budget that mirrors its
// meter, as gate-recorder saw it in kv (table vendor_meter).
type VendorSpan struct {
	App, Graph, Node, Budget string
	// Since is when the vendor first stated the limit (ms); Until when it
	// lapses unless restated; Ended, when non-zero, when it went before
	// Until (the vendor allowed what is declared again, or another limit
	// replaced it); Seen the recorder's last sample that saw it.
	Since, Until, Ended, Seen int64
	// Limit is the vendor's limit per TimeMs, the budget's window, where
	// Declared is declared.
	Limit, Declared, TimeMs int64
	// VendorLimit and VendorWindowMs are the vendor's own words.
	VendorLimit, VendorWindowMs int64
	// Headers and Policy say which meter spoke.
	Headers, Policy string
}

// End is when the span stopped holding: Ended when it went early, else
// Until.
func (s VendorSpan) End() int64 {
	if s.Ended > 0 && s.Ended < s.Until {
		return s.Ended
	}
	return s.Until
}

// Sentence is the span in words, as the timeline and "Try a limit" say it.
func (s VendorSpan) Sentence() string {
	return fmt.Sprintf("the vendor enforced %d where %d is declared, from %s to %s", s.Limit, s.Declared,
		time.UnixMilli(s.Since).UTC().Format(time.RFC3339), time.UnixMilli(s.End()).UTC().Format(time.RFC3339))
}

// PutVendorSpans writes spans in one batch: a new span is inserted, a
// known one (same budget and Since) takes the new Until, Limit and Seen
// and keeps the earliest Ended (0 never replaces one). Writing the same
// span twice changes nothing.
func (db *DB) PutVendorSpans(ctx context.Context, spans []VendorSpan) error {
	if len(spans) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, s := range spans {
		var ended *int64
		if s.Ended > 0 {
			e := s.Ended
			ended = &e
		}
		b.Queue(`INSERT INTO vendor_meter (application, graph, node, budget, since_ms, until_ms, ended_ms, seen_ms,
				limit_count, declared, time_ms, vendor_limit, vendor_window_ms, headers, policy)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (application, graph, node, budget, since_ms) DO UPDATE SET
				until_ms = EXCLUDED.until_ms,
				ended_ms = CASE WHEN vendor_meter.ended_ms IS NULL THEN EXCLUDED.ended_ms
					WHEN EXCLUDED.ended_ms IS NULL THEN vendor_meter.ended_ms
					ELSE least(vendor_meter.ended_ms, EXCLUDED.ended_ms) END,
				seen_ms = greatest(vendor_meter.seen_ms, EXCLUDED.seen_ms),
				limit_count = EXCLUDED.limit_count, declared = EXCLUDED.declared, time_ms = EXCLUDED.time_ms,
				vendor_limit = EXCLUDED.vendor_limit, vendor_window_ms = EXCLUDED.vendor_window_ms,
				headers = EXCLUDED.headers, policy = EXCLUDED.policy`,
			s.App, s.Graph, s.Node, s.Budget, s.Since, s.Until, ended, s.Seen,
			s.Limit, s.Declared, s.TimeMs, s.VendorLimit, s.VendorWindowMs, s.Headers, s.Policy)
	}
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("history: writing %d vendor meter spans: %w", len(spans), err)
	}
	return nil
}

// VendorSpans reads the spans of a graph's node (every node when node is
// empty) that held at some time in [since, until), oldest first.
func (db *DB) VendorSpans(ctx context.Context, app, graph, node string, since, until int64) ([]VendorSpan, error) {
	rows, err := db.pool.Query(ctx, `SELECT node, budget, since_ms, until_ms, coalesce(ended_ms, 0), seen_ms,
			limit_count, declared, time_ms, vendor_limit, vendor_window_ms, headers, policy
		FROM vendor_meter WHERE application = $1 AND graph = $2 AND ($3 = '' OR node = $3)
			AND since_ms < $5 AND least(until_ms, coalesce(ended_ms, until_ms)) > $4
		ORDER BY since_ms, node, budget`, app, graph, node, since, until)
	if err != nil {
		return nil, fmt.Errorf("history: reading vendor meter spans: %w", err)
	}
	defer rows.Close()
	var out []VendorSpan
	for rows.Next() {
		s := VendorSpan{App: app, Graph: graph}
		if err := rows.Scan(&s.Node, &s.Budget, &s.Since, &s.Until, &s.Ended, &s.Seen,
			&s.Limit, &s.Declared, &s.TimeMs, &s.VendorLimit, &s.VendorWindowMs, &s.Headers, &s.Policy); err != nil {
			return nil, fmt.Errorf("history: reading vendor meter spans: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: reading vendor meter spans: %w", err)
	}
	return out, nil
}

// PruneVendorSpans deletes the spans that ended before now less
// VendorRetention, returning how many.
func (db *DB) PruneVendorSpans(ctx context.Context, now time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM vendor_meter WHERE least(until_ms, coalesce(ended_ms, until_ms)) < $1`, now.UnixMilli()-VendorRetention.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("history: retention of vendor meter spans: %w", err)
	}
	return tag.RowsAffected(), nil
}
