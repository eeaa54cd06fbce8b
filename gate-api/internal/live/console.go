package live

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
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

// totalsOf sums what the relay replicas published of e's stages; nil when
// no replica reports the graph.
func (l *Live) totalsOf(e *plane.Entry) *graphTotals {
	runs := l.p.Cat.Runs(e.App, e.Graph)
	if len(runs) == 0 {
		return nil
	}
	t := &graphTotals{stages: map[[3]string]store.Counters{}}
	for _, r := range runs {
		t.running = t.running || r.Status.Running
		for _, st := range r.Status.Stages {
			id := plane.StageID(st.Path, st.Node, st.Hop)
			c := t.stages[id]
			c.Add(st.Counters)
			t.stages[id] = c
		}
	}
	return t
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

// sumsOf is totalsOf(e).sums(e.Plan) without building the per-stage map:
// the overview sums every graph of the fleet this way.
func (l *Live) sumsOf(e *plane.Entry) (admitted, deferred, released int64) {
	for _, r := range l.p.Cat.Runs(e.App, e.Graph) {
		for i := range r.Status.Stages {
			st := &r.Status.Stages[i]
			if !inPlan(e.Plan, st.Path, st.Node, st.Hop) {
				continue // a stage of another version: not this plan's
			}
			if st.Hop == 0 {
				admitted += st.Counters.Admitted
			}
			deferred += st.Counters.Deferred
			released += st.Counters.Released
		}
	}
	return
}

// inPlan reports whether p has the stage path/node/hop.
func inPlan(p *plan.Plan, path, node string, hop int) bool {
	for i := range p.Stages {
		if st := &p.Stages[i]; st.Hop == hop && st.Path == path && st.Node == node {
			return true
		}
	}
	return false
}

// compiled is every declared graph that compiles, in (application, graph)
// order, refreshing the catalogue first when it is stale.
func (l *Live) compiled(q *httpapi.Request) []*plane.Entry {
	var out []*plane.Entry
	for _, e := range l.catalogue(q) {
		if listed(e) {
			out = append(out, e)
		}
	}
	return out
}

// catalogue is every declared graph in (application, graph) order (shared:
// not to be modified), re-read first when the cached picture is stale.
func (l *Live) catalogue(q *httpapi.Request) []*plane.Entry {
	if l.p.Cat.Stale() {
		_ = l.p.Cat.SyncDocuments(q.Context(), false)
	}
	return l.p.Cat.Sorted()
}

// listed reports whether the console lists e: a stored document that
// compiles (one that does not is reported by its own routes).
func listed(e *plane.Entry) bool { return e.Plan != nil && e.Doc != nil }

// fleetMaxAge is how long the overview's fleet figures are shared by every
// request: the relays publish their counters every GATE_STATUS_SECONDS
// (5 s by default), so figures computed more often show nothing newer.
const fleetMaxAge = 5 * time.Second

// fleetCache holds the overview's fleet figures between computations.
type fleetCache struct {
	// compute is held by the one request that computes them.
	compute sync.Mutex
	mu      sync.Mutex
	cur     *fleetFigures
}

// fleetFigures are the overview's figures over every graph, as computed at
// at for the catalogue's generation gen.
type fleetFigures struct {
	at  time.Time
	gen uint64
	ov  wire.Overview
}

func (c *fleetCache) load() *fleetFigures {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// fresh reports whether f may be served at now for generation gen: same
// graphs, younger than fleetMaxAge (a clock set back makes it stale).
func (f *fleetFigures) fresh(now time.Time, gen uint64) bool {
	if f == nil || f.gen != gen {
		return false
	}
	age := now.Sub(f.at)
	return age >= 0 && age < fleetMaxAge
}

// fleet is the overview's fleet figures: computed off the request path of
// every request but one per fleetMaxAge (or per change of the declared
// graphs). A request that finds them stale while another computes them is
// answered with the previous figures rather than wait.
func (l *Live) fleet(q *httpapi.Request) wire.Overview {
	if l.p.Cat.Stale() {
		_ = l.p.Cat.SyncDocuments(q.Context(), false)
	}
	c := &l.figures
	gen, now := l.p.Cat.Generation(), l.p.Clock.Now()
	cur := c.load()
	if cur.fresh(now, gen) {
		return cur.ov
	}
	if !c.compute.TryLock() {
		if cur != nil {
			return cur.ov
		}
		c.compute.Lock()
	}
	defer c.compute.Unlock()
	if cur = c.load(); cur.fresh(now, gen) {
		return cur.ov
	}
	// The figures outlive this request: a cancelled request must not
	// leave a history read failed in them.
	f := &fleetFigures{at: now, gen: gen, ov: l.computeFleet(context.WithoutCancel(q.Context()), now)}
	c.mu.Lock()
	c.cur = f
	c.mu.Unlock()
	return f.ov
}

// computeFleet sums the fleet's figures over every graph that compiles.
func (l *Live) computeFleet(ctx context.Context, now time.Time) wire.Overview {
	var out wire.Overview
	var graphs []*plane.Entry
	held, heldOK := l.heldNodes(ctx, now.UnixMilli())
	heldCount := 0
	for _, e := range l.p.Cat.Sorted() {
		if !listed(e) {
			continue
		}
		graphs = append(graphs, e)
		out.Graphs++
		if mode, _, ready := watchState(e, now.UnixMilli()); mode == "watch" {
			if ready {
				out.ReadyForReview++
			} else {
				out.Watching++
			}
		}
		if held.holds(e) {
			heldCount++
		}
		a, d, r := l.sumsOf(e)
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
	if heldOK {
		out.Held = &heldCount
	}
	out.AdmittedPerSec, out.AdmittedPerSecReason = l.admittedRate(ctx, graphs, now)
	out.FiguresAt = now.UnixMilli()
	out.FiguresMaxAgeMs = fleetMaxAge.Milliseconds()
	return out
}

// overview is GET /api/overview: the broker as probed now (cached a
// second) and the fleet figures (fleet).
func (l *Live) overview(q *httpapi.Request) *httpapi.Refusal {
	ok, ver, _ := l.p.BrokerHealth(q.Context())
	out := l.fleet(q)
	out.Queen = wire.QueenState{URL: l.p.Cfg.QueenURL, Reachable: ok, Version: ver}
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

// appsList is GET /api/apps: a page of the applications that declare a
// graph, in name order, searched by ?q= on the application's name.
func (l *Live) appsList(q *httpapi.Request) *httpapi.Refusal {
	lq, bad := readList(q, true, false)
	if bad != nil {
		return bad
	}
	out := wire.AppPage{Items: []wire.AppRow{}}
	sorted := l.catalogue(q)
	more := false
	// An application's graphs are one run of the sorted catalogue.
	for i := 0; i < len(sorted); {
		app := sorted[i].App
		j := i
		for j < len(sorted) && sorted[j].App == app {
			j++
		}
		graphs := sorted[i:j]
		i = j
		if countListed(graphs) == 0 {
			continue
		}
		out.Total++
		if lq.q != "" && !strings.Contains(app, lq.q) {
			continue
		}
		out.Matched++
		if lq.after != nil && app <= lq.after.App {
			continue
		}
		if len(out.Items) == lq.limit {
			more = true
			continue
		}
		row := wire.AppRow{Application: app}
		for _, e := range graphs {
			if listed(e) {
				a, d, _ := l.sumsOf(e)
				row.Targets++
				row.Admitted += a
				row.Denied += d
			}
		}
		out.Items = append(out.Items, row)
	}
	if more {
		out.Next = encodeCursor(plane.GraphKey{App: out.Items[len(out.Items)-1].Application}, true)
	}
	setNextLink(q, out.Next)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// targetState is a target row's running (some relay runs the stored
// version), state (pacing when items waited for a window, else flowing),
// admitted (at the first hops) and denied (Σ deferred), from the relays'
// status without building a map per graph: the state filter judges every
// graph of the catalogue this way.
func (l *Live) targetState(e *plane.Entry) (running bool, state string, admitted, denied int64) {
	running = l.p.Cat.RunsVersionNow(e)
	admitted, denied, _ = l.sumsOf(e)
	state = stateFlowing
	if denied > 0 {
		state = statePacing
	}
	return
}

// inState reports whether a target is in the ?state= asked for: stopped
// when no relay runs it, pacing or flowing when one does.
func inState(want string, running bool, state string) bool {
	switch want {
	case "":
		return true
	case stateStopped:
		return !running
	}
	return running && state == want
}

// targetsList is GET /api/targets: a page of graphs, one row each, with
// the live reads of that page only.
func (l *Live) targetsList(q *httpapi.Request) *httpapi.Refusal {
	lq, bad := readList(q, false, true)
	if bad != nil {
		return bad
	}
	ctx := q.Context()
	sorted := l.catalogue(q)
	now := l.p.Clock.Now().UnixMilli()
	held, heldOK := l.heldNodes(ctx, now)
	if lq.state == stateHeld && !heldOK {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "state=held needs the backoffs, and the broker did not answer for them: retry, or leave state out")
	}
	page, next, matched := pageGraphs(sorted, lq, func(e *plane.Entry) bool {
		if !listed(e) || !lq.matchesGraph(e) {
			return false
		}
		switch lq.state {
		case "":
			return true
		case stateWatch, stateReady:
			mode, _, ready := watchState(e, now)
			return mode == "watch" && ready == (lq.state == stateReady)
		case stateHeld:
			return held.holds(e)
		}
		running, state, _, _ := l.targetState(e)
		return inState(lq.state, running, state)
	})
	live, failed := l.liveCounters(ctx, page)
	var reads []depthRead
	for i, e := range page {
		for _, st := range e.Plan.Stages {
			if st.Hop == 0 {
				reads = append(reads, depthRead{row: i, queue: st.Source, group: st.Group})
			}
		}
	}
	l.readDepths(ctx, reads)
	out := wire.TargetPage{Items: make([]wire.TargetRow, 0, len(page)), Next: next, Matched: matched, Total: countListed(sorted)}
	for i, e := range page {
		running, state, a, d := l.targetState(e)
		row := wire.TargetRow{
			Application: e.App, Name: e.Graph, Graph: e.Graph, Version: e.Plan.Version,
			Running: running, Lanes: []wire.NameOnly{}, Paths: []wire.NameOnly{},
			Admitted: a, Denied: d, State: state, At: now,
		}
		row.Mode, row.WatchEndsAt, row.ReadyForReview = watchState(e, now)
		row.Held, row.BrokerRead = held.of(e), heldOK && !failed[i]
		if !row.BrokerRead {
			row.Held = []string{}
		}
		for _, pa := range e.Doc.Paths {
			row.Paths = append(row.Paths, wire.NameOnly{Name: pa.Name})
		}
		row.Lanes = row.Paths
		best := -1.0
		for _, n := range e.Plan.Nodes {
			for _, b := range n.Budgets {
				row.BudgetsTotal++
				if b.Confidence == graph.ConfidenceAssumed {
					row.AssumedBudgets++
				}
				if b.ScopeBy != "" || failed[i] {
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
		for _, r := range reads {
			if r.row == i && r.ok {
				first[r.queue] = max(first[r.queue], r.pending)
			}
		}
		for _, n := range first {
			row.Backlog += n
		}
		out.Items = append(out.Items, row)
	}
	setNextLink(q, out.Next)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// countListed is how many graphs of sorted the console lists.
func countListed(sorted []*plane.Entry) int {
	n := 0
	for _, e := range sorted {
		if listed(e) {
			n++
		}
	}
	return n
}

// maxKeysPerRead bounds the counter keys of one getMany: the broker's
// per-call budget is 1024 keys at the edge and 256 inside a transaction
// (queen-wire); 256 keeps every page's reads well inside either.
const maxKeysPerRead = 256

// liveCounters reads the unscoped counters of every node of graphs in as
// few getMany calls as maxKeysPerRead allows (one for a page of small
// graphs), instead of one call per graph; failed[i] is true when graph i's
// read failed (its row then shows no worst budget, as before paging).
func (l *Live) liveCounters(ctx context.Context, graphs []*plane.Entry) (map[string]budget.Reading, []bool) {
	out := map[string]budget.Reading{}
	failed := make([]bool, len(graphs))
	var nodes []plan.Node
	var members []int
	keys := 0
	flush := func() {
		if len(nodes) == 0 {
			return
		}
		got, err := l.p.Limiter().ReadNodes(ctx, nodes)
		for _, i := range members {
			failed[i] = err != nil
		}
		maps.Copy(out, got)
		nodes, members, keys = nodes[:0], members[:0], 0
	}
	for i, e := range graphs {
		k := 0
		for j := range e.Plan.Nodes {
			k += len(budget.Unscoped(&e.Plan.Nodes[j]))
		}
		if keys+k > maxKeysPerRead {
			flush()
		}
		nodes = append(nodes, e.Plan.Nodes...)
		members = append(members, i)
		keys += k
	}
	flush()
	return out, failed
}

// depthRead is one stage group's backlog a page asks for.
type depthRead struct {
	// row is the page row it belongs to.
	row          int
	queue, group string
	pending      int64
	ok           bool
}

// depthReaders bounds the broker depth reads one page makes at once.
const depthReaders = 8

// readDepths fills every read's backlog (plane.Pending: cached two
// seconds, the last value when the broker fails), depthReaders at a time,
// so a page of 200 rows does not wait for 200 reads one after another.
func (l *Live) readDepths(ctx context.Context, reads []depthRead) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(depthReaders, len(reads)) {
		wg.Go(func() {
			for i := range next {
				reads[i].pending, reads[i].ok = l.p.Pending(ctx, reads[i].queue, reads[i].group)
			}
		})
	}
	for i := range reads {
		next <- i
	}
	close(next)
	wg.Wait()
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

// graphsList is GET /api/graphs: a page of graphs with their nodes, with
// the live reads of that page only.
func (l *Live) graphsList(q *httpapi.Request) *httpapi.Refusal {
	lq, bad := readList(q, false, false)
	if bad != nil {
		return bad
	}
	ctx := q.Context()
	sorted := l.catalogue(q)
	page, next, matched := pageGraphs(sorted, lq, func(e *plane.Entry) bool { return listed(e) && lq.matchesGraph(e) })
	var reads []depthRead
	for i, e := range page {
		for _, st := range e.Plan.Stages {
			reads = append(reads, depthRead{row: i, queue: st.Source, group: st.Group})
		}
	}
	l.readDepths(ctx, reads)
	out := wire.GraphPage{Items: make([]wire.GraphRow, 0, len(page)), Next: next, Matched: matched, Total: countListed(sorted)}
	now := l.p.Clock.Now().UnixMilli()
	held, heldOK := l.heldNodes(ctx, now)
	r := 0 // reads are in page, then stage order
	for _, e := range page {
		t := l.totalsOf(e)
		_, _, _, fwd := t.sums(e.Plan)
		running := l.p.Cat.RunsVersionNow(e)
		row := wire.GraphRow{
			Application: e.App, Name: e.Graph, Version: e.Plan.Version, Running: running,
			Nodes: []wire.GraphRowNode{}, Edges: edges(e.Plan), Paths: viewPaths(e), Forwarded: fwd,
		}
		row.Mode, row.WatchEndsAt, row.ReadyForReview = watchState(e, now)
		row.Held, row.BrokerRead = held.of(e), heldOK
		if !heldOK {
			row.Held = []string{}
		}
		// A node's waiting_for_budget counts each source queue once, at its
		// largest group backlog (plane.NodeWaiting's rule): several paths'
		// groups on one queue each hold every path's items.
		perQueue := map[[2]string]int64{}
		for _, st := range e.Plan.Stages {
			if reads[r].ok {
				k := [2]string{st.Node, st.Source}
				perQueue[k] = max(perQueue[k], reads[r].pending)
			}
			r++
		}
		waiting := map[string]int64{}
		for k, n := range perQueue {
			waiting[k[0]] += n
		}
		for _, n := range e.Plan.Nodes {
			gn := wire.GraphRowNode{
				Name: n.Name, Target: e.Graph + "." + n.Name, Entry: n.IngressQueue != "" || n.HTTPPush,
				Consume: plane.Optional(n.EgressQueue), Running: running, Budgets: len(n.Budgets),
				Paths: nodePaths(e.Plan, n.Name), Shares: n.Shares, WaitingForBudget: waiting[n.Name],
			}
			if t != nil {
				for _, st := range e.Plan.Stages {
					if st.Node == n.Name {
						c := t.stages[plane.StageID(st.Path, st.Node, st.Hop)]
						gn.Admitted += c.Admitted
						gn.Denied += c.Deferred
					}
				}
			}
			row.Nodes = append(row.Nodes, gn)
		}
		out.Items = append(out.Items, row)
	}
	setNextLink(q, out.Next)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
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

// held is the nodes a live backoff holds, by application and graph.
type held map[plane.GraphKey][]string

// of is e's held nodes in name order (never nil).
func (h held) of(e *plane.Entry) []string {
	out := append([]string{}, h[plane.GraphKey{App: e.App, Graph: e.Graph}]...)
	slices.Sort(out)
	return out
}

// holds reports whether a backoff holds some node of e.
func (h held) holds(e *plane.Entry) bool {
	return len(h[plane.GraphKey{App: e.App, Graph: e.Graph}]) > 0
}

// heldNodes reads every live breaker record of the namespace in one
// listing (store.RecentBreakers) for a page of rows; ok is false when the
// broker could not be read, so the rows say unknown instead of none.
func (l *Live) heldNodes(ctx context.Context, now int64) (held, bool) {
	recs, err := l.p.Store.RecentBreakers(ctx)
	if err != nil {
		return held{}, false
	}
	out := held{}
	for _, b := range recs {
		if b.Until() > now {
			k := plane.GraphKey{App: b.Application, Graph: b.Graph}
			if !slices.Contains(out[k], b.Node) {
				out[k] = append(out[k], b.Node)
			}
		}
	}
	return out, true
}

// watchState is a row's mode, when its Watch ends and whether it is ready
// for review (the Watch period is over; it still relays in Watch).
func watchState(e *plane.Entry, now int64) (mode string, endsAt *int64, ready bool) {
	if e.Doc == nil || e.Doc.Watch == nil {
		return "enforce", nil, false
	}
	if e.Doc.Watch.StartedAt == nil {
		return "watch", nil, false
	}
	end := *e.Doc.Watch.StartedAt + e.Doc.Watch.DurationSeconds*1000
	return "watch", &end, now >= end
}
