package live

import (
	"math"
	"net/http"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// productMetrics is GET /v1/apps/{app}/metrics (gate-runtime §3.9): one
// entry per node of every graph of the application — its state, binding
// budget, the two backlogs, and per path and in total (Σ over its paths)
// the admitted rate of the minute roll-ups and the drain ETA it gives.
// The rate is null for a graph without counters and for every graph when
// gate-api runs without history (PG_HOST unset) or cannot read it.
func (l *Live) productMetrics(q *httpapi.Request) *httpapi.Refusal {
	app := q.Vars["app"]
	if bad := plane.CheckName("app", app); bad != nil {
		return bad
	}
	ctx := q.Context()
	if l.p.Cat.Stale() {
		_ = l.p.Cat.SyncDocuments(ctx, false)
	}
	graphs := l.p.Cat.All(app)
	if len(graphs) == 0 {
		return httpapi.Refuse(http.StatusNotFound, wire.CodeApplicationNotFound, "application '%s' declares no graph: declare one with PUT /v1/apps/%s/graphs/{name}", app, app).Field("app")
	}
	// One roll-up read for every stage of the graphs with counters on.
	var stages []rollupStage
	for _, e := range graphs {
		if e.Plan == nil || e.Plan.CountersWindowSeconds == 0 {
			continue
		}
		for _, st := range e.Plan.Stages {
			stages = append(stages, rollupStage{app, e.Graph + "." + st.Node, st.Path})
		}
	}
	rates, reason := l.admittedRates(ctx, app, stages, l.p.Clock.Now())
	if len(stages) == 0 {
		// No graph of the application records roll-ups: each target's
		// null rate is its own (no counters), not the history's.
		reason = nil
	}
	targets := []wire.MetricsTarget{}
	for _, e := range graphs {
		if e.Plan == nil {
			continue
		}
		// A failed read shows every counter at 0, as an idle one.
		live, _ := l.p.Limiter().ReadNodes(ctx, e.Plan.Nodes)
		breakers := l.p.Breakers(ctx, e.Plan)
		measured := rates != nil && e.Plan.CountersWindowSeconds > 0
		for _, n := range e.Plan.Nodes {
			waitingBudget := waitingAt(ctx, l.p, e.Plan, n.Name)
			var nodeRate *float64
			if measured {
				nodeRate = new(0.0)
			}
			paths := []wire.MetricsPath{}
			for _, st := range e.Plan.Stages {
				if st.Node != n.Name {
					continue
				}
				// A path's figure is its group's backlog, which on a queue
				// other paths share holds their items too (README).
				w, _ := l.p.Pending(ctx, st.Source, st.Group)
				var pathRate *float64
				if measured {
					pathRate = new(rates[rollupStage{app, e.Graph + "." + n.Name, st.Path}])
					*nodeRate += *pathRate
				}
				paths = append(paths, wire.MetricsPath{
					Name: st.Path, Share: st.Share, WaitingForBudget: w,
					AdmittedPerSec: pathRate, DrainETASeconds: drainETA(w, pathRate),
				})
			}
			var waitingWorkers int64
			if n.EgressQueue != "" {
				waitingWorkers, _ = l.p.Pending(ctx, n.EgressQueue, n.EgressGroup)
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
				state, lastBreach = "breached", new(rec.At)
			} else if waitingBudget > 0 {
				state = "pacing"
			}
			targets = append(targets, wire.MetricsTarget{
				Name: e.Graph + "." + n.Name, Graph: e.Graph, Node: n.Name, State: state,
				BindingBudget: binding, AdmittedPerSec: nodeRate,
				WaitingForBudget: waitingBudget, WaitingForWorkers: waitingWorkers,
				DrainETASeconds: drainETA(waitingBudget, nodeRate), LastBreachAt: lastBreach,
				Paths: paths, Lanes: paths,
			})
		}
	}
	httpapi.WriteJSON(q.W, http.StatusOK, wire.ProductMetrics{Application: app, At: l.p.Clock.Now().UnixMilli(), AdmittedPerSecReason: reason, Targets: targets})
	return nil
}

// drainETA is how many seconds a backlog takes to drain at the admitted
// rate: 0 when nothing waits, ceil(waiting / rate) when the rate is known
// and above 0, else unknown (nil).
func drainETA(waiting int64, rate *float64) *int64 {
	switch {
	case waiting == 0:
		return new(int64(0))
	case rate != nil && *rate > 0:
		return new(int64(math.Ceil(float64(waiting) / *rate)))
	}
	return nil
}
