package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// staleAsOf is how old a budget's asOf may be before the overview calls it
// stale (gate-runtime.md §8.2).
const staleAsOf = 90 * 24 * time.Hour

// Defaults and bounds of the console read routes' query parameters.
const (
	defaultBreachLimit = 10
	maxBreachLimit     = 1000
)

// consoleRoutes registers the console's session-free read routes of
// gate-runtime.md §4.3: they are served here (the internal plane, no
// authentication) and, through this same handler package, by gate-console
// behind a session.
func (l *Live) consoleRoutes(r *httpapi.Router) {
	get := func(name, path string, flat bool, h httpapi.Handler) {
		r.Handle(httpapi.Route{Name: name, Method: http.MethodGet, Path: path, Limit: l.p.Cfg.BodyBytes, Flat: flat}, h)
	}
	get("console-overview", "/api/overview", true, l.overview)
	get("console-apps", "/api/apps", true, l.appsList)
	get("console-targets", "/api/targets", true, l.targetsList)
	get("console-graphs", "/api/graphs", true, l.graphsList)
	get("console-graph", "/api/apps/{app}/graphs/{name}", false, l.getGraph)
	get("console-graph", "/api/graphs/{name}", true, l.getGraph)
	get("console-target", "/api/apps/{app}/targets/{name}", false, l.getGraph)
	get("console-target", "/api/targets/{name}", true, l.getGraph)
	get("console-topology", "/api/apps/{app}/graphs/{name}/topology", false, l.topology)
	get("console-topology", "/api/graphs/{name}/topology", true, l.topology)
	get("console-breaches", "/api/breaches/recent", true, l.recentBreaches)
	get("console-budgets", "/api/budgets", true, l.sharedBudgets)
	get("console-me", "/api/me", true, l.internalMe)
}

// internalMe is GET /api/me on the internal plane: no session, full rights.
func (l *Live) internalMe(q *httpapi.Request) *httpapi.Refusal {
	httpapi.WriteJSON(q.W, http.StatusOK, wire.Me{Actor: "internal", Role: "admin"})
	return nil
}

// graphTotals is one graph's counters summed over the relay replicas.
type graphTotals struct {
	running bool
	// stages by path/node/hop.
	stages map[[3]string]store.Counters
}

// totals sums the relays' published counters of every graph.
func (l *Live) totals() map[plane.GraphKey]*graphTotals {
	out := map[plane.GraphKey]*graphTotals{}
	for _, r := range l.p.Cat.Statuses() {
		for _, g := range r.Graphs {
			k := plane.GraphKey{App: g.App, Graph: g.Graph}
			t := out[k]
			if t == nil {
				t = &graphTotals{stages: map[[3]string]store.Counters{}}
				out[k] = t
			}
			t.running = t.running || g.Running
			for _, st := range g.Stages {
				id := plane.StageID(st.Path, st.Node, st.Hop)
				c := t.stages[id]
				c.Add(st.Counters)
				t.stages[id] = c
			}
		}
	}
	return out
}

// sums of a graph's counters: admitted at the first hop, deferred and
// released everywhere, forwarded at the last hop of each path.
func (t *graphTotals) sums(p *plan.Plan) (admitted, deferred, released, forwarded int64) {
	if t == nil {
		return
	}
	last := map[string]int{}
	for _, st := range p.Stages {
		last[st.Path] = max(last[st.Path], st.Hop)
	}
	for _, st := range p.Stages {
		c := t.stages[plane.StageID(st.Path, st.Node, st.Hop)]
		if st.Hop == 0 {
			admitted += c.Admitted
		}
		if st.Hop == last[st.Path] {
			forwarded += c.Forwarded
		}
		deferred += c.Deferred
		released += c.Released
	}
	return
}

// compiled is every declared graph that compiles, in (application, graph)
// order, refreshing the catalogue first when it is stale.
func (l *Live) compiled(q *httpapi.Request) []*plane.Entry {
	if l.p.Cat.Stale() {
		_ = l.p.Cat.SyncDocuments(q.Context(), false)
	}
	var out []*plane.Entry
	for _, e := range l.p.Cat.All("") {
		if e.Plan != nil && e.Doc != nil {
			out = append(out, e)
		}
	}
	return out
}

// overview is GET /api/overview.
func (l *Live) overview(q *httpapi.Request) *httpapi.Refusal {
	ok, ver, _ := l.p.BrokerHealth(q.Context())
	out := wire.Overview{Queen: wire.QueenState{URL: l.p.Cfg.QueenURL, Reachable: ok, Version: ver}}
	totals := l.totals()
	now := l.p.Clock.Now()
	graphs := l.compiled(q)
	for _, e := range graphs {
		out.Graphs++
		a, d, r, _ := totals[plane.GraphKey{App: e.App, Graph: e.Graph}].sums(e.Plan)
		out.AdmittedTotal += a
		out.DeniedTotal += d + r
		for _, n := range e.Doc.Nodes {
			for _, b := range n.Budgets {
				if b.Confidence == graph.ConfidenceAssumed {
					out.BudgetsAssumed++
				}
				if asOfStale(b.AsOf, now) {
					out.BudgetsStale++
				}
			}
		}
	}
	out.Targets = out.Graphs
	out.AdmittedPerSec, out.AdmittedPerSecReason = l.admittedRate(q.Context(), graphs, now)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// The admitted rates of the minute roll-ups (gate-runtime §3.9, §4.3).
const (
	// rateReadTimeout bounds the one history read behind a rate: the
	// overview and the product metrics are polled every few seconds and
	// are better answered without the rate than late.
	rateReadTimeout = 2 * time.Second
	// minRateSeconds is the least a filling minute's count is divided
	// by, so its first seconds do not read as a spike.
	minRateSeconds = 5
)

// rollupStage is one stage as the minute roll-ups name it: the
// application, the target (graph.node) and the lane (the path).
type rollupStage struct{ app, target, lane string }

// admittedRates is the admitted items per second of each stage asked for,
// from one read of the minute roll-ups (app "" reads every application):
// the last complete minute's admitted / 60, else the filling minute's
// admitted / max(5, elapsed seconds), else 0. Callers sum the stages as
// their figure needs. When no rate can be known the map is nil and the
// reason says why and what to do: no history, no stage asked for (no graph
// records roll-ups), or the history could not be read.
func (l *Live) admittedRates(ctx context.Context, app string, stages []rollupStage, now time.Time) (map[rollupStage]float64, *string) {
	db := l.p.History()
	if db == nil {
		return nil, new("no history: this server runs without PostgreSQL, so no minute roll-ups are kept; set PG_HOST (and run gate-recorder) to see the admitted rate")
	}
	if len(stages) == 0 {
		return nil, new(`no graph records minute roll-ups: declare "counters": {"windowSeconds": 60} on a graph (Watch turns them on) to see the admitted rate`)
	}
	ms := now.UnixMilli()
	filling := ms - ((ms%60000)+60000)%60000
	rctx, cancel := context.WithTimeout(ctx, rateReadTimeout)
	defer cancel()
	rows, err := db.Rollups(rctx, app, "", filling-60000, filling+60000)
	if err != nil {
		what := "could not be read"
		if errors.Is(err, context.DeadlineExceeded) || rctx.Err() != nil {
			what = fmt.Sprintf("did not answer within %d ms", rateReadTimeout.Milliseconds())
		}
		return nil, new(fmt.Sprintf("%s %s, so the admitted rate is unknown (%v): the broker is not involved; check that the database answers", l.p.HistoryName(), what, err))
	}
	type minutes struct {
		last, fill       int64
		hasLast, hasFill bool
	}
	per := make(map[rollupStage]*minutes, len(stages))
	for _, k := range stages {
		per[k] = &minutes{}
	}
	for _, r := range rows {
		m := per[rollupStage{r.App, r.Target, r.Lane}]
		if m == nil {
			continue
		}
		switch r.Minute {
		case filling - 60000:
			m.last, m.hasLast = m.last+r.Admitted, true
		case filling:
			m.fill, m.hasFill = m.fill+r.Admitted, true
		}
	}
	elapsed := max(minRateSeconds, float64(ms-filling)/1000)
	out := make(map[rollupStage]float64, len(per))
	for k, m := range per {
		switch {
		case m.hasLast:
			out[k] = float64(m.last) / 60
		case m.hasFill:
			out[k] = float64(m.fill) / elapsed
		default:
			out[k] = 0
		}
	}
	return out, nil
}

// admittedRate is the fleet's admitted items per second, counted where
// admitted_total counts them (each path's first hop) in the graphs with
// counters on: the stages' admittedRates, summed. When the rate cannot be
// known it is nil and the reason says why and what to do.
func (l *Live) admittedRate(ctx context.Context, graphs []*plane.Entry, now time.Time) (*float64, *string) {
	var first []rollupStage
	seen := map[rollupStage]bool{}
	for _, e := range graphs {
		if e.Plan.CountersWindowSeconds == 0 {
			continue
		}
		for _, st := range e.Plan.Stages {
			k := rollupStage{e.App, e.Graph + "." + st.Node, st.Path}
			if st.Hop == 0 && !seen[k] {
				seen[k] = true
				first = append(first, k)
			}
		}
	}
	rates, reason := l.admittedRates(ctx, "", first, now)
	if rates == nil {
		return nil, reason
	}
	total := 0.0
	for _, k := range first {
		total += rates[k]
	}
	return &total, nil
}

// asOfStale reports whether an asOf date (YYYY-MM-DD or RFC 3339) is older
// than 90 days; an absent or unreadable asOf is not stale.
func asOfStale(asOf string, now time.Time) bool {
	if asOf == "" {
		return false
	}
	t, err := time.Parse(time.DateOnly, asOf)
	if err != nil {
		if t, err = time.Parse(time.RFC3339, asOf); err != nil {
			return false
		}
	}
	return now.Sub(t) > staleAsOf
}

// appsList is GET /api/apps.
func (l *Live) appsList(q *httpapi.Request) *httpapi.Refusal {
	totals := l.totals()
	rows := []wire.AppRow{}
	for _, e := range l.compiled(q) {
		if len(rows) == 0 || rows[len(rows)-1].Application != e.App {
			rows = append(rows, wire.AppRow{Application: e.App})
		}
		row := &rows[len(rows)-1]
		a, d, _, _ := totals[plane.GraphKey{App: e.App, Graph: e.Graph}].sums(e.Plan)
		row.Targets++
		row.Admitted += a
		row.Denied += d
	}
	httpapi.WriteJSON(q.W, http.StatusOK, rows)
	return nil
}

// targetsList is GET /api/targets: one row per graph.
func (l *Live) targetsList(q *httpapi.Request) *httpapi.Refusal {
	ctx := q.Context()
	totals := l.totals()
	rows := []wire.TargetRow{}
	for _, e := range l.compiled(q) {
		t := totals[plane.GraphKey{App: e.App, Graph: e.Graph}]
		a, d, _, _ := t.sums(e.Plan)
		row := wire.TargetRow{
			Application: e.App, Name: e.Graph, Graph: e.Graph, Version: e.Plan.Version,
			Running: l.p.Cat.RunsVersionNow(e), Lanes: []wire.NameOnly{}, Paths: []wire.NameOnly{},
			Admitted: a, Denied: d, State: "flowing", At: l.p.Clock.Now().UnixMilli(),
		}
		if d > 0 {
			row.State = "pacing"
		}
		for _, pa := range e.Doc.Paths {
			row.Paths = append(row.Paths, wire.NameOnly{Name: pa.Name})
		}
		row.Lanes = row.Paths
		live, liveErr := l.p.Limiter().ReadNodes(ctx, e.Plan.Nodes)
		best := -1.0
		for _, n := range e.Plan.Nodes {
			for _, b := range n.Budgets {
				row.BudgetsTotal++
				if b.Confidence == graph.ConfidenceAssumed {
					row.AssumedBudgets++
				}
				if b.ScopeBy != "" || liveErr != nil {
					continue
				}
				ceiling := b.WidestCeiling()
				used := live[b.Key].Value
				if u := budget.Utilisation(used, ceiling); u > best {
					best = u
					row.WorstBudgetID, row.WorstUsed, row.WorstCap = new(b.ID), new(used), new(ceiling)
					row.WorstPeriodSeconds = new(b.WindowSubSeconds)
					row.WorstAssumed = b.Confidence == graph.ConfidenceAssumed
				}
			}
		}
		// The first hops' source queues, each once: a queue several paths
		// read counts its largest group backlog (plane.NodeWaiting's rule).
		first := map[string]int64{}
		for _, st := range e.Plan.Stages {
			if st.Hop == 0 {
				if n, ok := l.p.Pending(ctx, st.Source, st.Group); ok {
					first[st.Source] = max(first[st.Source], n)
				}
			}
		}
		for _, n := range first {
			row.Backlog += n
		}
		rows = append(rows, row)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, rows)
	return nil
}

// edges are the node-to-node hops of a plan, each once, in plan order.
func edges(p *plan.Plan) []wire.Edge {
	out := []wire.Edge{}
	seen := map[wire.Edge]bool{}
	for _, st := range p.Stages {
		for _, d := range st.Destinations {
			if d.Terminal || d.Node == "" {
				continue
			}
			e := wire.Edge{From: st.Node, To: d.Node}
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// nodePaths is the paths that cross node, in plan order.
func nodePaths(p *plan.Plan, node string) []string {
	out := []string{}
	for _, st := range p.Stages {
		if st.Node == node && !slices.Contains(out, st.Path) {
			out = append(out, st.Path)
		}
	}
	return out
}

// graphsList is GET /api/graphs.
func (l *Live) graphsList(q *httpapi.Request) *httpapi.Refusal {
	ctx := q.Context()
	totals := l.totals()
	rows := []wire.GraphRow{}
	for _, e := range l.compiled(q) {
		t := totals[plane.GraphKey{App: e.App, Graph: e.Graph}]
		_, _, _, fwd := t.sums(e.Plan)
		running := l.p.Cat.RunsVersionNow(e)
		row := wire.GraphRow{
			Application: e.App, Name: e.Graph, Version: e.Plan.Version, Running: running,
			Nodes: []wire.GraphRowNode{}, Edges: edges(e.Plan), Paths: viewPaths(e), Forwarded: fwd,
		}
		for _, n := range e.Plan.Nodes {
			gn := wire.GraphRowNode{
				Name: n.Name, Target: e.Graph + "." + n.Name, Entry: n.IngressQueue != "" || n.HTTPPush,
				Consume: plane.Optional(n.EgressQueue), Running: running, Budgets: len(n.Budgets),
				Paths: nodePaths(e.Plan, n.Name), Shares: n.Shares,
			}
			gn.WaitingForBudget = waitingAt(ctx, l.p, e.Plan, n.Name)
			for _, st := range e.Plan.Stages {
				if st.Node != n.Name {
					continue
				}
				if t != nil {
					c := t.stages[plane.StageID(st.Path, st.Node, st.Hop)]
					gn.Admitted += c.Admitted
					gn.Denied += c.Deferred
				}
			}
			row.Nodes = append(row.Nodes, gn)
		}
		rows = append(rows, row)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, rows)
	return nil
}

// topology is GET /api/apps/{app}/graphs/{name}/topology (and flat):
// the graph's shape, without touching the broker.
func (l *Live) topology(q *httpapi.Request) *httpapi.Refusal {
	e, bad := l.p.Resolve(q, "name")
	if bad != nil {
		return bad
	}
	out := wire.Topology{Application: e.App, Graph: e.Graph, Version: e.Plan.Version,
		Nodes: []wire.TopologyNode{}, Paths: viewPaths(e), Edges: edges(e.Plan)}
	for _, n := range e.Plan.Nodes {
		out.Nodes = append(out.Nodes, wire.TopologyNode{
			Node: n.Name, Ingress: n.IngressQueue != "" || n.HTTPPush, Egress: n.EgressQueue != "",
			Paths: nodePaths(e.Plan, n.Name), Shares: n.Shares,
		})
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// recentBreaches is GET /api/breaches/recent?limit=: the live breaker
// records fleet-wide (kv prefix brk:), newest first.
func (l *Live) recentBreaches(q *httpapi.Request) *httpapi.Refusal {
	limit, bad := httpapi.QueryRange(q.Query(), "limit", defaultBreachLimit, 1, maxBreachLimit)
	if bad != nil {
		return bad
	}
	recs, err := l.p.Store.RecentBreakers(q.Context())
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "%v; retry", err)
	}
	recs = recs[:min(len(recs), limit)]
	rows := make([]wire.Breach, 0, len(recs))
	for _, b := range recs {
		rows = append(rows, wire.Breach{At: b.At, Application: b.Application, Target: b.Graph + "." + b.Node,
			Graph: b.Graph, Node: b.Node, RetryAfterSeconds: b.RetryAfterSeconds, Until: b.Until(), By: b.By})
	}
	httpapi.WriteJSON(q.W, http.StatusOK, rows)
	return nil
}

// sharedBudgets is GET /api/budgets: one row per (application, sharedKey)
// with its live counter, its members and the members that declare it with
// other numbers.
func (l *Live) sharedBudgets(q *httpapi.Request) *httpapi.Refusal {
	type key struct{ app, shared string }
	rows := map[key]*wire.SharedBudget{}
	var order []key
	for _, e := range l.compiled(q) {
		for _, n := range e.Plan.Nodes {
			for _, b := range n.Budgets {
				if !b.Shared {
					continue
				}
				k := key{e.App, b.SharedKey}
				target := e.Graph + "." + n.Name
				row := rows[k]
				if row == nil {
					row = &wire.SharedBudget{ID: b.ID, Key: b.Key, Application: e.App, Count: b.Count, TimeMs: b.TimeMs,
						SubWindows: b.SubWindows, CountSub: b.CountSub, WindowSubSeconds: b.WindowSubSeconds,
						Confidence: b.Confidence, Members: []string{}, Conflicts: []wire.BudgetConflict{}}
					rows[k] = row
					order = append(order, k)
				} else if b.Count != row.Count || b.TimeMs != row.TimeMs || b.SubWindows != row.SubWindows {
					row.Conflicts = append(row.Conflicts, wire.BudgetConflict{Target: target, Count: b.Count, TimeMs: b.TimeMs, SubWindows: b.SubWindows})
				}
				if !slices.Contains(row.Members, target) {
					row.Members = append(row.Members, target)
				}
			}
		}
	}
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r.Key)
	}
	live, liveErr := l.p.Limiter().ReadNodes(q.Context(), nil, keys...)
	out := make([]wire.SharedBudget, 0, len(rows))
	for _, k := range order {
		r := rows[k]
		if liveErr == nil {
			row := live[r.Key]
			r.Used = new(row.Value)
			if end, ok := row.WindowEnd(); ok {
				r.ExpiresAt = new(end)
			}
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Application != out[j].Application {
			return out[i].Application < out[j].Application
		}
		return out[i].ID < out[j].ID
	})
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}
