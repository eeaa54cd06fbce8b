package server

import (
	"math"
	"net/http"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/wire"
)

// productMetrics is GET /v1/apps/{app}/metrics (gate-runtime §3.9): one
// entry per node of every graph of the application — its state, binding
// budget, the two backlogs, and per path and in total (Σ over its paths)
// the admitted rate of the minute roll-ups and the drain ETA it gives.
// The rate is null for a graph without counters and for every graph when
// gate-api runs without history (PG_HOST unset) or cannot read it.
func (s *Server) productMetrics(q *req) *apiError {
	app := q.vars["app"]
	if bad := checkName("app", app); bad != nil {
		return bad
	}
	ctx := q.r.Context()
	if s.cat.stale() {
		_ = s.cat.syncDocuments(ctx, false)
	}
	graphs := s.cat.all(app)
	if len(graphs) == 0 {
		return fail(http.StatusNotFound, "application '%s' declares no graph: declare one with PUT /v1/apps/%s/graphs/{name}", app, app).field("app")
	}
	// One roll-up read for every stage of the graphs with counters on.
	var stages []rollupStage
	for _, e := range graphs {
		if e.plan == nil || e.plan.CountersWindowSeconds == 0 {
			continue
		}
		for _, st := range e.plan.Stages {
			stages = append(stages, rollupStage{app, e.graph + "." + st.Node, st.Path})
		}
	}
	rates, _ := s.admittedRates(ctx, app, stages, s.now())
	targets := []wire.MetricsTarget{}
	for _, e := range graphs {
		if e.plan == nil {
			continue
		}
		var keys []string
		for _, n := range e.plan.Nodes {
			k := budget.Keys(budget.Unscoped(&n))
			keys = append(keys, k...)
		}
		// A failed read shows every counter at 0, as an idle one.
		live, _ := s.limiter().ReadKeys(ctx, keys)
		breakers := s.breakerRecords(q, e.plan)
		measured := rates != nil && e.plan.CountersWindowSeconds > 0
		for _, n := range e.plan.Nodes {
			var waitingBudget int64
			var nodeRate *float64
			if measured {
				nodeRate = ptr(0.0)
			}
			paths := []wire.MetricsPath{}
			for _, st := range e.plan.Stages {
				if st.Node != n.Name {
					continue
				}
				w, _ := s.pending(ctx, st.Source, st.Group)
				waitingBudget += w
				var pathRate *float64
				if measured {
					pathRate = ptr(rates[rollupStage{app, e.graph + "." + n.Name, st.Path}])
					*nodeRate += *pathRate
				}
				paths = append(paths, wire.MetricsPath{
					Name: st.Path, Share: st.Share, WaitingForBudget: w,
					AdmittedPerSec: pathRate, DrainETASeconds: drainETA(w, pathRate),
				})
			}
			var waitingWorkers int64
			if n.EgressQueue != "" {
				waitingWorkers, _ = s.pending(ctx, n.EgressQueue, n.EgressGroup)
			}
			var binding *wire.BindingBudget
			best := -1.0
			for _, b := range n.Budgets {
				if b.ScopeBy != "" {
					continue
				}
				ceiling := b.WidestCeiling()
				v := live[b.Key].Value
				u := budget.Utilisation(v, ceiling)
				if u > best {
					best = u
					binding = &wire.BindingBudget{
						ID: b.ID, Count: b.Count, TimeMs: b.TimeMs, CountSub: b.CountSub,
						WindowSubSeconds: b.WindowSubSeconds, Value: v, Ceiling: ceiling,
						Utilisation: u, Confidence: b.Confidence, Cap: b.Count,
						PeriodSeconds: float64(b.TimeMs) / 1000,
					}
				}
			}
			state := "flowing"
			var lastBreach *int64
			if rec, ok := breakers[n.BreakerKey]; ok {
				state, lastBreach = "breached", ptr(rec.At)
			} else if waitingBudget > 0 {
				state = "pacing"
			}
			targets = append(targets, wire.MetricsTarget{
				Name: e.graph + "." + n.Name, Graph: e.graph, Node: n.Name, State: state,
				BindingBudget: binding, AdmittedPerSec: nodeRate,
				WaitingForBudget: waitingBudget, WaitingForWorkers: waitingWorkers,
				DrainETASeconds: drainETA(waitingBudget, nodeRate), LastBreachAt: lastBreach,
				Paths: paths, Lanes: paths,
			})
		}
	}
	writeJSON(q.w, http.StatusOK, wire.ProductMetrics{Application: app, At: s.now().UnixMilli(), Targets: targets})
	return nil
}

// drainETA is how many seconds a backlog takes to drain at the admitted
// rate: 0 when nothing waits, ceil(waiting / rate) when the rate is known
// and above 0, else unknown (nil).
func drainETA(waiting int64, rate *float64) *int64 {
	switch {
	case waiting == 0:
		return ptr(int64(0))
	case rate != nil && *rate > 0:
		return ptr(int64(math.Ceil(float64(waiting) / *rate)))
	}
	return nil
}
