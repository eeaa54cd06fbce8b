package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return store.New(c, b.Namespace())
}

func TestDocumentsRoundTripAndSignalChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)

	rev0, err := s.Revision(ctx)
	if err != nil {
		t.Fatalf("revision: %v", err)
	}
	doc := json.RawMessage(`{"version":1,"nodes":{}}`)
	if err := s.Put(ctx, "shop", "orders", doc); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := s.Put(ctx, "shop", "refunds", json.RawMessage(`{"version":2}`)); err != nil {
		t.Fatalf("put: %v", err)
	}
	rev1, err := s.Revision(ctx)
	if err != nil {
		t.Fatalf("revision: %v", err)
	}
	if rev1 == rev0 {
		t.Fatalf("the change signal did not move after two writes (still %d)", rev1)
	}

	got, found, err := s.Get(ctx, "shop", "orders")
	if err != nil || !found {
		t.Fatalf("get: found=%v err=%v", found, err)
	}
	if string(got.Body) != string(doc) || got.Legacy || got.Key != "graph:shop:orders" {
		t.Fatalf("get returned %+v", got)
	}

	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if !list.Complete || len(list.Documents) != 2 {
		t.Fatalf("list = %+v, want two documents, complete", list)
	}
	if d, ok := list.Find("shop", "refunds"); !ok || d.Graph != "refunds" {
		t.Fatalf("find refunds: %+v %v", d, ok)
	}

	existed, err := s.Delete(ctx, "shop", "orders")
	if err != nil || !existed {
		t.Fatalf("delete: existed=%v err=%v", existed, err)
	}
	if _, found, _ := s.Get(ctx, "shop", "orders"); found {
		t.Fatal("the deleted document is still readable")
	}
	existed, err = s.Delete(ctx, "shop", "orders")
	if err != nil || existed {
		t.Fatalf("second delete: existed=%v err=%v, want false, nil", existed, err)
	}
	rev2, _ := s.Revision(ctx)
	if rev2 == rev1 {
		t.Fatal("the change signal did not move after a delete")
	}
}

func TestRelayStatusExpiresWithItsTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := gatetest.NewBroker(t)
	mini := b.RequireMini(t, "the status TTL is checked with the fake broker's clock")
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	s := store.New(c, b.Namespace())

	st := store.RelayStatus{
		Replica: "r1",
		At:      time.Now().UnixMilli(),
		Graphs: []store.GraphStatus{{
			App: "shop", Graph: "orders", Version: 3, Running: true,
			Stages: []store.StageStatus{{Path: "main", Node: "limit", Counters: store.Counters{Popped: 10, Forwarded: 8, Commits: 2}}},
		}},
	}
	for i := 0; i < store.MaxStatusDenials+10; i++ {
		st.Denials = append(st.Denials, store.Denial{Outcome: "denied", BudgetID: "b0"})
	}
	if err := s.PutStatus(ctx, st, 3*time.Second); err != nil {
		t.Fatalf("put status: %v", err)
	}
	all, err := s.Statuses(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("statuses = %v, %v", all, err)
	}
	g, ok := all[0].Graph("shop", "orders")
	if !ok || g.Version != 3 || g.Stages[0].Counters.Forwarded != 8 {
		t.Fatalf("status read back as %+v", all[0])
	}
	if n := len(all[0].Denials); n != store.MaxStatusDenials {
		t.Fatalf("published %d denials, want the bound %d", n, store.MaxStatusDenials)
	}
	if ipc := g.Stages[0].Counters.ItemsPerCommit(); ipc == nil || *ipc != 4 {
		t.Fatalf("items per commit = %v, want 4", ipc)
	}

	mini.FastForward(4 * time.Second)
	all, err = s.Statuses(ctx)
	if err != nil {
		t.Fatalf("statuses: %v", err)
	}
	if len(all) != 0 {
		t.Fatalf("a status past its TTL is still listed: %+v", all)
	}
}

func TestCountersAddSumsEveryField(t *testing.T) {
	t.Parallel()
	a := store.Counters{Popped: 1, Admitted: 2, Deferred: 3, Parked: 4, Released: 5, Forwarded: 6, Commits: 7,
		Duplicates: 8, Foreign: 9, Deadlettered: 10, Leaked: 11, Wedged: 12, CostAdmitted: 13}
	var sum store.Counters
	sum.Add(a)
	sum.Add(a)
	want := store.Counters{Popped: 2, Admitted: 4, Deferred: 6, Parked: 8, Released: 10, Forwarded: 12, Commits: 14,
		Duplicates: 16, Foreign: 18, Deadlettered: 20, Leaked: 22, Wedged: 24, CostAdmitted: 26}
	if sum != want {
		t.Fatalf("sum = %+v, want %+v", sum, want)
	}
	if (store.Counters{}).ItemsPerCommit() != nil {
		t.Fatal("items per commit before any commit must be null")
	}
}

// PutIf writes only over the row it was given: 0 creates, the row read
// replaces it, and a row another writer replaced or deleted meanwhile is
// ErrChanged with nothing written and no change signal.
func TestPutIfWritesOnlyOverTheRowItRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if err := s.PutIf(ctx, "shop", "orders", json.RawMessage(`{"version":1}`), 0); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := s.PutIf(ctx, "shop", "orders", json.RawMessage(`{"version":9}`), 0); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("create over an existing document: %v, want ErrChanged", err)
	}
	d, found, err := s.Get(ctx, "shop", "orders")
	if err != nil || !found || d.Row == 0 {
		t.Fatalf("get: %+v %v %v", d, found, err)
	}
	l, err := s.List(ctx)
	if doc, ok := l.Find("shop", "orders"); err != nil || !ok || doc.Row != d.Row {
		t.Fatalf("the listing's row %+v %v, want %d", doc, err, d.Row)
	}
	if err := s.PutIf(ctx, "shop", "orders", json.RawMessage(`{"version":2}`), d.Row); err != nil {
		t.Fatalf("replace at the row read: %v", err)
	}
	rev, _ := s.Revision(ctx)
	if err := s.PutIf(ctx, "shop", "orders", json.RawMessage(`{"version":3}`), d.Row); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("replace at a stale row: %v, want ErrChanged", err)
	}
	if after, _ := s.Revision(ctx); after != rev {
		t.Errorf("a lost PutIf bumped the change signal (%d → %d)", rev, after)
	}
	if got, _, _ := s.Get(ctx, "shop", "orders"); string(got.Body) != `{"version":2}` {
		t.Errorf("stored %s after the stale write, want version 2", got.Body)
	}
	cur, _, _ := s.Get(ctx, "shop", "orders")
	if _, err := s.Delete(ctx, "shop", "orders"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIf(ctx, "shop", "orders", json.RawMessage(`{"version":4}`), cur.Row); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("replace a deleted document: %v, want ErrChanged", err)
	}
}

// DeleteIf deletes only the row it was given: a row another writer
// replaced or deleted meanwhile is ErrChanged with nothing deleted and no
// change signal; the row read deletes it and moves the signal.
func TestDeleteIfDeletesOnlyTheRowItRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if err := s.PutIf(ctx, "shop", "orders", json.RawMessage(`{"version":1}`), 0); err != nil {
		t.Fatal(err)
	}
	first, _, _ := s.Get(ctx, "shop", "orders")
	if err := s.PutIf(ctx, "shop", "orders", json.RawMessage(`{"version":2}`), first.Row); err != nil {
		t.Fatal(err)
	}
	rev, _ := s.Revision(ctx)
	if err := s.DeleteIf(ctx, "shop", "orders", false, first.Row); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("delete at a stale row: %v, want ErrChanged", err)
	}
	if after, _ := s.Revision(ctx); after != rev {
		t.Errorf("a lost DeleteIf bumped the change signal (%d → %d)", rev, after)
	}
	cur, found, _ := s.Get(ctx, "shop", "orders")
	if !found || string(cur.Body) != `{"version":2}` {
		t.Fatalf("after the stale delete: %+v %v, want version 2 still stored", cur, found)
	}
	if err := s.DeleteIf(ctx, "shop", "orders", false, cur.Row); err != nil {
		t.Fatalf("delete at the row read: %v", err)
	}
	if _, found, _ := s.Get(ctx, "shop", "orders"); found {
		t.Fatal("still stored after DeleteIf at its row")
	}
	if after, _ := s.Revision(ctx); after == rev {
		t.Error("DeleteIf did not move the change signal")
	}
	if err := s.DeleteIf(ctx, "shop", "orders", false, cur.Row); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("delete of a deleted document: %v, want ErrChanged", err)
	}
}

// The entity tag is derived from the stored bytes alone: equal bytes, equal
// tags; any byte changed, another tag; always a quoted strong tag.
func TestETagIsDerivedFromTheStoredBytes(t *testing.T) {
	t.Parallel()
	a := store.ETag([]byte(`{"version":1}`))
	if a != store.ETag([]byte(`{"version":1}`)) || a == store.ETag([]byte(`{"version":2}`)) || a == store.ETag([]byte(`{"version":1} `)) {
		t.Fatalf("ETag is not a function of the bytes: %s", a)
	}
	if len(a) != 34 || a[0] != '"' || a[33] != '"' || (store.Document{Body: []byte(`{"version":1}`)}).ETag() != a {
		t.Fatalf("ETag %s is not a quoted 32-hex-digit strong tag, or Document.ETag differs", a)
	}
}

// DeleteIf of the v2 row also deletes a legacy v1 row of the name (a
// relay would otherwise run the v1 target again); DeleteIf of a legacy row
// deletes it only while no v2 row exists.
func TestDeleteIfTakesTheLegacyRowWithIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	legacy := func() {
		t.Helper()
		r, err := s.Client().KV(ctx, queen.KVPut(s.Namespace(), "spec:shop:mail", json.RawMessage(`{"version":1,"name":"shop.mail"}`), queen.PutOpts{Forever: true}))
		if err != nil || !r.Results[0].Applied {
			t.Fatalf("writing the legacy row: %v", err)
		}
	}
	legacy()
	if err := s.PutIf(ctx, "shop", "mail", json.RawMessage(`{"version":2}`), 0); err != nil {
		t.Fatal(err)
	}
	d, _, _ := s.Get(ctx, "shop", "mail")
	if d.Legacy {
		t.Fatal("Get returned the legacy row beside a v2 row")
	}
	if err := s.DeleteIf(ctx, "shop", "mail", false, d.Row); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Get(ctx, "shop", "mail"); found {
		t.Fatal("the legacy row survived the delete of the v2 row")
	}
	legacy()
	d, _, _ = s.Get(ctx, "shop", "mail")
	if !d.Legacy {
		t.Fatalf("want the legacy row, got %+v", d)
	}
	// A v2 row stored meanwhile: the legacy delete loses and deletes nothing.
	if err := s.PutIf(ctx, "shop", "mail", json.RawMessage(`{"version":3}`), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteIf(ctx, "shop", "mail", true, d.Row); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("legacy delete beside a new v2 row: %v, want ErrChanged", err)
	}
	if got, _, _ := s.Get(ctx, "shop", "mail"); string(got.Body) != `{"version":3}` {
		t.Fatalf("after the lost legacy delete: %s", got.Body)
	}
}

// Every document write and delete leaves a change row naming its graph
// under the revision it bumped the signal to, so a reader asks for what
// changed after the revision it has, oldest first.
func TestEveryWriteNamesWhatItChangedUnderItsRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	doc := json.RawMessage(`{"version":1}`)
	if err := s.Put(ctx, "shop", "a", doc); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIf(ctx, "shop", "b", doc, 0); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Get(ctx, "shop", "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteIf(ctx, "shop", "b", false, got.Row); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "shop", "a"); err != nil {
		t.Fatal(err)
	}
	rev, err := s.Revision(ctx)
	if err != nil || rev != 4 {
		t.Fatalf("revision %d (%v), want 4 after four writes", rev, err)
	}
	all, err := s.Changes(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Change{{1, "shop", "a"}, {2, "shop", "b"}, {3, "shop", "b"}, {4, "shop", "a"}}
	if len(all) != len(want) {
		t.Fatalf("changes %+v, want %+v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("changes %+v, want %+v", all, want)
		}
	}
	late, err := s.Changes(ctx, 2)
	if err != nil || len(late) != 2 || late[0].Rev != 3 {
		t.Fatalf("changes after revision 2: %+v (%v), want revisions 3 and 4", late, err)
	}
}

// TestListRefusesAPageWithABrokenDocument: List no longer checks each
// document's JSON itself, because a page whose value is not JSON never
// reaches it: the client refuses the whole answer, and List reports the
// error instead of a listing.
func TestListRefusesAPageWithABrokenDocument(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"results":[{"index":0,"op":"getPrefix","rows":[{"key":"graph:shop:orders","value":{"version":1,"nodes":},"version":3,"expiresAt":null,"updatedAt":"2026-12-03T15:00:00.000000+00:00"}],"truncated":false}]}`))
	}))
	t.Cleanup(srv.Close)
	c, err := queen.New(srv.URL)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	list, err := store.New(c, "gate").List(context.Background())
	if err == nil {
		t.Fatalf("List over a page with a broken document = %+v, want an error", list)
	}
}

// Rows names every stored document, v2 and legacy, across pages, with the
// row version List and Get read, and without a body; a rewrite changes its
// row's version and a delete drops the row.
func TestRowsNameEveryDocumentWithTheVersionAListingReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	const n = store.PageLimit + 5
	var ops []queen.KVOp
	for i := 0; i < n; i++ {
		ops = append(ops, queen.KVPut(s.Namespace(), fmt.Sprintf("graph:shop:g%04d", i), json.RawMessage(`{"version":1}`), queen.PutOpts{Forever: true}))
		if len(ops) == 200 || i == n-1 {
			if _, err := s.Client().KV(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
	if _, err := s.Client().KV(ctx, queen.KVPut(s.Namespace(), "spec:shop:old", json.RawMessage(`{"queue":"q"}`), queen.PutOpts{Forever: true})); err != nil {
		t.Fatal(err)
	}
	listing, err := s.List(ctx)
	if err != nil || !listing.Complete {
		t.Fatalf("list: %v (complete %v)", err, listing.Complete)
	}
	rows, complete, err := s.Rows(ctx)
	if err != nil || !complete {
		t.Fatalf("rows: %v (complete %v)", err, complete)
	}
	if len(rows) != n+1 || len(rows) != len(listing.Documents) {
		t.Fatalf("%d rows and %d listed documents, want %d each", len(rows), len(listing.Documents), n+1)
	}
	for i, row := range rows {
		d := listing.Documents[i]
		if row.Key != d.Key || row.App != d.App || row.Graph != d.Graph || row.Legacy != d.Legacy || row.Version != d.Row || row.Version == 0 {
			t.Fatalf("row %d is %+v, the listing's document %+v: want the same key, name, kind and non-zero version", i, row, d)
		}
		if row != d.KeysRow() {
			t.Fatalf("row %d is %+v, the listing's document names %+v as its row: a relay compares the two", i, row, d.KeysRow())
		}
	}
	if err := s.Put(ctx, "shop", "g0000", json.RawMessage(`{"version":2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "shop", "g0001"); err != nil {
		t.Fatal(err)
	}
	after, _, err := s.Rows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := s.Get(ctx, "shop", "g0000")
	if len(after) != n || after[0].Key != "graph:shop:g0000" || after[0].Version == rows[0].Version || after[0].Version != doc.Row || after[1].Key != "graph:shop:g0002" {
		t.Fatalf("after a rewrite of g0000 and a delete of g0001: %d rows starting %+v, %+v; want %d, g0000 with its new version %d, then g0002", len(after), after[0], after[1], n, doc.Row)
	}
}
