package recorder_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
)

// With counters on and a ceiling that binds, two relay replicas' minute
// roll-ups of the stage add up to what reached the egress (admitted and
// cost) and to both replicas' refusals (deferred + released); every denial
// of both rings is a trace.
func TestRollupsAndTracesAcrossReplicas(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	doc := fmt.Sprintf(`{"application": %q, "graph": "c", "version": 1, "counters": {"windowSeconds": 60},
		"nodes": {"n": {"ingress": true, "cost": {"path": "payload.units", "default": 1, "max": 10}, "budgets": [{"id": "tight", "count": 40, "timeMs": 1000}], "egress": %q}},
		"paths": [{"name": "main", "nodes": ["n"]}]}`, w.app, w.b.Queue("cout"))
	if err := w.store.Put(ctx, w.app, "c", json.RawMessage(doc)); err != nil {
		t.Fatal(err)
	}
	a, b := w.startReplica("ra"), w.startReplica("rb")
	w.waitRunning("c", a, b)
	rec := newRecorder(t, w)
	var seq int64
	// Claims are sized for cost 1 (40 items) but every item costs 3: each
	// full claim is refused and its prefix of 13 admitted (deferred).
	w.push("gate."+w.app+".c.n.ingress", 100, 3, &seq)
	gatetest.Eventually(t, 60*time.Second, func() bool { return w.fwd("main/n") >= 100 })
	var denied int64
	var rings uint64
	for _, r := range []*replica{a, b} {
		flush(t, r)
		for _, rt := range r.relay.Runtimes() {
			for _, st := range rt.Stages {
				denied += st.Counters.Deferred + st.Counters.Released
			}
		}
		rings += r.relay.Denials().Total()
	}
	if _, err := rec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if rings == 0 || denied == 0 {
		t.Fatalf("the ceiling never refused (denials %d, deferred+released %d): the test proves nothing", rings, denied)
	}
	m := t0.UnixMilli()
	rows, err := w.db.Rollups(ctx, w.app, "c.n", m, m+60000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Lane != "main" || rows[0].Admitted != 100 || rows[0].CostEstimated != 300 || rows[0].Denied != denied {
		t.Fatalf("rollups %+v, want one minute of lane main: admitted 100, cost 300, denied %d", rows, denied)
	}
	tr, err := w.db.Traces(ctx, "denied", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(tr)) != rings {
		t.Fatalf("%d traces, the rings hold %d denials", len(tr), rings)
	}
	for _, x := range tr {
		if x.Target != "c.n" || x.Lane != "main" || x.BudgetID != "tight" {
			t.Fatalf("trace %+v, want target c.n lane main budget tight", x)
		}
	}
	t.Logf("admitted 100 across two replicas, denied %d, %d traces", denied, len(tr))
}
