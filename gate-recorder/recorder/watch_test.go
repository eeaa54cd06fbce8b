package recorder_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-recorder/recorder"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/queen"
)

// watchDoc is a Watch graph: fast (cost 1) and slow (cost 3) enter, both
// paths cross ip (cost payload.units) to the egress. No budgets.
func watchDoc(w *world, startedAt int64) string {
	return fmt.Sprintf(`{"application": %q, "graph": "w", "version": 1,
		"watch": {"durationSeconds": 300, "startedAt": %d},
		"nodes": {
			"fast": {"ingress": true, "cost": 1, "budgets": []},
			"slow": {"ingress": true, "cost": 3, "budgets": []},
			"ip": {"cost": {"path": "payload.units", "default": 1, "max": 10}, "budgets": [], "egress": %q}
		},
		"paths": [{"name": "fast", "nodes": ["fast", "ip"]}, {"name": "slow", "nodes": ["slow", "ip"]}]}`,
		w.app, startedAt, w.b.Queue("out"))
}

func ingress(w *world, node string) string { return "gate." + w.app + ".w." + node + ".ingress" }

// A Watch graph fed a known pattern for two virtual minutes through two
// relay replicas: fast 5 items/s (units 2), slow 2/s in the first minute
// and 4/s in the second (units 1). The summary reports, per node, exactly
// the items that reached the next hop (the egress for ip) in the two
// complete minutes, cost per second and the peak minute; the per-second
// samples of both replicas add up to what was pushed each second; and the
// same handover rows drained three times leave the same rows.
func TestWatchPatternTwoReplicas(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	start := t0.UnixMilli()
	if err := w.store.Put(ctx, w.app, "w", json.RawMessage(watchDoc(w, start))); err != nil {
		t.Fatal(err)
	}
	a, b := w.startReplica("replica-a"), w.startReplica("replica-b")
	w.waitRunning("w", a, b)
	rec := newRecorder(t, w)
	var seq int64
	var wantIP int64
	slowRate := func(s int) int {
		if s < 60 {
			return 2
		}
		return 4
	}
	var replayed string
	for s := 0; s < 120; s++ {
		w.push(ingress(w, "fast"), 5, 2, &seq)
		w.push(ingress(w, "slow"), slowRate(s), 1, &seq)
		wantIP += int64(5 + slowRate(s))
		gatetest.Eventually(t, 20*time.Second, func() bool { return w.fwd("fast/ip")+w.fwd("slow/ip") >= wantIP })
		w.clk.Advance(time.Second)
		if (s+1)%10 != 0 {
			continue
		}
		for _, r := range []*replica{a, b} {
			if err := r.hand.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if s+1 == 60 {
			replayed = replay(t, w, rec)
			continue
		}
		if _, err := rec.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.fwd("fast/ip") + w.fwd("slow/ip"); got != wantIP {
		t.Fatalf("egress got %d items, pushed %d", got, wantIP)
	}
	w.clk.Advance(time.Second)
	for _, r := range []*replica{a, b} {
		if err := r.hand.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	// The relays learn their rows were committed at the next flush and
	// forget the complete seconds.
	for _, r := range []*replica{a, b} {
		if err := r.hand.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if st := r.hand.Stats(); st.Seconds != 0 || st.Lost != 0 {
			t.Fatalf("a replica still holds %d seconds (lost %d) after the drain", st.Seconds, st.Lost)
		}
	}
	if replayed == "" {
		t.Fatal("the replay step did not run")
	}

	sum, err := w.db.WatchSummary(ctx, w.app, "w", []string{"fast", "ip", "slow"}, start, 300, w.clk.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Minutes != 2 || sum.Ready {
		t.Fatalf("summary covers %d minutes, ready %v; want 2 complete minutes, not ready", sum.Minutes, sum.Ready)
	}
	want := map[string]struct {
		items      int64
		cost, avg  float64
		peak       float64
		recordedMn int
	}{
		"fast": {600, 600, 5, 300, 2},
		"slow": {360, 1080, 9, 720, 2},
		"ip":   {960, 1560, 13, 840, 2},
	}
	for _, n := range sum.Nodes {
		wn := want[n.Node]
		tr := n.Traffic
		if tr.Admitted != wn.items || tr.Cost != wn.cost || tr.AverageCostPerSecond == nil || *tr.AverageCostPerSecond != wn.avg ||
			tr.PeakCostPerMinute == nil || *tr.PeakCostPerMinute != wn.peak || tr.RecordedMinutes != wn.recordedMn {
			t.Errorf("node %s: %+v (avg %v peak %v), want items %d cost %v avg %v peak %v minutes %d", n.Node, tr,
				deref(tr.AverageCostPerSecond), deref(tr.PeakCostPerMinute), wn.items, wn.cost, wn.avg, wn.peak, wn.recordedMn)
		}
	}
	// Per second, both replicas' samples add up to what was pushed.
	secs, err := w.db.Samples(ctx, w.app, "w", "ip", "", start, start, start+120000)
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 120 {
		t.Fatalf("%d seconds sampled at ip, want 120", len(secs))
	}
	for i, s := range secs {
		items := int64(5 + slowRate(i))
		cost := int64(5*2 + slowRate(i))
		if s.Second != start+int64(i)*1000 || s.Items != items || s.Cost != cost {
			t.Fatalf("second %d: %+v, want %d items cost %d", i, s, items, cost)
		}
	}
	recs := map[string]int{}
	for _, node := range []string{"fast", "slow", "ip"} {
		rs, err := w.db.Recorders(ctx, w.app, "w", node, start)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			recs[node]++
			if r.Lost != 0 || r.Through < start+120000 {
				t.Fatalf("recorder %+v: want nothing lost, through at least 2 minutes in", r)
			}
		}
	}
	t.Logf("recorders per node (two replicas; a replica that won no claim at a node records nothing there): %v", recs)
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// replay drains the handover, then puts the very same rows back and
// drains them twice more: the database must not change.
func replay(t *testing.T, w *world, rec *recorder.Recorder) string {
	t.Helper()
	ctx := t.Context()
	entries, err := handover.Read(ctx, w.client, w.b.Namespace())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no handover rows to replay")
	}
	if _, err := rec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	first := dump(t, w.db)
	for range 2 {
		var ops []queen.KVOp
		for _, e := range entries {
			body, err := json.Marshal(e.Row)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, queen.KVPut(w.b.Namespace(), e.Key, body, queen.PutOpts{TTLSeconds: 600}))
		}
		if _, err := w.client.KV(ctx, ops...); err != nil {
			t.Fatal(err)
		}
		d, err := rec.Drain(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Rows != len(entries) {
			t.Fatalf("replay drained %d rows, put back %d", d.Rows, len(entries))
		}
		if again := dump(t, w.db); again != first {
			t.Fatalf("replaying the handover changed the database:\nbefore:\n%s\nafter:\n%s", first, again)
		}
	}
	return first
}
