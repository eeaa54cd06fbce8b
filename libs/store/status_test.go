package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// kvValueLimit is the broker's value limit (queen-wire §8.1).
const kvValueLimit = 65536

func newMiniStore(t *testing.T) (*store.Store, *miniqueen.Server) {
	t.Helper()
	b := gatetest.NewBroker(t)
	mini := b.RequireMini(t, "the rows are inspected in the fake broker")
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return store.New(c, b.Namespace()), mini
}

// twoNodeStatus is what a relay publishes of one running two-node graph.
func twoNodeStatus(app string, i int) store.GraphStatus {
	g := store.GraphStatus{App: app, Graph: fmt.Sprintf("g%d", i), Version: int64(i + 1), Running: true, Started: 1}
	for _, n := range []string{"ingress", "vendor"} {
		g.Stages = append(g.Stages, store.StageStatus{Path: "main", Node: n, Source: "scale.g.q." + n, Group: "gate.scale.g." + n,
			Counters: store.Counters{Popped: int64(i), Admitted: int64(i), Forwarded: int64(i), Commits: 1},
			Denials:  []store.DenialCount{{Budget: "vendor", Reason: "ceiling", Count: 3}}})
	}
	return g
}

// maxRows asserts every live status row of ns is below the broker's limit
// and returns the largest.
func maxRows(t *testing.T, mini *miniqueen.Server, ns string) (rows, largest int) {
	t.Helper()
	for _, k := range mini.KVKeys(ns) {
		if !strings.HasPrefix(k, "relay:") && !strings.HasPrefix(k, "status:") {
			continue
		}
		e, _ := mini.KV(ns, k)
		rows++
		largest = max(largest, len(e.Value))
		if len(e.Value) > kvValueLimit {
			t.Errorf("row %s is %d bytes, over the broker's %d", k, len(e.Value), kvValueLimit)
		}
	}
	return rows, largest
}

// 150 graphs broke the old single document (66,702 bytes at 100): as rows
// every graph is read back running, every row far below the limit.
func TestStatusOf150GraphsReadsBackEveryGraphInRowsFarBelowTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	st := store.RelayStatus{Replica: "r1", At: 1}
	for i := 0; i < 150; i++ {
		st.Graphs = append(st.Graphs, twoNodeStatus("scale", i))
	}
	if whole, _ := json.Marshal(st); len(whole) <= kvValueLimit {
		t.Fatalf("the test's status is %d bytes as one document: it must be one the broker refuses", len(whole))
	}
	if err := s.PutStatus(ctx, st, time.Minute); err != nil {
		t.Fatalf("put status of 150 graphs: %v", err)
	}
	rows, largest := maxRows(t, mini, s.Namespace())
	t.Logf("%d rows, the largest %d bytes", rows, largest)
	if rows != 151 || largest > store.StatusRowTarget {
		t.Errorf("%d rows (largest %d bytes), want 150 graph rows and a header, each within %d", rows, largest, store.StatusRowTarget)
	}
	all, err := s.Statuses(ctx)
	if err != nil || len(all) != 1 || len(all[0].Graphs) != 150 {
		t.Fatalf("statuses: %d replicas, err %v; want r1 with 150 graphs", len(all), err)
	}
	for i := 0; i < 150; i++ {
		g, ok := all[0].Graph("scale", fmt.Sprintf("g%d", i))
		if !ok || !g.Running || len(g.Stages) != 2 || g.Stages[1].Counters.Forwarded != int64(i) {
			t.Fatalf("g%d read back as %+v (found %v)", i, g, ok)
		}
	}
	one, err := s.GraphStatuses(ctx, "scale", "g1")
	if err != nil || len(one) != 1 || len(one[0].Graphs) != 1 || one[0].Graphs[0].Graph != "g1" {
		t.Fatalf("the status of g1 alone: %+v, %v; want r1 running g1 only (not g10..g19)", one, err)
	}
}

// The largest legal header: 50 denials with every name at its longest.
func TestStatusHeaderAtItsLargestLegalSizeIsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	long := strings.Repeat("n", 63)
	replica := strings.Repeat("r", store.MaxStatusReplicaBytes)
	st := store.RelayStatus{Replica: replica, At: 1}
	for i := 0; i < store.MaxStatusDenials+20; i++ {
		st.Denials = append(st.Denials, store.Denial{At: 1 << 50, Application: long, Graph: long, Node: long, Path: long, Op: long, Outcome: "denied-by-ceiling", BudgetID: long})
	}
	if err := s.PutStatus(ctx, st, time.Minute); err != nil {
		t.Fatalf("put the largest header: %v", err)
	}
	_, largest := maxRows(t, mini, s.Namespace())
	t.Logf("the largest header: %d bytes", largest)
	all, err := s.Statuses(ctx)
	if err != nil || len(all) != 1 || len(all[0].Denials) != store.MaxStatusDenials {
		t.Fatalf("statuses: %+v, %v; want the replica with its %d newest denials", len(all), err, store.MaxStatusDenials)
	}
	st.Replica += "x"
	if err := s.PutStatus(ctx, st, time.Minute); err == nil || !strings.Contains(err.Error(), "GATE_RELAY_ID") {
		t.Errorf("a replica id over %d bytes: %v, want an error naming GATE_RELAY_ID", store.MaxStatusReplicaBytes, err)
	}
}

// The largest graph row: a graph of many stages with every name at its
// longest, wedged with a long error, and a stage with thousands of denial
// reasons. It is split into parts, each under the broker's limit, and read
// back whole.
func TestGraphStatusAtItsLargestIsSplitIntoPartsAndReadBackWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	long := strings.Repeat("n", 63)
	queue := strings.Repeat("q", 255)
	g := store.GraphStatus{App: long, Graph: long, Version: 1 << 40, Running: false, Error: strings.Repeat("é", 40000), Started: 1 << 50}
	for i := 0; i < 400; i++ {
		st := store.StageStatus{Path: fmt.Sprintf("%s%03d", long[:60], i), Node: long, Hop: i, Source: queue, Group: queue,
			Counters:    store.Counters{Popped: 1 << 60, Admitted: 1 << 60, Forwarded: 1 << 60, Commits: 1 << 60, CostAdmitted: 1 << 60, Held: 1 << 60},
			LastRefusal: &store.Refusal{Budget: long, At: 1 << 50},
			Wedge:       &store.Wedge{Queue: queue, Group: queue, Partition: long, Head: long, Attempts: 1 << 30, Error: strings.Repeat("x", 100000), Escalated: true},
			Holding:     16}
		for b := 0; b < 8; b++ {
			for _, r := range []string{"ceiling", "share", "backoff"} {
				st.Denials = append(st.Denials, store.DenialCount{Budget: fmt.Sprintf("%s%d", long[:60], b), Reason: r, Count: 1 << 60})
			}
		}
		g.Stages = append(g.Stages, st)
	}
	huge := g.Stages[0]
	huge.Denials = nil
	for b := 0; b < 3000; b++ {
		huge.Denials = append(huge.Denials, store.DenialCount{Budget: fmt.Sprintf("%s%04d", long[:59], b), Reason: "ceiling", Count: 1})
	}
	g.Stages[0] = huge
	replica := strings.Repeat("r", store.MaxStatusReplicaBytes)
	if err := s.PutStatus(ctx, store.RelayStatus{Replica: replica, At: 1, Graphs: []store.GraphStatus{g}}, time.Minute); err != nil {
		t.Fatalf("put the largest graph status: %v", err)
	}
	rows, largest := maxRows(t, mini, s.Namespace())
	t.Logf("%d rows, the largest %d bytes", rows, largest)
	if rows < 3 {
		t.Errorf("%d rows: want the graph split into parts", rows)
	}
	all, err := s.Statuses(ctx)
	if err != nil || len(all) != 1 || len(all[0].Graphs) != 1 {
		t.Fatalf("statuses: %+v, %v", len(all), err)
	}
	back := all[0].Graphs[0]
	if len(back.Stages) != 400 || back.Stages[399].Hop != 399 || back.Stages[1].Denials[23].Count != 1<<60 {
		t.Fatalf("read back %d stages; want all 400 in order with their counts", len(back.Stages))
	}
	if len(back.Error) > 4096 || !strings.HasSuffix(back.Error, "…") || len(back.Stages[5].Wedge.Error) > 4096 {
		t.Errorf("free text is %d / %d bytes: want it cut to a bound and marked", len(back.Error), len(back.Stages[5].Wedge.Error))
	}
	if n := len(back.Stages[0].Denials); n == 0 || n >= 3000 {
		t.Errorf("the stage with 3000 denial reasons kept %d: want those that fit one row", n)
	}
}

// A writer writes what changed: an idle graph is not rewritten each
// period, a changed one is, a stopped one's rows are deleted, and a new
// writer under the same id (a restart) never shows the old life's rows.
func TestStatusWriterWritesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	w := s.NewStatusWriter("r1")
	st := store.RelayStatus{Replica: "r1", At: 1}
	for i := 0; i < 300; i++ {
		st.Graphs = append(st.Graphs, twoNodeStatus("scale", i))
	}
	now := time.Unix(1000, 0)
	first, err := w.Write(ctx, st, 15*time.Second, now)
	if err != nil || first.Rows != 302 || first.Calls != 4 {
		t.Fatalf("first write: %+v, %v; want 302 rows in 2 calls of graphs, the change log's and the header's", first, err)
	}
	st.At = 2
	idle, err := w.Write(ctx, st, 15*time.Second, now.Add(5*time.Second))
	if err != nil || idle.Rows != 1 {
		t.Fatalf("an idle period wrote %+v (%v); want the header alone", idle, err)
	}
	st.Graphs[7].Stages[0].Counters.Forwarded++
	st.Graphs = st.Graphs[:299]
	changed, err := w.Write(ctx, st, 15*time.Second, now.Add(10*time.Second))
	if err != nil || changed.Rows != 4 {
		t.Fatalf("one graph changed, one stopped: wrote %+v (%v); want its row, the delete, a change-log row and the header", changed, err)
	}
	if _, ok := mini.KV(s.Namespace(), store.GraphStatusKey("scale", "g299", "r1", 0)); ok {
		t.Errorf("the stopped graph's row is still stored")
	}
	refresh, err := w.Write(ctx, st, 15*time.Second, now.Add(10*time.Second+150*time.Second))
	if err != nil || refresh.Rows != 301 {
		t.Fatalf("half the rows' TTL later: wrote %+v (%v); want every row refreshed, one change-log row and the header", refresh, err)
	}
	all, err := s.Statuses(ctx)
	if err != nil || len(all) != 1 || len(all[0].Graphs) != 299 {
		t.Fatalf("statuses: %d, %v", len(all), err)
	}
	if g, _ := all[0].Graph("scale", "g7"); g.Stages[0].Counters.Forwarded != 8 {
		t.Errorf("g7 reads forwarded %d, want the changed 8", g.Stages[0].Counters.Forwarded)
	}

	// A restart under the same id: until the new life wrote its rows,
	// the old life's do not count.
	again := s.NewStatusWriter("r1")
	if _, err := again.Write(ctx, store.RelayStatus{Replica: "r1", At: 3, Graphs: st.Graphs[:1]}, 15*time.Second, now); err != nil {
		t.Fatal(err)
	}
	all, err = s.Statuses(ctx)
	if err != nil || len(all) != 1 || len(all[0].Graphs) != 1 || all[0].Graphs[0].Graph != "g0" {
		t.Fatalf("after a restart running g0 only: %+v, %v", all, err)
	}
	if err := again.Withdraw(ctx); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Statuses(ctx); len(all) != 0 {
		t.Errorf("a withdrawn replica is still listed: %+v", all)
	}
}

// The header's TTL is the replica's life: past it, no graph row counts,
// though the rows themselves live longer.
func TestGraphRowsCountOnlyWhileTheirHeaderLives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	st := store.RelayStatus{Replica: "r1", At: 1, Graphs: []store.GraphStatus{twoNodeStatus("a", 1)}}
	if err := s.PutStatus(ctx, st, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	mini.FastForward(4 * time.Second)
	if _, ok := mini.KV(s.Namespace(), store.GraphStatusKey("a", "g1", "r1", 0)); !ok {
		t.Fatalf("the graph row expired with the header: it is meant to outlive it")
	}
	if all, err := s.Statuses(ctx); err != nil || len(all) != 0 {
		t.Errorf("statuses after the header's TTL: %+v, %v; want none", all, err)
	}
}

// A write the broker refuses is an error naming the broker's reason, and
// what it did not write is written again next time.
func TestAStatusWriteTheBrokerRefusesIsAnErrorAndIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	w := s.NewStatusWriter("r1")
	st := store.RelayStatus{Replica: "r1", At: 1, Graphs: []store.GraphStatus{twoNodeStatus("a", 1)}}
	mini.SetError(miniqueen.RouteKV, 503)
	_, err := w.Write(ctx, st, time.Minute, time.Unix(0, 0))
	if err == nil || queen.StatusOf(err) != 503 {
		t.Fatalf("a refused write: %v, want the broker's 503", err)
	}
	mini.ClearError(miniqueen.RouteKV)
	got, err := w.Write(ctx, st, time.Minute, time.Unix(1, 0))
	if err != nil || got.Rows != 3 {
		t.Fatalf("after the broker recovered: %+v, %v; want the graph row written again with its change-log row and the header", got, err)
	}
}

// 2,500 stored documents list whole, page by page: before, the listing
// stopped at 1,000 and the 1,001st graph never ran.
func TestListReadsEveryDocumentPastAThousand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newMiniStore(t)
	const n = 2500
	for from := 0; from < n; from += 200 {
		var ops []queen.KVOp
		for i := from; i < min(from+200, n); i++ {
			ops = append(ops, queen.KVPut(s.Namespace(), fmt.Sprintf("graph:scale:g%d", i), json.RawMessage(fmt.Sprintf(`{"version":%d}`, i)), queen.PutOpts{Forever: true}))
		}
		if _, err := s.Client().KV(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.List(ctx)
	if err != nil || !l.Complete || len(l.Documents) != n {
		t.Fatalf("listing: %d documents, complete %v, %v; want all %d", len(l.Documents), l.Complete, err, n)
	}
	seen := map[string]bool{}
	for _, d := range l.Documents {
		seen[d.Graph] = true
	}
	for i := 0; i < n; i++ {
		if !seen[fmt.Sprintf("g%d", i)] {
			t.Fatalf("g%d is missing from the listing", i)
		}
	}
}
