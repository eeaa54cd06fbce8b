package declare

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	libdiff "github.com/queen-mq/gate/libs/diff"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// recordTimeout bounds writing one change-history revision: a declare has
// stored its document by then, and never fails because of history.
const recordTimeout = 2 * time.Second

// record writes v to the change history and returns its revision; nil
// without history or when the write fails (logged as skipped: the document
// is stored either way).
func (d *Declarer) record(ctx context.Context, v history.GraphVersion) *int64 {
	db := d.p.History()
	if db == nil {
		return nil
	}
	v.Summary = libdiff.Summary(v.Diff)
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	rev, err := db.AddGraphVersion(hctx, v)
	if err != nil {
		d.p.Log.Warn("change history not recorded: history is unavailable", "app", v.App, "graph", v.Graph, "actor", v.ChangedBy, "error", err)
		return nil
	}
	d.p.Log.Info("change recorded", "app", v.App, "graph", v.Graph, "revision", rev, "actor", v.ChangedBy)
	return &rev
}

// versionRoutes registers the change history: the list of a graph's
// revisions and one revision (reads, on /v1 and the console's /api), and
// the restore (a write, on /v1).
func (d *Declarer) versionRoutes(r *httpapi.Router) {
	small := d.p.Cfg.BodyBytes
	get := func(name, path string, flat bool, h httpapi.Handler) {
		r.Handle(httpapi.Route{Name: name, Method: http.MethodGet, Path: path, Limit: small, Flat: flat}, h)
	}
	plane.Both(r, "graph-versions", http.MethodGet, "/graphs/{name}/versions", small, d.listVersions)
	plane.Both(r, "graph-version", http.MethodGet, "/graphs/{name}/versions/{revision}", small, d.readVersion)
	get("console-graph-versions", "/api/apps/{app}/graphs/{name}/versions", false, d.listVersions)
	get("console-graph-versions", "/api/graphs/{name}/versions", true, d.listVersions)
	get("console-graph-version", "/api/apps/{app}/graphs/{name}/versions/{revision}", false, d.readVersion)
	get("console-graph-version", "/api/graphs/{name}/versions/{revision}", true, d.readVersion)
	plane.Both(r, "graph-restore", http.MethodPost, "/graphs/{name}/versions/{revision}/restore", small, d.restore)
}

// historyGraph is the application and graph a history route names: the
// route's, or on a flat route the one application that declares the name
// (else "default", where a deleted graph's history is looked for); and the
// history database, 503 without one.
func (d *Declarer) historyGraph(q *httpapi.Request) (string, string, *history.DB, *httpapi.Refusal) {
	name := q.Vars["name"]
	if bad := plane.CheckName("graph", name); bad != nil {
		return "", "", nil, bad
	}
	app := plan.DefaultApplication
	if !q.Flat {
		app = q.Vars["app"]
		if bad := plane.CheckName("app", app); bad != nil {
			return "", "", nil, bad
		}
	} else if apps := d.p.Cat.Apps(q.Context(), name); len(apps) == 1 {
		app = apps[0]
	}
	db := d.p.History()
	if db == nil {
		return "", "", nil, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeNoHistory, "no change history: gate-api runs without PostgreSQL, so no version of '%s/%s' was recorded; set PG_HOST (or PG_URL) to keep every stored version with who changed it and when", app, name)
	}
	return app, name, db, nil
}

// The page size of the history list.
const (
	defaultVersionPage = 50
	maxVersionPage     = 200
)

// listVersions is GET …/graphs/{name}/versions?limit=&cursor=: the
// graph's revisions, newest first, a page at a time.
func (d *Declarer) listVersions(q *httpapi.Request) *httpapi.Refusal {
	app, name, db, bad := d.historyGraph(q)
	if bad != nil {
		return bad
	}
	v := q.Query()
	limit, bad := httpapi.QueryRange(v, "limit", defaultVersionPage, 1, maxVersionPage)
	if bad != nil {
		return bad
	}
	before, bad := versionCursor(v["cursor"])
	if bad != nil {
		return bad
	}
	ctx, cancel := d.p.HistoryContext(q)
	defer cancel()
	rows, total, err := db.GraphVersions(ctx, app, name, before, limit+1)
	if err != nil {
		return d.p.HistoryRefusal(ctx, err)
	}
	current := d.currentETag(q.Context(), app, name)
	out := wire.GraphVersionPage{Items: []wire.GraphVersion{}, Total: total}
	if len(rows) > limit {
		rows = rows[:limit]
		next := base64.RawURLEncoding.EncodeToString([]byte("r" + strconv.FormatInt(rows[limit-1].Revision, 10)))
		out.Next = &next
	}
	for _, r := range rows {
		out.Items = append(out.Items, versionOf(r, current))
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// versionCursor reads the cursor of a history page: the opaque form of the
// last revision shown (0 when absent).
func versionCursor(raw []string) (int64, *httpapi.Refusal) {
	switch {
	case len(raw) == 0 || raw[0] == "":
		return 0, nil
	case len(raw) > 1:
		return 0, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "cursor is given %d times: give it once", len(raw)).Field("cursor")
	case len(raw[0]) > 64:
		return 0, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "cursor is %d bytes: a history cursor is at most 64; send the next of the previous page as it was given", len(raw[0])).Field("cursor")
	}
	b, err := base64.RawURLEncoding.DecodeString(raw[0])
	if err == nil && len(b) > 1 && b[0] == 'r' {
		if n, err := strconv.ParseInt(string(b[1:]), 10, 64); err == nil && n > 0 {
			return n, nil
		}
	}
	return 0, httpapi.Refuse(http.StatusBadRequest, wire.CodeInvalidQuery, "cursor %.40q is not one a history page gave: send the next of the previous page as it was given, or no cursor for the newest page", raw[0]).Field("cursor")
}

// currentETag is the entity tag of the graph's stored document ("" when
// nothing is stored or it cannot be read).
func (d *Declarer) currentETag(ctx context.Context, app, name string) string {
	doc, found, err := d.p.Store.Get(ctx, app, name)
	if err != nil || !found {
		return ""
	}
	return doc.ETag()
}

// versionOf is a history row as the wire carries it.
func versionOf(v history.GraphVersion, current string) wire.GraphVersion {
	out := wire.GraphVersion{
		Application: v.App, Graph: v.Graph, Revision: v.Revision, At: v.At,
		ChangedBy: v.ChangedBy, Via: v.Via, Action: v.Action, RestoredFrom: v.RestoredFrom, Summary: v.Summary,
		Current: v.ETag != "" && v.ETag == current,
	}
	if v.Version != nil {
		out.Version = new(uint32(*v.Version))
	}
	if v.ETag != "" {
		out.ETag = new(v.ETag)
	}
	return out
}

// revisionOf reads the {revision} of a history route: a whole number from
// 1, else 400 invalid-revision.
func revisionOf(q *httpapi.Request) (int64, *httpapi.Refusal) {
	raw := q.Vars["revision"]
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 || len(raw) > 19 {
		return 0, httpapi.Refuse(http.StatusBadRequest, wire.CodeInvalidRevision, "the revision %.40q in the URL is not a whole number from 1: use a revision of GET …/versions", raw).Field("revision")
	}
	return n, nil
}

// readRevision is one revision of the route's graph, 404 when its history
// has none such.
func (d *Declarer) readRevision(q *httpapi.Request) (history.GraphVersion, *httpapi.Refusal) {
	app, name, db, bad := d.historyGraph(q)
	if bad != nil {
		return history.GraphVersion{}, bad
	}
	rev, bad := revisionOf(q)
	if bad != nil {
		return history.GraphVersion{}, bad
	}
	ctx, cancel := d.p.HistoryContext(q)
	defer cancel()
	v, found, err := db.GraphVersionAt(ctx, app, name, rev)
	if err != nil {
		return history.GraphVersion{}, d.p.HistoryRefusal(ctx, err)
	}
	if !found {
		return history.GraphVersion{}, httpapi.Refuse(http.StatusNotFound, wire.CodeRevisionNotFound, "the history of '%s/%s' has no revision %d (never recorded, or removed by retention after a year): list them with GET …/graphs/%s/versions", app, name, rev, name).Field("revision")
	}
	return v, nil
}

// readVersion is GET …/graphs/{name}/versions/{revision}: one revision,
// its document as stored and its diff against the revision before it.
func (d *Declarer) readVersion(q *httpapi.Request) *httpapi.Refusal {
	v, bad := d.readRevision(q)
	if bad != nil {
		return bad
	}
	out := wire.GraphRevision{GraphVersion: versionOf(v, d.currentETag(q.Context(), v.App, v.Graph)), Diff: v.Diff}
	if v.Document != nil {
		out.Document = json.RawMessage(v.Document)
	} else {
		out.Document = json.RawMessage("null")
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// restore is POST …/graphs/{name}/versions/{revision}/restore: a new
// version with the revision's content, declared like a PUT of it — the
// preconditions against the stored document, every declare rule as of now
// (a revision that no longer compiles is refused with its rule), and
// ?dryRun=true to see the plan and the diff first. The document's version
// is the stored one plus one (the revision's own when nothing is stored);
// restoring what is stored already changes nothing.
func (d *Declarer) restore(q *httpapi.Request) *httpapi.Refusal {
	dry, bad := DryRunOf(q)
	if bad != nil {
		return bad
	}
	cond, bad := httpapi.ReadPreconditions(q.R.Header)
	if bad != nil {
		return bad
	}
	v, bad := d.readRevision(q)
	if bad != nil {
		return bad
	}
	if v.Document == nil {
		return httpapi.Refuse(http.StatusConflict, wire.CodeRevisionNotRestorable, "revision %d of '%s/%s' records its deletion (by %s), so it has no document to restore: restore revision %d or an earlier one", v.Revision, v.App, v.Graph, v.ChangedBy, v.Revision-1).Field("revision")
	}
	j := job{app: v.App, name: v.Graph, cond: cond, dryRun: dry, actor: plane.ActorOf(q.Context()), action: wire.ActionRestore, restore: &v}
	return d.answer(q, j)
}

// restoredBody is the document a restore declares: the revision's, at the
// stored version when that makes it the stored document byte for byte
// (nothing changes), else at the stored version plus one; at its own
// version when nothing is stored.
func restoredBody(v *history.GraphVersion, stored *plane.Entry) ([]byte, *httpapi.Refusal) {
	doc, err := graph.Parse(v.Document)
	if err != nil {
		// Stored by an older gate-api in a shape this one no longer
		// reads: the compile names the rule.
		return v.Document, nil
	}
	if stored == nil || stored.Doc == nil {
		return v.Document, nil
	}
	doc.Version = stored.Doc.Version
	if doc.Watch != nil && stored.Doc.Watch != nil {
		doc.Watch.StartedAt = stored.Doc.Watch.StartedAt
	}
	same, err := doc.MarshalJSON()
	if err == nil && string(same) == string(stored.Body) {
		return same, nil
	}
	if doc.Version == ^uint32(0) {
		return nil, httpapi.Refuse(http.StatusConflict, wire.CodeDeclareRefused, "the stored version of '%s/%s' is %d, the highest a version can be, so a restore cannot declare a newer one: nothing was stored", v.App, v.Graph, doc.Version).Rule("version-order")
	}
	doc.Version++
	body, err := doc.MarshalJSON()
	if err != nil {
		return nil, httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "encoding revision %d of '%s/%s' at version %d failed: %v", v.Revision, v.App, v.Graph, doc.Version, err)
	}
	return body, nil
}

// restoreRefusal says that a refused declaration was a restore of v, so a
// revision that no longer compiles reads as such.
func restoreRefusal(bad *httpapi.Refusal, v *history.GraphVersion) *httpapi.Refusal {
	return bad.Prefix(fmt.Sprintf("revision %d of '%s/%s' (version %d, stored by %s) cannot be restored as it stands: ", v.Revision, v.App, v.Graph, deref(v.Version), v.ChangedBy))
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
