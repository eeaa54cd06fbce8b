package handover_test

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/queen"
)

func TestKeys(t *testing.T) {
	id := handover.NewRecorderID()
	if len(id) != 32 || id == handover.NewRecorderID() {
		t.Fatalf("recorder id %q: want 32 random hex characters", id)
	}
	for _, k := range []string{handover.WatchKey(id), handover.SamplesKey(id, 3, 60000), handover.RollupKey(id, 120000), handover.TracesKey(id, 7)} {
		if handover.RecorderOf(k) != id {
			t.Fatalf("RecorderOf(%q) = %q", k, handover.RecorderOf(k))
		}
	}
	if handover.RecorderOf("graph:a:b") != "" {
		t.Fatal("a document key read as a handover key")
	}
}

// Read returns every row (an undecodable one with its error); Delete at a
// stale version leaves a rewritten row alone.
func TestReadAndDeleteAtVersion(t *testing.T) {
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	ns := b.Namespace()
	row := handover.Row{V: handover.Format, Kind: handover.KindRollup, Recorder: "r1", App: "a", Graph: "g", Node: "n", Minute: 60000,
		Lanes: []handover.Lane{{Path: "p", Admitted: 3, Cost: 3}}}
	body, _ := json.Marshal(row)
	ops := []queen.KVOp{
		queen.KVPut(ns, handover.RollupKey("r1", 60000), body, queen.PutOpts{TTLSeconds: 60}),
		queen.KVPut(ns, "hist:r2:w", json.RawMessage(`{"v":99}`), queen.PutOpts{TTLSeconds: 60}),
		queen.KVPut(ns, "graph:a:g", json.RawMessage(`{}`), queen.PutOpts{TTLSeconds: 60}),
	}
	if _, err := c.KV(t.Context(), ops...); err != nil {
		t.Fatal(err)
	}
	got, err := handover.Read(t.Context(), c, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Err != nil || got[0].Row.Lanes[0].Admitted != 3 || got[1].Err == nil {
		t.Fatalf("read %+v: want the rollup row decoded and the format-99 row flagged", got)
	}
	// The relay rewrites the rollup row after it was read.
	if _, err := c.KV(t.Context(), queen.KVPut(ns, handover.RollupKey("r1", 60000), body, queen.PutOpts{TTLSeconds: 60})); err != nil {
		t.Fatal(err)
	}
	n, err := handover.Delete(t.Context(), c, ns, got)
	if err != nil || n != 1 {
		t.Fatalf("deleted %d (%v), want only the unchanged row", n, err)
	}
	left, _ := handover.Read(t.Context(), c, ns)
	if len(left) != 1 || left[0].Key != handover.RollupKey("r1", 60000) {
		t.Fatalf("left %+v, want the rewritten rollup row", left)
	}
}
