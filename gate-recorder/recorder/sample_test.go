package recorder_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

// The minute snapshot of a counters graph nobody relays: the relay backlog
// is what waits on the ingress, the worker backlog is empty, and a
// single-stage ingress node has positions. A graph without counters is
// not sampled.
func TestSnapshots(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	doc := fmt.Sprintf(`{"application": %q, "graph": "s", "version": 3, "counters": {"windowSeconds": 60},
		"nodes": {"n": {"ingress": true, "cost": 1, "budgets": [{"id": "b", "count": 10, "timeMs": 1000}], "egress": %q}},
		"paths": [{"name": "main", "nodes": ["n"]}]}`, w.app, w.b.Queue("sout"))
	plain := fmt.Sprintf(`{"application": %q, "graph": "plain", "version": 1,
		"nodes": {"n": {"ingress": true, "cost": 1, "budgets": [{"id": "b", "count": 10, "timeMs": 1000}], "egress": %q}},
		"paths": [{"name": "main", "nodes": ["n"]}]}`, w.app, w.b.Queue("pout"))
	for name, d := range map[string]string{"s": doc, "plain": plain} {
		if err := w.store.Put(ctx, w.app, name, json.RawMessage(d)); err != nil {
			t.Fatal(err)
		}
	}
	var seq int64
	w.push("gate."+w.app+".s.n.ingress", 12, 1, &seq)
	rec := newRecorder(t, w)
	if err := rec.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	m := t0.UnixMilli()
	snaps, err := w.db.Snapshots(ctx, w.app, "s", m)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || snaps[0].Node != "n" || snaps[0].Minute != m {
		t.Fatalf("snapshots %+v, want node n at the minute", snaps)
	}
	var body wire.Snapshot
	if err := json.Unmarshal(snaps[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if !body.Available || body.Before == nil || *body.Before != 12 || body.Workers == nil || *body.Workers != 0 || body.Version != 3 || body.Positions == nil {
		t.Fatalf("snapshot %s: want available, 12 waiting before the relay, 0 for the workers, version 3, positions", snaps[0].Body)
	}
	if other, _ := w.db.Snapshots(ctx, w.app, "plain", 0); len(other) != 0 {
		t.Fatalf("a graph without counters was sampled: %+v", other)
	}
}

// The recorder's own loop in virtual time: one tick a day for 32 days
// runs retention each new hour, so partitions stay ahead and expired days
// go.
func TestRecorderRetentionTicks(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	rec := newRecorder(t, w)
	day0 := history.DayStart(t0.UnixMilli())
	if err := w.db.Write(ctx, history.Batch{Samples: []history.Sample{{App: "a", Graph: "g", Node: "n", Path: "p", Session: 1, Recorder: "r", Second: t0.UnixMilli(), Items: 1, Cost: 1}}}); err != nil {
		t.Fatal(err)
	}
	for d := 0; d <= 32; d++ {
		rec.Tick(ctx)
		w.clk.Advance(24 * time.Hour)
	}
	parts, err := w.db.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := history.DayStart(w.clk.Now().Add(-24 * time.Hour).UnixMilli())
	if parts[0] <= day0 || parts[len(parts)-1] < now+history.PartitionsAhead*86400000 {
		t.Fatalf("partitions %s … %s: want day 0 dropped and %d days ahead of %s", time.UnixMilli(parts[0]).UTC(), time.UnixMilli(parts[len(parts)-1]).UTC(), history.PartitionsAhead, time.UnixMilli(now).UTC())
	}
}
