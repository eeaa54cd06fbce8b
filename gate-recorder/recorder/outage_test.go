package recorder_test

import (
	"encoding/json"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/history"
)

// proxy forwards TCP to target until cut; restore listens again on the
// same address.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target}
	p.listen("127.0.0.1:0")
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection: the database is gone.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() { p.listen(p.addr) }

// PostgreSQL lost mid-run: relaying goes on, the relay keeps buffering,
// the drain fails and leaves the handover in kv; more than an hour of
// distinct seconds drops the oldest ones, counted as lost; after recovery
// everything kept is written, the dropped seconds stay a gap (no sample
// rows there) and the recorder reports the lost items.
func TestDatabaseOutage(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	u, err := url.Parse(w.pg.URL)
	if err != nil || u.Host == "" {
		t.Fatalf("the test database URL %q is not a postgres:// URL with a host", w.pg.URL)
	}
	px := newProxy(t, u.Host)
	via := *u
	via.Host = px.addr
	db, err := history.OpenURL(ctx, via.String(), w.pg.Schema, history.Options{Clock: w.clk, Logger: quiet, ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	start := t0.UnixMilli()
	doc := watchDoc(w, start)
	var m map[string]any
	_ = json.Unmarshal([]byte(doc), &m)
	m["watch"] = map[string]any{"durationSeconds": 7200, "startedAt": start}
	body, _ := json.Marshal(m)
	if err := w.store.Put(ctx, w.app, "w", body); err != nil {
		t.Fatal(err)
	}
	rep := w.startReplica("solo")
	w.waitRunning("w", rep)
	rec := newRecorderOn(t, w, db)
	var seq int64
	// Ten seconds with the database up.
	for s := 0; s < 10; s++ {
		w.push(ingress(w, "fast"), 3, 1, &seq)
		want := int64(3 * (s + 1))
		gatetest.Eventually(t, 20*time.Second, func() bool { return w.fwd("fast/ip") >= want })
		w.clk.Advance(time.Second)
	}
	flush(t, rep)
	if _, err := rec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	px.cut()
	// The outage: real items keep flowing to the egress...
	w.push(ingress(w, "fast"), 7, 1, &seq)
	gatetest.Eventually(t, 20*time.Second, func() bool { return w.fwd("fast/ip") >= 37 })
	w.clk.Advance(time.Second)
	flush(t, rep)
	if _, err := rec.Drain(ctx); err == nil {
		t.Fatal("the drain succeeded with the database cut off")
	}
	// ...and the relay buffers 3,700 more distinct seconds at node fast
	// (one item each), 100 past its hour.
	for i := 0; i < 3700; i++ {
		rep.hand.Observe(stage.Settled{App: w.app, Graph: "w", Path: "fast", Node: "fast", Items: 1, Cost: 1})
		w.clk.Advance(time.Second)
		if i%60 == 59 {
			flush(t, rep)
		}
	}
	flush(t, rep)
	st := rep.hand.Stats()
	if st.Lost == 0 {
		t.Fatalf("after 3,700 buffered seconds nothing was dropped: %+v", st)
	}
	px.restore()
	gatetest.EventuallyErr(t, 30*time.Second, func() error { _, err := rec.Drain(ctx); return err })
	flush(t, rep)
	if _, err := rec.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := db.Recorders(ctx, w.app, "w", "fast", start)
	if err != nil || len(recs) != 1 {
		t.Fatalf("recorders %+v %v, want the replica's one", recs, err)
	}
	if recs[0].Lost != st.Lost {
		t.Fatalf("history reports %d lost items, the relay dropped %d", recs[0].Lost, st.Lost)
	}
	all, err := db.Samples(ctx, w.app, "w", "fast", "", start, start, w.clk.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	var items int64
	for _, s := range all {
		items += s.Items
	}
	// Everything recorded = the 37 relayed items + 3,700 observed, minus
	// what was dropped; the dropped seconds are the oldest ones.
	if items+st.Lost != 37+3700 {
		t.Fatalf("history holds %d items and %d were lost, want %d in all", items, st.Lost, 37+3700)
	}
	// Ten seconds committed before the outage, then the hour of seconds
	// the relay could keep (3,701 observed: the 7-item second and the 100
	// oldest one-item seconds were dropped, 107 items).
	if len(all) != 10+3600 || st.Lost != 107 {
		t.Fatalf("%d seconds in history with %d lost, want 10 + 3600 seconds and 107 lost", len(all), st.Lost)
	}
	for _, s := range all {
		if s.Second >= start+10000 && s.Second < start+10000+101000 {
			t.Fatalf("second %s was dropped as lost but has a sample row: a gap was filled", time.UnixMilli(s.Second).UTC())
		}
	}
	t.Logf("lost %d items in the oldest seconds; %d seconds kept, first kept %s", st.Lost, len(all), time.UnixMilli(all[0].Second).UTC())
}

func flush(t *testing.T, r *replica) {
	t.Helper()
	if err := r.hand.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}
