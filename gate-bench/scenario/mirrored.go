package scenario

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/stack/gateapi"
	"github.com/queen-mq/gate/libs/wire"
)

const (
	// mirroredRounds is the least number of rounds of each graph.
	mirroredRounds = 5
	// mirroredBacklogs is each run's backlog in BENCH_BACKLOGs.
	mirroredBacklogs = 6
)

// mirrored measures what following a vendor meter costs the relay's
// admission (issue 26's target: within 5% of the same graph without one):
// the same one-node graph on a prefilled backlog (6 × BENCH_BACKLOG over 16
// partitions, batch 200, 1,000,000/s declared), once plain and once with
// its budget mirroring an X-RateLimit meter whose vendor states 900,000/s
// (so a meter row exists, every relay reads it every 250 ms and lowers
// each claim's ceiling with it), alternately, max(BENCH_ROUNDS, 5) times
// each, so drift in the machine's load falls on both alike. It reports
// each round, the medians, the scatter (min–max over the median) and the
// ratio of the medians.
func (b *Bench) mirrored(ctx context.Context) ([]stats.Table, error) {
	t := stats.Table{Title: "mirrored — one relay's admission with a budget that mirrors a vendor meter against the same graph without one (prefilled, batch 200, alternating)",
		Header: []string{"round", "plain admitted/s", "mirrored admitted/s", "mirrored/plain"}}
	rounds := max(b.cfg.Rounds, mirroredRounds)
	// Six times BENCH_BACKLOG: at 30,000 a run lasts a few tenths of a
	// second and one scheduling hiccup moves it by half.
	per := fullClaims(mirroredBacklogs*b.cfg.Backlog, 16, 200)
	var plain, mirrored []float64
	for i := 0; i < rounds && ctx.Err() == nil; i++ {
		var got [2]float64
		// Alternate which goes first, so neither always runs on a
		// broker that the other just filled and drained.
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, mirror := range order {
			r, err := b.mirroredRun(ctx, i, mirror, per)
			if err != nil {
				return []stats.Table{t}, err
			}
			if mirror {
				got[1] = r
				mirrored = append(mirrored, r)
			} else {
				got[0] = r
				plain = append(plain, r)
			}
		}
		t.Add(strconv.Itoa(i+1), stats.Num(got[0]), stats.Num(got[1]), fmt.Sprintf("%.3f", got[1]/got[0]))
	}
	mp, mm := median(plain), median(mirrored)
	t.Add("median", stats.Num(mp), stats.Num(mm), fmt.Sprintf("%.3f", mm/mp))
	t.Add("scatter", scatter(plain), scatter(mirrored), "")
	t.Figure("plain admitted/s median", mp)
	t.Figure("mirrored admitted/s median", mm)
	t.Figure("mirrored/plain", mm/mp)
	t.Note("scatter: (max − min) / median of each column's rounds; target (reported, not asserted): mirrored within 5%% of plain (mirrored/plain ≥ 0.95)")
	return []stats.Table{t}, ctx.Err()
}

// mirroredRun is one prefilled run of the plain or the mirrored graph,
// returning its admitted/s.
func (b *Bench) mirroredRun(ctx context.Context, round int, mirror bool, per int) (float64, error) {
	what := "plain"
	if mirror {
		what = "mirror"
	}
	graph := b.graphName("mir-" + what + strconv.Itoa(round))
	egress := b.egressQueue(graph, "")
	doc := oneNode(node(1_000_000, 1000, 0, 200, 16, "", egress))
	var then func(context.Context) error
	if mirror {
		doc["nodes"].(map[string]any)["n"].(map[string]any)["budgets"].([]any)[0].(map[string]any)["vendorMeter"] = map[string]any{"headers": "x-ratelimit"}
		then = func(ctx context.Context) error {
			// The vendor states 900,000/s: a meter row below the
			// declared count, far above what one relay admits.
			got, err := b.api.Observe(ctx, b.cfg.App, graph, "n", wire.ObserveBody{Status: 200, Headers: map[string]string{"X-RateLimit-Limit": "900000", "X-RateLimit-Reset": "60"}})
			if err != nil {
				return fmt.Errorf("observe on %s (status %d): %w", graph, gateapi.StatusOf(err), err)
			}
			if len(got.Budgets) != 1 || !got.Budgets[0].Lowered {
				return fmt.Errorf("observe on %s lowered nothing: %+v", graph, got)
			}
			return nil
		}
	}
	rr, err := b.prefillAndRelayThen(ctx, graph, doc, []string{"n"}, []string{egress}, per, 16, then)
	b.forget(graph)
	if err != nil {
		return 0, err
	}
	if !rr.Done {
		return rr.AdmittedPerSec, fmt.Errorf("%s round %d stopped at %d of %d forwarded", what, round+1, rr.Forwarded, rr.Backlog)
	}
	return rr.AdmittedPerSec, nil
}

// median of vs (0 for none).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// scatter is (max − min) / median as a percentage.
func scatter(vs []float64) string {
	m := median(vs)
	if m == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*(slices.Max(vs)-slices.Min(vs))/m)
}
