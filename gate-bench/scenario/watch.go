package scenario

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/plan"
)

// watch measures what Watch costs the relay: the same one-node graph on
// the same prefilled backlog, once enforcing a wide budget (one kv charge
// per claim) and once in Watch (no charge; every committed settle recorded
// per second for the history handover), BENCH_ROUNDS rounds with the order
// rotated and each run's queues dropped after it, medians reported.
// Declaring Watch needs gate-api to have PostgreSQL history.
func (b *Bench) watch(ctx context.Context) ([]stats.Table, error) {
	n := fullClaims(20*b.cfg.Backlog, 16, 200)
	rounds := max(1, b.cfg.Rounds)
	t := stats.Table{Title: fmt.Sprintf("watch — the same relay job (%d items, batch 200, 16 partitions) enforcing a wide budget and in Watch, median of %d runs each", n, rounds),
		Header: []string{"mode", "items/s", "items/commit", "share of enforce"}}
	rates := map[string][]float64{}
	ipc := map[string]string{}
	modes := []string{"enforce", "watch"}
	for round := 0; round < rounds; round++ {
		for k := range modes {
			mode := modes[(k+round)%len(modes)]
			// Tags of one length: both runs' names cost the same bytes.
			graph := b.graphName("watch-" + mode[:3] + strconv.Itoa(round))
			egress := b.egressQueue(graph, "")
			nd := node(1_000_000, 1000, 0, 200, 16, "", egress)
			doc := oneNode(nd)
			if mode == "watch" {
				nd["budgets"] = []any{}
				doc["watch"] = map[string]any{"durationSeconds": 3600}
			}
			rr, err := b.prefillAndRelay(ctx, graph, doc, []string{"n"}, []string{egress}, n, 16)
			b.forget(graph)
			b.dropQueues(plan.IngressQueue(b.cfg.App, graph, "n"), egress)
			if err != nil {
				return []stats.Table{t}, fmt.Errorf("%s round %d: %w", mode, round+1, err)
			}
			if !rr.Done {
				return []stats.Table{t}, fmt.Errorf("%s round %d stopped at %d of %d items", mode, round+1, rr.Forwarded, rr.Backlog)
			}
			rates[mode] = append(rates[mode], rr.AdmittedPerSec)
			ipc[mode] = ratio(rr.Forwarded, rr.Commits)
		}
	}
	same := func(r float64) float64 { return r }
	med := func(v []float64) float64 { return medianBy(slices.Clone(v), same) }
	enf, wat := med(rates["enforce"]), med(rates["watch"])
	t.Add("enforce (wide budget)", stats.Num(enf), ipc["enforce"], "100%")
	t.Add("watch", stats.Num(wat), ipc["watch"], fmt.Sprintf("%.0f%%", 100*wat/enf))
	t.Figure("enforce items/s", enf)
	t.Figure("watch items/s", wat)
	t.Note("runs (items/s): enforce %s; watch %s", joinRates(rates["enforce"], same), joinRates(rates["watch"], same))
	t.Note("target (reported, not asserted): Watch costs at most 5%% (share ≥ 95%%); Watch skips the admission kv call, records (items, cost) per second in memory and hands it to kv every 10 s")
	return []stats.Table{t}, ctx.Err()
}
