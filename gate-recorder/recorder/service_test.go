package recorder_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/queen"
)

// The recorder as a service on its clock: it drains at Start, then once
// every Flush of virtual time (not before), and once more at Stop, so a
// row handed over just before the stop is committed rather than left in
// kv; Stop returns with its loop gone.
func TestTheRecorderDrainsOnItsClockAndOnceMoreAtStop(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	rec := newRecorder(t, w)
	hand := func(seq uint64) {
		t.Helper()
		row := handover.Row{V: handover.Format, Kind: handover.KindTraces, Recorder: "r1", Replica: "rep", App: w.app, Graph: "g", Node: "n",
			Traces: []handover.Trace{{Seq: seq, At: t0.UnixMilli(), Path: "main", Outcome: "denied", BudgetID: "b"}}}
		body, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.client.KV(ctx, queen.KVPut(w.b.Namespace(), handover.TracesKey("r1", seq), body, queen.PutOpts{TTLSeconds: 600})); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() int {
		t.Helper()
		list, err := w.db.Traces(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	hand(1)
	if err := rec.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	gatetest.Eventually(t, 10*time.Second, func() bool { return stored() == 1 })
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !w.clk.WaitForPending(1, pctx.Done()) {
		t.Fatal("the recorder's drain ticker is not on its clock")
	}

	hand(2)
	w.clk.Advance(9 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if n := stored(); n != 1 {
		t.Fatalf("%d traces stored 9 s into a 10 s flush period, want still 1", n)
	}
	w.clk.Advance(time.Second)
	gatetest.Eventually(t, 10*time.Second, func() bool { return stored() == 2 })

	hand(3)
	rec.Stop()
	if n := stored(); n != 3 {
		t.Fatalf("%d traces stored after Stop, want 3: the last drain at stop commits what was handed over", n)
	}
	res, err := w.client.KV(ctx, queen.KVGetMany(w.b.Namespace(), handover.TracesKey("r1", 1), handover.TracesKey("r1", 2), handover.TracesKey("r1", 3)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || len(res.Results[0].Rows) != 0 {
		t.Fatalf("handover rows left in kv after their drain: %+v", res.Results)
	}
	if n := w.clk.Pending(); n != 0 {
		t.Fatalf("%d waits of the stopped recorder are still pending on its clock", n)
	}
}
