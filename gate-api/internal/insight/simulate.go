package insight

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/simulate"
	"github.com/queen-mq/gate/libs/wire"
)

// Simulation bounds (gate-runtime §6.3).
const (
	simMaxCount      = 1_000_000_000
	simMinTimeMs     = 100
	simMaxTimeMs     = 2_592_000_000
	simMaxSubWindows = 3600
	simMaxMinutes    = 1440
	simDefaultMin    = 60
)

func noHistory(what string) *httpapi.Refusal {
	return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeNoHistory, "%s needs the PostgreSQL history, and this gate-api has none: set PG_HOST (or PG_URL) to the database gate-recorder writes and restart", what)
}

// watchSession checks that the graph is in Watch with a start, and returns
// the session (startedAt) and its end (ms).
func watchSession(e *plane.Entry) (session, endsAt int64, bad *httpapi.Refusal) {
	if !e.Plan.Watching || e.Doc == nil || e.Doc.Watch == nil {
		return 0, 0, httpapi.Refuse(http.StatusConflict, wire.CodeNotWatching, "graph '%s/%s' is not in Watch: there is no recording to replay; declare it with \"watch\": {\"durationSeconds\": N} at a higher version and let traffic flow first", e.App, e.Graph)
	}
	if e.Doc.Watch.StartedAt == nil {
		return 0, 0, httpapi.Refuse(http.StatusConflict, wire.CodeWatchNotStarted, "graph '%s/%s' is in Watch but has no watch.startedAt: declare it again so the server stamps the session start", e.App, e.Graph)
	}
	session = *e.Doc.Watch.StartedAt
	return session, session + e.Doc.Watch.DurationSeconds*1000, nil
}

// simulate is GET …/simulate?node=&count=&timeMs=&subWindows=&minutes=:
// "Try a limit" — the node's recorded Watch traffic replayed against one
// global allowance (gate-runtime §6.3).
func (in *Insight) simulate(q *httpapi.Request) *httpapi.Refusal {
	e, bad := in.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	v := q.Query()
	session, endsAt, bad := watchSession(e)
	if bad != nil {
		return bad
	}
	name := v.Get("node")
	n := e.Plan.Node(name)
	if n == nil {
		return httpapi.Refuse(http.StatusNotFound, wire.CodeNodeNotFound, "no node '%s' in graph '%s/%s': give ?node= one of %s", name, e.App, e.Graph, strings.Join(plane.NodeNames(e.Plan), ", ")).Field("node")
	}
	if n.Cost.Path != "" {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodePreviewUnsupported, "node '%s' has a payload cost (%s): the preview replays a fixed cost per item only; use POST …/simulate with a candidate document for payload costs", n.Name, n.Cost.Path).Field("node")
	}
	var stages []plan.Stage
	for _, st := range e.Plan.Stages {
		if st.Node == n.Name {
			stages = append(stages, st)
		}
	}
	if len(stages) != 1 || stages[0].Share != 1.0 {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodePreviewUnsupported, "node '%s' is crossed by %d stages: the preview supports one full-share path; use POST …/simulate with a candidate document for shared and multi-path nodes", n.Name, len(stages)).Field("node")
	}
	count, given, bad := httpapi.QueryInt(v, "count")
	if bad != nil {
		return bad
	}
	if !given || count < 1 || count > simMaxCount {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "count must be an integer in [1, %d]: the cost units the allowance admits per timeMs", simMaxCount).Field("count")
	}
	timeMs, given, bad := httpapi.QueryInt(v, "timeMs")
	if bad != nil {
		return bad
	}
	if !given || timeMs < simMinTimeMs || timeMs > simMaxTimeMs {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "timeMs must be an integer in [%d, %d] (100 ms to 30 days)", simMinTimeMs, simMaxTimeMs).Field("timeMs")
	}
	sub, subGiven, bad := httpapi.QueryInt(v, "subWindows")
	if bad != nil {
		return bad
	}
	var subPtr *uint32
	if subGiven {
		if sub < 1 || sub > simMaxSubWindows || sub > count {
			return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "subWindows must be in [1, %d] and at most count (%d): omit it for the limiter's default", simMaxSubWindows, count).Field("subWindows")
		}
		u := uint32(sub)
		subPtr = &u
	}
	w := plan.Subdivide(count, timeMs, subPtr)
	costPerItem := n.Cost.Default
	if costPerItem < 1 || costPerItem > w.CountSub {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeAllowanceTooSmall, "an item of node '%s' costs %d but one sub-window admits %d (%d per %d ms in %d sub-windows): no item could ever pass; raise count or lower subWindows", n.Name, costPerItem, w.CountSub, count, timeMs, w.N).Field("count")
	}
	minutes, bad := httpapi.QueryClamped[int64](v, "minutes", simDefaultMin, 1, simMaxMinutes)
	if bad != nil {
		return bad
	}
	db := in.p.History()
	if db == nil {
		return noHistory("Try a limit")
	}
	ctx, cancel := in.p.HistoryContext(q)
	defer cancel()
	until := replayUntil(in.p.Clock.Now().UnixMilli(), endsAt)
	since := max(until-minutes*60000, session)
	recs, err := db.Recorders(ctx, e.App, e.Graph, n.Name, session)
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	cov := simulate.Coverage(toSpans(recs), since, until)
	// Read straight into the replay's input; the first second whose rows
	// are not all at the node's cost refuses the whole read.
	var secs []simulate.Second
	var off history.SecondTraffic // the first such second, when found
	found := false
	err = db.EachSecondAtCost(ctx, e.App, e.Graph, n.Name, session, cov.Start, cov.End, costPerItem,
		func(n int) { secs = make([]simulate.Second, 0, n) },
		func(smp history.SecondTraffic) {
			if found {
				return
			}
			if !smp.Uniform || smp.Cost != smp.Items*costPerItem {
				off, found = smp, true
				return
			}
			secs = append(secs, simulate.Second{T: smp.Second, Items: smp.Items, Cost: smp.Cost})
		})
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	if found {
		return httpapi.Refuse(http.StatusConflict, wire.CodeRecordingCostChanged, "the recording at %d (ms) has %d items of cost %d, not %d each: the node's cost changed during this range; pick a range with one constant cost (a smaller minutes) or use POST …/simulate",
			off.Second, off.Items, off.Cost, costPerItem).Second(off.Second)
	}
	r, vendor, err := previewWithVendor(ctx, db, e, n, secs, cov.Start, cov.End, simulate.Allowance{Count: w.CountSub, Seconds: w.TTLSeconds, CostPerItem: costPerItem}, count, timeMs)
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	out := wire.Simulation{
		Node: n.Name, Items: r.Items, DelayedItems: r.Delayed, PeakBacklog: r.Peak, RemainingBacklog: r.Remaining,
		DrainSeconds: r.DrainSeconds, LongestWaitSeconds: r.LongestWaitSeconds, Series: r.Series,
		Coverage:     wire.Coverage{Since: cov.Start, Until: cov.End, GapSeconds: cov.GapSeconds, LostItems: cov.LostItems, ResolutionSeconds: 1},
		Effective:    wire.Effective{Count: w.CountSub, Seconds: w.TTLSeconds, SubWindows: w.N, CostPerItem: costPerItem},
		HasKnownGaps: cov.GapSeconds != 0 || cov.LostItems != 0,
		Vendor:       vendor,
	}
	if r.Items > 0 {
		pct := float64(r.Delayed) * 100 / float64(r.Items)
		out.DelayedPercent = &pct
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// replayUntil is the end of a replayed range: the last complete second
// before now, or the end of the Watch session rounded up to the second
// (the relay hands over the items of the session's last, partial second
// once that second is over), whichever comes first.
func replayUntil(now, endsAt int64) int64 {
	complete := now - now%1000
	last := endsAt - endsAt%1000
	if last < endsAt {
		last += 1000
	}
	return min(complete, last)
}

func toSpans(recs []history.Recorder) []simulate.Recorder {
	out := make([]simulate.Recorder, 0, len(recs))
	for _, r := range recs {
		out = append(out, simulate.Recorder{Started: r.Started, Through: r.Through, Lost: r.Lost})
	}
	return out
}

// simulateCandidate is POST …/simulate?minutes=: the body is a candidate
// document for the graph (e.g. the one "Configure limits" is about to
// save). It is compiled exactly as a PUT would compile it (refusals name
// the rule with the PUT's status), then the Watch session's recorded
// per-second arrivals of every path replay through the candidate's plan.
// Nothing is stored or changed.
func (in *Insight) simulateCandidate(q *httpapi.Request) *httpapi.Refusal {
	e, bad := in.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	body, bad := q.ReadJSON()
	if bad != nil {
		return bad
	}
	session, endsAt, bad := watchSession(e)
	if bad != nil {
		return bad
	}
	minutes, bad := httpapi.QueryClamped[int64](q.Query(), "minutes", simDefaultMin, 1, simMaxMinutes)
	if bad != nil {
		return bad
	}
	ctx := q.Context()
	// Stored stays nil when the store is empty or unreadable, as the
	// compiler's cross-graph rules expect of an unknown store.
	var stored []declare.Stored
	if listing, err := in.p.Store.List(ctx); err == nil && len(listing.Documents) > 0 {
		stored = plane.StoredOf(listing.Documents)
	}
	res, err := declare.Compile(declare.Input{App: e.App, Name: e.Graph, Body: body, Target: e.Legacy,
		Facts: in.p.Facts(ctx), Stored: stored, Options: in.p.Cfg.PlanOptions()})
	if bad := plane.CompileRefusal(res, err); bad != nil {
		return bad
	}
	db := in.p.History()
	if db == nil {
		return noHistory("Simulating a candidate")
	}
	until := replayUntil(in.p.Clock.Now().UnixMilli(), endsAt)
	since := max(until-minutes*60000, session)
	hctx, cancel := in.p.HistoryContext(q)
	defer cancel()
	rec, err := recordedArrivals(hctx, db, e, res.Plan, session, since, until)
	if err != nil {
		return in.p.HistoryRefusal(hctx, err)
	}
	sim, err := simulate.GraphFed(rec.in, rec.feeds)
	// The replay is over: a read of unsealed hours it did not need stops.
	rec.stop()
	if err != nil {
		return in.p.HistoryRefusal(hctx, err)
	}
	out := sim.GraphSimulation
	cov, perPath, assumes := rec.cov, rec.perPath, rec.assumes
	out.Session = session
	out.Coverage = cov
	out.PathCoverage = perPath
	out.HasKnownGaps = cov.GapSeconds != 0 || cov.LostItems != 0
	out.Assumes = append(graphAssumptions(), assumes...)
	out.Warnings = nonNilStrings(res.Warnings())
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

func nonNilStrings(in []string) []string {
	if in == nil {
		return []string{}
	}
	return in
}

func graphAssumptions() []string {
	return []string{
		"the queues are empty at the start of the range; arrivals of one second are simultaneous; each stage serves its queue FIFO",
		"arrivals are the items the Watch recorded at each path's first node; an item admitted at one hop reaches the next within the same second",
		"stages of one hop take turns claim by claim (one claim = the stage's batch); workers and egress consumers are not modelled: only budgets delay",
		"fixed costs are the candidate's; payload costs take each item's recorded cost (the recorded cost per second spread over its items)",
		"budgets listed as unsupported are not charged; shared keys are spent only by this graph (other graphs' traffic is not replayed)",
	}
}

// readers is how many history reads of one whole-graph simulation run at
// once: the paths' sealed hours before the replay starts, then their
// unsealed hours beside it. Two of the pool's connections (history's
// default pool is 4), and no more than the cores a small host has.
const readers = 2

// arrivals is a whole-graph replay's input as recordedArrivals opened it:
// each path's recording fed to the replay as it goes, the unsealed hours
// read ahead in the background until stop.
type arrivals struct {
	in      simulate.GraphInput
	feeds   map[string]simulate.Feed
	cov     wire.Coverage
	perPath map[string]wire.Coverage
	assumes []string
	// stop cancels the background reads and waits for them to end.
	stop func()
}

// recordedArrivals opens, for every path of the candidate, the recorded
// per-second items at the node that is the path's first hop in the
// running (watched) graph, and the coverage of those recordings. The
// sealed hours are read (readers paths at a time) before it returns; the
// hours not sealed yet are read in the background while the replay runs
// the sealed ones, and a feed reaching them waits for their read.
func recordedArrivals(ctx context.Context, db *history.DB, e *plane.Entry, cand *plan.Plan, session, since, until int64) (*arrivals, error) {
	out := &arrivals{in: simulate.GraphInput{Plan: cand}, feeds: map[string]simulate.Feed{}, perPath: map[string]wire.Coverage{}, stop: func() {}}
	entryNode := map[string]string{}
	for _, st := range e.Plan.Stages {
		if st.Hop == 0 {
			if _, ok := entryNode[st.Path]; !ok {
				entryNode[st.Path] = st.Node
			}
		}
	}
	paths := map[string]bool{}
	for _, st := range cand.Stages {
		paths[st.Path] = true
	}
	names := make([]string, 0, len(paths))
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	start, end := int64(-1), int64(-1)
	var gap, lost int64
	recsByNode := map[string][]history.Recorder{}
	type toRead struct {
		path, node string
		cov        simulate.CoverageResult
		rec        *history.PathRecording
	}
	var reads []toRead
	for _, path := range names {
		node, ok := entryNode[path]
		if !ok {
			out.assumes = append(out.assumes, fmt.Sprintf("path %s is not in the watched graph: nothing recorded, no arrivals replayed", path))
			continue
		}
		recs, ok := recsByNode[node]
		if !ok {
			var err error
			if recs, err = db.Recorders(ctx, e.App, e.Graph, node, session); err != nil {
				return nil, err
			}
			recsByNode[node] = recs
		}
		cov := simulate.Coverage(toSpans(recs), since, until)
		out.perPath[path] = wire.Coverage{Since: cov.Start, Until: cov.End, GapSeconds: cov.GapSeconds, LostItems: cov.LostItems, ResolutionSeconds: 1}
		if len(recs) == 0 {
			out.assumes = append(out.assumes, fmt.Sprintf("path %s has no recording at node %s in this session: no arrivals replayed", path, node))
			continue
		}
		if start < 0 || cov.Start < start {
			start = cov.Start
		}
		end = max(end, cov.End)
		gap = max(gap, cov.GapSeconds)
		reads = append(reads, toRead{path: path, node: node, cov: cov})
	}
	for _, recs := range recsByNode {
		for _, r := range recs {
			lost += r.Lost
		}
	}
	// The sealed hours of every path, readers at a time.
	errs := make([]error, len(reads))
	eachRead(len(reads), func(i int) {
		r := &reads[i]
		r.rec, errs[i] = db.OpenPath(ctx, e.App, e.Graph, r.node, r.path, session, r.cov.Start, r.cov.End)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, r := range reads {
		out.feeds[r.path] = newPathFeed(ctx, r.rec)
	}
	// The unsealed hours, in the background while the replay runs. An
	// error is kept by the recording and answered by its feed's Next.
	bg, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		eachRead(len(reads), func(i int) {
			if bg.Err() == nil {
				_ = reads[i].rec.ReadRest(bg)
			}
		})
	}()
	out.stop = func() {
		cancel()
		<-done
	}
	if start < 0 {
		start, end = since/1000*1000, until/1000*1000
	}
	out.in.Start, out.in.End = start, max(end, start)
	out.cov = wire.Coverage{Since: out.in.Start, Until: out.in.End, GapSeconds: gap, LostItems: lost, ResolutionSeconds: 1}
	return out, nil
}

// eachRead calls read(0) … read(n-1), readers at a time, and returns when
// all have.
func eachRead(n int, read func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(readers, n) {
		wg.Go(func() {
			for i := range next {
				read(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// pathFeed hands one path's recording to the replay a piece (an hour, or a
// stretch of unsealed hours) at a time, decoded into one buffer it reuses:
// the replay holds one piece per path, not the whole range.
type pathFeed struct {
	ctx context.Context
	rec *history.PathRecording
	buf []simulate.Second
	add func(history.SecondTraffic)
}

func newPathFeed(ctx context.Context, rec *history.PathRecording) *pathFeed {
	f := &pathFeed{ctx: ctx, rec: rec}
	f.add = func(s history.SecondTraffic) {
		f.buf = append(f.buf, simulate.Second{T: s.Second, Items: s.Items, Cost: s.Cost})
	}
	return f
}

func (f *pathFeed) Next() ([]simulate.Second, error) {
	f.buf = f.buf[:0]
	for len(f.buf) == 0 {
		more, err := f.rec.Next(f.ctx, f.add)
		if err != nil || !more {
			return nil, err
		}
	}
	return f.buf, nil
}
