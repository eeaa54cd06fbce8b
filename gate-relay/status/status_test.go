package status

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest/logsink"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/queen-mq/gate/gate-relay/denial"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// TestMain fails the package when a publisher outlives its Stop (idle
// keep-alive connections are not counted).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }

var t0 = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

const (
	ns      = "gate"
	replica = "relay-1"
	period  = 5 * time.Second
)

// relay is a Source whose graphs a test sets; its snapshot time is the
// virtual clock's.
type relay struct {
	clk    clock.Clock
	ring   denial.Ring
	mu     sync.Mutex
	graphs []store.GraphStatus
}

func (r *relay) Snapshot() store.RelayStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return store.RelayStatus{Replica: replica, At: r.clk.Now().UnixMilli(), Graphs: append([]store.GraphStatus(nil), r.graphs...)}
}

func (r *relay) Denials() *denial.Ring { return &r.ring }

func (r *relay) run(app, graph string, version int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.graphs = append(r.graphs, store.GraphStatus{App: app, Graph: graph, Version: version, Running: true})
}

// rig is a publisher, its relay and the broker, all on one virtual clock.
type rig struct {
	t     *testing.T
	clk   *clock.Virtual
	mini  *miniqueen.Server
	store *store.Store
	src   *relay
	logs  *logsink.Sink
	pub   *Publisher
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	clk := clock.NewVirtual(t0)
	mini := miniqueen.RunT(t, miniqueen.WithClock(clk))
	c, err := queen.New(mini.URL())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clk: clk, mini: mini, store: store.New(c, ns), src: &relay{clk: clk}, logs: &logsink.Sink{}}
	cfg.Store, cfg.Source, cfg.Clock = r.store, r.src, clk
	cfg.Period = period
	cfg.Logger = slog.New(slog.NewJSONHandler(r.logs, nil))
	r.pub = New(cfg)
	return r
}

func (r *rig) start() {
	r.t.Helper()
	if err := r.pub.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(r.pub.Stop)
}

// published is the status document of the replica in kv (false when
// there is none).
func (r *rig) published() (store.RelayStatus, bool) {
	r.t.Helper()
	all, err := r.store.Statuses(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, st := range all {
		if st.Replica == replica {
			return st, true
		}
	}
	return store.RelayStatus{}, false
}

// publishedAt waits until the document in kv was taken at the clock's now.
func (r *rig) publishedAt(what string) store.RelayStatus {
	r.t.Helper()
	var st store.RelayStatus
	gatetest.Eventually(r.t, 5*time.Second, func() bool {
		var ok bool
		st, ok = r.published()
		return ok && st.At == r.clk.Now().UnixMilli()
	})
	return st
}

// still fails the test if the document is rewritten within a short wall
// time (nothing is due).
func (r *rig) still(at int64, what string) {
	r.t.Helper()
	time.Sleep(50 * time.Millisecond)
	if st, ok := r.published(); !ok || st.At != at {
		r.t.Fatalf("%s: the document is %+v (%v), want the one taken at %d", what, st, ok, at)
	}
}

// ttl is how long the document in kv has left.
func (r *rig) ttl() time.Duration {
	r.t.Helper()
	e, ok := r.mini.KV(ns, "relay:"+replica)
	if !ok {
		r.t.Fatal("no status document in kv")
	}
	return e.ExpiresAt.Sub(r.clk.Now())
}

// The status is written at once at start and then every period, never in
// between, each time with a TTL of three periods, so a replica that stops
// writing disappears; a stop withdraws it at once.
func TestTheStatusIsWrittenEveryPeriodWithATTLOfThreePeriodsAndWithdrawnAtStop(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.src.run("a", "g", 1)
	r.start()
	first := r.publishedAt("the start")
	if g, ok := first.Graph("a", "g"); !ok || !g.Running || g.Version != 1 {
		t.Fatalf("the first document %+v lacks graph a/g running version 1", first)
	}
	if d := r.ttl(); d != 3*period {
		t.Fatalf("the document's TTL is %s, want three periods (%s)", d, 3*period)
	}

	r.src.run("a", "h", 2)
	r.clk.Advance(period - time.Second)
	r.still(first.At, "one second before the period")
	r.clk.Advance(time.Second)
	second := r.publishedAt("the period")
	if _, ok := second.Graph("a", "h"); !ok {
		t.Fatalf("the periodic document %+v lacks the graph started since", second)
	}
	if d := r.ttl(); d != 3*period {
		t.Fatalf("the rewritten document's TTL is %s, want %s", d, 3*period)
	}

	r.pub.Stop()
	if _, ok := r.published(); ok {
		t.Fatal("a stopped publisher left its status document in kv")
	}
	if n := r.clk.Pending(); n != 0 {
		t.Fatalf("%d waits of a stopped publisher are still pending", n)
	}
}

// Without its writer the document is gone three periods after the last
// write (the broker's TTL on the same clock).
func TestAStatusNobodyRewritesExpiresAfterThreePeriods(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	if err := r.store.PutStatus(t.Context(), r.src.Snapshot(), 3*period); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(3*period - time.Second)
	if _, ok := r.published(); !ok {
		t.Fatal("the document expired before three periods")
	}
	r.clk.Advance(time.Second)
	if _, ok := r.published(); ok {
		t.Fatal("the document outlived three periods without a write")
	}
}

// Changed publishes at once, between periods.
func TestChangedPublishesAtOnce(t *testing.T) {
	t.Parallel()
	changed := make(chan struct{}, 1)
	r := newRig(t, Config{Changed: changed})
	r.start()
	first := r.publishedAt("the start")
	r.src.run("a", "g", 7)
	r.clk.Advance(time.Second)
	r.still(first.At, "a second in, nothing changed")
	changed <- struct{}{}
	st := r.publishedAt("the change")
	if g, ok := st.Graph("a", "g"); !ok || g.Version != 7 {
		t.Fatalf("the document after Changed is %+v, want graph a/g version 7", st)
	}
}

// A status write that fails is logged once, however many times it keeps
// failing, and its recovery once; the document is back after it.
func TestAFailingStatusWriteIsLoggedOnceAndSoIsItsRecovery(t *testing.T) {
	t.Parallel()
	// An unbuffered Changed: a send returns once the publisher took it,
	// so the publish before it has finished.
	changed := make(chan struct{})
	var mu sync.Mutex
	var outcomes []error
	r := newRig(t, Config{Changed: changed, Written: func(err error) { mu.Lock(); outcomes = append(outcomes, err); mu.Unlock() }})
	lastOutcome := func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(outcomes) == 0 {
			t.Fatal("no write outcome was reported")
		}
		return outcomes[len(outcomes)-1]
	}
	signal := func() {
		t.Helper()
		select {
		case changed <- struct{}{}:
		case <-time.After(5 * time.Second):
			t.Fatal("the publisher does not take Changed")
		}
	}
	r.mini.SetError(miniqueen.RouteKV, 500)
	r.start()
	for range 4 {
		signal()
	}
	if n := r.logs.Count("writing the relay status failed"); n != 1 {
		t.Fatalf("four failed writes logged %d warnings, want 1", n)
	}
	if err := lastOutcome(); queen.StatusOf(err) != 500 {
		t.Fatalf("the failed write was reported as %v, want the broker's 500", err)
	}
	if _, ok := r.mini.KV(ns, "relay:"+replica); ok {
		t.Fatal("a status document was written while every kv call failed")
	}
	r.mini.ClearError(miniqueen.RouteKV)
	signal()
	signal()
	r.publishedAt("the recovery")
	if n := r.logs.Count("writing the relay status works again"); n != 1 {
		t.Fatalf("the recovery was logged %d times, want once", n)
	}
	if err := lastOutcome(); err != nil {
		t.Fatalf("the write after the recovery was reported as %v, want nil", err)
	}
	if n := r.logs.Count("writing the relay status failed"); n != 1 {
		t.Fatalf("%d failure warnings after the recovery, want still 1", n)
	}
}

// With NATS, every publish sends one counters snapshot per graph on the
// graph's subject, and the denials new since the last publish, grouped by
// graph, on the denials subject: each denial once.
func TestNATSFanOutSendsCountersEveryPublishAndEachDenialOnce(t *testing.T) {
	t.Parallel()
	n := gatetest.NewNATS(t)
	r := newRig(t, Config{NATS: n.Conn})
	// The subjects carry application and graph tokens; a per-test
	// application keeps parallel tests apart on a shared server.
	app := strings.ReplaceAll(strings.TrimPrefix(n.Prefix, "gt."), ".", "-")
	r.src.run(app, "g", 3)
	r.src.run(app, "h", 1)
	counters := make(chan *nats.Msg, 16)
	denials := make(chan *nats.Msg, 16)
	for subject, ch := range map[string]chan *nats.Msg{
		CountersSubjectFor(app, "g"): counters, DenialsSubjectFor(app, "g"): denials, DenialsSubjectFor(app, "h"): denials,
	} {
		sub, err := n.Conn.ChanSubscribe(subject, ch)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := n.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	r.src.ring.Add(store.Denial{At: 1, Application: app, Graph: "g", Node: "n", BudgetID: "b1"})
	r.src.ring.Add(store.Denial{At: 2, Application: app, Graph: "g", Node: "n", BudgetID: "b2"})
	r.src.ring.Add(store.Denial{At: 3, Application: app, Graph: "h", Node: "m", BudgetID: "b3"})

	recv := func(ch chan *nats.Msg, what string) *nats.Msg {
		t.Helper()
		select {
		case m := <-ch:
			return m
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s on NATS", what)
			return nil
		}
	}
	none := func(ch chan *nats.Msg, what string) {
		t.Helper()
		select {
		case m := <-ch:
			t.Fatalf("unexpected %s on NATS: %s", what, m.Data)
		case <-time.After(100 * time.Millisecond):
		}
	}
	byGraph := func(msgs ...*nats.Msg) map[string][]string {
		out := map[string][]string{}
		for _, m := range msgs {
			var ds []store.Denial
			if err := json.Unmarshal(m.Data, &ds); err != nil {
				t.Fatalf("denials message %s: %v", m.Data, err)
			}
			for _, d := range ds {
				out[d.Graph] = append(out[d.Graph], d.BudgetID)
			}
		}
		return out
	}

	r.start()
	var snap GraphSnapshot
	if err := json.Unmarshal(recv(counters, "counters snapshot").Data, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Replica != replica || snap.At != t0.UnixMilli() || snap.Graph.App != app || snap.Graph.Graph != "g" || snap.Graph.Version != 3 {
		t.Fatalf("counters snapshot %+v, want replica %s at %d with graph %s/g version 3", snap, replica, t0.UnixMilli(), app)
	}
	got := byGraph(recv(denials, "denials"), recv(denials, "denials"))
	if strings.Join(got["g"], ",") != "b2,b1" || strings.Join(got["h"], ",") != "b3" {
		t.Fatalf("denials by graph %v, want g: b2,b1 (newest first) and h: b3", got)
	}

	r.clk.Advance(period)
	recv(counters, "counters snapshot of the next period")
	none(denials, "denials already sent")

	r.src.ring.Add(store.Denial{At: 4, Application: app, Graph: "g", Node: "n", BudgetID: "b4"})
	r.clk.Advance(period)
	recv(counters, "counters snapshot of the third period")
	if got := byGraph(recv(denials, "the new denial")); strings.Join(got["g"], ",") != "b4" || len(got) != 1 {
		t.Fatalf("denials after one more %v, want only g: b4", got)
	}
}

// WithDefaults fills the period from GATE_STATUS_SECONDS's default, the
// wall clock and the default logger, and keeps what is set.
func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	if c.Period != 5*time.Second || c.Clock == nil || c.Logger == nil {
		t.Fatalf("defaults %+v, want a 5 s period, a clock and a logger", c)
	}
	if c := (Config{Period: -time.Second}).WithDefaults(); c.Period != 5*time.Second {
		t.Fatalf("a negative period became %s, want the default", c.Period)
	}
	v := clock.NewVirtual(t0)
	if c := (Config{Period: time.Minute, Clock: v}).WithDefaults(); c.Period != time.Minute || c.Clock != v {
		t.Fatalf("set fields were replaced: %+v", c)
	}
}
