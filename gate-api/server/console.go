package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/graph"
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
func (s *Server) consoleRoutes(r *mux.Router, limit int64) {
	get := func(name, path string, flat bool, h handler) {
		r.Handle(path, s.wrap(name, flat, limit, h)).Methods(http.MethodGet)
	}
	get("console-overview", "/api/overview", true, s.overview)
	get("console-apps", "/api/apps", true, s.appsList)
	get("console-targets", "/api/targets", true, s.targetsList)
	get("console-graphs", "/api/graphs", true, s.graphsList)
	get("console-graph", "/api/apps/{app}/graphs/{name}", false, s.getGraph)
	get("console-graph", "/api/graphs/{name}", true, s.getGraph)
	get("console-target", "/api/apps/{app}/targets/{name}", false, s.getGraph)
	get("console-target", "/api/targets/{name}", true, s.getGraph)
	get("console-topology", "/api/apps/{app}/graphs/{name}/topology", false, s.topology)
	get("console-topology", "/api/graphs/{name}/topology", true, s.topology)
	get("console-breaches", "/api/breaches/recent", true, s.recentBreaches)
	get("console-budgets", "/api/budgets", true, s.sharedBudgets)
	get("console-me", "/api/me", true, s.internalMe)
}

// internalMe is GET /api/me on the internal plane: no session, full rights.
func (s *Server) internalMe(q *req) *apiError {
	writeJSON(q.w, http.StatusOK, wire.Me{Actor: "internal", Role: "admin"})
	return nil
}

// graphTotals is one graph's counters summed over the relay replicas.
type graphTotals struct {
	running bool
	// stages by path/node/hop.
	stages map[[3]string]store.Counters
}

func stageID(path, node string, hop int) [3]string { return [3]string{path, node, strconv.Itoa(hop)} }

// totals sums the relays' published counters of every graph.
func (s *Server) totals() map[graphKey]*graphTotals {
	out := map[graphKey]*graphTotals{}
	for _, r := range s.cat.statuses() {
		for _, g := range r.Graphs {
			k := graphKey{g.App, g.Graph}
			t := out[k]
			if t == nil {
				t = &graphTotals{stages: map[[3]string]store.Counters{}}
				out[k] = t
			}
			t.running = t.running || g.Running
			for _, st := range g.Stages {
				id := stageID(st.Path, st.Node, st.Hop)
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
		c := t.stages[stageID(st.Path, st.Node, st.Hop)]
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
func (s *Server) compiled(q *req) []*entry {
	if s.cat.stale() {
		_ = s.cat.syncDocuments(q.r.Context(), false)
	}
	var out []*entry
	for _, e := range s.cat.all("") {
		if e.plan != nil && e.doc != nil {
			out = append(out, e)
		}
	}
	return out
}

// overview is GET /api/overview.
func (s *Server) overview(q *req) *apiError {
	ok, ver, _ := s.brokerHealth(q.r.Context())
	out := wire.Overview{Queen: wire.QueenState{URL: s.cfg.QueenURL, Reachable: ok, Version: ver}}
	totals := s.totals()
	now := s.now()
	graphs := s.compiled(q)
	for _, e := range graphs {
		out.Graphs++
		a, d, r, _ := totals[graphKey{e.app, e.graph}].sums(e.plan)
		out.AdmittedTotal += a
		out.DeniedTotal += d + r
		for _, n := range e.doc.Nodes {
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
	out.AdmittedPerSec, out.AdmittedPerSecReason = s.admittedRate(q.r.Context(), graphs, now)
	writeJSON(q.w, http.StatusOK, out)
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
func (s *Server) admittedRates(ctx context.Context, app string, stages []rollupStage, now time.Time) (map[rollupStage]float64, *string) {
	db := s.historyDB()
	if db == nil {
		return nil, ptr("no history: this server runs without PostgreSQL, so no minute roll-ups are kept; set PG_HOST (and run gate-recorder) to see the admitted rate")
	}
	if len(stages) == 0 {
		return nil, ptr(`no graph records minute roll-ups: declare "counters": {"windowSeconds": 60} on a graph (Watch turns them on) to see the admitted rate`)
	}
	ms := now.UnixMilli()
	filling := ms - ((ms%60000)+60000)%60000
	rctx, cancel := context.WithTimeout(ctx, rateReadTimeout)
	defer cancel()
	rows, err := db.Rollups(rctx, app, "", filling-60000, filling+60000)
	if err != nil {
		return nil, ptr(fmt.Sprintf("the history could not be read, so the admitted rate is unknown: %v; check that PostgreSQL answers", err))
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
func (s *Server) admittedRate(ctx context.Context, graphs []*entry, now time.Time) (*float64, *string) {
	var first []rollupStage
	seen := map[rollupStage]bool{}
	for _, e := range graphs {
		if e.plan.CountersWindowSeconds == 0 {
			continue
		}
		for _, st := range e.plan.Stages {
			k := rollupStage{e.app, e.graph + "." + st.Node, st.Path}
			if st.Hop == 0 && !seen[k] {
				seen[k] = true
				first = append(first, k)
			}
		}
	}
	rates, reason := s.admittedRates(ctx, "", first, now)
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
func (s *Server) appsList(q *req) *apiError {
	totals := s.totals()
	rows := []wire.AppRow{}
	for _, e := range s.compiled(q) {
		if len(rows) == 0 || rows[len(rows)-1].Application != e.app {
			rows = append(rows, wire.AppRow{Application: e.app})
		}
		row := &rows[len(rows)-1]
		a, d, _, _ := totals[graphKey{e.app, e.graph}].sums(e.plan)
		row.Targets++
		row.Admitted += a
		row.Denied += d
	}
	writeJSON(q.w, http.StatusOK, rows)
	return nil
}

// targetsList is GET /api/targets: one row per graph.
func (s *Server) targetsList(q *req) *apiError {
	ctx := q.r.Context()
	totals := s.totals()
	rows := []wire.TargetRow{}
	for _, e := range s.compiled(q) {
		t := totals[graphKey{e.app, e.graph}]
		a, d, _, _ := t.sums(e.plan)
		row := wire.TargetRow{
			Application: e.app, Name: e.graph, Graph: e.graph, Version: e.plan.Version,
			Running: s.cat.runsVersionNow(e), Lanes: []wire.NameOnly{}, Paths: []wire.NameOnly{},
			Admitted: a, Denied: d, State: "flowing", At: s.now().UnixMilli(),
		}
		if d > 0 {
			row.State = "pacing"
		}
		for _, pa := range e.doc.Paths {
			row.Paths = append(row.Paths, wire.NameOnly{Name: pa.Name})
		}
		row.Lanes = row.Paths
		var keys []string
		for i := range e.plan.Nodes {
			for _, c := range budget.Unscoped(&e.plan.Nodes[i]) {
				keys = append(keys, c.Key)
			}
		}
		live, liveErr := s.limiter().ReadKeys(ctx, keys)
		best := -1.0
		for _, n := range e.plan.Nodes {
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
					row.WorstBudgetID, row.WorstUsed, row.WorstCap = ptr(b.ID), ptr(used), ptr(ceiling)
					row.WorstPeriodSeconds = ptr(b.WindowSubSeconds)
					row.WorstAssumed = b.Confidence == graph.ConfidenceAssumed
				}
			}
		}
		for _, st := range e.plan.Stages {
			if st.Hop == 0 {
				if n, ok := s.pending(ctx, st.Source, st.Group); ok {
					row.Backlog += n
				}
			}
		}
		rows = append(rows, row)
	}
	writeJSON(q.w, http.StatusOK, rows)
	return nil
}

// runsVersionNow reports whether some relay runs e's declared version.
func (c *catalog) runsVersionNow(e *entry) bool {
	ok, _ := c.runsVersion(e.app, e.graph, int64(e.plan.Version))
	return ok
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
		if st.Node == node && !contains(out, st.Path) {
			out = append(out, st.Path)
		}
	}
	return out
}

// graphsList is GET /api/graphs.
func (s *Server) graphsList(q *req) *apiError {
	ctx := q.r.Context()
	totals := s.totals()
	rows := []wire.GraphRow{}
	for _, e := range s.compiled(q) {
		t := totals[graphKey{e.app, e.graph}]
		_, _, _, fwd := t.sums(e.plan)
		running := s.cat.runsVersionNow(e)
		row := wire.GraphRow{
			Application: e.app, Name: e.graph, Version: e.plan.Version, Running: running,
			Nodes: []wire.GraphRowNode{}, Edges: edges(e.plan), Paths: viewPaths(e), Forwarded: fwd,
		}
		for _, n := range e.plan.Nodes {
			gn := wire.GraphRowNode{
				Name: n.Name, Target: e.graph + "." + n.Name, Entry: n.IngressQueue != "" || n.HTTPPush,
				Consume: optional(n.EgressQueue), Running: running, Budgets: len(n.Budgets),
				Paths: nodePaths(e.plan, n.Name), Shares: n.Shares,
			}
			for _, st := range e.plan.Stages {
				if st.Node != n.Name {
					continue
				}
				if w, ok := s.pending(ctx, st.Source, st.Group); ok {
					gn.WaitingForBudget += w
				}
				if t != nil {
					c := t.stages[stageID(st.Path, st.Node, st.Hop)]
					gn.Admitted += c.Admitted
					gn.Denied += c.Deferred
				}
			}
			row.Nodes = append(row.Nodes, gn)
		}
		rows = append(rows, row)
	}
	writeJSON(q.w, http.StatusOK, rows)
	return nil
}

// topology is GET /api/apps/{app}/graphs/{name}/topology (and flat):
// the graph's shape, without touching the broker.
func (s *Server) topology(q *req) *apiError {
	e, bad := s.resolve(q, "name")
	if bad != nil {
		return bad
	}
	out := wire.Topology{Application: e.app, Graph: e.graph, Version: e.plan.Version,
		Nodes: []wire.TopologyNode{}, Paths: viewPaths(e), Edges: edges(e.plan)}
	for _, n := range e.plan.Nodes {
		out.Nodes = append(out.Nodes, wire.TopologyNode{
			Node: n.Name, Ingress: n.IngressQueue != "" || n.HTTPPush, Egress: n.EgressQueue != "",
			Paths: nodePaths(e.plan, n.Name), Shares: n.Shares,
		})
	}
	writeJSON(q.w, http.StatusOK, out)
	return nil
}

// recentBreaches is GET /api/breaches/recent?limit=: the live breaker
// records fleet-wide (kv prefix brk:), newest first.
func (s *Server) recentBreaches(q *req) *apiError {
	limit, bad := queryRange(q.r.URL.Query(), "limit", defaultBreachLimit, 1, maxBreachLimit)
	if bad != nil {
		return bad
	}
	recs, err := s.store.RecentBreakers(q.r.Context())
	if err != nil {
		return fail(http.StatusBadGateway, "%v; retry", err)
	}
	recs = recs[:min(len(recs), limit)]
	rows := make([]wire.Breach, 0, len(recs))
	for _, b := range recs {
		rows = append(rows, wire.Breach{At: b.At, Application: b.Application, Target: b.Graph + "." + b.Node,
			Graph: b.Graph, Node: b.Node, RetryAfterSeconds: b.RetryAfterSeconds, Until: b.Until(), By: b.By})
	}
	writeJSON(q.w, http.StatusOK, rows)
	return nil
}

// sharedBudgets is GET /api/budgets: one row per (application, sharedKey)
// with its live counter, its members and the members that declare it with
// other numbers.
func (s *Server) sharedBudgets(q *req) *apiError {
	type key struct{ app, shared string }
	rows := map[key]*wire.SharedBudget{}
	var order []key
	for _, e := range s.compiled(q) {
		for _, n := range e.plan.Nodes {
			for _, b := range n.Budgets {
				if !b.Shared {
					continue
				}
				k := key{e.app, b.SharedKey}
				target := e.graph + "." + n.Name
				row := rows[k]
				if row == nil {
					row = &wire.SharedBudget{ID: b.ID, Key: b.Key, Application: e.app, Count: b.Count, TimeMs: b.TimeMs,
						SubWindows: b.SubWindows, CountSub: b.CountSub, WindowSubSeconds: b.WindowSubSeconds,
						Confidence: b.Confidence, Members: []string{}, Conflicts: []wire.BudgetConflict{}}
					rows[k] = row
					order = append(order, k)
				} else if b.Count != row.Count || b.TimeMs != row.TimeMs || b.SubWindows != row.SubWindows {
					row.Conflicts = append(row.Conflicts, wire.BudgetConflict{Target: target, Count: b.Count, TimeMs: b.TimeMs, SubWindows: b.SubWindows})
				}
				if !contains(row.Members, target) {
					row.Members = append(row.Members, target)
				}
			}
		}
	}
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r.Key)
	}
	live, liveErr := s.limiter().ReadKeys(q.r.Context(), keys)
	out := make([]wire.SharedBudget, 0, len(rows))
	for _, k := range order {
		r := rows[k]
		if liveErr == nil {
			row := live[r.Key]
			r.Used = ptr(row.Value)
			if end, ok := row.WindowEnd(); ok {
				r.ExpiresAt = ptr(end)
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
	writeJSON(q.w, http.StatusOK, out)
	return nil
}
