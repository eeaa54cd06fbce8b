package stage

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// scoped fills partition p with n items of scope value acct.
func (r *rig) scoped(p, acct string, n int) {
	r.t.Helper()
	items := make([]string, n)
	for i := range items {
		items[i] = `{"i":` + strconv.Itoa(i) + `,"acct":"` + acct + `"}`
	}
	r.fill(p, items...)
}

// A scoped budget of 10 per window with per-key counts in the document: a
// value with its own count is held at it (higher or lower than the
// budget's), every other value at the budget's. One window (60 s, no park):
// what a value forwards is what its window admitted.
func TestAKeyWithItsOwnCountIsHeldAtItAndEveryOtherValueAtTheBudgets(t *testing.T) {
	t.Parallel()
	keys := map[string]int64{"big": 25, "small": 3}
	for _, tc := range []struct {
		acct    string
		runtime bool
		want    int64
	}{
		{"big", false, 25}, {"small", false, 3}, {"other", false, 10},
		{"big", true, 25}, {"small", true, 3}, {"other", true, 10},
	} {
		t.Run(tc.acct+map[bool]string{true: "/relay-cache", false: "/document"}[tc.runtime], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ceiling: 10, ttl: 60, scopeBy: cost.Root + ".acct", riders: true, keys: keys, runtimeKeys: tc.runtime})
			r.scoped("p", tc.acct, 40)
			for i := 0; i < 5 && r.claim(); i++ {
			}
			if got := len(r.forwarded("p")); int64(got) != tc.want {
				t.Errorf("%s forwarded %d in one window, want %d", tc.acct, got, tc.want)
			}
			if v := r.counter(plan.ScopedKey(r.key, tc.acct)); v != tc.want {
				t.Errorf("%s's counter %d, want %d", tc.acct, v, tc.want)
			}
		})
	}
}

// A runtime key limit wins over the document's count for the same value,
// and a running stage applies a change within one sub-window: the window
// after the change admits the new count.
func TestARuntimeKeyLimitWinsAndARunningStageAppliesAChange(t *testing.T) {
	t.Parallel()
	for _, riders := range []bool{true, false} {
		t.Run(map[bool]string{true: "riders", false: "separate"}[riders], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ceiling: 10, ttl: 1, scopeBy: cost.Root + ".acct", riders: riders, maxPark: 30 * time.Second,
				keys: map[string]int64{"acct-7": 2}, runtimeKeys: true})
			b := &r.s.cfg.Node.Budgets[0]
			if _, err := budget.PutKeyLimit(t.Context(), r.c, r.ns, b, "acct-7", 5, r.clock.Now()); err != nil {
				t.Fatal(err)
			}
			r.clock.onSleep = func(time.Duration) {
				if _, err := budget.PutKeyLimit(t.Context(), r.c, r.ns, b, "acct-7", 20, r.clock.Now()); err != nil {
					t.Error(err)
				}
				r.clock.onSleep = nil
			}
			r.scoped("p", "acct-7", 45)
			for i := 0; i < 20 && r.claim(); i++ {
			}
			if got := r.forwarded("p"); len(got) != 45 {
				t.Fatalf("forwarded %d, want all 45 (5, then 20 and 20)", len(got))
			}
			if v := r.counter(plan.ScopedKey(r.key, "acct-7")); v != 20 {
				t.Errorf("counter %d in the last window, want 20: the window after the change admits the new count", v)
			}
			if slept := r.clock.total(); slept < 2*time.Second || slept > 4*time.Second {
				t.Errorf("45 went in %s, want three windows (5 at the runtime limit over the document's 2, then 20, 20)", slept)
			}
		})
	}
}

// Deleting the runtime row falls back to the document's count.
func TestADeletedKeyLimitFallsBackToTheDocument(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 10, ttl: 60, scopeBy: cost.Root + ".acct", riders: true, keys: map[string]int64{"acct-7": 4}, runtimeKeys: true})
	b := &r.s.cfg.Node.Budgets[0]
	if _, err := budget.PutKeyLimit(t.Context(), r.c, r.ns, b, "acct-7", 30, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if found, err := budget.DeleteKeyLimit(t.Context(), r.c, r.ns, b, "acct-7"); err != nil || !found {
		t.Fatalf("delete: %v %v", found, err)
	}
	r.scoped("p", "acct-7", 10)
	for i := 0; i < 5 && r.claim(); i++ {
	}
	if got := len(r.forwarded("p")); got != 4 {
		t.Errorf("forwarded %d, want the document's 4", got)
	}
}

// BenchmarkStageRelayKeyRows is BenchmarkStageRelayRiders with a scoped
// budget beside the wide one (1,000 distinct values, none with a limit of
// its own) and rows=N runtime key limits of other values in kv: admission
// with 100,000 rows must cost what it costs with one (the relay reads the
// values it meets, never the rows). Reports items/s.
func BenchmarkStageRelayKeyRows(b *testing.B) {
	for _, rows := range []int{1, 100, 10_000, 100_000} {
		b.Run("rows="+strconv.Itoa(rows), func(b *testing.B) { benchKeyRows(b, rows) })
	}
}

func benchKeyRows(b *testing.B, rows int) {
	br := gatetest.NewBroker(b)
	br.RequireMini(b, "the benchmark measures the relay against the in-process broker")
	c, err := queen.New(br.URL)
	if err != nil {
		b.Fatal(err)
	}
	src, egress := br.Queue("src"), br.Queue("out")
	st, node := benchStage(br.Prefix, src, egress)
	node.Shares, node.WidestShare = map[string]float64{"main": 1}, 1
	node.Budgets = append(node.Budgets, plan.Budget{ID: "acct", Key: plan.BudgetKey(br.Prefix, "g", "n", "acct"), ScopeBy: cost.Root + ".acct",
		CountSub: 1_000_000_000, WindowSubSeconds: 1, SubWindows: 1, Count: 1_000_000_000, TimeMs: 1000, Ceilings: map[string]int64{"main": 1_000_000_000}})
	bud := &node.Budgets[1]
	row, _ := json.Marshal(budget.KeyRow{Count: 1000, At: 1})
	for start := 0; start < rows; start += 256 {
		ops := make([]queen.KVOp, 0, 256)
		for i := start; i < min(start+256, rows); i++ {
			ops = append(ops, queen.KVPut(br.Namespace(), plan.KeyLimitKey(bud.Key, "tier-"+strconv.Itoa(i)), row, queen.PutOpts{Forever: true}))
		}
		if _, err := c.KV(context.Background(), ops...); err != nil {
			b.Fatal(err)
		}
	}
	total := b.N * 200
	var batch []queen.PushItem
	for i := 0; i < total; i++ {
		batch = append(batch, queen.PushItem{Queue: src, Partition: "p" + strconv.Itoa(i%16), Payload: json.RawMessage(`{"i":` + strconv.Itoa(i) + `,"acct":"a` + strconv.Itoa(i%1000) + `"}`)})
		if len(batch) == 1000 || i == total-1 {
			if _, err := c.Push(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var moved atomic.Int64
	done := make(chan struct{})
	lim := &budget.Limiter{KV: c, NS: br.Namespace(), Keys: budget.NewKeyLimits(c, br.Namespace(), nil, 0, 0)}
	adm := NewAdmission(true, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := adm.Probe(context.Background(), lim, c, plan.RiderProbeKey("bench")); err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{App: br.Prefix, Graph: "g", Stage: st, Node: node, Client: c,
		Limiter: lim, Lease: 10 * time.Second, PollTimeout: 2 * time.Second, Admission: adm,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: func(ev Settled) {
			if moved.Add(int64(ev.Items)) == int64(total) {
				close(done)
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b.ResetTimer()
	start := time.Now()
	if err := s.Start(runCtx); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("moved %d of %d in 5 minutes", moved.Load(), total)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	<-s.Stopped()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "items/s")
	b.ReportMetric(float64(lim.Keys.Reads())/float64(b.N), "key-reads/claim")
}
