package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// eta is GET …/nodes/{node}/eta?path=… (and the target form, which answers
// for the first node in name order that has an egress queue): a bound on
// when today's backlog at the node clears its budgets, never a promise.
func (s *Server) eta(q *req) *apiError {
	e, bad := s.resolveRunning(q)
	if bad != nil {
		return bad
	}
	var n *plan.Node
	if name, ok := q.vars["node"]; ok {
		if bad := checkName("node", name); bad != nil {
			return bad
		}
		if n = e.plan.Node(name); n == nil {
			return fail(http.StatusNotFound, "no node '%s' in graph '%s/%s': its nodes are %s", name, e.app, e.graph, strings.Join(nodeNames(e.plan), ", ")).field("node")
		}
	} else {
		for i := range e.plan.Nodes {
			if e.plan.Nodes[i].EgressQueue != "" {
				n = &e.plan.Nodes[i]
				break
			}
		}
		if n == nil {
			return fail(http.StatusNotFound, "target '%s/%s' has no node with an egress queue: there is nothing to estimate", e.app, e.graph)
		}
	}
	path := q.r.URL.Query().Get("path")
	if path == "" {
		path = q.r.URL.Query().Get("lane")
	}
	var stage *plan.Stage
	var through []string
	for i := range e.plan.Stages {
		st := &e.plan.Stages[i]
		if st.Node != n.Name {
			continue
		}
		through = append(through, st.Path)
		switch {
		case path != "" && st.Path == path && stage == nil:
			stage = st
		case path == "" && (stage == nil || st.Priority < stage.Priority):
			stage = st
		}
	}
	if stage == nil {
		if path == "" {
			return fail(http.StatusNotFound, "no path crosses node '%s' of graph '%s/%s'", n.Name, e.app, e.graph).field("node")
		}
		return fail(http.StatusNotFound, "path '%s' does not cross node '%s': the paths through it are %s", path, n.Name, strings.Join(through, ", ")).field("path").with("paths", through)
	}
	ans, complete := s.estimate(q.r.Context(), e, n, stage)
	if !complete || q.r.Context().Err() != nil {
		// The backlog and counter reads ran out of broker time: a number
		// built without them would be a guess presented as a bound.
		return fail(http.StatusServiceUnavailable, "the ETA of node '%s' needs the backlog and the counters from the broker, which did not answer; retry", n.Name)
	}
	writeJSON(q.w, http.StatusOK, ans)
	return nil
}

// estimate computes the ETA answer of one stage; complete is false when a
// backlog or the counters could not be read (whichever deadline cut the
// broker call), so the caller never answers a guess as a bound.
func (s *Server) estimate(ctx context.Context, e *entry, n *plan.Node, st *plan.Stage) (_ wire.ETA, complete bool) {
	now := s.now()
	waitingBudget, budgetOK := s.pending(ctx, st.Source, st.Group)
	var waitingWorkers int64
	workersOK := true
	if n.EgressQueue != "" {
		waitingWorkers, workersOK = s.pending(ctx, n.EgressQueue, n.EgressGroup)
	}
	costPerItem := max(n.Cost.Default, 1)
	want := waitingBudget * costPerItem
	keys := budget.Keys(budget.Unscoped(n))
	// The breaker record rides the same read: only whether it exists and
	// when its row expires matter here.
	live, err := s.limiter().ReadKeys(ctx, append(append([]string{}, keys...), n.BreakerKey))
	complete = budgetOK && workersOK && err == nil
	if err != nil {
		live = map[string]budget.Reading{}
	}
	share := n.Shares[st.Path]
	var (
		worst     *float64
		unknown   bool
		boundBy   *string
		resetsAt  *int64
		anyBudget bool
		shared    []string
		scoped    []string
	)
	for _, b := range n.Budgets {
		if b.ScopeBy != "" {
			scoped = append(scoped, b.ID)
			continue
		}
		if b.Shared {
			shared = append(shared, b.ID)
		}
		anyBudget = true
		row := live[b.Key]
		resetsIn := row.ResetsIn(now)
		wait, ok := row.ClearsIn(want, &b, st.Path, now)
		if !ok {
			if !unknown {
				unknown, boundBy, resetsAt = true, ptr(b.ID), ptr(now.Add(resetsIn).UnixMilli())
			}
			continue
		}
		secs := wait.Seconds()
		if !unknown && (worst == nil || secs > *worst) {
			v := secs
			worst, boundBy, resetsAt = &v, ptr(b.ID), ptr(now.Add(resetsIn).UnixMilli())
		}
	}
	var etaSeconds *int64
	switch {
	case waitingBudget == 0:
		etaSeconds = ptr(int64(0))
	case unknown:
		etaSeconds = nil
	case worst != nil:
		etaSeconds = ptr(int64(math.Ceil(*worst)))
	case !anyBudget && len(scoped) > 0:
		etaSeconds = nil
	default:
		etaSeconds = ptr(int64(0))
	}
	assumes := []string{"no earlier than: the backlog that is there right now, at the refill schedule the spec declares"}
	assumes = append(assumes, fmt.Sprintf("item cost is the declared cost.default (%d), not a measurement", costPerItem))
	if len(shared) > 0 {
		assumes = append(assumes, fmt.Sprintf("budgets %s are shared keys: what other nodes and graphs spend on them is invisible here", strings.Join(shared, ", ")))
	}
	if len(scoped) > 0 {
		assumes = append(assumes, fmt.Sprintf("per-key budgets %s are not in the number: the backlog per key is not resolved", strings.Join(scoped, ", ")))
	}
	if row, ok := live[n.BreakerKey]; ok && row.Found {
		until := now.UnixMilli()
		if end, ok := row.WindowEnd(); ok {
			until = end
		}
		assumes = append(assumes, fmt.Sprintf("a backoff holds the node until %d (epoch ms): the number is that deadline", until))
	}
	var wider []string
	for p, sh := range n.Shares {
		if p != st.Path && sh > share {
			wider = append(wider, p)
		}
	}
	if len(wider) > 0 {
		assumes = append(assumes, fmt.Sprintf("paths %s cross this node with a larger share and may take its headroom first", strings.Join(sortedCopy(wider), ", ")))
	}
	for _, other := range e.plan.Stages {
		if other.Path == st.Path && len(other.Destinations) > 1 {
			assumes = append(assumes, "the path fans out: every admitted item becomes several items downstream")
			break
		}
	}
	if n.EgressQueue != "" && n.EgressGroup == "" {
		assumes = append(assumes, "waitingForWorkers is queue-level (the worst cursor) because the egress declares no group")
	}
	state := "waiting-workers"
	if waitingBudget > 0 {
		state = "waiting-budget"
	}
	return wire.ETA{
		At: now.UnixMilli(), Application: e.app, Graph: e.graph, Node: n.Name, Path: st.Path,
		Target: e.graph + "." + n.Name, State: state,
		AheadCost: want, EtaSeconds: etaSeconds, BoundBy: boundBy, WindowResetsAt: resetsAt,
		WaitingForBudget: waitingBudget, WaitingForWorkers: waitingWorkers,
		Assumes: strings.Join(assumes, "; "),
	}, complete
}

// ptr is a pointer to a copy of v (an optional wire field).
func ptr[T any](v T) *T {
	return &v
}

func sortedCopy(in []string) []string {
	out := append([]string{}, in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
