package live

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// getGraph is GET /v1/apps/{app}/graphs/{name} (and twins): the live graph
// view — the stored document compiled, live counter values, breaker
// records, stage lag, and the stage counters summed across the relay
// replicas that publish a status.
//
// The answer carries the stored document's ETag (store.ETag: it validates
// the document under spec, not the live numbers around it, so the view is
// never cached: Cache-Control: no-store). If-Match with another tag is
// 412; If-None-Match naming the stored document is 304 without a body.
func (l *Live) getGraph(q *httpapi.Request) *httpapi.Refusal {
	cond, bad := httpapi.ReadPreconditions(q.R.Header)
	if bad != nil {
		return bad
	}
	e, bad := l.p.Resolve(q, "name")
	if bad != nil {
		return bad
	}
	etag := store.ETag(e.Body)
	switch v := cond.Evaluate(etag); v {
	case httpapi.FailedIfMatch:
		return l.p.PreconditionFailed(q.Context(), e.App, e.Graph, cond, v, etag, new(int64(e.Plan.Version)))
	case httpapi.FailedIfNoneMatch:
		q.W.Header().Set("ETag", etag)
		q.W.Header().Set("Cache-Control", "no-store")
		q.W.WriteHeader(http.StatusNotModified)
		return nil
	}
	q.W.Header().Set("ETag", etag)
	q.W.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(q.W, http.StatusOK, l.graphView(q, e))
	return nil
}

// graphView builds the live view of one declared graph.
func (l *Live) graphView(q *httpapi.Request, e *plane.Entry) wire.GraphView {
	ctx := q.Context()
	p := e.Plan
	running := false
	replicas := []wire.ViewReplica{}
	type stageKey struct {
		path, node string
		hop        int
	}
	counters := map[stageKey]*store.Counters{}
	refusals := map[stageKey]*store.Refusal{}
	var countersAt *int64
	for _, r := range l.p.Cat.Runs(e.App, e.Graph) {
		g := r.Status
		if countersAt == nil || r.At < *countersAt {
			countersAt = new(r.At)
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
	live, err := l.p.Limiter().ReadNodes(ctx, p.Nodes)
	liveOK := err == nil
	rawRows := l.p.Breakers(ctx, p)

	stages := make([]wire.ViewStage, 0, len(p.Stages))
	for _, st := range p.Stages {
		k := stageKey{st.Path, st.Node, st.Hop}
		var stageLag *int64
		if n, ok := l.p.Pending(ctx, st.Source, st.Group); ok {
			stageLag = &n
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
	settled := l.settleStats(q, e, p)
	nodes := make([]wire.ViewNode, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		var paths []string
		for _, st := range p.Stages {
			if st.Node == n.Name && !slices.Contains(paths, st.Path) {
				paths = append(paths, st.Path)
			}
		}
		budgets := make([]wire.ViewBudget, 0, len(n.Budgets))
		for _, b := range n.Budgets {
			vb := wire.ViewBudget{
				ID: b.ID, Key: b.Key, ScopeBy: plane.Optional(b.ScopeBy), SharedKey: sharedKey(b),
				Count: b.Count, TimeMs: b.TimeMs, SubWindows: b.SubWindows, CountSub: b.CountSub,
				WindowSubSeconds: b.WindowSubSeconds, Confidence: b.Confidence, Ceilings: b.Ceilings,
				WhenOp: nonNil(b.WhenOp),
			}
			if b.ScopeBy == "" && liveOK {
				row := live[b.Key]
				vb.Value = new(row.Value)
				if end, ok := row.WindowEnd(); ok {
					vb.ExpiresAt = new(end)
				}
				if c := b.WidestCeiling(); c > 0 {
					vb.Utilisation = new(budget.Utilisation(row.Value, c))
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
			workers, _ = l.p.Pending(ctx, n.EgressQueue, n.EgressGroup)
		}
		nodes = append(nodes, wire.ViewNode{
			Node: n.Name, IngressQueue: plane.Optional(n.IngressQueue), IngressOwnedByGate: n.IngressOwnedByGate,
			HTTPPush: n.HTTPPush, EgressQueue: plane.Optional(n.EgressQueue), EgressGroup: plane.Optional(n.EgressGroup),
			Paths: plane.NonNil(paths), Shares: n.Shares, Budgets: budgets, Breaker: breaker,
			WaitingForBudget: waitingAt(ctx, l.p, p, n.Name), WaitingForWorkers: workers,
			Settle: settled[n.Name],
		})
	}
	var countersWindow *uint32
	if p.CountersWindowSeconds > 0 {
		countersWindow = new(p.CountersWindowSeconds)
	}
	return wire.GraphView{
		Application: e.App, Graph: e.Graph, Name: e.Graph, Version: p.Version,
		Running: running, Persisted: true, Namespace: p.Namespace, Counters: countersWindow,
		Watching: p.Watching, At: l.p.Clock.Now().UnixMilli(), CountersAt: countersAt, Replicas: replicas,
		Nodes: nodes, Stages: stages, Paths: viewPaths(e), Spec: json.RawMessage(e.Body),
	}
}

// viewPaths renders the document's declared paths.
func viewPaths(e *plane.Entry) []wire.ViewPath {
	paths := make([]wire.ViewPath, 0, len(e.Doc.Paths))
	for _, pa := range e.Doc.Paths {
		hops := make([]wire.Hop, 0, len(pa.Nodes))
		for _, h := range pa.Nodes {
			hops = append(hops, wire.Hop{Names: h.Names, Fanout: h.Fanout})
		}
		paths = append(paths, wire.ViewPath{Name: pa.Name, Priority: pa.Priority, Share: pa.Share, Hops: hops})
	}
	return paths
}

func sharedKey(b plan.Budget) *string {
	if !b.Shared {
		return nil
	}
	return &b.SharedKey
}

// waitingAt is a node's waiting_for_budget: plane.NodeWaiting, 0 when no
// backlog could be read.
func waitingAt(ctx context.Context, p *plane.Plane, pl *plan.Plan, node string) int64 {
	n, _ := p.NodeWaiting(ctx, pl, node)
	return n
}

// nonNil is ops, or an empty list for none (the wire never says null).
func nonNil(ops []string) []string {
	if ops == nil {
		return []string{}
	}
	return ops
}
