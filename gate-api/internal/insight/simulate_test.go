package insight_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

// watchDoc is a Watch graph: single-path nodes of cost 1 and 3, a payload
// cost node, and node ip crossed by two paths.
func watchDoc(h *apitest.Harness, startedAt int64) map[string]any {
	ingress := func(extra map[string]any) map[string]any {
		n := map[string]any{"ingress": true, "egress": h.App + ".sim." + apitest.RandomHex(3)}
		for k, v := range extra {
			n[k] = v
		}
		return n
	}
	return map[string]any{
		"version": 1,
		"watch":   map[string]any{"durationSeconds": 7200, "startedAt": startedAt},
		"nodes": map[string]any{
			"limit":  ingress(nil),
			"costly": ingress(map[string]any{"cost": 3}),
			"pc":     ingress(map[string]any{"cost": map[string]any{"path": "payload.n", "default": 1, "max": 5}}),
			"x":      map[string]any{"ingress": true},
			"y":      map[string]any{"ingress": true},
			"ip":     map[string]any{"egress": h.App + ".sim.ip"},
		},
		"paths": []any{
			map[string]any{"name": "main", "nodes": []any{"limit"}},
			map[string]any{"name": "costly", "nodes": []any{"costly"}},
			map[string]any{"name": "pc", "nodes": []any{"pc"}},
			map[string]any{"name": "p1", "priority": 0, "nodes": []any{"x", "ip"}},
			map[string]any{"name": "p2", "priority": 1, "nodes": []any{"y", "ip"}},
		},
	}
}

// storeDoc stores a document as a declare would have (with a chosen
// watch.startedAt) and refreshes the catalog.
func storeDoc(h *apitest.Harness, t testing.TB, graph string, doc map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(doc)
	if err := h.Store.Put(context.Background(), h.App, graph, raw); err != nil {
		t.Fatal(err)
	}
	if err := h.Plane().Cat.SyncDocuments(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if e := h.Plane().Cat.Lookup(h.App, graph); e == nil || e.Plan == nil {
		t.Fatalf("stored document does not compile: %+v", e)
	}
}

// record writes samples of one recorder at node/path.
func record(h *apitest.Harness, t testing.TB, db *history.DB, graph, node, path, rec string, session, started, through, lost int64, secs ...[3]int64) {
	t.Helper()
	b := history.Batch{Recorders: []history.Recorder{{ID: rec, App: h.App, Graph: graph, Node: node, Session: session, Started: started, Through: through, Lost: lost}}}
	for _, s := range secs {
		b.Samples = append(b.Samples, history.Sample{App: h.App, Graph: graph, Node: node, Path: path, Session: session, Recorder: rec, Second: s[0], Items: s[1], Cost: s[2]})
	}
	if err := db.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func simulateGET(h *apitest.Harness, graph string, q url.Values) apitest.Answer {
	return h.Do("GET", "/api/apps/"+h.App+"/graphs/"+graph+"/simulate?"+q.Encode(), nil)
}

func simQuery(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// Every 4xx of §6.3 in its order, and 503 without history.
func TestSimulateValidation(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	started := time.Now().Add(-20 * time.Minute).UnixMilli()
	storeDoc(h, t, "w", watchDoc(h, started))
	h.Expect(h.Do("PUT", h.GraphURL("enforced"), h.Target("enforced", 10)), 200)
	cases := []struct {
		name, graph string
		q           url.Values
		status      int
		field, says string
	}{
		{"not in watch", "enforced", simQuery("node", "limit", "count", "10", "timeMs", "1000"), 409, "", "not in Watch"},
		{"unknown node", "w", simQuery("node", "nope", "count", "10", "timeMs", "1000"), 404, "node", "no node 'nope'"},
		{"no node", "w", simQuery("count", "10", "timeMs", "1000"), 404, "node", "no node ''"},
		{"payload cost", "w", simQuery("node", "pc", "count", "10", "timeMs", "1000"), 422, "node", "payload cost"},
		{"two stages", "w", simQuery("node", "ip", "count", "10", "timeMs", "1000"), 422, "node", "one full-share path"},
		{"count 0", "w", simQuery("node", "limit", "count", "0", "timeMs", "1000"), 422, "count", "[1, 1000000000]"},
		{"count missing", "w", simQuery("node", "limit", "timeMs", "1000"), 422, "count", "count must be"},
		{"count huge", "w", simQuery("node", "limit", "count", "1000000001", "timeMs", "1000"), 422, "count", ""},
		{"count not a number", "w", simQuery("node", "limit", "count", "ten", "timeMs", "1000"), 422, "count", "not an integer"},
		{"timeMs small", "w", simQuery("node", "limit", "count", "10", "timeMs", "99"), 422, "timeMs", "[100, 2592000000]"},
		{"timeMs large", "w", simQuery("node", "limit", "count", "10", "timeMs", "2592000001"), 422, "timeMs", ""},
		{"subWindows 0", "w", simQuery("node", "limit", "count", "10", "timeMs", "1000", "subWindows", "0"), 422, "subWindows", ""},
		{"subWindows over 3600", "w", simQuery("node", "limit", "count", "100000", "timeMs", "100000000", "subWindows", "3601"), 422, "subWindows", ""},
		{"subWindows over count", "w", simQuery("node", "limit", "count", "10", "timeMs", "100000", "subWindows", "11"), 422, "subWindows", "at most count"},
		{"cost over the sub-window", "w", simQuery("node", "costly", "count", "2", "timeMs", "1000"), 422, "count", "costs 3 but one sub-window admits 2"},
		{"minutes not a number", "w", simQuery("node", "limit", "count", "10", "timeMs", "1000", "minutes", "x"), 422, "minutes", ""},
		{"no history", "w", simQuery("node", "limit", "count", "10", "timeMs", "1000"), 503, "", "PG_HOST"},
	}
	for _, c := range cases {
		a := simulateGET(h, c.graph, c.q)
		if a.Status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, a.Status, c.status, a.Raw)
			continue
		}
		msg := h.ErrorBody(a)
		if c.field != "" && a.Str("field") != c.field {
			t.Errorf("%s: field %q, want %q", c.name, a.Str("field"), c.field)
		}
		if !strings.Contains(msg, c.says) {
			t.Errorf("%s: %q does not say %q", c.name, msg, c.says)
		}
	}
	// Candidates are refused the same way before history is needed.
	a := h.Expect(h.Do("POST", "/api/apps/"+h.App+"/graphs/enforced/simulate", h.Target("enforced", 10)), 409)
	h.ErrorBody(a)
	a = h.Expect(h.Do("POST", "/api/apps/"+h.App+"/graphs/w/simulate", "{"), 400)
	h.ErrorBody(a)
}

func simulation(h *apitest.Harness, t *testing.T, q url.Values) wire.Simulation {
	t.Helper()
	a := h.Expect(simulateGET(h, "w", q), 200)
	var s wire.Simulation
	if err := json.Unmarshal(a.Raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The two worked checks of §6.3 through the route and PostgreSQL, the
// coverage with a gap and lost items, and the cost-changed 409.
func TestSimulateFromHistory(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	started := (time.Now().Add(-20*time.Minute).UnixMilli()/1000)*1000 + 400
	s0 := started - 400 + 1000 // the first whole second of the session
	first := started - 400     // the session's first, partial second
	storeDoc(h, t, "w", watchDoc(h, started))

	// 25 items at s0, recorded over 3 s: 10 per 1 s, cost 1.
	record(h, t, db, "w", "limit", "main", "r-limit", started, started, s0+3000, 0, [3]int64{s0, 25, 25})
	got := simulation(h, t, simQuery("node", "limit", "count", "10", "timeMs", "1000"))
	if got.Items != 25 || got.DelayedItems != 15 || got.PeakBacklog != 15 || got.RemainingBacklog != 0 || got.DrainSeconds != 0 {
		t.Fatalf("worked check 1: %+v", got)
	}
	if got.Coverage.Since != first || got.Coverage.Until != s0+3000 || got.HasKnownGaps || got.Effective.Count != 10 || got.Effective.Seconds != 1 || *got.DelayedPercent != 60 {
		t.Fatalf("worked check 1 coverage/effective: %+v", got)
	}

	// 5 items of cost 3 at s0+5 s, 10 per 10 s in one window, range 0–6 s.
	record(h, t, db, "w", "costly", "costly", "r-costly", started, started, s0+6000, 0, [3]int64{s0 + 5000, 5, 15})
	got = simulation(h, t, simQuery("node", "costly", "count", "10", "timeMs", "10000", "subWindows", "1"))
	if got.DelayedItems != 2 || got.RemainingBacklog != 2 || got.DrainSeconds != 9 || got.Effective.CostPerItem != 3 {
		t.Fatalf("worked check 2: %+v", got)
	}

	// A second recorder after a 4 s gap, which dropped 3 items.
	record(h, t, db, "w", "limit", "main", "r-limit-2", started, s0+7000, s0+10000, 3, [3]int64{s0 + 8000, 4, 4})
	got = simulation(h, t, simQuery("node", "limit", "count", "10", "timeMs", "1000"))
	if got.Coverage.GapSeconds != 4 || got.Coverage.LostItems != 3 || !got.HasKnownGaps || got.Items != 29 || got.Coverage.Until != s0+10000 {
		t.Fatalf("gaps: %+v", got)
	}

	// A second whose cost is not items × the node's cost: 409.
	record(h, t, db, "w", "limit", "main", "r-limit-3", started, s0+10000, s0+12000, 0, [3]int64{s0 + 11000, 2, 5})
	a := h.Expect(simulateGET(h, "w", simQuery("node", "limit", "count", "10", "timeMs", "1000")), 409)
	if msg := h.ErrorBody(a); !strings.Contains(msg, "cost changed") {
		t.Fatalf("409 must say the cost changed: %s", msg)
	}
	// minutes is clamped, never refused for its size.
	h.Expect(simulateGET(h, "w", simQuery("node", "costly", "count", "10", "timeMs", "10000", "subWindows", "1", "minutes", "99999")), 200)
}

// A short Watch replays what it recorded: 25 items relayed in the
// recorder's first (partial) second and the 3 of the Watch's last, partial
// second are all replayed, by GET and by POST …/simulate, and the coverage
// counts both seconds (the first second used to be dropped: items 0).
func TestShortWatchReplaysItsFirstAndLastSecond(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	started := (time.Now().Add(-10*time.Minute).UnixMilli()/1000)*1000 + 700
	doc := watchDoc(h, started)
	doc["watch"] = map[string]any{"durationSeconds": 120, "startedAt": started}
	storeDoc(h, t, "w", doc)
	first := started - 700
	ends := started + 120_000 // mid-second: the session's last second is partial
	last := ends - 700
	record(h, t, db, "w", "limit", "main", "r-short", started, started+30, ends, 0, [3]int64{first, 25, 25}, [3]int64{last, 3, 3})
	got := simulation(h, t, simQuery("node", "limit", "count", "100", "timeMs", "1000"))
	if got.Items != 28 || got.Coverage.Since != first || got.Coverage.Until != last+1000 || got.HasKnownGaps {
		t.Fatalf("GET simulate of a short Watch: items %d over [%d, %d) gap %d, want 28 over [%d, %d) and no gap",
			got.Items, got.Coverage.Since, got.Coverage.Until, got.Coverage.GapSeconds, first, last+1000)
	}
	a := h.Expect(h.Do("POST", "/api/apps/"+h.App+"/graphs/w/simulate", doc), 200)
	var gs wire.GraphSimulation
	if err := json.Unmarshal(a.Raw, &gs); err != nil {
		t.Fatal(err)
	}
	if gs.Items != 28 || gs.Coverage.Since != first || gs.Coverage.Until != last+1000 {
		t.Fatalf("POST simulate of a short Watch: items %d over [%d, %d), want 28 over [%d, %d)", gs.Items, gs.Coverage.Since, gs.Coverage.Until, first, last+1000)
	}
}

// POST …/simulate compiles a candidate with the real compiler and
// replays the recorded per-path arrivals through it.
func TestSimulateCandidate(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	started := (time.Now().Add(-20*time.Minute).UnixMilli() / 1000) * 1000
	watched := watchDoc(h, started)
	storeDoc(h, t, "w", watched)
	s0 := started
	var p1, p2 [][3]int64
	for i := int64(0); i < 10; i++ {
		p1 = append(p1, [3]int64{s0 + i*1000, 30, 30})
		p2 = append(p2, [3]int64{s0 + i*1000, 30, 30})
	}
	record(h, t, db, "w", "x", "p1", "r-x", started, started, s0+10000, 0, p1...)
	record(h, t, db, "w", "y", "p2", "r-y", started, started, s0+10000, 0, p2...)
	record(h, t, db, "w", "pc", "pc", "r-pc", started, started, s0+10000, 0, [3]int64{s0, 4, 12})

	cand := watchDoc(h, 0)
	delete(cand, "watch")
	cand["version"] = 2
	nodes := cand["nodes"].(map[string]any)
	wide := []any{map[string]any{"id": "wide", "count": 100000, "timeMs": 1000}}
	for _, n := range []string{"limit", "costly", "x", "y"} {
		nodes[n].(map[string]any)["budgets"] = wide
	}
	nodes["pc"].(map[string]any)["budgets"] = []any{map[string]any{"id": "units", "count": 6, "timeMs": 1000},
		map[string]any{"id": "per-account", "count": 10, "timeMs": 1000, "scopeBy": "payload.account"}}
	nodes["ip"].(map[string]any)["budgets"] = []any{map[string]any{"id": "ip-1s", "count": 40, "timeMs": 1000}}
	cand["paths"].([]any)[4].(map[string]any)["share"] = 0.5

	a := h.Expect(h.Do("POST", "/api/apps/"+h.App+"/graphs/w/simulate", cand), 200)
	var got wire.GraphSimulation
	if err := json.Unmarshal(a.Raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.Session != started || got.Items != 10*60+4 {
		t.Fatalf("candidate %d session %d items %d: %s", got.Version, got.Session, got.Items, a.Raw)
	}
	var ip, pc *wire.SimNode
	for i := range got.Nodes {
		switch got.Nodes[i].Node {
		case "ip":
			ip = &got.Nodes[i]
		case "pc":
			pc = &got.Nodes[i]
		}
	}
	// 60 a second arrive at ip, which admits at most 40 (p2 never more
	// than 20): at least 200 are left after 10 s, bound by ip-1s, and p2's
	// share caps it at 20 a second even alone, so they take ≥ 5 s more.
	if ip.FinalBacklog < 200 || ip.BoundBy == nil || *ip.BoundBy != "ip-1s" || ip.DrainSeconds == nil || *ip.DrainSeconds < 5 || ip.Admitted != 600 {
		t.Fatalf("ip: %+v", ip)
	}
	for _, np := range ip.Paths {
		if np.Path == "p2" && (np.Ceilings[0].Ceiling != 20 || *np.Ceilings[0].PeakUtilisation > 1) {
			t.Fatalf("p2 at ip: %+v", np)
		}
	}
	// pc: 4 items of recorded cost 3 against 6 units a second: 2 wait a
	// second.
	if pc.PeakBacklog != 2 || pc.DelayedItems != 2 || pc.Admitted != 4 || len(pc.Budgets) != 1 || pc.Budgets[0].FullWindows != 2 {
		t.Fatalf("pc: %+v", pc)
	}
	if len(got.Unsupported) != 1 || got.Unsupported[0].Budget != "per-account" || got.Unsupported[0].Node != "pc" {
		t.Fatalf("unsupported: %+v", got.Unsupported)
	}
	if got.PathCoverage["p1"].Until != s0+10000 || len(got.Assumes) == 0 {
		t.Fatalf("coverage %+v", got.PathCoverage)
	}

	// A candidate the compiler refuses answers exactly as the PUT would.
	nodes["ip"].(map[string]any)["budgets"] = []any{map[string]any{"id": "ip-1s", "count": 0, "timeMs": 1000}}
	sim := h.Do("POST", "/api/apps/"+h.App+"/graphs/w/simulate", cand)
	put := h.Do("PUT", h.GraphURL("w"), cand)
	if sim.Status != put.Status || sim.Status != 422 || sim.Str("rule") == "" || sim.Str("rule") != put.Str("rule") || sim.Str("error") != put.Str("error") {
		t.Fatalf("simulate %d %s / PUT %d %s: the same refusal", sim.Status, sim.Raw, put.Status, put.Raw)
	}
	// And it stored nothing: the watched document is still the one.
	if e := h.Plane().Cat.Lookup(h.App, "w"); e.Doc.Version != 1 {
		t.Fatalf("simulate changed the graph: version %d", e.Doc.Version)
	}
}

// BenchmarkSimulateDay is GET …/simulate over 24 h of per-second samples of
// one node, through the route and PostgreSQL (target: < 300 ms).
func BenchmarkSimulateDay(b *testing.B) {
	h := apitest.New(b)
	db := h.WithHistory(b)
	started := (time.Now().Add(-24*time.Hour-time.Minute).UnixMilli() / 1000) * 1000
	doc := watchDoc(h, started)
	doc["watch"].(map[string]any)["durationSeconds"] = 3 * 86400
	storeDoc(h, b, "w", doc)
	secs := make([][3]int64, 0, 86400)
	for i := int64(0); i < 86400; i++ {
		n := 1 + i%7
		secs = append(secs, [3]int64{started + i*1000, n, n})
	}
	record(h, b, db, "w", "limit", "main", "r-day", started, started, started+86400*1000, 0, secs...)
	q := simQuery("node", "limit", "count", "4", "timeMs", "1000", "minutes", "1440")
	run := func(b *testing.B) {
		start := cpuTime()
		for b.Loop() {
			a := simulateGET(h, "w", q)
			if a.Status != 200 || a.Num("items") < 80000*4 {
				b.Fatalf("status %d items %v", a.Status, a.Body["items"])
			}
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
	b.Run("raw", run)
	sealHours(b, db)
	b.Run("sealed", run)
}

// cpuTime is this process's user+system CPU time in nanoseconds (gate-api
// runs in it; PostgreSQL does not): on a busy machine wall time per op is
// inflated, CPU time much less.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// sealHours runs gate-recorder's hourly packing of samples as of now: every
// hour but the last history.SealAfter is read packed.
func sealHours(b *testing.B, db *history.DB) {
	b.Helper()
	if n, err := db.SealSeries(b.Context(), time.Now()); err != nil || n < 20 {
		b.Fatalf("sealed %d hours (%v), want at least 20 of the day", n, err)
	}
}

// benchCandidate is a 20-node, 20-path candidate: ten entry nodes (payload
// cost, per-second and per-minute budgets, a scoped op budget) feeding ten
// exit nodes two paths each, exits sharing two keys. With watch set and no
// budgets it is the watched graph.
func benchCandidate(app string, watch map[string]any) map[string]any {
	nodes := map[string]any{}
	var paths []any
	for i := range 10 {
		entry := map[string]any{"ingress": true, "cost": map[string]any{"path": "payload.units", "default": 1, "max": 5}}
		exit := map[string]any{"egress": map[string]any{"queue": fmt.Sprintf("%s.bench.out-%02d", app, i), "group": "workers"}}
		if watch == nil {
			entry["budgets"] = []any{
				map[string]any{"id": "second", "count": 200, "timeMs": 1000},
				map[string]any{"id": "minute", "count": 9000, "timeMs": 60000, "subWindows": 60},
				map[string]any{"id": "per-account", "count": 20, "timeMs": 1000, "scopeBy": "payload.accountId", "whenOp": []any{"write.*"}},
			}
			exit["budgets"] = []any{
				map[string]any{"id": "global", "count": 120, "timeMs": 1000},
				map[string]any{"id": "ip", "count": 4000, "timeMs": 10000, "subWindows": 10, "sharedKey": fmt.Sprintf("ip-%d", i%2)},
			}
		}
		nodes[fmt.Sprintf("entry-%02d", i)] = entry
		nodes[fmt.Sprintf("exit-%02d", i)] = exit
	}
	for i := range 20 {
		prio := i / 10
		paths = append(paths, map[string]any{"name": fmt.Sprintf("path-%02d", i), "priority": prio,
			"nodes": []any{fmt.Sprintf("entry-%02d", i%10), fmt.Sprintf("exit-%02d", (i+prio)%10)}})
	}
	doc := map[string]any{"version": 1, "nodes": nodes, "paths": paths}
	if watch != nil {
		doc["watch"] = watch
	} else {
		doc["version"] = 2
	}
	return doc
}

// BenchmarkSimulateCandidateDay is POST …/simulate of the 20-node, 20-path
// candidate over 24 h of per-second, per-path recordings (1.7 M sample
// rows in PostgreSQL): the history reads and the replay, through the route.
func BenchmarkSimulateCandidateDay(b *testing.B) {
	h := apitest.New(b)
	db := h.WithHistory(b)
	started := (time.Now().Add(-24*time.Hour-time.Minute).UnixMilli() / 1000) * 1000
	storeDoc(h, b, "big", benchCandidate(h.App, map[string]any{"durationSeconds": 3 * 86400, "startedAt": started}))
	rnd := rand.New(rand.NewPCG(2, 99))
	for i := range 20 {
		path, node := fmt.Sprintf("path-%02d", i), fmt.Sprintf("entry-%02d", i%10)
		rec := "rec-" + node
		var secs [][3]int64
		for s := int64(0); s < 86400; s++ {
			n := int64(rnd.IntN(40))
			if s%600 < 20 {
				n += 80
			}
			if n > 0 {
				secs = append(secs, [3]int64{started + s*1000, n, n * int64(1+rnd.IntN(3))})
			}
		}
		record(h, b, db, "big", node, path, rec, started, started, started+86400*1000, 0, secs...)
	}
	cand := benchCandidate(h.App, nil)
	run := func(b *testing.B) {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		start := cpuTime()
		for b.Loop() {
			a := h.Do("POST", "/api/apps/"+h.App+"/graphs/big/simulate?minutes=1440", cand)
			if a.Status != 200 || a.Num("items") < 1_000_000 {
				b.Fatalf("status %d items %v: %.300s", a.Status, a.Body["items"], a.Raw)
			}
		}
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N)/(1<<20), "alloc-MiB/op")
	}
	b.Run("raw", run)
	sealHours(b, db)
	b.Run("sealed", run)
}
