package server

import (
	"net/http"

	"github.com/queen-mq/gate/libs/budget"
)

// productMetrics is GET /v1/apps/{app}/metrics: one entry per node of every
// graph of the application — its state, binding budget and the two
// backlogs. gate-api keeps no history, so admitted_per_sec is null and a
// drain ETA is known only when nothing waits.
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
	targets := []map[string]any{}
	for _, e := range graphs {
		if e.plan == nil {
			continue
		}
		var keys []string
		for _, n := range e.plan.Nodes {
			k := budget.Keys(budget.Unscoped(&n))
			keys = append(append(keys, k...), n.BreakerKey)
		}
		live := s.readCounters(ctx, keys)
		if live == nil {
			live = map[string]liveRow{}
		}
		breakers := s.breakerRecords(q, e.plan)
		for _, n := range e.plan.Nodes {
			var waitingBudget int64
			paths := []map[string]any{}
			for _, st := range e.plan.Stages {
				if st.Node != n.Name {
					continue
				}
				w, _ := s.pending(ctx, st.Source, st.Group)
				waitingBudget += w
				paths = append(paths, map[string]any{
					"name": st.Path, "share": st.Share, "waiting_for_budget": w,
					"admitted_per_sec": nil, "drain_eta_seconds": drainETA(w),
				})
			}
			var waitingWorkers int64
			if n.EgressQueue != "" {
				waitingWorkers, _ = s.pending(ctx, n.EgressQueue, n.EgressGroup)
			}
			var binding map[string]any
			best := -1.0
			for _, b := range n.Budgets {
				if b.ScopeBy != "" {
					continue
				}
				ceiling := b.WidestCeiling()
				v := live[b.Key].value
				u := budget.Utilisation(v, ceiling)
				if u > best {
					best = u
					binding = map[string]any{
						"id": b.ID, "count": b.Count, "time_ms": b.TimeMs, "count_sub": b.CountSub,
						"window_sub_seconds": b.WindowSubSeconds, "value": v, "ceiling": ceiling,
						"utilisation": u, "confidence": b.Confidence, "cap": b.Count,
						"period_seconds": float64(b.TimeMs) / 1000,
					}
				}
			}
			state := "flowing"
			var lastBreach any
			if rec, ok := breakers[n.BreakerKey]; ok {
				state, lastBreach = "breached", rec.At
			} else if waitingBudget > 0 {
				state = "pacing"
			}
			var bindingOut any
			if binding != nil {
				bindingOut = binding
			}
			targets = append(targets, map[string]any{
				"name": e.graph + "." + n.Name, "graph": e.graph, "node": n.Name, "state": state,
				"binding_budget": bindingOut, "admitted_per_sec": nil,
				"waiting_for_budget": waitingBudget, "waiting_for_workers": waitingWorkers,
				"drain_eta_seconds": drainETA(waitingBudget), "last_breach_at": lastBreach,
				"paths": paths, "lanes": paths,
			})
		}
	}
	writeJSON(q.w, http.StatusOK, map[string]any{"application": app, "at": s.now().UnixMilli(), "targets": targets})
	return nil
}

// drainETA is 0 when nothing waits; otherwise unknown without a measured
// admission rate (gate-api keeps no history).
func drainETA(waiting int64) any {
	if waiting == 0 {
		return 0
	}
	return nil
}
