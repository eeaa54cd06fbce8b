package declare_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/server"
	"github.com/queen-mq/gate/libs/wire"
)

// asConsole is h with requests made as the console identity who: the same
// gate-api handler, behind what gate-console does for a signed-in request.
func asConsole(t *testing.T, h *apitest.Harness, who string) *apitest.Harness {
	t.Helper()
	inner := h.Srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r.WithContext(server.WithActor(r.Context(), who)))
	}))
	t.Cleanup(ts.Close)
	c := *h
	c.URL = ts.URL
	return &c
}

// Every stored version is kept with who stored it (the console identity,
// or "api"), when, and its diff against the one before; the list pages
// newest first; one revision reads back its document as it was stored; a
// deletion is a revision too. A 412 says who changed the graph and when.
func TestHistoryKeepsEveryStoredVersion(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	ann := asConsole(t, h, "ann@example.com")
	v1 := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK)
	if d := apitest.DecodeAs[wire.Declared](t, v1); d.Revision == nil || *d.Revision != 1 || !d.Diff.Created {
		t.Fatalf("the first PUT: revision %v diff %+v, want revision 1, created", d.Revision, d.Diff)
	}
	doc2 := h.Target("g", 50)
	doc2["version"] = 2
	v2 := ann.Expect(ann.Do(http.MethodPut, h.GraphURL("g"), doc2, "If-Match", v1.Header.Get("ETag")), http.StatusOK)
	// The same document again stores nothing new: no revision.
	if d := apitest.DecodeAs[wire.Declared](t, ann.Expect(ann.Do(http.MethodPut, h.GraphURL("g"), doc2), http.StatusOK)); d.Revision != nil || d.Diff.Changed {
		t.Fatalf("an unchanged PUT recorded revision %v (diff changed %v)", apitest.Deref(d.Revision), d.Diff.Changed)
	}
	// A stale edit is told who changed it and when.
	stale := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 7), "If-Match", v1.Header.Get("ETag")), http.StatusPreconditionFailed)
	if stale.Str("changedBy") != "ann@example.com" || stale.Num("changedAt") == 0 || !strings.Contains(h.ErrorBody(stale), "stored by ann@example.com at ") {
		t.Fatalf("the 412 of a stale edit: %s, want changedBy ann@example.com and when", stale.Raw)
	}
	h.Expect(h.Do(http.MethodDelete, h.GraphURL("g"), nil), http.StatusOK)

	page := apitest.DecodeAs[wire.GraphVersionPage](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("g")+"/versions?limit=2", nil), http.StatusOK))
	if page.Total != 3 || len(page.Items) != 2 || page.Next == nil {
		t.Fatalf("first page %+v, want 2 of 3 with a next cursor", page)
	}
	del, second := page.Items[0], page.Items[1]
	if del.Revision != 3 || del.Action != wire.ActionDelete || del.ChangedBy != "api" || del.Via != wire.ViaAPI || del.Version != nil || del.ETag != nil || del.Current {
		t.Fatalf("revision 3 %+v, want the API's deletion", del)
	}
	if second.Revision != 2 || second.ChangedBy != "ann@example.com" || second.Via != wire.ViaConsole || *second.Version != 2 ||
		*second.ETag != v2.Header.Get("ETag") || !strings.Contains(second.Summary, "budget global: 5 per 1 s → 50 per 1 s") {
		t.Fatalf("revision 2 %+v", second)
	}
	rest := apitest.DecodeAs[wire.GraphVersionPage](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("g")+"/versions?limit=2&cursor="+*page.Next, nil), http.StatusOK))
	if len(rest.Items) != 1 || rest.Items[0].Revision != 1 || rest.Next != nil || rest.Items[0].ChangedBy != "api" {
		t.Fatalf("second page %+v, want revision 1 by api and no further page", rest)
	}
	one := apitest.DecodeAs[wire.GraphRevision](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("g")+"/versions/2", nil), http.StatusOK))
	var doc struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(one.Document, &doc); err != nil || doc.Version != 2 || one.Diff.FromVersion == nil || *one.Diff.FromVersion != 1 {
		t.Fatalf("revision 2 reads %s with diff %+v", one.Document, one.Diff)
	}
	// The console's /api twin answers the same.
	if c := h.Expect(h.Do(http.MethodGet, "/api/apps/"+h.App+"/graphs/g/versions", nil), http.StatusOK); !strings.Contains(string(c.Raw), `"total":3`) {
		t.Fatalf("/api versions: %.300s", c.Raw)
	}
}

// A restore declares a revision's content as a new version, through the
// preconditions and the dry run: the version is raised above the stored
// one, the diff says what it changes, and the history records it as a
// restore by whom and from which revision.
func TestRestoreMakesANewVersionFromAnOldOne(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	bob := asConsole(t, h, "bob@example.com")
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK)
	doc := h.Target("g", 80)
	doc["version"] = 4
	cur := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), doc), http.StatusOK).Header.Get("ETag")
	restore := h.GraphURL("g") + "/versions/1/restore"

	dry := apitest.DecodeAs[wire.DryRun](t, bob.Expect(bob.Do(http.MethodPost, restore+"?dryRun=true", nil, "If-Match", cur), http.StatusOK))
	if dry.Version != 5 || dry.Diff.Nodes[0].Budgets[0].From.Count != 80 || dry.Diff.Nodes[0].Budgets[0].To.Count != 5 || storedETag(t, h, "g") != cur {
		t.Fatalf("restore dry run: version %d diff %+v; stored changed %v", dry.Version, dry.Diff, storedETag(t, h, "g") != cur)
	}
	bob.Expect(bob.Do(http.MethodPost, restore, nil, "If-Match", `"stale"`), http.StatusPreconditionFailed)
	r := apitest.DecodeAs[wire.Declared](t, bob.Expect(bob.Do(http.MethodPost, restore, nil, "If-Match", cur), http.StatusOK))
	if r.Version != 5 || r.Revision == nil || *r.Revision != 3 {
		t.Fatalf("restore: version %d revision %v, want version 5 recorded as revision 3", r.Version, apitest.Deref(r.Revision))
	}
	v := apitest.DecodeAs[wire.GraphRevision](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("g")+"/versions/3", nil), http.StatusOK))
	if v.Action != wire.ActionRestore || v.RestoredFrom == nil || *v.RestoredFrom != 1 || v.ChangedBy != "bob@example.com" || !v.Current {
		t.Fatalf("revision 3 %+v, want bob's restore of revision 1, current", v.GraphVersion)
	}
	got := h.Expect(h.Do(http.MethodGet, h.GraphURL("g"), nil), http.StatusOK)
	if got.Num("version") != 5 || !strings.Contains(string(got.Raw), `"count":5`) {
		t.Fatalf("the graph after the restore: %.300s", got.Raw)
	}
	// Restoring what is stored changes nothing and records nothing.
	again := apitest.DecodeAs[wire.Declared](t, h.Expect(h.Do(http.MethodPost, h.GraphURL("g")+"/versions/3/restore", nil), http.StatusOK))
	if again.Version != 5 || again.Diff.Changed || again.Revision != nil {
		t.Fatalf("restoring the current revision: version %d changed %v revision %v, want nothing new", again.Version, again.Diff.Changed, apitest.Deref(again.Revision))
	}
	// After a deletion, a restore creates the graph again (If-None-Match: *
	// holds), at the revision's own version.
	h.Expect(h.Do(http.MethodDelete, h.GraphURL("g"), nil), http.StatusOK)
	back := apitest.DecodeAs[wire.Declared](t, h.Expect(h.Do(http.MethodPost, h.GraphURL("g")+"/versions/2/restore", nil, "If-None-Match", "*"), http.StatusOK))
	if back.Version != 4 || !back.Diff.Created || !h.Stored(h.App, "g") {
		t.Fatalf("restore after a deletion: version %d created %v", back.Version, back.Diff.Created)
	}
	// The deletion itself has nothing to restore.
	if r := h.Expect(h.Do(http.MethodPost, h.GraphURL("g")+"/versions/4/restore", nil), http.StatusConflict); r.Str("code") != "revision-not-restorable" {
		t.Fatalf("restoring a deletion: %s", r.Raw)
	}
}

// A revision that no longer compiles is refused with the rule that refuses
// it now: its ingress queue belongs to another graph since.
func TestRestoreOfARevisionThatNoLongerCompilesNamesTheRule(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	shared := h.App + ".orders.in"
	withIngress := func(name, queue string, version int) map[string]any {
		d := h.Target(name, 5)
		d["version"] = version
		d["nodes"].(map[string]any)["limit"].(map[string]any)["ingress"] = map[string]any{"queue": queue}
		return d
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("a"), withIngress("a", shared, 1)), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("a"), withIngress("a", h.App+".other.in", 2)), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("b"), withIngress("b", shared, 1)), http.StatusOK)
	before := storedETag(t, h, "a")
	for _, q := range []string{"", "?dryRun=true"} {
		r := h.Expect(h.Do(http.MethodPost, h.GraphURL("a")+"/versions/1/restore"+q, nil), http.StatusConflict)
		if msg := h.ErrorBody(r); r.Str("rule") != "ingress-owner" || !strings.Contains(msg, "revision 1 of '"+h.App+"/a'") || !strings.Contains(msg, "cannot be restored") {
			t.Fatalf("restore%s of a revision whose ingress b owns now: %s", q, r.Raw)
		}
	}
	if storedETag(t, h, "a") != before {
		t.Fatal("a refused restore changed the stored document")
	}
}

// The history routes' bad input: without PostgreSQL 503 naming PG_HOST;
// a revision that is not a whole number 400, one never recorded 404; a
// cursor no page gave 400; a limit out of range 422.
func TestHistoryRoutesBadInput(t *testing.T) {
	t.Parallel()
	off := apitest.New(t)
	off.Expect(off.Do(http.MethodPut, off.GraphURL("g"), off.Target("g", 5)), http.StatusOK)
	for _, p := range []string{"/versions", "/versions/1"} {
		r := off.Expect(off.Do(http.MethodGet, off.GraphURL("g")+p, nil), http.StatusServiceUnavailable)
		if r.Str("code") != "no-history" || !strings.Contains(off.ErrorBody(r), "PG_HOST") {
			t.Fatalf("GET %s without history: %s", p, r.Raw)
		}
	}
	off.Expect(off.Do(http.MethodPost, off.GraphURL("g")+"/versions/1/restore", nil), http.StatusServiceUnavailable)
	if d := apitest.DecodeAs[wire.Declared](t, off.Expect(off.Do(http.MethodPut, off.GraphURL("g"), off.Target("g", 6)), http.StatusOK)); d.Revision != nil {
		t.Fatalf("a PUT without history answered revision %d", *d.Revision)
	}

	h := apitest.New(t)
	h.WithHistory(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK)
	cases := []struct {
		method, path string
		status       int
		code, field  string
	}{
		{http.MethodGet, "/versions/0", 400, "invalid-revision", "revision"},
		{http.MethodGet, "/versions/-1", 400, "invalid-revision", "revision"},
		{http.MethodGet, "/versions/one", 400, "invalid-revision", "revision"},
		{http.MethodGet, "/versions/99999999999999999999", 400, "invalid-revision", "revision"},
		{http.MethodGet, "/versions/7", 404, "revision-not-found", "revision"},
		{http.MethodPost, "/versions/7/restore", 404, "revision-not-found", "revision"},
		{http.MethodPost, "/versions/x/restore", 400, "invalid-revision", "revision"},
		{http.MethodPost, "/versions/1/restore?dryRun=maybe", 422, "invalid-query", "dryRun"},
		{http.MethodPost, "/versions/1/restore?force=true", 422, "invalid-query", "force"},
		{http.MethodGet, "/versions?cursor=bm9wZQ", 400, "invalid-query", "cursor"},
		{http.MethodGet, "/versions?cursor=" + strings.Repeat("A", 100), 422, "invalid-query", "cursor"},
		{http.MethodGet, "/versions?limit=0", 422, "invalid-query", "limit"},
		{http.MethodGet, "/versions?limit=201", 422, "invalid-query", "limit"},
		{http.MethodGet, "/versions?limit=ten", 422, "invalid-query", "limit"},
	}
	for _, c := range cases {
		r := h.Do(c.method, h.GraphURL("g")+c.path, nil)
		if r.Status != c.status || r.Str("code") != c.code || r.Str("field") != c.field {
			t.Errorf("%s %s: %d %.200s, want %d %s naming %s", c.method, c.path, r.Status, r.Raw, c.status, c.code, c.field)
		}
	}
	if r := h.Do(http.MethodGet, "/v1/apps/Bad/graphs/g/versions", nil); r.Status != http.StatusBadRequest || r.Str("code") != "invalid-name" {
		t.Errorf("a bad application name: %d %.200s", r.Status, r.Raw)
	}
	// A graph never declared has an empty history, not an error.
	if p := apitest.DecodeAs[wire.GraphVersionPage](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("never")+"/versions", nil), http.StatusOK)); p.Total != 0 || len(p.Items) != 0 {
		t.Fatalf("the history of a graph never declared: %+v", p)
	}
}

// The sync's declarations are revisions of action sync, and the targets it
// reaps are recorded as deletions.
func TestSyncIsRecorded(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	named := func(name string, count int) map[string]any {
		d := h.Target(name, count)
		d["graph"] = name
		return d
	}
	sync := "/v1/apps/" + h.App + "/targets"
	h.Expect(h.Do(http.MethodPut, sync, []any{named("a", 5), named("b", 5)}), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, sync, []any{named("a", 5)}), http.StatusOK)
	a := apitest.DecodeAs[wire.GraphVersionPage](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("a")+"/versions", nil), http.StatusOK))
	if a.Total != 1 || a.Items[0].Action != wire.ActionSync {
		t.Fatalf("a's history %+v, want one sync revision (the second sync changed nothing)", a)
	}
	b := apitest.DecodeAs[wire.GraphVersionPage](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("b")+"/versions", nil), http.StatusOK))
	if b.Total != 2 || b.Items[0].Action != wire.ActionDelete || b.Items[0].Version != nil || b.Items[1].Action != wire.ActionSync {
		t.Fatalf("b's history %+v, want its sync and the reaping as a deletion", b)
	}
}
