package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-mq/gate/libs/wire"
)

// Version retention (see Prune): a revision older than VersionRetention
// is deleted unless it is one of its graph's newest VersionsKept.
const (
	VersionRetention = 365 * 24 * time.Hour
	VersionsKept     = 20
)

// GraphVersion is one revision of a graph's change history (table
// graph_versions): a document stored by a declare, or a deletion.
type GraphVersion struct {
	App, Graph string
	// Revision numbers the graph's history from 1 in store order;
	// AddGraphVersion assigns it.
	Revision int64
	// At is when the document was stored (ms).
	At int64
	// ChangedBy is the console identity or "api"; Via "console" or "api";
	// Action "declare", "sync", "restore" or "delete" (wire's constants).
	ChangedBy, Via, Action string
	// Version is the document's version, ETag its entity tag, Document its
	// bytes exactly as stored; all zero (nil, "") for a deletion.
	Version  *int64
	ETag     string
	Document []byte
	// RestoredFrom is the revision a restore copied, else nil.
	RestoredFrom *int64
	// Summary is Diff in one line; Diff the change against the previous
	// revision.
	Summary string
	Diff    wire.Diff
}

// AddGraphVersion records v as its graph's next revision and returns the
// revision assigned. Writers of one graph take turns on a transaction
// lock keyed by the graph, so two gate-api processes never assign one
// revision twice.
func (db *DB) AddGraphVersion(ctx context.Context, v GraphVersion) (int64, error) {
	diff, err := json.Marshal(v.Diff)
	if err != nil {
		return 0, fmt.Errorf("history: encoding the diff of %s/%s: %w", v.App, v.Graph, err)
	}
	var etag *string
	if v.ETag != "" {
		etag = &v.ETag
	}
	var rev int64
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('graph_versions/' || $1 || '/' || $2, 0))`, v.App, v.Graph); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO graph_versions
			(application, graph, revision, at, changed_by, via, action, version, etag, document, restored_from, summary, diff)
			SELECT $1, $2, COALESCE(MAX(revision), 0) + 1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
			FROM graph_versions WHERE application = $1 AND graph = $2
			RETURNING revision`,
			v.App, v.Graph, v.At, v.ChangedBy, v.Via, v.Action, v.Version, etag, v.Document, v.RestoredFrom, v.Summary, diff).Scan(&rev)
	})
	if err != nil {
		return 0, fmt.Errorf("history: recording a revision of %s/%s: %w", v.App, v.Graph, err)
	}
	return rev, nil
}

// versionColumns are the columns of a GraphVersion read without its
// document and diff (a page of the list).
const versionColumns = `application, graph, revision, at, changed_by, via, action, version, COALESCE(etag, ''), restored_from, summary`

func scanVersion(row pgx.Row, v *GraphVersion, extra ...any) error {
	return row.Scan(append([]any{&v.App, &v.Graph, &v.Revision, &v.At, &v.ChangedBy, &v.Via, &v.Action, &v.Version, &v.ETag, &v.RestoredFrom, &v.Summary}, extra...)...)
}

// GraphVersions reads a page of a graph's revisions, newest first: at most
// limit revisions below before (0: from the newest), without their
// documents and diffs, and how many revisions the graph has in all.
func (db *DB) GraphVersions(ctx context.Context, app, graph string, before int64, limit int) ([]GraphVersion, int64, error) {
	var total int64
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM graph_versions WHERE application = $1 AND graph = $2`, app, graph).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("history: counting the revisions of %s/%s: %w", app, graph, err)
	}
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := db.pool.Query(ctx, `SELECT `+versionColumns+` FROM graph_versions
		WHERE application = $1 AND graph = $2 AND revision < $3 ORDER BY revision DESC LIMIT $4`, app, graph, before, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("history: reading the revisions of %s/%s: %w", app, graph, err)
	}
	defer rows.Close()
	out := []GraphVersion{}
	for rows.Next() {
		var v GraphVersion
		if err := scanVersion(rows, &v); err != nil {
			return nil, 0, fmt.Errorf("history: reading the revisions of %s/%s: %w", app, graph, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("history: reading the revisions of %s/%s: %w", app, graph, err)
	}
	return out, total, nil
}

// GraphVersionAt reads one revision with its document and diff; found is
// false when the graph's history has no such revision.
func (db *DB) GraphVersionAt(ctx context.Context, app, graph string, revision int64) (v GraphVersion, found bool, err error) {
	var diff []byte
	err = scanVersion(db.pool.QueryRow(ctx, `SELECT `+versionColumns+`, document, diff FROM graph_versions
		WHERE application = $1 AND graph = $2 AND revision = $3`, app, graph, revision), &v, &v.Document, &diff)
	if errors.Is(err, pgx.ErrNoRows) {
		return GraphVersion{}, false, nil
	}
	if err != nil {
		return GraphVersion{}, false, fmt.Errorf("history: reading revision %d of %s/%s: %w", revision, app, graph, err)
	}
	if err := json.Unmarshal(diff, &v.Diff); err != nil {
		return GraphVersion{}, false, fmt.Errorf("history: revision %d of %s/%s has an unreadable diff: %w", revision, app, graph, err)
	}
	return v, true, nil
}

// StoredBy reads the newest revision of a graph that stored the document
// whose entity tag is etag (without its document and diff): who stored
// what is stored now. found is false when history has no record of it.
func (db *DB) StoredBy(ctx context.Context, app, graph, etag string) (v GraphVersion, found bool, err error) {
	err = scanVersion(db.pool.QueryRow(ctx, `SELECT `+versionColumns+` FROM graph_versions
		WHERE application = $1 AND graph = $2 AND etag = $3 ORDER BY revision DESC LIMIT 1`, app, graph, etag), &v)
	if errors.Is(err, pgx.ErrNoRows) {
		return GraphVersion{}, false, nil
	}
	if err != nil {
		return GraphVersion{}, false, fmt.Errorf("history: reading who stored %s/%s: %w", app, graph, err)
	}
	return v, true, nil
}

// pruneVersions deletes the revisions older than cut that are not among
// their graph's newest VersionsKept.
func (db *DB) pruneVersions(ctx context.Context, cut int64) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM graph_versions v WHERE v.at < $1 AND v.revision <= (
		SELECT max(w.revision) FROM graph_versions w WHERE w.application = v.application AND w.graph = v.graph) - $2`, cut, VersionsKept)
	if err != nil {
		return 0, fmt.Errorf("history: retention (graph_versions): %w", err)
	}
	return tag.RowsAffected(), nil
}

// WatchSession is a finished Watch read back from the change history: the
// session's start and period as its document declared them, and when the
// revision after it (the one that left Watch) was stored.
type WatchSession struct {
	StartedAt, DurationSeconds, EndedAt int64
	// Revision is the history revision whose document held the session.
	Revision int64
}

// LastWatch finds the graph's newest recorded Watch session that a later
// revision ended (limits configured, or the graph deleted): found is false
// when the history holds none. It reads one row through the index of the
// graph's revisions; the documents are decoded by PostgreSQL, only the
// matched one's watch fields come back.
func (db *DB) LastWatch(ctx context.Context, app, graph string) (s WatchSession, found bool, err error) {
	row := db.pool.QueryRow(ctx, `SELECT g.revision,
			(convert_from(g.document, 'UTF8')::jsonb #>> '{watch,startedAt}')::bigint,
			(convert_from(g.document, 'UTF8')::jsonb #>> '{watch,durationSeconds}')::bigint,
			n.at
		FROM graph_versions g
		JOIN LATERAL (SELECT at FROM graph_versions x WHERE x.application = g.application AND x.graph = g.graph AND x.revision > g.revision
			AND (x.document IS NULL OR NOT (convert_from(x.document, 'UTF8')::jsonb ? 'watch')) ORDER BY x.revision LIMIT 1) n ON true
		WHERE g.application = $1 AND g.graph = $2 AND g.document IS NOT NULL
			AND jsonb_typeof(convert_from(g.document, 'UTF8')::jsonb #> '{watch,startedAt}') = 'number'
		ORDER BY g.revision DESC LIMIT 1`, app, graph)
	if err := row.Scan(&s.Revision, &s.StartedAt, &s.DurationSeconds, &s.EndedAt); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return WatchSession{}, false, nil
		}
		return WatchSession{}, false, fmt.Errorf("history: reading the last Watch session of %s/%s: %w", app, graph, err)
	}
	return s, true, nil
}
