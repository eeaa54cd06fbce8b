package server

import (
	"encoding/json"
	"net/http"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
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
	ctx := q.r.Context()
	p := e.plan
	statuses := s.cat.statuses()
	running := false
	replicas := []map[string]any{}
	type stageKey struct {
		path, node string
		hop        int
	}
	counters := map[stageKey]*store.Counters{}
	refusals := map[stageKey]*store.Refusal{}
	for _, r := range statuses {
		g, ok := r.Graph(e.app, e.graph)
		if !ok {
			continue
		}
		rep := map[string]any{"replica": r.Replica, "version": g.Version, "running": g.Running, "at": r.At}
		if g.Error != "" {
			rep["error"] = g.Error
		}
		replicas = append(replicas, rep)
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
		keys = append(keys, n.BreakerKey)
	}
	live := s.readCounters(ctx, keys)
	liveOK := live != nil
	if live == nil {
		live = map[string]liveRow{}
	}
	rawRows := s.breakerRecords(q, p)

	waiting := map[string]int64{}
	stages := make([]map[string]any, 0, len(p.Stages))
	for _, st := range p.Stages {
		k := stageKey{st.Path, st.Node, st.Hop}
		var stageLag any
		if n, ok := s.pending(ctx, st.Source, st.Group); ok {
			stageLag = n
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
		var lr any
		if r := refusals[k]; r != nil {
			lr = r
		}
		stages = append(stages, map[string]any{
			"path": st.Path, "node": st.Node, "hop": st.Hop, "share": st.Share, "source": st.Source,
			"group": st.Group, "batch": st.Batch, "concurrency": st.Concurrency, "lag": stageLag,
			"destinations": dests, "counters": c, "itemsPerCommit": c.ItemsPerCommit(), "lastRefusal": lr,
		})
	}
	nodes := make([]map[string]any, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		var paths []string
		for _, st := range p.Stages {
			if st.Node == n.Name && !contains(paths, st.Path) {
				paths = append(paths, st.Path)
			}
		}
		budgets := make([]map[string]any, 0, len(n.Budgets))
		for _, b := range n.Budgets {
			var value, expiresAt, util any
			if b.ScopeBy == "" && liveOK {
				row := live[b.Key]
				value = row.value
				if row.found && !row.expiresAt.IsZero() {
					expiresAt = row.expiresAt.UnixMilli()
				}
				if c := b.WidestCeiling(); c > 0 {
					util = budget.Utilisation(row.value, c)
				}
			}
			budgets = append(budgets, map[string]any{
				"id": b.ID, "key": b.Key, "scopeBy": optional(b.ScopeBy), "sharedKey": sharedKey(b),
				"count": b.Count, "timeMs": b.TimeMs, "subWindows": b.SubWindows, "countSub": b.CountSub,
				"windowSubSeconds": b.WindowSubSeconds, "confidence": b.Confidence,
				"value": value, "expiresAt": expiresAt, "utilisation": util, "ceilings": b.Ceilings,
			})
		}
		var breaker any
		if rec, ok := rawRows[n.BreakerKey]; ok {
			breaker = map[string]any{"at": rec.At, "retryAfterSeconds": rec.RetryAfterSeconds, "until": rec.Until(), "by": rec.By}
		}
		var workers int64
		if n.EgressQueue != "" {
			workers, _ = s.pending(ctx, n.EgressQueue, n.EgressGroup)
		}
		nodes = append(nodes, map[string]any{
			"node": n.Name, "ingressQueue": optional(n.IngressQueue), "ingressOwnedByGate": n.IngressOwnedByGate,
			"httpPush": n.HTTPPush, "egressQueue": optional(n.EgressQueue), "egressGroup": optional(n.EgressGroup),
			"paths": nonNil(paths), "shares": n.Shares, "budgets": budgets, "breaker": breaker,
			"waiting_for_budget": waiting[n.Name], "waiting_for_workers": workers,
		})
	}
	paths := make([]map[string]any, 0, len(e.doc.Paths))
	for _, pa := range e.doc.Paths {
		hops := make([]any, 0, len(pa.Nodes))
		for _, h := range pa.Nodes {
			if h.Fanout {
				hops = append(hops, h.Names)
			} else {
				hops = append(hops, h.Names[0])
			}
		}
		var share any
		if pa.Share != nil {
			share = *pa.Share
		}
		paths = append(paths, map[string]any{"name": pa.Name, "priority": pa.Priority, "share": share, "hops": hops})
	}
	var countersWindow any
	if p.CountersWindowSeconds > 0 {
		countersWindow = p.CountersWindowSeconds
	}
	writeJSON(q.w, http.StatusOK, map[string]any{
		"application": e.app, "graph": e.graph, "name": e.graph, "version": p.Version,
		"running": running, "persisted": true, "namespace": p.Namespace, "counters": countersWindow,
		"watching": p.Watching, "replicas": replicas,
		"nodes": nodes, "stages": stages, "paths": paths, "spec": json.RawMessage(e.body),
	})
	return nil
}

// breakerRecords reads the breaker records of every node of p.
func (s *Server) breakerRecords(q *req, p *plan.Plan) map[string]store.Breaker {
	out := map[string]store.Breaker{}
	keys := make([]string, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		keys = append(keys, n.BreakerKey)
	}
	res, err := s.client.KV(q.r.Context(), kvGetMany(s.cfg.KVNamespace, keys))
	if err != nil || res.Refused() || len(res.Results) != 1 {
		return out
	}
	for _, r := range res.Results[0].Rows {
		var b store.Breaker
		if json.Unmarshal(r.Value, &b) == nil {
			out[r.Key] = b
		}
	}
	return out
}

func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func sharedKey(b plan.Budget) any {
	if !b.Shared {
		return nil
	}
	return b.SharedKey
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
