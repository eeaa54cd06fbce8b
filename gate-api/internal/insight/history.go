package insight

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// History read limits.
const (
	// defaultFlowMinutes and maxFlowMinutes bound /api/flow and
	// /api/rollups (gate-runtime §4.3: 1..1440, default 120); minutes
	// outside them is clamped, as on every route that takes it.
	defaultFlowMinutes = 120
	maxFlowMinutes     = 1440
	// defaultTraces and maxTraces bound /api/traces.
	defaultTraces = 100
	maxTraces     = 1000
)

// historyRoutes registers the history reads: the Watch summary (app and
// flat), minute roll-ups, flow and denial traces. gate-console mounts the
// same server, so both planes answer them.
func (in *Insight) historyRoutes(r *httpapi.Router) {
	get := func(name, path string, flat bool, h httpapi.Handler) {
		r.Handle(httpapi.Route{Name: name, Method: http.MethodGet, Path: path, Limit: in.p.Cfg.BodyBytes, Flat: flat}, h)
	}
	get("watch", "/api/apps/{app}/graphs/{graph}/watch", false, in.watchSummary)
	get("flat-watch", "/api/graphs/{graph}/watch", true, in.watchSummary)
	get("rollups", "/api/rollups", true, in.rollups)
	get("flow", "/api/flow", true, in.flow)
	get("traces", "/api/traces", true, in.traces)
}

// watchSummary is GET /api/apps/{app}/graphs/{graph}/watch (§5.4).
func (in *Insight) watchSummary(q *httpapi.Request) *httpapi.Refusal {
	e, bad := in.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	db := in.p.History()
	if e.Doc != nil && e.Doc.Watch == nil && db != nil {
		// Configure limits ended the session: its summary stays readable,
		// read back from the change history.
		ctx, cancel := in.p.HistoryContext(q)
		defer cancel()
		s, found, err := db.LastWatch(ctx, e.App, e.Graph)
		if err != nil {
			return in.p.HistoryRefusal(ctx, err)
		}
		if found {
			sum, err := db.WatchSummary(ctx, e.App, e.Graph, e.Doc.NodeNames(), s.StartedAt, s.DurationSeconds, min(in.p.Clock.Now().UnixMilli(), s.EndedAt))
			if err != nil {
				return in.p.HistoryRefusal(ctx, err)
			}
			sum.EndedAt = &s.EndedAt
			httpapi.WriteJSON(q.W, http.StatusOK, sum)
			return nil
		}
	}
	if e.Doc == nil || e.Doc.Watch == nil {
		return httpapi.Refuse(http.StatusConflict, wire.CodeNotWatching, "graph '%s/%s' is not in Watch and its history records no finished Watch session: it enforces its budgets; declare it with \"watch\": {\"durationSeconds\": N} at a higher version to observe it", e.App, e.Graph).Field("graph")
	}
	if db == nil {
		return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeNoHistory, "no history: gate-api runs without PostgreSQL, so nothing was recorded; set PG_HOST (and run gate-recorder) to read a Watch summary")
	}
	w := e.Doc.Watch
	if w.StartedAt == nil {
		return httpapi.Refuse(http.StatusConflict, wire.CodeWatchNotStarted, "graph '%s/%s' is in Watch but has no watch.startedAt: declare it again through gate-api, which stamps the start", e.App, e.Graph).Field("graph")
	}
	ctx, cancel := in.p.HistoryContext(q)
	defer cancel()
	sum, err := db.WatchSummary(ctx, e.App, e.Graph, e.Doc.NodeNames(), *w.StartedAt, w.DurationSeconds, in.p.Clock.Now().UnixMilli())
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, sum)
	return nil
}

// rollups is GET /api/rollups?target=[app/]graph.node&application=&minutes=:
// the minute roll-ups of one target, per minute with a total and a row
// per lane (path); [] without history.
func (in *Insight) rollups(q *httpapi.Request) *httpapi.Refusal {
	minutes, bad := httpapi.QueryClamped(q.Query(), "minutes", defaultFlowMinutes, 1, maxFlowMinutes)
	if bad != nil {
		return bad
	}
	qs := q.Query()
	target := strings.TrimSpace(qs.Get("target"))
	app := strings.TrimSpace(qs.Get("application"))
	if i := strings.IndexByte(target, '/'); i >= 0 {
		if app != "" && app != target[:i] {
			return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "target %q names application %q but application=%q: give one", target, target[:i], app).Field("application")
		}
		app, target = target[:i], target[i+1:]
	}
	if target == "" {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "target is required: give ?target=graph.node (or app/graph.node)").Field("target")
	}
	graphName, node, ok := strings.Cut(target, ".")
	if !ok || plane.CheckName("graph", graphName) != nil || plane.CheckName("node", node) != nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "target %q is not graph.node: name a graph and one of its nodes, e.g. airbnb.ip", target).Field("target")
	}
	if app != "" {
		if bad := plane.CheckName("application", app); bad != nil {
			return bad
		}
	}
	out := []wire.RollupMinute{}
	db := in.p.History()
	if db == nil {
		httpapi.WriteJSON(q.W, http.StatusOK, out)
		return nil
	}
	now := in.p.Clock.Now().UnixMilli()
	until := now - now%60000 + 60000
	ctx, cancel := in.p.HistoryContext(q)
	defer cancel()
	rows, err := db.Rollups(ctx, app, target, until-int64(minutes)*60000, until)
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, rollupMinutes(rows))
	return nil
}

func rollupMinutes(rows []history.RollupRow) []wire.RollupMinute {
	out := []wire.RollupMinute{}
	for _, r := range rows {
		if n := len(out); n == 0 || out[n-1].T != r.Minute {
			out = append(out, wire.RollupMinute{T: r.Minute, Total: wire.RollupCounts{T: r.Minute}, Lanes: map[string]wire.RollupCounts{}})
		}
		m := &out[len(out)-1]
		c := wire.RollupCounts{T: r.Minute, Admitted: r.Admitted, Denied: r.Denied, Calls: r.Calls, Throttled: r.Throttled, CostEstimated: r.CostEstimated, CostActual: r.CostActual}
		l := m.Lanes[r.Lane]
		l.T = r.Minute
		l.Admitted += c.Admitted
		l.Denied += c.Denied
		l.Calls += c.Calls
		l.Throttled += c.Throttled
		l.CostEstimated += c.CostEstimated
		l.CostActual += c.CostActual
		m.Lanes[r.Lane] = l
		m.Total.Admitted += c.Admitted
		m.Total.Denied += c.Denied
		m.Total.Calls += c.Calls
		m.Total.Throttled += c.Throttled
		m.Total.CostEstimated += c.CostEstimated
		m.Total.CostActual += c.CostActual
	}
	return out
}

// flow is GET /api/flow?minutes=: per application and minute, each
// target's admitted items against its per-minute ceiling.
func (in *Insight) flow(q *httpapi.Request) *httpapi.Refusal {
	minutes, bad := httpapi.QueryClamped(q.Query(), "minutes", defaultFlowMinutes, 1, maxFlowMinutes)
	if bad != nil {
		return bad
	}
	out := wire.Flow{Minutes: []int64{}, Applications: []wire.FlowApplication{}}
	db := in.p.History()
	if db == nil {
		httpapi.WriteJSON(q.W, http.StatusOK, out)
		return nil
	}
	out.Durable = true
	now := in.p.Clock.Now().UnixMilli()
	until := now - now%60000 + 60000
	since := until - int64(minutes)*60000
	for t := since; t < until; t += 60000 {
		out.Minutes = append(out.Minutes, t)
	}
	ctx, cancel := in.p.HistoryContext(q)
	defer cancel()
	rows, err := db.Rollups(ctx, "", "", since, until)
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	type key struct {
		app, target string
		t           int64
	}
	admitted := map[key]int64{}
	totals := map[string]map[int64]int64{}
	for _, r := range rows {
		admitted[key{r.App, r.Target, r.Minute}] += r.Admitted
		if totals[r.App] == nil {
			totals[r.App] = map[int64]int64{}
		}
		totals[r.App][r.Minute] += r.Admitted
	}
	keys := make([]key, 0, len(admitted))
	for k := range admitted {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].app != keys[j].app {
			return keys[i].app < keys[j].app
		}
		if keys[i].t != keys[j].t {
			return keys[i].t < keys[j].t
		}
		return keys[i].target < keys[j].target
	})
	for _, k := range keys {
		if n := len(out.Applications); n == 0 || out.Applications[n-1].Application != k.app {
			out.Applications = append(out.Applications, wire.FlowApplication{Application: k.app, Points: []wire.FlowPoint{}})
		}
		a := &out.Applications[len(out.Applications)-1]
		p := wire.FlowPoint{T: k.t, Target: k.target, Admitted: admitted[k], TotalAdmitted: totals[k.app][k.t]}
		if c := in.minuteCeiling(q, k.app, k.target); c != nil {
			p.Ceiling = c
			// A ceiling of 0 (no path has a share of the budget) has no
			// utilisation to show: null, as budget.Utilisation's rule says.
			if *c > 0 {
				u := float64(p.Admitted) / *c
				p.Utilisation = &u
			}
		}
		a.Points = append(a.Points, p)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// minuteCeiling is the items per minute the tightest unconditional budget
// of a target's node admits at its widest share; nil in Watch or without
// one.
func (in *Insight) minuteCeiling(q *httpapi.Request, app, target string) *float64 {
	graphName, node, ok := strings.Cut(target, ".")
	if !ok {
		return nil
	}
	e := in.p.Cat.Get(q.Context(), app, graphName)
	if e == nil || e.Plan == nil || e.Plan.Watching {
		return nil
	}
	n := e.Plan.Node(node)
	if n == nil {
		return nil
	}
	var best *float64
	for i := range n.Budgets {
		b := &n.Budgets[i]
		if !b.Unconditional() || b.WindowSubSeconds <= 0 {
			continue
		}
		v := float64(b.WidestCeiling()) * 60 / float64(b.WindowSubSeconds)
		if best == nil || v < *best {
			best = &v
		}
	}
	return best
}

// traces is GET /api/traces?outcome=&limit=: denials newest first, from the
// relays' rings (their published status) first, topped up from history
// when fewer than limit.
func (in *Insight) traces(q *httpapi.Request) *httpapi.Refusal {
	qs := q.Query()
	limit, bad := httpapi.QueryRange(qs, "limit", defaultTraces, 1, maxTraces)
	if bad != nil {
		return bad
	}
	outcome := strings.TrimSpace(qs.Get("outcome"))
	if outcome != "" && outcome != "denied" {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "outcome=%q is not an outcome Gate traces: use denied, or omit it (admissions are counted, never traced)", outcome).Field("outcome")
	}
	out := []wire.Trace{}
	seen := map[string]bool{}
	for _, st := range in.p.Cat.Statuses() {
		for _, d := range st.Denials {
			if outcome != "" && d.Outcome != outcome {
				continue
			}
			k := traceKey(d.At, d.Application, d.Graph+"."+d.Node, d.Path, d.BudgetID)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, wire.Trace{At: d.At, Application: d.Application, Target: d.Graph + "." + d.Node, Graph: d.Graph, Node: d.Node,
				Path: d.Path, Op: d.Op, Outcome: d.Outcome, BudgetID: d.BudgetID, Source: "ring"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At > out[j].At })
	if len(out) > limit {
		out = out[:limit]
	}
	if db := in.p.History(); len(out) < limit && db != nil {
		ctx, cancel := in.p.HistoryContext(q)
		defer cancel()
		rows, err := db.Traces(ctx, outcome, limit)
		if err != nil {
			in.p.Log.Warn("traces: "+in.p.HistoryName()+" could not be read; answering the relays' rings only", "error", err)
		}
		for _, r := range rows {
			if len(out) >= limit {
				break
			}
			k := traceKey(r.At, r.App, r.Target, r.Lane, r.BudgetID)
			if seen[k] {
				continue
			}
			seen[k] = true
			g, n, _ := strings.Cut(r.Target, ".")
			out = append(out, wire.Trace{At: r.At, Application: r.App, Target: r.Target, Graph: g, Node: n, Path: r.Lane, Op: r.Op,
				Outcome: r.Outcome, BudgetID: r.BudgetID, Source: "history"})
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].At > out[j].At })
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

func traceKey(at int64, app, target, lane, budget string) string {
	return strconv.FormatInt(at, 10) + "\x00" + app + "\x00" + target + "\x00" + lane + "\x00" + budget
}
