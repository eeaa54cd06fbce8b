package server

import (
	"encoding/json"
	"net/http"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// getGraph is GET /v1/apps/{app}/graphs/{name} (and twins): the live graph
// view — the stored document compiled, live counter values, breaker
// records, stage lag, and the stage counters summed across the relay
// replicas that publish a status.
func (s *Server) getGraph(q *req) *apiError {
	e, bad := s.resolve(q, "name")
	if bad != nil {
		return bad
	}
	writeJSON(q.w, http.StatusOK, s.graphView(q, e))
	return nil
}

// graphView builds the live view of one declared graph.
func (s *Server) graphView(q *req, e *entry) wire.GraphView {
	ctx := q.r.Context()
	p := e.plan
	statuses := s.cat.statuses()
	running := false
	replicas := []wire.ViewReplica{}
	type stageKey struct {
		path, node string
		hop        int
	}
	counters := map[stageKey]*store.Counters{}
	refusals := map[stageKey]*store.Refusal{}
	var countersAt *int64
	for _, r := range statuses {
		g, ok := r.Graph(e.app, e.graph)
		if !ok {
			continue
		}
		if countersAt == nil || r.At < *countersAt {
			countersAt = ptr(r.At)
		}
		replicas = append(replicas, wire.ViewReplica{Replica: r.Replica, Version: g.Version, Running: g.Running, At: r.At, Error: g.Error})
		if g.Running && g.Version == int64(p.Version) {
			running = true
		}
		for _, st := range g.Stages {
			k := stageKey{st.Path, st.Node, st.Hop}
			if counters[k] == nil {
				counters[k] = &store.Counters{}
			}
			counters[k].Add(st.Counters)
			if st.LastRefusal != nil && (refusals[k] == nil || st.LastRefusal.At > refusals[k].At) {
				lr := *st.LastRefusal
				refusals[k] = &lr
			}
		}
	}
	var keys []string
	for _, n := range p.Nodes {
		k := budget.Keys(budget.Unscoped(&n))
		keys = append(keys, k...)
	}
	live, err := s.limiter().ReadKeys(ctx, keys)
	liveOK := err == nil
	rawRows := s.breakerRecords(q, p)

	waiting := map[string]int64{}
	stages := make([]wire.ViewStage, 0, len(p.Stages))
	for _, st := range p.Stages {
		k := stageKey{st.Path, st.Node, st.Hop}
		var stageLag *int64
		if n, ok := s.pending(ctx, st.Source, st.Group); ok {
			stageLag = &n
			waiting[st.Node] += n
		}
		dests := make([]string, 0, len(st.Destinations))
		for _, d := range st.Destinations {
			dests = append(dests, d.Queue)
		}
		c := counters[k]
		if c == nil {
			c = &store.Counters{}
		}
		stages = append(stages, wire.ViewStage{
			Path: st.Path, Node: st.Node, Hop: st.Hop, Share: st.Share, Source: st.Source,
			Group: st.Group, Batch: st.Batch, Concurrency: st.Concurrency, Lag: stageLag,
			Destinations: dests, Counters: *c, ItemsPerCommit: c.ItemsPerCommit(), LastRefusal: refusals[k],
		})
	}
	nodes := make([]wire.ViewNode, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		var paths []string
		for _, st := range p.Stages {
			if st.Node == n.Name && !contains(paths, st.Path) {
				paths = append(paths, st.Path)
			}
		}
		budgets := make([]wire.ViewBudget, 0, len(n.Budgets))
		for _, b := range n.Budgets {
			vb := wire.ViewBudget{
				ID: b.ID, Key: b.Key, ScopeBy: optional(b.ScopeBy), SharedKey: sharedKey(b),
				Count: b.Count, TimeMs: b.TimeMs, SubWindows: b.SubWindows, CountSub: b.CountSub,
				WindowSubSeconds: b.WindowSubSeconds, Confidence: b.Confidence, Ceilings: b.Ceilings,
			}
			if b.ScopeBy == "" && liveOK {
				row := live[b.Key]
				vb.Value = ptr(row.Value)
				if end, ok := row.WindowEnd(); ok {
					vb.ExpiresAt = ptr(end)
				}
				if c := b.WidestCeiling(); c > 0 {
					vb.Utilisation = ptr(budget.Utilisation(row.Value, c))
				}
			}
			budgets = append(budgets, vb)
		}
		var breaker *wire.Breaker
		if rec, ok := rawRows[n.BreakerKey]; ok {
			breaker = &wire.Breaker{At: rec.At, RetryAfterSeconds: rec.RetryAfterSeconds, Until: rec.Until(), By: rec.By}
		}
		var workers int64
		if n.EgressQueue != "" {
			workers, _ = s.pending(ctx, n.EgressQueue, n.EgressGroup)
		}
		nodes = append(nodes, wire.ViewNode{
			Node: n.Name, IngressQueue: optional(n.IngressQueue), IngressOwnedByGate: n.IngressOwnedByGate,
			HTTPPush: n.HTTPPush, EgressQueue: optional(n.EgressQueue), EgressGroup: optional(n.EgressGroup),
			Paths: nonNil(paths), Shares: n.Shares, Budgets: budgets, Breaker: breaker,
			WaitingForBudget: waiting[n.Name], WaitingForWorkers: workers,
		})
	}
	var countersWindow *uint32
	if p.CountersWindowSeconds > 0 {
		countersWindow = ptr(p.CountersWindowSeconds)
	}
	return wire.GraphView{
		Application: e.app, Graph: e.graph, Name: e.graph, Version: p.Version,
		Running: running, Persisted: true, Namespace: p.Namespace, Counters: countersWindow,
		Watching: p.Watching, At: s.now().UnixMilli(), CountersAt: countersAt, Replicas: replicas,
		Nodes: nodes, Stages: stages, Paths: viewPaths(e), Spec: json.RawMessage(e.body),
	}
}

// viewPaths renders the document's declared paths.
func viewPaths(e *entry) []wire.ViewPath {
	paths := make([]wire.ViewPath, 0, len(e.doc.Paths))
	for _, pa := range e.doc.Paths {
		hops := make([]wire.Hop, 0, len(pa.Nodes))
		for _, h := range pa.Nodes {
			hops = append(hops, wire.Hop{Names: h.Names, Fanout: h.Fanout})
		}
		paths = append(paths, wire.ViewPath{Name: pa.Name, Priority: pa.Priority, Share: pa.Share, Hops: hops})
	}
	return paths
}

// breakerRecords is the live breaker records of p's nodes, by BreakerKey;
// a failed read shows none (the view and the metrics answer without them).
func (s *Server) breakerRecords(q *req, p *plan.Plan) map[string]store.Breaker {
	out, _ := s.store.Breakers(q.r.Context(), p)
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func sharedKey(b plan.Budget) *string {
	if !b.Shared {
		return nil
	}
	return &b.SharedKey
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
