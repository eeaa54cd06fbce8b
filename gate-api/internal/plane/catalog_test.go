package plane

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

const catalogDoc = `{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":"out"}},"paths":[{"name":"main","nodes":["n"]}]}`

// A moved change signal is followed by its change rows: the catalog reads
// the documents they name, not the whole store (a document written behind
// the store's back, with no change row, stays unseen), and falls back to a
// full listing when a revision's row is missing. A delete by change row
// forgets its graph.
func TestTheCatalogFollowsChangeRowsAndListsOnAGap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(c, b.Namespace())
	cat := NewCatalog(CatalogConfig{Store: st, Log: slog.New(slog.DiscardHandler)})
	if err := st.Put(ctx, "shop", "first", json.RawMessage(catalogDoc)); err != nil {
		t.Fatal(err)
	}
	if err := cat.SyncDocuments(ctx, true); err != nil || cat.Lookup("shop", "first") == nil {
		t.Fatalf("the first full read: %v, first %v", err, cat.Lookup("shop", "first"))
	}
	if _, err := c.KV(ctx, queen.KVPut(st.Namespace(), plan.DocumentKey("shop", "hidden"), json.RawMessage(catalogDoc), queen.PutOpts{Forever: true})); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "shop", "second", json.RawMessage(catalogDoc)); err != nil {
		t.Fatal(err)
	}
	if err := cat.SyncDocuments(ctx, false); err != nil {
		t.Fatal(err)
	}
	if e := cat.Lookup("shop", "second"); e == nil || e.Plan == nil {
		t.Fatalf("the changed graph is not in the catalog (compiled): %+v", e)
	}
	if cat.Lookup("shop", "hidden") != nil {
		t.Fatalf("a document without a change row was read: the catalog listed the store instead of following")
	}
	if _, err := st.Delete(ctx, "shop", "first"); err != nil {
		t.Fatal(err)
	}
	if err := cat.SyncDocuments(ctx, false); err != nil || cat.Lookup("shop", "first") != nil {
		t.Fatalf("a deleted graph is still in the catalog (%v)", err)
	}
	// A revision without its change row: everything is listed.
	if _, err := c.KV(ctx, queen.KVIncr(st.Namespace(), "rev:graphs", 1, queen.IncrOpts{Forever: true})); err != nil {
		t.Fatal(err)
	}
	if err := cat.SyncDocuments(ctx, false); err != nil || cat.Lookup("shop", "hidden") == nil {
		t.Fatalf("after a gap the full listing did not run (%v)", err)
	}
}
