package insight_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/simulate"
	"github.com/queen-mq/gate/libs/wire"
)

// The whole-graph simulation reads its paths in parallel, the hours not
// sealed yet in the background, and feeds the replay an hour at a time.
// On a randomized recording — two recorders per path, sealed and unsealed
// hours, empty seconds — its answer is exactly the replay of the seconds
// written, summed in memory by the test and handed over whole.
func TestSimulateCandidateFedIsTheWholeReplay(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	const hours = 5
	started := (time.Now().Add(-hours*time.Hour).UnixMilli() / 1000) * 1000
	watched := watchDoc(h, started)
	watched["watch"].(map[string]any)["durationSeconds"] = 6 * 3600
	storeDoc(h, t, "w", watched)
	entry := map[string]string{"main": "limit", "costly": "costly", "pc": "pc", "p1": "x", "p2": "y"}
	rnd := rand.New(rand.NewPCG(21, 4))
	written := map[string][]simulate.Second{}
	through := started + hours*3600*1000
	for path, node := range entry {
		var sums []simulate.Second
		for _, rec := range []string{"r1-" + node, "r2-" + node} {
			var secs [][3]int64
			for s := int64(0); s < hours*3600; s++ {
				if rnd.IntN(4) != 0 {
					continue
				}
				n := int64(rnd.IntN(12))
				if s%900 < 30 {
					n += 40 // bursts that make the candidate's budgets bind
				}
				secs = append(secs, [3]int64{started + s*1000, n, n * int64(1+rnd.IntN(3))})
			}
			record(h, t, db, "w", node, path, rec, started, started, through, 0, secs...)
			sums = append(sums, toSeconds(secs)...)
		}
		written[path] = sums
	}
	// Every hour that ended SealAfter ago is packed; the rest stays in the
	// samples.
	n, err := db.SealSeries(t.Context(), time.Now())
	if err != nil || n < 1 {
		t.Fatalf("sealed %d hours (%v): want a recording with sealed hours and samples", n, err)
	}

	cand := watchDoc(h, 0)
	delete(cand, "watch")
	cand["version"] = 2
	nodes := cand["nodes"].(map[string]any)
	for name, count := range map[string]int{"limit": 20, "costly": 45, "x": 30, "y": 25} {
		nodes[name].(map[string]any)["budgets"] = []any{map[string]any{"id": "b", "count": count, "timeMs": 1000}}
	}
	nodes["pc"].(map[string]any)["budgets"] = []any{map[string]any{"id": "units", "count": 50, "timeMs": 2000}}
	nodes["ip"].(map[string]any)["budgets"] = []any{map[string]any{"id": "ip", "count": 300, "timeMs": 10000, "subWindows": 10}}
	a := h.Expect(h.Do("POST", "/api/apps/"+h.App+"/graphs/w/simulate?minutes=600", cand), 200)
	var got wire.GraphSimulation
	if err := json.Unmarshal(a.Raw, &got); err != nil {
		t.Fatal(err)
	}

	raw, _ := json.Marshal(cand)
	res, err := declare.Compile(declare.Input{App: h.App, Name: "w", Body: raw, Facts: h.Plane().Facts(t.Context()), Options: h.Plane().Cfg.PlanOptions()})
	if err != nil || res.Plan == nil {
		t.Fatalf("compiling the candidate: %v %s", err, res.ErrorText())
	}
	if got.Coverage.Since != started || got.Coverage.Until != through {
		t.Fatalf("coverage %+v, want the recorders' [%d, %d)", got.Coverage, started, through)
	}
	want := simulate.Graph(simulate.GraphInput{Plan: res.Plan, Start: started, End: through, Arrivals: written}).GraphSimulation
	if want.DelayedItems == 0 || want.Items < 10000 {
		t.Fatalf("the oracle delays %d of %d items: the candidate should bind", want.DelayedItems, want.Items)
	}
	// What the route adds around the replay is not the replay's.
	want.Session, want.Coverage, want.PathCoverage, want.HasKnownGaps = got.Session, got.Coverage, got.PathCoverage, got.HasKnownGaps
	want.Assumes, want.Warnings = got.Assumes, got.Warnings
	wantRaw, _ := json.Marshal(want)
	gotRaw, _ := json.Marshal(got)
	if string(wantRaw) != string(gotRaw) {
		t.Fatalf("the route's replay\n%s\nthe replay of the seconds written\n%s", gotRaw, wantRaw)
	}
}

// toSeconds is a recorder's samples as replay input (Graph sums the rows
// of one second, as history sums the recorders').
func toSeconds(secs [][3]int64) []simulate.Second {
	out := make([]simulate.Second, 0, len(secs))
	for _, s := range secs {
		out = append(out, simulate.Second{T: s[0], Items: s[1], Cost: s[2]})
	}
	return out
}
