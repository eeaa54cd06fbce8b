package plane

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

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

// linkedDoc is a one-node graph consuming in (a named queue, or
// Gate-owned for "") and delivering to out.
func linkedDoc(in, out string) json.RawMessage {
	ingress := `true`
	if in != "" {
		ingress = `{"queue":"` + in + `"}`
	}
	return json.RawMessage(`{"version":1,"nodes":{"n":{"ingress":` + ingress + `,"budgets":[{"count":10,"timeMs":1000}],"egress":"` + out + `"}},"paths":[{"name":"main","nodes":["n"]}]}`)
}

func relatedNames(es []*Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.App+"/"+e.Graph)
	}
	return out
}

// The catalog's link index follows every way a graph enters, changes and
// leaves it (a full listing, a change row, this process's own Put and
// Forget): Related answers the graphs sharing a queue with a declaration,
// in stored-key order, never the graph itself, and forgets a graph whose
// queue changed or that was deleted. CatchUp brings the catalog to a
// revision by its change rows.
func TestTheCatalogIndexesGraphsByTheirLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(c, b.Namespace())
	cat := NewCatalog(CatalogConfig{Store: st, Log: slog.New(slog.DiscardHandler)})
	for i, g := range []string{"b", "a", "c"} {
		out := "shop.common"
		if i == 2 {
			out = "shop.c.out"
		}
		if err := st.Put(ctx, "shop", g, linkedDoc("", out)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cat.SyncDocuments(ctx, true); err != nil {
		t.Fatal(err)
	}
	common := []string{"queue\x00shop.common"}
	if got := relatedNames(cat.Related(common, GraphKey{"shop", "new"})); !slices.Equal(got, []string{"shop/a", "shop/b"}) {
		t.Fatalf("Related(shop.common) after a full listing = %v, want shop/a, shop/b", got)
	}
	if got := relatedNames(cat.Related(common, GraphKey{"shop", "a"})); !slices.Equal(got, []string{"shop/b"}) {
		t.Fatalf("Related names the declared graph itself: %v", got)
	}
	// By change rows: c moves onto the common egress, b leaves it, a is
	// deleted.
	if err := st.Put(ctx, "shop", "c", linkedDoc("", "shop.common")); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "shop", "b", linkedDoc("shop.feed", "shop.b.out")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, "shop", "a"); err != nil {
		t.Fatal(err)
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CatchUp(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got := relatedNames(cat.Related(common, GraphKey{"shop", "new"})); !slices.Equal(got, []string{"shop/c"}) {
		t.Fatalf("Related(shop.common) after the change rows = %v, want shop/c", got)
	}
	if got := relatedNames(cat.Related([]string{"queue\x00shop.feed"}, GraphKey{"shop", "new"})); !slices.Equal(got, []string{"shop/b"}) {
		t.Fatalf("Related(shop.feed) = %v, want shop/b", got)
	}
	// This process's own declare and delete.
	e := CompileStored("shop", "d", linkedDoc("shop.feed", "shop.common"), false, plan.Options{})
	cat.Put(e)
	if got := relatedNames(cat.Related(common, GraphKey{"shop", "new"})); !slices.Equal(got, []string{"shop/c", "shop/d"}) {
		t.Fatalf("Related(shop.common) after Put = %v", got)
	}
	cat.Forget("shop", "c")
	if got := relatedNames(cat.Related(common, GraphKey{"shop", "new"})); !slices.Equal(got, []string{"shop/d"}) {
		t.Fatalf("Related(shop.common) after Forget = %v", got)
	}
	if got := cat.Related([]string{"queue\x00nobody"}, GraphKey{"shop", "new"}); len(got) != 0 {
		t.Fatalf("Related of a queue no graph uses = %v", relatedNames(got))
	}
}

// Runs carries each replica's newest header time although the per-graph
// index is rebuilt only when the graph rows moved.
func TestRunsCarryTheNewestHeaderTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(c, b.Namespace())
	cat := NewCatalog(CatalogConfig{Store: st, Log: slog.New(slog.DiscardHandler)})
	w := st.NewStatusWriter("r1")
	status := func(at int64) store.RelayStatus {
		return store.RelayStatus{Replica: "r1", At: at, Graphs: []store.GraphStatus{{App: "shop", Graph: "g", Version: 1, Running: true}}}
	}
	now := time.Now()
	for _, at := range []int64{1000, 2000} {
		if _, err := w.Write(ctx, status(at), time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if err := cat.SyncStatus(ctx); err != nil {
			t.Fatal(err)
		}
		runs := cat.Runs("shop", "g")
		if len(runs) != 1 || runs[0].Replica != "r1" || runs[0].At != at || !runs[0].Status.Running {
			t.Fatalf("Runs after the header at %d: %+v", at, runs)
		}
	}
}
