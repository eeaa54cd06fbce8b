package history_test

import (
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

func stored(app, graph string, at int64, version int64, etag, by string) history.GraphVersion {
	return history.GraphVersion{
		App: app, Graph: graph, At: at, ChangedBy: by, Via: wire.ViaConsole, Action: wire.ActionDeclare,
		Version: &version, ETag: etag, Document: []byte(`{"version":` + string(rune('0'+version)) + `}`),
		Summary: "version change", Diff: wire.Diff{Changed: true, Nodes: []wire.NodeChange{}},
	}
}

// Revisions number each graph's history from 1 in store order, read back
// with their document (byte for byte) and typed diff, page newest first
// below a cursor, and say who stored a given entity tag.
func TestGraphVersionsRecordAndRead(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	ctx := t.Context()
	ms := t0.UnixMilli()
	for i, by := range []string{"ann@example.com", "api", "bob@example.com"} {
		rev, err := db.AddGraphVersion(ctx, stored("shop", "orders", ms+int64(i), int64(i+1), `"e`+string(rune('1'+i))+`"`, by))
		if err != nil || rev != int64(i+1) {
			t.Fatalf("revision %d: %d %v", i+1, rev, err)
		}
	}
	if rev, err := db.AddGraphVersion(ctx, stored("shop", "other", ms, 1, `"x"`, "api")); err != nil || rev != 1 {
		t.Fatalf("another graph's first revision: %d %v, want 1", rev, err)
	}
	del := history.GraphVersion{App: "shop", Graph: "orders", At: ms + 10, ChangedBy: "api", Via: wire.ViaAPI, Action: wire.ActionDelete,
		Summary: "delete", Diff: wire.Diff{Deleted: true, Changed: true}}
	if rev, err := db.AddGraphVersion(ctx, del); err != nil || rev != 4 {
		t.Fatalf("the deletion: %d %v, want revision 4", rev, err)
	}
	page, total, err := db.GraphVersions(ctx, "shop", "orders", 0, 2)
	if err != nil || total != 4 || len(page) != 2 || page[0].Revision != 4 || page[1].Revision != 3 {
		t.Fatalf("first page %+v total %d %v, want revisions 4, 3 of 4", page, total, err)
	}
	if page[0].Version != nil || page[0].ETag != "" || page[0].Action != wire.ActionDelete || page[1].ChangedBy != "bob@example.com" {
		t.Fatalf("page %+v", page)
	}
	next, _, err := db.GraphVersions(ctx, "shop", "orders", page[1].Revision, 2)
	if err != nil || len(next) != 2 || next[0].Revision != 2 || next[1].Revision != 1 {
		t.Fatalf("second page %+v %v, want revisions 2, 1", next, err)
	}
	v, found, err := db.GraphVersionAt(ctx, "shop", "orders", 2)
	if err != nil || !found || string(v.Document) != `{"version":2}` || v.ETag != `"e2"` || !v.Diff.Changed || v.ChangedBy != "api" || *v.Version != 2 {
		t.Fatalf("revision 2: %+v %v %v", v, found, err)
	}
	if _, found, err := db.GraphVersionAt(ctx, "shop", "orders", 9); err != nil || found {
		t.Fatalf("revision 9: found %v %v, want not found", found, err)
	}
	by, found, err := db.StoredBy(ctx, "shop", "orders", `"e3"`)
	if err != nil || !found || by.ChangedBy != "bob@example.com" || by.Revision != 3 || by.At != ms+2 {
		t.Fatalf("who stored e3: %+v %v %v", by, found, err)
	}
	if _, found, _ := db.StoredBy(ctx, "shop", "orders", `"unknown"`); found {
		t.Fatal("StoredBy found a tag nobody stored")
	}
}

// Writers of one graph on separate connections (two gate-api processes)
// never assign one revision twice.
func TestGraphVersionsConcurrentWritersNumberInTurn(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	var wg sync.WaitGroup
	revs := make(chan int64, 12)
	for i := range 12 {
		wg.Go(func() {
			rev, err := db.AddGraphVersion(t.Context(), stored("shop", "orders", t0.UnixMilli(), int64(i%9+1), `"c"`, "api"))
			if err != nil {
				t.Error(err)
			}
			revs <- rev
		})
	}
	wg.Wait()
	close(revs)
	seen := map[int64]bool{}
	for r := range revs {
		if seen[r] {
			t.Fatalf("revision %d assigned twice", r)
		}
		seen[r] = true
	}
	for r := int64(1); r <= 12; r++ {
		if !seen[r] {
			t.Fatalf("revisions %v, want 1..12", seen)
		}
	}
}

// Retention removes revisions older than a year except each graph's
// newest 20: a graph left alone for years keeps its recent history.
func TestGraphVersionRetentionKeepsTheNewest(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	ctx := t.Context()
	old := t0.UnixMilli()
	for i := range 25 {
		if _, err := db.AddGraphVersion(ctx, stored("shop", "busy", old+int64(i), 1, `"b"`, "api")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := db.AddGraphVersion(ctx, stored("shop", "quiet", old+int64(i), 1, `"q"`, "api")); err != nil {
			t.Fatal(err)
		}
	}
	// A year and a day later, one recent revision of busy.
	later := t0.Add(history.VersionRetention + 24*time.Hour)
	if _, err := db.AddGraphVersion(ctx, stored("shop", "busy", later.UnixMilli(), 2, `"n"`, "api")); err != nil {
		t.Fatal(err)
	}
	p, err := db.Prune(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	if p.Versions != 6 {
		t.Fatalf("pruned %d revisions, want 6 (busy's 26 less its newest 20; quiet keeps its 3)", p.Versions)
	}
	busy, total, _ := db.GraphVersions(ctx, "shop", "busy", 0, 100)
	if total != 20 || busy[0].Revision != 26 || busy[len(busy)-1].Revision != 7 {
		t.Fatalf("busy keeps %d revisions (%d..%d), want 20: 7..26", total, busy[len(busy)-1].Revision, busy[0].Revision)
	}
	if _, total, _ := db.GraphVersions(ctx, "shop", "quiet", 0, 100); total != 3 {
		t.Fatalf("quiet keeps %d revisions, want all 3", total)
	}
}
