package observe

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest/logsink"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/gate-relay/denial"
	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/handover"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// TestMain fails the package when a handover outlives its Stop (idle
// keep-alive connections are not counted).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }

// t0 is a minute boundary; every test's broker and handover share one
// virtual clock standing there, so row TTLs run out on it too.
var t0 = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

const ns = "gate"

func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

// source is the relay as the handover sees it: the runtimes a test sets.
type source struct {
	mu    sync.Mutex
	rts   []Runtime
	calls int
}

func (s *source) Runtimes() []Runtime {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return append([]Runtime(nil), s.rts...)
}

func (s *source) set(rts ...Runtime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rts = rts
}

func (s *source) called() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// runtime is graph a/g started at started, its node n on paths main and
// alt; watch (until, relative to t0) when positive, minute counts when
// counts; denied is every stage's deferred + released so far.
func runtime(started time.Time, until time.Duration, counts bool, denied int64) Runtime {
	rt := Runtime{App: "a", Graph: "g", Started: started, Counters: counts}
	if until > 0 {
		rt.Watch = &WatchInfo{Session: ms(-time.Minute), Until: ms(until)}
	}
	for i, p := range []string{"main", "alt"} {
		rt.Stages = append(rt.Stages, StageInfo{Path: p, Node: "n", PathIndex: i, Counters: store.Counters{Deferred: denied}})
	}
	return rt
}

type rig struct {
	t    *testing.T
	clk  *clock.Virtual
	mini *miniqueen.Server
	c    *queen.Client
	src  *source
	ring *denial.Ring
	logs *logsink.Sink
	h    *Handover
}

// newRig builds a handover on a broker, both on one virtual clock at t0;
// cfg sets what a test needs (TTL, Period), the rest is the rig's.
func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	clk := clock.NewVirtual(t0)
	mini := miniqueen.RunT(t, miniqueen.WithClock(clk))
	c, err := queen.New(mini.URL())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clk: clk, mini: mini, c: c, src: &source{}, ring: &denial.Ring{}, logs: &logsink.Sink{}}
	cfg.Client, cfg.Namespace, cfg.Replica, cfg.Source, cfg.Denials, cfg.Clock = c, ns, "relay-1", r.src, r.ring, clk
	cfg.Logger = slog.New(slog.NewJSONHandler(r.logs, nil))
	r.h = New(cfg)
	return r
}

// at moves the clock to t0+d.
func (r *rig) at(d time.Duration) { r.clk.Set(t0.Add(d)) }

func (r *rig) flush() {
	r.t.Helper()
	if err := r.h.Flush(r.t.Context()); err != nil {
		r.t.Fatalf("flush: %v", err)
	}
}

// settle is a committed settle on path of node n, now.
func (r *rig) settle(path string, items int, cost int64) {
	r.h.Observe(stage.Settled{App: "a", Graph: "g", Path: path, Node: "n", Partition: "p", Items: items, Cost: cost, At: r.clk.Now()})
}

// rows is every handover row in kv, by key.
func (r *rig) rows() map[string]handover.Row {
	r.t.Helper()
	out := map[string]handover.Row{}
	for _, k := range r.mini.KVKeys(ns) {
		if !strings.HasPrefix(k, handover.Prefix) {
			continue
		}
		e, ok := r.mini.KV(ns, k)
		if !ok {
			continue
		}
		var row handover.Row
		if err := json.Unmarshal(e.Value, &row); err != nil {
			r.t.Fatalf("row %s: %v", k, err)
		}
		out[k] = row
	}
	return out
}

// row is the row at key, failing the test when it is absent.
func (r *rig) row(key, what string) handover.Row {
	r.t.Helper()
	row, ok := r.rows()[key]
	if !ok {
		r.t.Fatalf("no %s row (%s) in kv; rows: %v", what, key, keys(r.rows()))
	}
	return row
}

func (r *rig) absent(key, what string) {
	r.t.Helper()
	if _, ok := r.rows()[key]; ok {
		r.t.Fatalf("the %s row (%s) is in kv, want it gone", what, key)
	}
}

// commit deletes rows as gate-recorder does once it stored them.
func (r *rig) commit(keys ...string) {
	r.t.Helper()
	for _, k := range keys {
		if _, err := r.c.KV(r.t.Context(), queen.KVDelete(ns, k, queen.DeleteOpts{})); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *rig) version(key string) int64 {
	r.t.Helper()
	e, ok := r.mini.KV(ns, key)
	if !ok {
		r.t.Fatalf("no row %s in kv", key)
	}
	return e.Version
}

// recorder is the one recorder id the rows name.
func (r *rig) recorder() string {
	r.t.Helper()
	ids := map[string]bool{}
	for k := range r.rows() {
		ids[handover.RecorderOf(k)] = true
	}
	if len(ids) != 1 {
		r.t.Fatalf("rows of %d recorders (%v), want 1", len(ids), ids)
	}
	for id := range ids {
		return id
	}
	return ""
}

func keys(m map[string]handover.Row) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func samples(s ...[3]int64) [][3]int64 { return s }

func sameSamples(a, b [][3]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A Watch's settles are handed over per complete second and path, in a
// row per minute block, with the recorder's watch row saying how far they
// go and a minute roll-up beside them; a row is written again only when
// it changed, and what gate-recorder committed (the row deleted before
// its TTL) is forgotten and not written again.
func TestWatchSecondsAreHandedOverAndForgottenOnceCommitted(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.src.set(runtime(t0.Add(-time.Minute), time.Hour, true, 0))
	r.flush()
	id := r.recorder()
	watch := r.row(handover.WatchKey(id), "watch")
	if watch.Kind != handover.KindWatch || watch.Replica != "relay-1" || watch.Node != "n" || watch.Session != ms(-time.Minute) ||
		watch.Watch.Started != ms(0) || watch.Watch.Until != ms(time.Hour) || watch.Watch.Through != ms(0) || watch.Watch.ClosedAt != 0 {
		t.Fatalf("the first watch row %+v %+v, want recorder n of relay-1 started at t0, through t0, open", watch, watch.Watch)
	}

	r.at(200 * time.Millisecond)
	r.settle("main", 3, 6)
	r.at(1500 * time.Millisecond)
	r.settle("main", 2, 2)
	r.at(1600 * time.Millisecond)
	r.settle("alt", 4, 4)
	r.settle("alt", 0, 9) // nothing settled: ignored
	r.at(2 * time.Second)
	r.flush()
	mainKey, altKey := handover.SamplesKey(id, 0, ms(0)), handover.SamplesKey(id, 1, ms(0))
	if got := r.row(mainKey, "main samples"); got.Kind != handover.KindSamples || got.Path != "main" || !sameSamples(got.Samples, samples([3]int64{ms(0), 3, 6}, [3]int64{ms(time.Second), 2, 2})) {
		t.Fatalf("main samples %+v, want seconds 0 (3 items, cost 6) and 1 (2, 2)", got)
	}
	if got := r.row(altKey, "alt samples"); !sameSamples(got.Samples, samples([3]int64{ms(time.Second), 4, 4})) {
		t.Fatalf("alt samples %+v, want second 1 (4, 4)", got.Samples)
	}
	if w := r.row(handover.WatchKey(id), "watch").Watch; w.Through != ms(2*time.Second) || w.Lost != 0 {
		t.Fatalf("watch %+v, want through t0+2s, nothing lost", w)
	}
	roll := r.row(handover.RollupKey(id, ms(0)), "roll-up")
	lanes := map[string]handover.Lane{}
	for _, l := range roll.Lanes {
		lanes[l.Path] = l
	}
	if roll.Minute != ms(0) || lanes["main"].Admitted != 5 || lanes["main"].Cost != 8 || lanes["alt"].Admitted != 4 || lanes["alt"].Denied != 0 {
		t.Fatalf("roll-up %+v, want minute t0 with main 5 (cost 8) and alt 4", roll)
	}

	// An incomplete second is not handed over, and an unchanged row is not
	// written again.
	before := r.version(mainKey)
	r.at(2500 * time.Millisecond)
	r.settle("main", 1, 1)
	r.at(2600 * time.Millisecond)
	r.flush()
	if v := r.version(mainKey); v != before {
		t.Fatal("an unchanged samples row was written again")
	}
	r.at(3 * time.Second)
	r.flush()
	if got := r.row(mainKey, "main samples").Samples; len(got) != 3 || got[2] != [3]int64{ms(2 * time.Second), 1, 1} {
		t.Fatalf("main samples %v, want second 2 added once complete", got)
	}

	// gate-recorder commits the samples rows: the seconds are forgotten.
	r.commit(mainKey, altKey)
	r.flush()
	r.absent(mainKey, "committed main samples")
	r.absent(altKey, "committed alt samples")
	if st := r.h.Stats(); st.Seconds != 0 || st.Recorders != 1 {
		t.Fatalf("stats %+v after the commit, want no seconds held and the recorder", st)
	}
}

// A row is refreshed at half its TTL; one whose TTL ran out before
// gate-recorder read it was not committed, so its content is written
// again rather than forgotten.
func TestRowsAreRefreshedAtHalfTheirTTLAndAnExpiredOneIsWrittenAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{TTL: time.Minute})
	r.src.set(runtime(t0, time.Hour, false, 0))
	r.settle("main", 1, 1) // mints the recorder at once
	r.at(time.Second)
	r.flush()
	id := r.recorder()
	key := handover.SamplesKey(id, 0, ms(0))
	v := r.version(key)
	r.at(time.Second + 29*time.Second)
	r.flush()
	if r.version(key) != v {
		t.Fatal("an unchanged row was written again before half its TTL")
	}
	r.at(time.Second + 30*time.Second)
	r.flush()
	e, _ := r.mini.KV(ns, key)
	if e.Version == v || !e.ExpiresAt.Equal(t0.Add(91*time.Second)) {
		t.Fatalf("at half its TTL the row has version %d (was %d) and expires %v, want it written again with a fresh minute", e.Version, v, e.ExpiresAt)
	}

	r.at(92 * time.Second) // past the TTL: the broker dropped it unread
	r.absent(key, "expired")
	r.flush()
	if got := r.row(key, "rewritten samples").Samples; !sameSamples(got, samples([3]int64{ms(0), 1, 1})) {
		t.Fatalf("the expired row came back as %v, want the same second", got)
	}
	if st := r.h.Stats(); st.Seconds != 1 {
		t.Fatalf("stats %+v: an expired row's second was forgotten", st)
	}
}

// Minute roll-ups count the admitted items and cost of every settle and
// the denied ones from the stage counters' deferred + released deltas
// (the counters' state at first sight is the baseline); a minute is
// forgotten only once it is complete and committed.
func TestMinuteRollupsCountAdmittedAndDeniedAndAreForgottenWhenCompleteAndCommitted(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.src.set(runtime(t0, 0, true, 3))
	r.at(time.Second)
	r.flush()
	if rows := r.rows(); len(rows) != 0 {
		t.Fatalf("rows %v before anything was settled or denied, want none", keys(rows))
	}
	r.at(2 * time.Second)
	r.settle("main", 5, 10)
	r.src.set(runtime(t0, 0, true, 6))
	r.at(10 * time.Second)
	r.flush()
	id := r.recorder()
	key := handover.RollupKey(id, ms(0))
	lanes := map[string]handover.Lane{}
	for _, l := range r.row(key, "roll-up").Lanes {
		lanes[l.Path] = l
	}
	if m := lanes["main"]; m.Admitted != 5 || m.Cost != 10 || m.Denied != 3 {
		t.Fatalf("main lane %+v, want 5 admitted (cost 10) and 3 denied", m)
	}
	if a := lanes["alt"]; a.Admitted != 0 || a.Denied != 3 {
		t.Fatalf("alt lane %+v, want 3 denied", a)
	}

	// Committed while the minute still runs: kept, and written again.
	r.commit(key)
	r.flush()
	r.row(key, "roll-up of a running minute")

	r.at(61 * time.Second)
	r.settle("main", 1, 1)
	r.flush()
	r.commit(key)
	r.flush()
	r.absent(key, "committed complete minute")
	r.row(handover.RollupKey(id, ms(time.Minute)), "roll-up of the next minute")
	if st := r.h.Stats(); st.Minutes != 1 {
		t.Fatalf("stats %+v, want only the running minute held (one per stage with counts)", st)
	}
}

// The denials new in the ring go to their node's recorder as traces, at
// most 100 to a row; a committed traces row is forgotten; a node keeps at
// most MaxTraces; denials of graphs or nodes not running here, and those
// from before the ring was attached, are not handed over.
func TestDenialsAreHandedOverAsTracesRows(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	// The relay's ring is attached after denials were added to it.
	before := &denial.Ring{}
	for i := range 7 {
		before.Add(store.Denial{At: int64(i), Application: "a", Graph: "g", Node: "n", Path: "main", Outcome: "denied", BudgetID: "old"})
	}
	r.h.SetDenials(before)
	r.src.set(runtime(t0, 0, false, 0))
	r.flush()
	for i := range 150 {
		before.Add(store.Denial{At: ms(time.Duration(i) * time.Millisecond), Application: "a", Graph: "g", Node: "n", Path: "main", Outcome: "denied", BudgetID: "b"})
	}
	before.Add(store.Denial{Application: "a", Graph: "g", Node: "elsewhere", BudgetID: "x"})
	before.Add(store.Denial{Application: "a", Graph: "other", Node: "n", BudgetID: "x"})
	r.flush()
	id := r.recorder()
	first, second := r.row(handover.TracesKey(id, 1), "first traces"), r.row(handover.TracesKey(id, 101), "second traces")
	if len(first.Traces) != 100 || first.Traces[0].Seq != 1 || first.Traces[0].At != ms(0) || first.Traces[99].Seq != 100 || len(second.Traces) != 50 {
		t.Fatalf("traces rows of %d and %d (first %+v), want 100 oldest first from seq 1, then 50", len(first.Traces), len(second.Traces), first.Traces[0])
	}
	for _, row := range []handover.Row{first, second} {
		for _, tr := range row.Traces {
			if tr.BudgetID != "b" || tr.Outcome != "denied" || tr.Path != "main" {
				t.Fatalf("trace %+v is not one of node n's 150 denials", tr)
			}
		}
	}
	r.commit(handover.TracesKey(id, 1))
	r.flush()
	r.absent(handover.TracesKey(id, 1), "committed traces")
	if st := r.h.Stats(); st.Traces != 50 {
		t.Fatalf("stats %+v after the first row was committed, want 50 traces held", st)
	}
	for range 600 {
		before.Add(store.Denial{At: ms(time.Second), Application: "a", Graph: "g", Node: "n", Path: "main", Outcome: "denied", BudgetID: "c"})
	}
	r.flush()
	if st := r.h.Stats(); st.Traces != MaxTraces {
		t.Fatalf("stats %+v, want the node's traces capped at %d", st, MaxTraces)
	}
	if row := r.row(handover.TracesKey(id, 251), "the oldest kept traces"); row.Traces[0].Seq != 251 {
		t.Fatalf("the oldest trace kept is seq %d, want 251 (the newest %d of 650)", row.Traces[0].Seq, MaxTraces)
	}
}

// A runtime swapped for a new one (or removed) is retired: its recorder's
// watch row is closed at that moment and keeps what it observed, the new
// runtime gets a recorder of its own, and a retired recorder is forgotten
// once everything it held was committed.
func TestASwappedOrRemovedRuntimeIsRetiredAndForgottenOnceDrained(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.src.set(runtime(t0, time.Hour, true, 0))
	r.flush()
	old := r.recorder()
	r.at(100 * time.Millisecond)
	r.settle("main", 2, 2)

	r.at(time.Second)
	r.src.set(runtime(t0.Add(time.Second), time.Hour, true, 0))
	r.flush()
	r.at(1200 * time.Millisecond)
	r.settle("main", 1, 1)
	r.at(2 * time.Second)
	r.flush()
	var fresh string
	for k := range r.rows() {
		if id := handover.RecorderOf(k); id != old {
			fresh = id
		}
	}
	if fresh == "" {
		t.Fatal("the new runtime has no recorder of its own")
	}
	if w := r.row(handover.WatchKey(old), "retired watch").Watch; w.ClosedAt != ms(time.Second) || w.Through != ms(time.Second) {
		t.Fatalf("the retired watch %+v, want closed and through at the swap (t0+1s)", w)
	}
	if got := r.row(handover.SamplesKey(old, 0, ms(0)), "retired samples").Samples; !sameSamples(got, samples([3]int64{ms(0), 2, 2})) {
		t.Fatalf("the retired recorder's samples %v, want the 2 items before the swap", got)
	}
	if got := r.row(handover.SamplesKey(fresh, 0, ms(0)), "new samples").Samples; !sameSamples(got, samples([3]int64{ms(time.Second), 1, 1})) {
		t.Fatalf("the new recorder's samples %v, want the 1 item after the swap", got)
	}
	if st := r.h.Stats(); st.Recorders != 2 {
		t.Fatalf("stats %+v, want the retired and the new recorder", st)
	}

	r.at(2 * time.Minute) // the minute of the retired roll-up is complete
	var drained []string
	for k := range r.rows() {
		if handover.RecorderOf(k) == old {
			drained = append(drained, k)
		}
	}
	r.commit(drained...)
	r.flush()
	if st := r.h.Stats(); st.Recorders != 1 {
		t.Fatalf("stats %+v after the retired recorder's rows were committed, want only the new one", st)
	}

	r.src.set()
	r.at(2*time.Minute + time.Second)
	r.flush()
	if w := r.row(handover.WatchKey(fresh), "removed runtime's watch").Watch; w.ClosedAt != ms(2*time.Minute+time.Second) {
		t.Fatalf("the watch of a removed runtime %+v, want it closed at the removal", w)
	}
}

// A settle of a runtime started since the last flush mints its recorders
// at once, rather than lose its first seconds, but settles of runtimes the
// relay does not list re-read it at most every 100 ms. After the Watch's
// end seconds are no longer kept; minutes still are.
func TestObserveMintsRecordersForANewRuntimeAndReadsTheRelayAtMostEvery100ms(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.src.set(runtime(t0, 10*time.Second, true, 0))
	r.settle("main", 1, 1)
	if st := r.h.Stats(); st.Recorders != 1 || st.Seconds != 1 || st.Minutes != 1 || r.src.called() != 1 {
		t.Fatalf("stats %+v after %d reads of the relay, want the new runtime's recorder holding the settle after one read", st, r.src.called())
	}
	unknown := func() {
		r.h.Observe(stage.Settled{App: "a", Graph: "unlisted", Path: "main", Node: "n", Items: 1})
	}
	r.at(50 * time.Millisecond)
	unknown()
	if n := r.src.called(); n != 1 {
		t.Fatalf("a settle of an unlisted graph 50 ms after a read read the relay again (%d reads)", n)
	}
	r.at(150 * time.Millisecond)
	unknown()
	if n := r.src.called(); n != 2 {
		t.Fatalf("%d reads of the relay, want a second one 150 ms after the first", n)
	}
	r.h.Observe(stage.Settled{App: "a", Graph: "g", Path: "nowhere", Node: "n", Items: 1})
	r.at(11 * time.Second) // past the Watch's end
	r.settle("main", 4, 4)
	if st := r.h.Stats(); st.Seconds != 1 || st.Minutes != 1 {
		t.Fatalf("stats %+v, want no second kept after the Watch ended (the minute still counts)", st)
	}
}

// A stage keeps at most an hour of distinct seconds: older ones are
// dropped and counted lost in the watch row, and a samples row whose
// seconds were all dropped is deleted, so nothing is both lost and
// written.
func TestSecondsPastTheHourAreCountedLostAndTheirRowDeleted(t *testing.T) {
	t.Parallel()
	// Rows live longer than the test's hour, so only a delete removes one.
	r := newRig(t, Config{TTL: 3 * time.Hour})
	r.src.set(runtime(t0, 3*time.Hour, false, 0))
	r.settle("main", 7, 7)
	r.at(time.Second)
	r.flush()
	id := r.recorder()
	firstBlock := handover.SamplesKey(id, 0, ms(0))
	r.row(firstBlock, "first minute's samples")
	for s := range MaxSeconds {
		r.at(time.Minute + time.Duration(s)*time.Second)
		r.settle("main", 1, 1)
	}
	r.at(time.Minute + MaxSeconds*time.Second)
	r.flush()
	r.absent(firstBlock, "dropped minute's samples")
	if w := r.row(handover.WatchKey(id), "watch").Watch; w.Lost != 7 {
		t.Fatalf("watch %+v, want the 7 dropped items counted lost", w)
	}
	if st := r.h.Stats(); st.Seconds != MaxSeconds || st.Lost != 7 {
		t.Fatalf("stats %+v, want %d seconds held and 7 lost", st, MaxSeconds)
	}
}

// Started, the handover flushes every Period of its clock (not before),
// keeps what a failed flush could not write (and says so), and flushes
// once more at Stop.
func TestStartFlushesEveryPeriodAndOnceMoreAtStop(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{Period: 10 * time.Second})
	r.src.set(runtime(t0, time.Hour, false, 0))
	if err := r.h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.h.Stop()
	if next, ok := r.clk.Next(); !ok || !next.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("the first flush is due at %v (%v), want one period after Start", next, ok)
	}
	r.settle("main", 2, 2)
	r.at(9 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if rows := r.rows(); len(rows) != 0 {
		t.Fatalf("rows %v before the first period, want none", keys(rows))
	}
	r.at(10 * time.Second)
	gatetest.Eventually(t, 5*time.Second, func() bool { return len(r.rows()) > 0 })
	id := r.recorder()
	gatetest.Eventually(t, 5*time.Second, func() bool {
		_, ok := r.rows()[handover.SamplesKey(id, 0, ms(0))]
		return ok
	})

	r.mini.SetError(miniqueen.RouteKV, 500)
	r.at(10*time.Second + 500*time.Millisecond)
	r.settle("main", 3, 3)
	r.at(20 * time.Second)
	gatetest.Eventually(t, 5*time.Second, func() bool { return r.logs.Has("history handover: flush failed; observations stay buffered") })
	if st := r.h.Stats(); st.Seconds != 2 {
		t.Fatalf("stats %+v after a failed flush, want both seconds still held", st)
	}
	r.mini.ClearError(miniqueen.RouteKV)
	r.at(21 * time.Second)
	r.h.Stop()
	got := r.row(handover.SamplesKey(id, 0, ms(0)), "samples after Stop").Samples
	if !sameSamples(got, samples([3]int64{ms(0), 2, 2}, [3]int64{ms(10 * time.Second), 3, 3})) {
		t.Fatalf("samples after Stop %v, want the second the failed flush kept, written by the last flush", got)
	}
	if n := r.clk.Pending(); n != 0 {
		t.Fatalf("%d waits of a stopped handover are still pending", n)
	}
}

// WithDefaults fills the period, TTL, clock and logger, and keeps what is
// set.
func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	c := Config{TTL: -time.Second}.WithDefaults()
	if c.Period != DefaultPeriod || c.TTL != DefaultTTL || c.Clock == nil || c.Logger == nil {
		t.Fatalf("defaults %+v", c)
	}
	if c := (Config{Period: time.Second, TTL: time.Hour}).WithDefaults(); c.Period != time.Second || c.TTL != time.Hour {
		t.Fatalf("set fields were replaced: %+v", c)
	}
}
