package recorder_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// An enforcing graph (1,000/s, never binding here) with a shadow candidate
// of 5/s: the relay forwards all 100 items at once — the candidate delays
// and refuses nothing real — while the recorder reports, for that minute,
// what 5/s would have done to the 100 items of one second: admitted 5 a
// second over 20 s (the ones admitted at once are not delayed), a median
// added delay of 9 s and a longest of 19 s, nothing left waiting.
func TestShadowOnEnforcingGraph(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	doc := fmt.Sprintf(`{"application": %q, "graph": "s", "version": 1,
		"nodes": {"n": {"ingress": true, "budgets": [{"id": "wide", "count": 1000, "timeMs": 1000}], "egress": %q}},
		"paths": [{"name": "main", "nodes": ["n"]}]}`, w.app, w.b.Queue("sout"))
	if err := w.store.Put(ctx, w.app, "s", json.RawMessage(doc)); err != nil {
		t.Fatal(err)
	}
	since := t0.UnixMilli()
	cand := `{"nodes":{"n":{"budgets":[{"id":"wide","count":5,"timeMs":1000}]}}}`
	if err := w.store.PutShadow(ctx, store.Shadow{Application: w.app, Graph: "s", Since: since, SetBy: "api", Candidate: json.RawMessage(cand)}); err != nil {
		t.Fatal(err)
	}
	a := w.startReplica("ra")
	w.waitRunning("s", a)
	rec := newRecorder(t, w)
	var seq int64
	w.push("gate."+w.app+".s.n.ingress", 100, 1, &seq)
	gatetest.Eventually(t, 30*time.Second, func() bool { return w.fwd("main/n") >= 100 })
	if d := a.relay.Denials().Total(); d != 0 {
		t.Fatalf("the relay refused %d times with a shadow of 5/s set over a real limit of 1000/s", d)
	}
	for _, rt := range a.relay.Runtimes() {
		for _, st := range rt.Stages {
			if st.Counters.Deferred+st.Counters.Released != 0 {
				t.Fatalf("the stage deferred or released items (%+v): the shadow touched real admission", st.Counters)
			}
		}
	}
	w.clk.Advance(2 * time.Minute)
	flush(t, a)
	if _, err := rec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	pass, err := rec.Shadow(ctx)
	if err != nil || pass.Failed != 0 {
		t.Fatalf("shadow pass %+v, %v", pass, err)
	}
	mins, err := w.db.ShadowMinutes(ctx, w.app, "s", since, since, since+10*60000)
	if err != nil {
		t.Fatal(err)
	}
	if len(mins) != 1 {
		t.Fatalf("shadow minutes %+v, want the one complete minute", mins)
	}
	m := mins[0]
	if m.Node != "n" || m.Minute != since || m.Arrived != 100 || m.Admitted != 100 || m.Delayed != 95 || m.Backlog != 0 || m.DelayP50Ms != 9000 || m.DelayMaxMs != 19000 {
		t.Fatalf("shadow minute %+v, want 100 arrived and admitted, 95 delayed, p50 9 s, max 19 s, no backlog", m)
	}
	// A second pass in the same minute evaluates nothing twice.
	if again, err := rec.Shadow(ctx); err != nil || again.Minutes != 0 {
		t.Fatalf("a second pass wrote %+v, %v", again, err)
	}
}

// A shadow far looser than the real limit loosens nothing: with 1,000/s as
// the candidate and 40/s enforced, 100 items still take at least three
// windows (two seconds) to pass and the relay still refuses claims, while
// the candidate reports that it would have delayed none of them.
func TestShadowLooserThanTheLimitLoosensNothing(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	doc := fmt.Sprintf(`{"application": %q, "graph": "l", "version": 1,
		"nodes": {"n": {"ingress": true, "budgets": [{"id": "tight", "count": 40, "timeMs": 1000}], "egress": %q}},
		"paths": [{"name": "main", "nodes": ["n"]}]}`, w.app, w.b.Queue("lout"))
	if err := w.store.Put(ctx, w.app, "l", json.RawMessage(doc)); err != nil {
		t.Fatal(err)
	}
	since := t0.UnixMilli()
	cand := `{"nodes":{"n":{"budgets":[{"id":"tight","count":1000,"timeMs":1000}]}}}`
	if err := w.store.PutShadow(ctx, store.Shadow{Application: w.app, Graph: "l", Since: since, SetBy: "api", Candidate: json.RawMessage(cand)}); err != nil {
		t.Fatal(err)
	}
	a := w.startReplica("ra")
	w.waitRunning("l", a)
	rec := newRecorder(t, w)
	var seq int64
	began := time.Now()
	w.push("gate."+w.app+".l.n.ingress", 100, 1, &seq)
	gatetest.Eventually(t, 60*time.Second, func() bool { return w.fwd("main/n") >= 100 })
	if took := time.Since(began); took < 2*time.Second {
		t.Fatalf("100 items passed a 40/s limit in %v with a 1,000/s shadow set: the shadow loosened the real limit", took)
	}
	if w.fwd("main/n") != 100 {
		t.Fatalf("forwarded %d, want 100", w.fwd("main/n"))
	}
	var refused int64
	for _, rt := range a.relay.Runtimes() {
		for _, st := range rt.Stages {
			refused += st.Counters.Deferred + st.Counters.Released + st.Counters.Parked
		}
	}
	if refused == 0 && a.relay.Denials().Total() == 0 {
		t.Fatal("the real limit never refused a claim: the test proves nothing")
	}
	w.clk.Advance(2 * time.Minute)
	flush(t, a)
	if _, err := rec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Shadow(ctx); err != nil {
		t.Fatal(err)
	}
	mins, err := w.db.ShadowMinutes(ctx, w.app, "l", since, since, since+10*60000)
	if err != nil {
		t.Fatal(err)
	}
	if len(mins) != 1 || mins[0].Arrived != 100 || mins[0].Delayed != 0 || mins[0].Backlog != 0 {
		t.Fatalf("shadow minutes %+v, want 100 arrived and none delayed", mins)
	}
}

// A per-account candidate on live traffic, relay → handover → PostgreSQL →
// evaluation: an enforcing graph (1,000/s, never binding) forwards 60
// items of account "a" and 4 of "b" in one second; the relay records them
// per account, and the candidate of 5 a second per account delays only
// a's: counted by hand, a's item k leaves at second k/5 (55 of 60 wait,
// the last 11 s), b's 4 pass at once; the median of the 64 delays is 5 s.
func TestKeyedShadowOnEnforcingGraph(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	doc := fmt.Sprintf(`{"application": %q, "graph": "k", "version": 1,
		"nodes": {"n": {"ingress": true, "budgets": [{"id": "wide", "count": 1000, "timeMs": 1000}], "egress": %q}},
		"paths": [{"name": "main", "nodes": ["n"]}]}`, w.app, w.b.Queue("kout"))
	if err := w.store.Put(ctx, w.app, "k", json.RawMessage(doc)); err != nil {
		t.Fatal(err)
	}
	since := t0.UnixMilli()
	cand := `{"nodes":{"n":{"budgets":[{"id":"wide","count":1000,"timeMs":1000},{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"payload.account"}]}}}`
	if err := w.store.PutShadow(ctx, store.Shadow{Application: w.app, Graph: "k", Since: since, SetBy: "api", Candidate: json.RawMessage(cand)}); err != nil {
		t.Fatal(err)
	}
	a := w.startReplica("ra")
	w.waitRunning("k", a)
	flush(t, a) // the relay learns the candidate and what it needs recorded
	rec := newRecorder(t, w)
	var items []queen.PushItem
	for i := range 64 {
		acct := "a"
		if i%16 == 15 {
			acct = "b"
		}
		body, _ := json.Marshal(map[string]any{"account": acct, "i": i})
		items = append(items, queen.PushItem{Queue: "gate." + w.app + ".k.n.ingress", Partition: acct, Payload: body})
	}
	if _, err := w.client.Push(ctx, items); err != nil {
		t.Fatal(err)
	}
	gatetest.Eventually(t, 30*time.Second, func() bool { return w.fwd("main/n") >= 64 })
	w.clk.Advance(2 * time.Minute)
	flush(t, a)
	d, err := rec.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.KeySamples != 2 {
		t.Fatalf("the drain wrote %d keyed rows, want 2 (a and b)", d.KeySamples)
	}
	pass, err := rec.Shadow(ctx)
	if err != nil || pass.Failed != 0 {
		t.Fatalf("shadow pass %+v, %v", pass, err)
	}
	mins, err := w.db.ShadowMinutes(ctx, w.app, "k", since, since, since+10*60000)
	if err != nil {
		t.Fatal(err)
	}
	if len(mins) != 1 {
		t.Fatalf("shadow minutes %+v, want the one complete minute", mins)
	}
	m := mins[0]
	if m.Arrived != 64 || m.Admitted != 64 || m.Delayed != 55 || m.Backlog != 0 || m.DelayP50Ms != 5000 || m.DelayMaxMs != 11000 || m.Approximate != 0 || m.Missing != nil {
		t.Fatalf("shadow minute %+v, want 64 arrived and admitted, 55 delayed (a only), p50 5 s, max 11 s, nothing approximate", m)
	}
}
