package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// graphsOf is replica's graphs in a read, by graph name.
func graphsOf(t *testing.T, all []store.RelayStatus, replica string) map[string]store.GraphStatus {
	t.Helper()
	for _, st := range all {
		if st.Replica == replica {
			out := map[string]store.GraphStatus{}
			for _, g := range st.Graphs {
				out[g.Graph] = g
			}
			return out
		}
	}
	return nil
}

// deleteRow removes key behind the writer's back.
func deleteRow(t *testing.T, s *store.Store, key string) {
	t.Helper()
	if _, err := s.Client().KV(context.Background(), queen.KVDelete(s.Namespace(), key, queen.DeleteOpts{})); err != nil {
		t.Fatal(err)
	}
}

// After its first read a StatusReader follows each replica's change log:
// a changed graph is seen at the next read, and a graph row no log names
// is not read again until the safety-net full read.
func TestAStatusReaderSeesAChangedGraphAtOnceFromTheChangeLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newMiniStore(t)
	w := s.NewStatusWriter("r1")
	st := store.RelayStatus{Replica: "r1", At: 1}
	for i := 0; i < 30; i++ {
		st.Graphs = append(st.Graphs, twoNodeStatus("a", i))
	}
	now := time.Unix(1000, 0)
	if _, err := w.Write(ctx, st, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewVirtual(now)
	rd := s.NewStatusReader(store.StatusReaderConfig{Clock: clk, FullEvery: time.Hour})
	first, moved, err := rd.ReadChanged(ctx)
	if err != nil || !moved || len(graphsOf(t, first, "r1")) != 30 {
		t.Fatalf("first read: %d graphs, moved %v, %v; want the 30 graphs", len(graphsOf(t, first, "r1")), moved, err)
	}
	// Removed behind the writer's back, named by no log row: not seen
	// until the safety net.
	deleteRow(t, s, store.GraphStatusKey("a", "g2", "r1", 0))
	st.At = 2
	if _, err := w.Write(ctx, st, time.Minute, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	idle, moved, err := rd.ReadChanged(ctx)
	if err != nil || moved || len(graphsOf(t, idle, "r1")) != 30 || idle[0].At != 2 {
		t.Fatalf("idle read: moved %v, %d graphs, at %d, %v; want the cached graphs with the header's new time", moved, len(graphsOf(t, idle, "r1")), idle[0].At, err)
	}
	// A changed graph, a new graph and a withdrawn graph, each seen at the
	// next read.
	st.Graphs[5].Stages[0].Counters.Forwarded = 99
	st.Graphs = append(st.Graphs[:7], st.Graphs[8:]...) // g7 withdrawn
	st.Graphs = append(st.Graphs, twoNodeStatus("a", 40))
	if _, err := w.Write(ctx, st, time.Minute, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	after, moved, err := rd.ReadChanged(ctx)
	if err != nil || !moved {
		t.Fatalf("after a change: moved %v, %v", moved, err)
	}
	got := graphsOf(t, after, "r1")
	if got["g5"].Stages[0].Counters.Forwarded != 99 {
		t.Errorf("g5 after its change: %+v; want its new counters", got["g5"].Stages[0].Counters)
	}
	if _, ok := got["g40"]; !ok {
		t.Error("the new graph g40 is not seen")
	}
	if _, ok := got["g7"]; ok {
		t.Error("the withdrawn graph g7 is still seen")
	}
	if _, ok := got["g2"]; !ok || len(got) != 30 {
		t.Errorf("%d graphs, g2 there %v; want 30 with g2 still cached: a log read must not list every row", len(got), ok)
	}
	clk.Advance(time.Hour)
	net, err := rd.Read(ctx)
	if got := graphsOf(t, net, "r1"); err != nil || len(got) != 29 || got["g2"].Graph != "" {
		t.Fatalf("after the safety-net read: %d graphs, %v; want 29, g2 gone", len(got), err)
	}
}

// A replica whose header is gone (dead, or withdrawn) is dropped at the
// next read, and its graphs with it; a replica that comes back with a new
// epoch is read whole, without the rows of its previous life.
func TestAStatusReaderDropsADeadReplicaAndReadsANewEpochWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newMiniStore(t)
	now := time.Unix(1000, 0)
	w1, w2 := s.NewStatusWriter("r1"), s.NewStatusWriter("r2")
	if _, err := w1.Write(ctx, store.RelayStatus{Replica: "r1", At: 1, Graphs: []store.GraphStatus{twoNodeStatus("a", 1)}}, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Write(ctx, store.RelayStatus{Replica: "r2", At: 1, Graphs: []store.GraphStatus{twoNodeStatus("a", 2), twoNodeStatus("a", 3)}}, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	rd := s.NewStatusReader(store.StatusReaderConfig{Clock: clock.NewVirtual(now), FullEvery: time.Hour})
	if all, err := rd.Read(ctx); err != nil || len(all) != 2 || len(graphsOf(t, all, "r2")) != 2 {
		t.Fatalf("two replicas: %+v, %v", all, err)
	}
	if err := s.DeleteStatus(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	all, moved, err := rd.ReadChanged(ctx)
	if err != nil || !moved || len(all) != 1 || all[0].Replica != "r1" {
		t.Fatalf("after r2 died: %+v, moved %v, %v; want r1 alone", all, moved, err)
	}
	// r2 restarts under the same id: a new writer, a new epoch, one graph.
	// Its previous life's rows (g2, g3) are still stored and never count.
	w2 = s.NewStatusWriter("r2")
	if _, err := w2.Write(ctx, store.RelayStatus{Replica: "r2", At: 5, Graphs: []store.GraphStatus{twoNodeStatus("a", 4)}}, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	all, err = rd.Read(ctx)
	got := graphsOf(t, all, "r2")
	if err != nil || len(got) != 1 || got["g4"].Graph != "g4" {
		t.Fatalf("r2 restarted: %+v, %v; want only g4", got, err)
	}
}

// A hole in a replica's log (a row expired or never stored) sends the
// reader back to every row: no change is lost.
func TestAStatusReaderReadsEveryRowWhenTheLogHasAHole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	now := time.Unix(1000, 0)
	w := s.NewStatusWriter("r1")
	st := store.RelayStatus{Replica: "r1", At: 1, Graphs: []store.GraphStatus{twoNodeStatus("a", 1), twoNodeStatus("a", 2)}}
	if _, err := w.Write(ctx, st, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	rd := s.NewStatusReader(store.StatusReaderConfig{Clock: clock.NewVirtual(now), FullEvery: time.Hour})
	if _, err := rd.Read(ctx); err != nil {
		t.Fatal(err)
	}
	st.Graphs[0].Stages[0].Counters.Forwarded = 11
	if _, err := w.Write(ctx, st, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	// The log row of that write is lost.
	var logKeys []string
	for _, k := range mini.KVKeys(s.Namespace()) {
		if strings.HasPrefix(k, "statuslog:r1:") {
			logKeys = append(logKeys, k)
		}
	}
	if len(logKeys) != 2 {
		t.Fatalf("log rows %v; want one per write that changed rows", logKeys)
	}
	deleteRow(t, s, logKeys[1])
	st.Graphs[1].Stages[0].Counters.Forwarded = 22
	if _, err := w.Write(ctx, st, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	all, err := rd.Read(ctx)
	got := graphsOf(t, all, "r1")
	if err != nil || got["g1"].Stages[0].Counters.Forwarded != 11 || got["g2"].Stages[0].Counters.Forwarded != 22 {
		t.Fatalf("after a hole: g1 %+v, g2 %+v, %v; want both changes", got["g1"].Stages[0].Counters, got["g2"].Stages[0].Counters, err)
	}
}

// The largest log rows: every name at its longest, the longest replica
// id, ten thousand graphs changed in one write. Every row stays near
// StatusRowTarget, far below the broker's limit, and a reader that
// follows them sees every graph.
func TestStatusLogRowsAtTheirLargestStayBelowTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, mini := newMiniStore(t)
	now := time.Unix(1000, 0)
	replica := strings.Repeat("r", store.MaxStatusReplicaBytes)
	w := s.NewStatusWriter(replica)
	app := strings.Repeat("a", 63)
	if _, err := w.Write(ctx, store.RelayStatus{Replica: replica, At: 1}, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	rd := s.NewStatusReader(store.StatusReaderConfig{Clock: clock.NewVirtual(now), FullEvery: time.Hour})
	if _, err := rd.Read(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 10000
	st := store.RelayStatus{Replica: replica, At: 2}
	for i := 0; i < n; i++ {
		g := store.GraphStatus{App: app, Graph: fmt.Sprintf("%s%05d", strings.Repeat("g", 58), i), Version: 1 << 40, Running: true}
		st.Graphs = append(st.Graphs, g)
	}
	if _, err := w.Write(ctx, st, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	logRows, largest := 0, 0
	for _, k := range mini.KVKeys(s.Namespace()) {
		if !strings.HasPrefix(k, "statuslog:") {
			continue
		}
		if len(k) > 512 {
			t.Errorf("log key %q is %d bytes, over the broker's 512", k, len(k))
		}
		e, _ := mini.KV(s.Namespace(), k)
		logRows++
		largest = max(largest, len(e.Value))
	}
	t.Logf("%d log rows, the largest %d bytes", logRows, largest)
	if largest > store.StatusRowTarget || largest > kvValueLimit {
		t.Errorf("the largest log row is %d bytes; want at most %d", largest, store.StatusRowTarget)
	}
	all, moved, err := rd.ReadChanged(ctx)
	if err != nil || !moved || len(all) != 1 || len(all[0].Graphs) != n {
		t.Fatalf("following the log: moved %v, %v; want %d graphs", moved, err, n)
	}
}

// A write whose caller's deadline passed while its graph rows were being
// written still writes the header (on a deadline of its own): the
// replica stays live, and the rows not written are written next time.
func TestAStatusWritePastItsDeadlineStillWritesTheHeader(t *testing.T) {
	t.Parallel()
	s, _ := newMiniStore(t)
	w := s.NewStatusWriter("r1")
	st := store.RelayStatus{Replica: "r1", At: 1, Graphs: []store.GraphStatus{twoNodeStatus("a", 1)}}
	late, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := w.Write(late, st, time.Minute, time.Unix(1000, 0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write past its deadline: %v; want the deadline named", err)
	}
	ctx := context.Background()
	ids, err := s.LiveReplicas(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "r1" {
		t.Fatalf("live replicas after a late write: %v, %v; want r1 (its header written)", ids, err)
	}
	rd := s.NewStatusReader(store.StatusReaderConfig{})
	if all, err := rd.Read(ctx); err != nil || len(all) != 1 || len(all[0].Graphs) != 0 {
		t.Fatalf("after the late write: %+v, %v; want r1 live with no graph yet", all, err)
	}
	if _, err := w.Write(ctx, st, time.Minute, time.Unix(1001, 0)); err != nil {
		t.Fatal(err)
	}
	if all, err := rd.Read(ctx); err != nil || len(all) != 1 || len(all[0].Graphs) != 1 {
		t.Fatalf("the next write: %+v, %v; want the graph written then and seen", all, err)
	}
}
