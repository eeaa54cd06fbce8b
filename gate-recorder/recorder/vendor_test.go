package recorder_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/vendormeter"
)

// vendorDoc is a graph whose node call mirrors the vendor's meter on a
// budget of 50/s.
func vendorDoc(w *world, graph string) string {
	return fmt.Sprintf(`{"application": %q, "graph": %q, "version": 1,
		"nodes": {"call": {"ingress": true, "cost": 1, "budgets": [{"id": "rps", "count": 50, "timeMs": 1000, "vendorMeter": {"headers": "x-ratelimit"}}], "egress": %q}},
		"paths": [{"name": "main", "nodes": ["call"]}]}`, w.app, graph, w.b.Queue(graph+"-out"))
}

// mirroredBudget stores doc and returns its mirrored budget as compiled.
func mirroredBudget(t *testing.T, w *world, graph, doc string) *plan.Budget {
	t.Helper()
	if err := w.store.Put(t.Context(), w.app, graph, json.RawMessage(doc)); err != nil {
		t.Fatal(err)
	}
	res, err := declare.Compile(declare.Input{App: w.app, Name: graph, Body: []byte(doc)})
	if err != nil || res.Plan == nil {
		t.Fatalf("compiling: %v", err)
	}
	return &res.Plan.Node("call").Budgets[0]
}

// The recorder follows the vendor's meter as observe writes it: a span
// per stated limit, the first one ended when another replaces it, the
// second ended when the vendor allows the declared count again, and
// nothing written while nothing changes. The oracle is the schedule of
// answers the test itself sent.
func TestVendorMeterSpans(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	b := mirroredBudget(t, w, "v", vendorDoc(w, "v"))
	lim := &budget.Limiter{KV: w.client, NS: w.b.Namespace()}
	rec := newRecorder(t, w)
	ms := t0.UnixMilli()
	observe := func(limit int64) {
		t.Helper()
		r := vendormeter.Reading{Status: 200, Limit: limit, HasLimit: true}
		if _, err := lim.Observe(ctx, b, r, w.clk.Now(), budget.ObserveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sample := func(wantWritten int) {
		t.Helper()
		got, err := rec.SampleVendor(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Written != wantWritten || got.Budgets != 1 {
			t.Fatalf("at +%v the pass %+v: want 1 budget read and %d spans written", w.clk.Now().Sub(t0), got, wantWritten)
		}
	}
	sample(0) // nothing stated yet
	observe(10)
	w.clk.Advance(time.Second)
	sample(1)
	w.clk.Advance(time.Second)
	sample(0) // the same limit: nothing to write
	w.clk.Advance(18 * time.Second)
	observe(20) // +20 s: another limit replaces 10
	w.clk.Advance(time.Second)
	sample(2)
	w.clk.Advance(19 * time.Second)
	observe(60) // +40 s: 60 ≥ 50 declared, the row goes
	w.clk.Advance(time.Second)
	sample(1)
	w.clk.Advance(time.Second)
	sample(0)
	got, err := w.db.VendorSpans(ctx, w.app, "v", "call", ms-1, ms+3_600_000)
	if err != nil {
		t.Fatal(err)
	}
	hold := budget.DefaultMeterHold.Milliseconds()
	want := []history.VendorSpan{
		{Since: ms, Until: ms + hold, Ended: ms + 20_000, Limit: 10},
		{Since: ms + 20_000, Until: ms + 20_000 + hold, Ended: ms + 41_000, Limit: 20},
	}
	if len(got) != len(want) {
		t.Fatalf("spans %+v, want %+v", got, want)
	}
	for i, g := range got {
		wn := want[i]
		if g.Since != wn.Since || g.Until != wn.Until || g.Ended != wn.Ended || g.Limit != wn.Limit || g.Declared != 50 || g.TimeMs != 1000 || g.Budget != "rps" || g.Headers != "x-ratelimit" {
			t.Fatalf("span %d %+v, want %+v declared 50 per 1000 ms, budget rps, x-ratelimit", i, g, wn)
		}
	}
}

// A graph deleted while its vendor limit holds ends its span at the next
// relist; a recorder that starts while a limit holds records it.
func TestVendorMeterSpanEndsWithItsGraph(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	b := mirroredBudget(t, w, "d", vendorDoc(w, "d"))
	lim := &budget.Limiter{KV: w.client, NS: w.b.Namespace()}
	if _, err := lim.Observe(ctx, b, vendormeter.Reading{Status: 200, Limit: 5, HasLimit: true}, w.clk.Now(), budget.ObserveOptions{}); err != nil {
		t.Fatal(err)
	}
	w.clk.Advance(3 * time.Second)
	rec := newRecorder(t, w)
	if got, err := rec.SampleVendor(ctx); err != nil || got.Written != 1 || got.Live != 1 {
		t.Fatalf("first pass %+v %v: want the live limit written", got, err)
	}
	if _, err := w.store.Delete(ctx, w.app, "d"); err != nil {
		t.Fatal(err)
	}
	w.clk.Advance(11 * time.Second) // past the relist period
	if got, err := rec.SampleVendor(ctx); err != nil || got.Written != 1 || got.Budgets != 0 {
		t.Fatalf("pass after the delete %+v %v: want no budget and the span ended", got, err)
	}
	spans, err := w.db.VendorSpans(ctx, w.app, "d", "", 0, t0.UnixMilli()+3_600_000)
	if err != nil || len(spans) != 1 || spans[0].Ended != t0.UnixMilli()+14_000 || spans[0].Limit != 5 {
		t.Fatalf("spans %+v %v: want one of 5 ended at +14 s", spans, err)
	}
}
