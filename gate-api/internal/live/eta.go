package live

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// eta is GET …/nodes/{node}/eta?path=… (and the target form, which answers
// for the first node in name order that has an egress queue): a bound on
// when today's backlog at the node clears its budgets, never a promise.
func (l *Live) eta(q *httpapi.Request) *httpapi.Refusal {
	e, bad := l.p.ResolveRunning(q)
	if bad != nil {
		return bad
	}
	var n *plan.Node
	if _, ok := q.Vars["node"]; ok {
		if n, bad = plane.NodeOf(q, e); bad != nil {
			return bad
		}
	} else {
		for i := range e.Plan.Nodes {
			if e.Plan.Nodes[i].EgressQueue != "" {
				n = &e.Plan.Nodes[i]
				break
			}
		}
		if n == nil {
			return httpapi.Refuse(http.StatusNotFound, wire.CodeNodeNotFound, "target '%s/%s' has no node with an egress queue: there is nothing to estimate", e.App, e.Graph)
		}
	}
	path := q.Query().Get("path")
	if path == "" {
		path = q.Query().Get("lane")
	}
	stage, bad := plane.NodeStage(e, n, path)
	if bad != nil {
		return bad
	}
	scope, bad := etaScope(q, n)
	if bad != nil {
		return bad
	}
	ans, complete := l.estimate(q.Context(), e, n, stage, scope)
	if !complete || q.Context().Err() != nil {
		// The backlog and counter reads ran out of broker time: a number
		// built without them would be a guess presented as a bound.
		return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeETAUnavailable, "the ETA of node '%s' needs the backlog and the counters from the broker, which did not answer; retry", n.Name)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, ans)
	return nil
}

// etaScope reads ?scope=: a scope value whose own limits (per key) the
// ETA also judges; nil when absent. Given once, valid UTF-8, on a node that
// counts per value, within every scoped budget's key room.
func etaScope(q *httpapi.Request, n *plan.Node) (*string, *httpapi.Refusal) {
	vals, ok := q.Query()["scope"]
	if !ok {
		return nil, nil
	}
	if len(vals) != 1 || !utf8.ValidString(vals[0]) {
		return nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "scope must be given once, as the payload carries the value").Field("scope")
	}
	if !n.Scoped() {
		return nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "node '%s' has no budget that counts per scope value: leave scope out", n.Name).Field("scope")
	}
	for i := range n.Budgets {
		b := &n.Budgets[i]
		if room := plan.ScopeRoom(b.Key); b.ScopeBy != "" && len(vals[0]) > room {
			return nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeScopeValueTooLong, "scope is %d bytes, and budget '%s' of node '%s' has room for %d; give the value the payload carries", len(vals[0]), b.ID, n.Name, max(room, 0)).
				Field("scope").Budget(b.ID).Room(int64(max(room, 0))).Bytes(int64(len(vals[0])))
		}
	}
	return &vals[0], nil
}

// estimate computes the ETA answer of one stage; complete is false when a
// backlog or the counters could not be read (whichever deadline cut the
// broker call), so the caller never answers a guess as a bound. With a
// scope value, the value's counters join at its own limit (per key: a
// runtime row, the document's keys, or the budget's count): the bound is
// then also no earlier than when its next item fits them.
func (l *Live) estimate(ctx context.Context, e *plane.Entry, n *plan.Node, st *plan.Stage, scope *string) (_ wire.ETA, complete bool) {
	now := l.p.Clock.Now()
	waitingBudget, budgetOK := l.p.Pending(ctx, st.Source, st.Group)
	var waitingWorkers int64
	workersOK := true
	if n.EgressQueue != "" {
		waitingWorkers, workersOK = l.p.Pending(ctx, n.EgressQueue, n.EgressGroup)
	}
	costPerItem := max(n.Cost.Default, 1)
	want := waitingBudget * costPerItem
	// The breaker record rides the same read: only whether it exists and
	// when its row expires matter here.
	var keyed []budget.ItemCounter
	extra := []string{n.BreakerKey}
	if scope != nil {
		cs, _, cerr := budget.ItemCounters(n, st.Path, "", *scope, true)
		for _, c := range cs {
			if c.Kind == budget.KindScoped {
				keyed = append(keyed, c)
				extra = append(extra, c.Key)
			}
		}
		if cerr == nil {
			cerr = l.p.Limiter().ItemKeyLimits(ctx, n, st.Path, *scope, keyed)
		}
		budgetOK = budgetOK && cerr == nil
	}
	live, err := l.p.Limiter().ReadNodes(ctx, []plan.Node{*n}, extra...)
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
				unknown, boundBy, resetsAt = true, new(b.ID), new(now.Add(resetsIn).UnixMilli())
			}
			continue
		}
		secs := wait.Seconds()
		if !unknown && (worst == nil || secs > *worst) {
			v := secs
			worst, boundBy, resetsAt = &v, new(b.ID), new(now.Add(resetsIn).UnixMilli())
		}
	}
	// The scope value's own counters: its next item must fit them (the
	// backlog ahead may be other values', so only one item is counted).
	var judged []string
	for i := range keyed {
		c := &keyed[i]
		judged = append(judged, fmt.Sprintf("%s at %s's own %d per window (%s)", c.Budget, *scope, c.KeyCount, c.KeySource))
		if r := live[c.Key]; r.Found && !r.NotANumber && r.ExpiresAt.After(now) {
			c.Value, c.FreesAt = r.Value, r.ExpiresAt
		}
		at, ok := c.ClearsAt(costPerItem, now)
		if !ok {
			if !unknown {
				unknown, boundBy, resetsAt = true, new(c.Budget), new(c.FreesAt.UnixMilli())
			}
			continue
		}
		anyBudget = true
		if secs := at.Sub(now).Seconds(); !unknown && (worst == nil || secs > *worst) {
			v := secs
			worst, boundBy = &v, new(c.Budget)
			if !c.FreesAt.IsZero() {
				resetsAt = new(c.FreesAt.UnixMilli())
			}
		}
	}
	var etaSeconds *int64
	switch {
	case waitingBudget == 0:
		etaSeconds = new(int64(0))
	case unknown:
		etaSeconds = nil
	case worst != nil:
		etaSeconds = new(int64(math.Ceil(*worst)))
	case !anyBudget && len(scoped) > 0:
		etaSeconds = nil
	default:
		etaSeconds = new(int64(0))
	}
	assumes := []string{"no earlier than: the backlog that is there right now, at the refill schedule the spec declares"}
	assumes = append(assumes, fmt.Sprintf("item cost is the declared cost.default (%d), not a measurement", costPerItem))
	if len(shared) > 0 {
		assumes = append(assumes, fmt.Sprintf("budgets %s are shared keys: what other nodes and graphs spend on them is invisible here", strings.Join(shared, ", ")))
	}
	switch {
	case len(judged) > 0:
		assumes = append(assumes, fmt.Sprintf("per-key budgets judged for scope %q: %s — only its next item, the backlog per key is not resolved", *scope, strings.Join(judged, ", ")))
	case len(scoped) > 0:
		assumes = append(assumes, fmt.Sprintf("per-key budgets %s are not in the number: the backlog per key is not resolved; give ?scope= a value to judge its own limit", strings.Join(scoped, ", ")))
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
		assumes = append(assumes, fmt.Sprintf("paths %s cross this node with a larger share and may take its headroom first", strings.Join(slices.Sorted(slices.Values(wider)), ", ")))
	}
	for _, other := range e.Plan.Stages {
		if other.Path == st.Path && len(other.Destinations) > 1 {
			assumes = append(assumes, "the path fans out: every admitted item becomes several items downstream")
			break
		}
	}
	if others := plane.SharedSource(e.Plan, st); len(others) > 0 {
		assumes = append(assumes, fmt.Sprintf("paths %s read the same queue at this node: waitingForBudget is every path's items behind this path's cursor, an upper bound for this path's own", strings.Join(others, ", ")))
	}
	if n.EgressQueue != "" && n.EgressGroup == "" {
		assumes = append(assumes, "waitingForWorkers is queue-level (the worst cursor) because the egress declares no group")
	}
	state := "waiting-workers"
	if waitingBudget > 0 {
		state = "waiting-budget"
	}
	return wire.ETA{
		At: now.UnixMilli(), Application: e.App, Graph: e.Graph, Node: n.Name, Path: st.Path,
		Target: e.Graph + "." + n.Name, State: state,
		AheadCost: want, EtaSeconds: etaSeconds, BoundBy: boundBy, WindowResetsAt: resetsAt,
		WaitingForBudget: waitingBudget, WaitingForWorkers: waitingWorkers,
		Assumes: strings.Join(assumes, "; "),
	}, complete
}
