package declare_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// twoNode is the gate-bench scale scenario's graph: a Gate-owned ingress
// node and an egress node, one budget each.
func twoNode(app, graph string, count int) map[string]any {
	return map[string]any{"version": 1, "nodes": map[string]any{
		"in":  map[string]any{"ingress": true, "budgets": []any{map[string]any{"id": "in", "count": count, "timeMs": 1000}}},
		"out": map[string]any{"budgets": []any{map[string]any{"id": "out", "count": 50, "timeMs": 1000}}, "egress": app + "." + graph + ".out"},
	}, "paths": []any{map[string]any{"name": "main", "nodes": []any{"in", "out"}}}}
}

// seedGraphs stores n two-node graphs straight into kv (200 rows a call,
// the change signal bumped once) and publishes a relay replica's status
// running each of them, then has gate-api re-read both: the store and the
// status a PUT meets at n graphs, without n PUTs to build them.
func seedGraphs(tb testing.TB, h *apitest.Harness, n int) {
	tb.Helper()
	ctx := context.Background()
	var ops []queen.KVOp
	flush := func() {
		if len(ops) == 0 {
			return
		}
		res, err := h.Client.KV(ctx, ops...)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			tb.Fatalf("seeding the store: %v", err)
		}
		ops = ops[:0]
	}
	st := store.RelayStatus{Replica: "bench-relay", At: time.Now().UnixMilli()}
	for i := range n {
		g := "g" + strconv.Itoa(i)
		body, err := json.Marshal(twoNode(h.App, g, 100))
		if err != nil {
			tb.Fatal(err)
		}
		ops = append(ops, queen.KVPut(h.NS, plan.DocumentKey(h.App, g), body, queen.PutOpts{Forever: true}))
		if len(ops) == 200 {
			flush()
		}
		st.Graphs = append(st.Graphs, store.GraphStatus{App: h.App, Graph: g, Version: 1, Running: true,
			Stages: []store.StageStatus{{Path: "main", Node: "in", Hop: 0}, {Path: "main", Node: "out", Hop: 1}}})
	}
	flush()
	if err := h.Store.Put(ctx, h.App, "g0", mustJSON(tb, twoNode(h.App, "g0", 100))); err != nil {
		tb.Fatal(err) // bumps the change signal: every gate-api re-reads
	}
	if err := h.Store.PutStatus(ctx, st, 10*time.Minute); err != nil {
		tb.Fatal(err)
	}
	cat := h.Plane().Cat
	if err := cat.SyncDocuments(ctx, true); err != nil {
		tb.Fatal(err)
	}
	if err := cat.SyncStatus(ctx); err != nil {
		tb.Fatal(err)
	}
	if got := len(cat.All(h.App)); got != n {
		tb.Fatalf("gate-api sees %d graphs after seeding %d", got, n)
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkPutAtNGraphs is one PUT of a two-node graph (a hot change of a
// stored one: checked against the store, provisioned, stored) with 10, 100,
// 1,000 and 10,000 graphs stored and running. Issue 24: a PUT must cost the
// same at 10,000 graphs as at 10. BENCH_PUT_GRAPHS=10,100 narrows the
// counts.
//
//	go test -run '^$' -bench PutAtNGraphs -benchtime 200x ./gate-api/internal/declare/
func BenchmarkPutAtNGraphs(b *testing.B) {
	counts := []int{10, 100, 1000, 10000}
	if s := os.Getenv("BENCH_PUT_GRAPHS"); s != "" {
		counts = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("BENCH_PUT_GRAPHS=%q: give graph counts such as 10,100,1000", s)
			}
			counts = append(counts, n)
		}
	}
	for _, n := range counts {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			h := apitest.New(b)
			seedGraphs(b, h, n)
			// Every PUT is a hot change of one of the first (at most) 10
			// graphs, so the store keeps n graphs.
			for i := 0; b.Loop(); i++ {
				g := "g" + strconv.Itoa(i%min(n, 10))
				a := h.Do(http.MethodPut, h.GraphURL(g), twoNode(h.App, g, 100+i%2+1))
				if a.Status != http.StatusOK {
					b.Fatalf("PUT %s at %d graphs: %d %.300s", g, n, a.Status, a.Raw)
				}
			}
			b.ReportMetric(float64(n), "graphs")
		})
	}
}

// The cross-graph rules hold at 2,500 graphs although a PUT reads only
// the graphs linked to its document: one consuming g1234's egress is
// accepted with queue-cross-graph naming g1234, one delivering to g7's
// egress with egress-owner naming g7; and a named ingress that a graph
// stored behind this process's back (by its change row, as another
// gate-api would) already reads is refused by ingress-owner naming it.
func TestCrossGraphRulesAtManyGraphs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("seeds 2,500 graphs")
	}
	h := apitest.New(t)
	seedGraphs(t, h, 2500)
	warned := func(a apitest.Answer, rule, graph string) bool {
		ws, _ := a.Body["warnings"].([]any)
		for _, w := range ws {
			if s, _ := w.(string); strings.HasPrefix(s, "["+rule+"] ") && strings.Contains(s, "/"+graph+":") {
				return true
			}
		}
		return false
	}
	d := twoNode(h.App, "copier", 10)
	d["nodes"].(map[string]any)["in"].(map[string]any)["ingress"] = map[string]any{"queue": h.App + ".g1234.out"}
	if a := h.Expect(h.Do(http.MethodPut, h.GraphURL("copier"), d), http.StatusOK); !warned(a, "queue-cross-graph", "g1234") {
		t.Fatalf("consuming g1234's egress at 2,500 graphs: no queue-cross-graph naming g1234: %.600s", a.Raw)
	}
	d = twoNode(h.App, "twin", 10)
	d["nodes"].(map[string]any)["out"].(map[string]any)["egress"] = h.App + ".g7.out"
	if a := h.Expect(h.Do(http.MethodPut, h.GraphURL("twin"), d), http.StatusOK); !warned(a, "egress-owner", "g7") {
		t.Fatalf("sharing g7's egress at 2,500 graphs: no egress-owner naming g7: %.600s", a.Raw)
	}
	// Another process stores g2600 with a named ingress; this one has not
	// read it yet.
	other := twoNode(h.App, "g2600", 10)
	other["nodes"].(map[string]any)["in"].(map[string]any)["ingress"] = map[string]any{"queue": h.App + ".feed"}
	if err := h.Store.Put(context.Background(), h.App, "g2600", mustJSON(t, other)); err != nil {
		t.Fatal(err)
	}
	thief := twoNode(h.App, "thief", 10)
	thief["nodes"].(map[string]any)["in"].(map[string]any)["ingress"] = map[string]any{"queue": h.App + ".feed"}
	a := h.Expect(h.Do(http.MethodPut, h.GraphURL("thief"), thief), http.StatusConflict)
	if a.Str("rule") != "ingress-owner" || !strings.Contains(h.ErrorBody(a), "g2600") {
		t.Fatalf("a named ingress another process just declared: %.600s", a.Raw)
	}
	if h.Stored(h.App, "thief") {
		t.Fatal("the refused graph was stored")
	}
}
