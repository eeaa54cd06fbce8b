package simulate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// DefaultDrainLimitSeconds bounds the replay after the range: a backlog
// still there after 31 days is reported as not draining.
const DefaultDrainLimitSeconds = 31 * 24 * 3600

// GraphInput is a whole-graph replay.
type GraphInput struct {
	// Plan is the candidate's compiled plan.
	Plan *plan.Plan
	// Start and End bound the replayed range (ms, whole seconds).
	Start, End int64
	// Arrivals maps a path to the items entering it per second, with the
	// cost they were recorded at.
	Arrivals map[string][]Second
	// DrainLimitSeconds bounds the replay after End (0: the default).
	DrainLimitSeconds int64
	// Trace keeps every counter window in GraphResult.Windows (tests);
	// without it only the per-budget statistics are kept.
	Trace bool
	// byLoop judges every claim by the admission loop itself
	// (budget.Table.ByLoop): tests check the replay is the same.
	byLoop bool
}

// WindowTotal is one sub-window of one counter as the replay filled it.
type WindowTotal struct {
	Key string
	// Opened and End are the window's first charge and expiry (ms).
	Opened, End int64
	// Total is the cost charged in the window; PerPath each path's part.
	Total   int64
	PerPath map[string]int64
	// Max is the largest ceiling any charge in the window carried.
	Max int64
	// PathMax is each path's ceiling on the counter.
	PathMax map[string]int64
}

// GraphResult is the replay's answer and, with Trace, every window.
type GraphResult struct {
	wire.GraphSimulation
	Windows []WindowTotal
}

// winState is the open window of one counter.
type winState struct {
	key              string
	opened, end      int64
	total, max       int64
	perPath, pathMax []int64 // by path index
	stats            *keyStats
	charged          bool
}

// keyStats summarise the closed windows of one counter.
type keyStats struct {
	windows, peak, sum int64
	// ceilings are the widest ceilings of the node budgets on the key;
	// full counts the windows that reached each.
	ceilings []int64
	full     []int64
}

type group struct {
	n, cost, rc, origin, arrived int64
}

type counterRef struct {
	key, id   string
	max, ttl  int64
	budgetIdx int
}

type stageSim struct {
	st       *plan.Stage
	node     int // index into plan.Nodes
	np       int // index into nodePaths
	path     int // index into paths
	queue    []group
	head     int
	queued   int64
	next     []int
	terminal int
	counters []counterRef
	batch    int
	rule     cost.Rule
	// window is the stage's claim, its counters minted once (idx their
	// indices); wins are the counters' open windows.
	window budget.Batch
	idx    []int
	runs   []budget.Run
	wins   []*winState
	// peakUse is, per counter of window, the path's fullest window so far
	// (folded into its node-path's peakUse by the report); used marks the
	// counters charged at all.
	peakUse []int64
	used    []bool
	// refused counts, per counter of window, the claims it refused
	// (folded into the node's and node-path's refusals by the report).
	refused []int64
}

type nodeAcc struct {
	arrived, admitted, tooExpensive, delayed, peak, final int64
	backlog                                               int64
	drainAt                                               int64 // ms; -1 unknown
	refusals                                              map[string]int64
}

type nodePathAcc struct {
	node, path                                       string
	arrived, admitted, delayed, peak, final, backlog int64
	refusals                                         map[string]int64
	peakUse                                          map[string]int64 // counter key → the path's fullest window
}

type pathAcc struct {
	items, delivered, delayed, peak, final, backlog int64
	drainAt                                         int64
}

type replay struct {
	in        GraphInput
	p         *plan.Plan
	stages    []stageSim
	depth     int
	nodes     []nodeAcc
	nodePaths []nodePathAcc
	paths     []pathAcc
	pathIdx   map[string]int
	table     budget.Table
	start     int64
	open      map[string]*winState
	stats     map[string]*keyStats
	closed    []WindowTotal
	names     []string // path names by index
	// arrivalPaths are the recorded paths in name order, arrivals their
	// cursors and arrivalIdx their path index (-1: not in the plan).
	arrivalPaths []string
	arrivals     []feedCursor
	arrivalIdx   []int
	// err is the first error a feed returned: the replay stops at it.
	err error
	// active is second's scratch: the stages of a hop with a queue.
	active []int
	// entries are, by path index, the path's first-hop stages.
	entries [][]int
	res     *GraphResult
}

// Graph replays in.Arrivals through in.Plan. Each second: the arrivals
// enter the first-hop stages of their path; then stages are served hop by
// hop, stages of one hop round-robin one claim (up to the stage's batch)
// at a time, each claim judged by budget.Table.Admit — until every stage
// of the hop is empty or refused. Admitted items move to the next hop in
// the same second (or are delivered at an egress). After End the replay
// continues without arrivals until every queue is empty, jumping to the
// next window end when everything waits, for at most DrainLimitSeconds.
func Graph(in GraphInput) *GraphResult {
	for path, secs := range in.Arrivals {
		if !sort.SliceIsSorted(secs, func(i, j int) bool { return secs[i].T < secs[j].T }) {
			s := append([]Second(nil), secs...)
			sort.Slice(s, func(i, j int) bool { return s[i].T < s[j].T })
			in.Arrivals[path] = s
		}
	}
	feeds := make(map[string]Feed, len(in.Arrivals))
	for path, secs := range in.Arrivals {
		feeds[path] = &sliceFeed{secs: secs}
	}
	// A slice never fails to feed.
	res, _ := GraphFed(in, feeds)
	return res
}

// A Feed hands one path's recorded seconds to a replay in time order, a
// chunk at a time, so that a replay can start while the rest is still
// being read. Next returns the seconds that follow the previous chunk's
// (none earlier than any of them), or an empty chunk once there are no
// more. A chunk is the replay's only until its next call to Next: the
// feed may then reuse its memory.
type Feed interface {
	Next() ([]Second, error)
}

// sliceFeed is a Feed of one sorted slice, handed over whole.
type sliceFeed struct {
	secs []Second
	done bool
}

func (f *sliceFeed) Next() ([]Second, error) {
	if f.done {
		return nil, nil
	}
	f.done = true
	return f.secs, nil
}

// GraphFed is Graph with each path's arrivals read from a Feed as the
// replay reaches them (in.Arrivals is not read). It replays exactly as
// Graph over the same seconds. The first error of a feed stops the
// replay and is returned, as is a feed whose seconds go back in time.
func GraphFed(in GraphInput, feeds map[string]Feed) (*GraphResult, error) {
	r := newReplay(in)
	r.arrivalPaths = make([]string, 0, len(feeds))
	for path := range feeds {
		r.arrivalPaths = append(r.arrivalPaths, path)
	}
	sort.Strings(r.arrivalPaths)
	for _, path := range r.arrivalPaths {
		r.arrivals = append(r.arrivals, feedCursor{path: path, feed: feeds[path], last: math.MinInt64})
		pi, ok := r.pathIdx[path]
		if !ok {
			pi = -1
		}
		r.arrivalIdx = append(r.arrivalIdx, pi)
	}
	r.run()
	if r.err != nil {
		return nil, r.err
	}
	return r.res, nil
}

// feedCursor is a replay's place in one path's Feed.
type feedCursor struct {
	path  string
	feed  Feed
	chunk []Second
	i     int
	done  bool
	last  int64 // the T of the last second read
}

// peek is the next unread second (false once the feed is done); a
// feed's error, or a second before the last one, is returned.
func (c *feedCursor) peek() (*Second, bool, error) {
	for c.i >= len(c.chunk) {
		if c.done {
			return nil, false, nil
		}
		chunk, err := c.feed.Next()
		if err != nil {
			c.done, c.chunk, c.i = true, nil, 0
			return nil, false, fmt.Errorf("simulate: reading the arrivals of path %s: %w", c.path, err)
		}
		c.chunk, c.i = chunk, 0
		if len(chunk) == 0 {
			c.done = true
			return nil, false, nil
		}
	}
	s := &c.chunk[c.i]
	if s.T < c.last {
		c.done = true
		return nil, false, fmt.Errorf("simulate: the arrivals of path %s go back in time (second %d after %d): a feed hands its seconds oldest first", c.path, s.T, c.last)
	}
	return s, true, nil
}

func newReplay(in GraphInput) *replay {
	p := in.Plan
	if in.DrainLimitSeconds <= 0 {
		in.DrainLimitSeconds = DefaultDrainLimitSeconds
	}
	r := &replay{in: in, p: p, pathIdx: map[string]int{}, open: map[string]*winState{}, stats: map[string]*keyStats{}, res: &GraphResult{}}
	r.table.ByLoop = in.byLoop
	r.res.Application, r.res.Graph, r.res.Version = p.Application, p.Graph, p.Version
	r.res.DrainLimitSeconds = in.DrainLimitSeconds
	r.res.Unsupported = []wire.SimUnsupported{}
	nodeIdx := map[string]int{}
	for i := range p.Nodes {
		nodeIdx[p.Nodes[i].Name] = i
		r.nodes = append(r.nodes, nodeAcc{drainAt: -1, refusals: map[string]int64{}})
		for _, b := range p.Nodes[i].Budgets {
			if reason := unsupported(b); reason != "" {
				r.res.Unsupported = append(r.res.Unsupported, wire.SimUnsupported{Node: p.Nodes[i].Name, Budget: b.ID, Reason: reason})
			}
		}
	}
	for _, st := range p.Stages {
		if _, ok := r.pathIdx[st.Path]; !ok {
			r.pathIdx[st.Path] = len(r.paths)
			r.paths = append(r.paths, pathAcc{drainAt: -1})
			r.names = append(r.names, st.Path)
		}
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		for _, b := range n.Budgets {
			if unsupported(b) != "" {
				continue
			}
			ks := r.stats[b.Key]
			if ks == nil {
				ks = &keyStats{}
				r.stats[b.Key] = ks
			}
			if c := plan.Ceiling(b.CountSub, n.WidestShare); !slices.Contains(ks.ceilings, c) {
				ks.ceilings = append(ks.ceilings, c)
				ks.full = append(ks.full, 0)
			}
		}
	}
	npIdx := map[[2]string]int{}
	type stageKey struct {
		path, node string
		hop        int
	}
	byKey := map[stageKey]int{}
	for i := range p.Stages {
		st := &p.Stages[i]
		ni := nodeIdx[st.Node]
		n := &p.Nodes[ni]
		k := [2]string{st.Node, st.Path}
		if _, ok := npIdx[k]; !ok {
			npIdx[k] = len(r.nodePaths)
			r.nodePaths = append(r.nodePaths, nodePathAcc{node: st.Node, path: st.Path, refusals: map[string]int64{}, peakUse: map[string]int64{}})
		}
		ss := stageSim{st: st, node: ni, np: npIdx[k], path: r.pathIdx[st.Path], batch: max(int(st.Batch), 1), rule: n.Cost}
		for bi, b := range n.Budgets {
			if unsupported(b) != "" {
				continue
			}
			ceiling, ok := b.Ceilings[st.Path]
			if !ok {
				ceiling = plan.Ceiling(b.CountSub, st.Share)
			}
			ss.counters = append(ss.counters, counterRef{key: b.Key, id: b.ID, max: ceiling, ttl: b.WindowSubSeconds, budgetIdx: bi})
		}
		r.depth = max(r.depth, st.Hop+1)
		byKey[stageKey{st.Path, st.Node, st.Hop}] = len(r.stages)
		r.stages = append(r.stages, ss)
	}
	r.entries = make([][]int, len(r.paths))
	for i := range r.stages {
		ss := &r.stages[i]
		if ss.st.Hop == 0 {
			r.entries[ss.path] = append(r.entries[ss.path], i)
		}
		for _, d := range ss.st.Destinations {
			if d.Terminal {
				ss.terminal++
				continue
			}
			if j, ok := byKey[stageKey{ss.st.Path, d.Node, ss.st.Hop + 1}]; ok {
				ss.next = append(ss.next, j)
			}
		}
	}
	return r
}

// unsupported says why the recording cannot judge b ("" when it can).
func unsupported(b plan.Budget) string {
	if b.ScopeBy != "" {
		return fmt.Sprintf("scoped by %s: Watch records no per-value traffic, so the per-key counters cannot be replayed", b.ScopeBy)
	}
	if b.WhenOp != nil && !slices.Contains(b.WhenOp, "*") {
		return fmt.Sprintf("applies only to ops %v: Watch records no operations, so the items it charges are unknown", b.WhenOp)
	}
	return ""
}

// enqueue puts n items (recorded cost rc each) on stage i at second t.
func (r *replay) enqueue(i int, n, rc, origin, t int64) {
	if n <= 0 {
		return
	}
	ss := &r.stages[i]
	c := max(ss.rule.Default, 1)
	if ss.rule.Path != "" {
		c = max(rc, 1)
		if c > max(ss.rule.Max, ss.rule.Default) {
			r.nodes[ss.node].arrived += n
			r.nodes[ss.node].tooExpensive += n
			r.nodePaths[ss.np].arrived += n
			return
		}
	}
	r.nodes[ss.node].arrived += n
	r.nodePaths[ss.np].arrived += n
	if k := len(ss.queue); k > ss.head {
		last := &ss.queue[k-1]
		if last.cost == c && last.rc == rc && last.origin == origin && last.arrived == t {
			last.n += n
			ss.queued += n
			return
		}
	}
	ss.queue = append(ss.queue, group{n: n, cost: c, rc: rc, origin: origin, arrived: t})
	ss.queued += n
}

// arrive enqueues the recorded arrivals of second t from each path's
// feed (seconds before t, off the whole second, are passed over).
func (r *replay) arrive(t int64) {
	for k := range r.arrivals {
		c := &r.arrivals[k]
		var items, costSum int64
		for {
			s, ok, err := c.peek()
			if err != nil {
				r.err = err
				return
			}
			if !ok || s.T > t {
				break
			}
			if s.T == t {
				items += s.Items
				costSum += s.Cost
			}
			c.last = s.T
			c.i++
		}
		pi := r.arrivalIdx[k]
		if pi < 0 || items <= 0 {
			continue
		}
		r.paths[pi].items += items
		// The recorded cost spread over the items: the remainder goes to
		// the first ones, so the total is kept.
		base, extra := costSum/items, costSum%items
		for _, si := range r.entries[pi] {
			if extra > 0 {
				r.enqueue(si, extra, base+1, t, t)
			}
			r.enqueue(si, items-extra, base, t, t)
		}
	}
}

// claim serves one claim of stage i at t; it reports the items admitted,
// whether the stage refused (the claim was cut short) and the wait.
func (r *replay) claim(i int, t int64) (admitted int, refused bool, wait time.Duration) {
	ss := &r.stages[i]
	want := int(min(int64(ss.batch), ss.queued))
	b := &ss.window
	if ss.idx == nil {
		ss.idx = []int{}
		for _, c := range ss.counters {
			// A key two budgets share is charged once per item (as
			// Batch.Add drops the duplicate).
			if i := b.Counter(c.key, c.max, c.ttl, c.id); !slices.Contains(ss.idx, i) {
				ss.idx = append(ss.idx, i)
			}
		}
	}
	// The claim is its queue groups as runs of identical items: judged in
	// time that grows with the groups, not the items.
	ss.runs = ss.runs[:0]
	left := want
	// Groups of one cost next to each other (they differ in recorded
	// cost or arrival only) are one run: the same items in the same order.
	for g := ss.head; left > 0 && g < len(ss.queue); g++ {
		k := int(min(ss.queue[g].n, int64(left)))
		left -= k
		if j := len(ss.runs) - 1; j >= 0 && ss.runs[j].Cost == ss.queue[g].cost {
			ss.runs[j].N += k
			continue
		}
		ss.runs = append(ss.runs, budget.Run{Cost: ss.queue[g].cost, N: k, Counters: ss.idx})
	}
	now := time.UnixMilli(t)
	a := r.table.AdmitRuns(b, ss.runs, now)
	if a.Refused != "" {
		if len(ss.refused) < len(b.Counters) {
			ss.refused = append(ss.refused, make([]int64, len(b.Counters)-len(ss.refused))...)
		}
		for _, c := range a.RefusedCounters {
			ss.refused[c]++
		}
	}
	if a.N > 0 {
		r.account(ss, b, a.Delta, t)
		r.take(i, int64(a.N), t)
	}
	return a.N, a.N < want, a.Wait
}

// account records the charge d (per counter of b) of an admitted prefix in
// the windows of its counters.
func (r *replay) account(ss *stageSim, b *budget.Batch, d []int64, nowMs int64) {
	for ci, delta := range d {
		if delta <= 0 {
			continue
		}
		c := &b.Counters[ci]
		end, ok := r.table.CounterEnd(b, ci, nowMs)
		if !ok {
			continue
		}
		if len(ss.wins) < len(b.Counters) {
			ss.wins = append(ss.wins, make([]*winState, len(b.Counters)-len(ss.wins))...)
		}
		w := ss.wins[ci]
		if w == nil {
			if w = r.open[c.Key]; w == nil {
				w = &winState{key: c.Key, perPath: make([]int64, len(r.paths)), pathMax: make([]int64, len(r.paths)), stats: r.stats[c.Key]}
				r.open[c.Key] = w
			}
			ss.wins[ci] = w
		}
		if !w.charged || w.end != end {
			r.closeWindow(w)
			w.opened, w.end, w.total, w.max, w.charged = nowMs, end, 0, 0, true
			clear(w.perPath)
			clear(w.pathMax)
		}
		pi := ss.path
		w.total += delta
		w.perPath[pi] += delta
		w.max = max(w.max, c.Max)
		w.pathMax[pi] = c.Max
		if len(ss.peakUse) < len(b.Counters) {
			ss.peakUse = append(ss.peakUse, make([]int64, len(b.Counters)-len(ss.peakUse))...)
			ss.used = append(ss.used, make([]bool, len(b.Counters)-len(ss.used))...)
		}
		ss.peakUse[ci] = max(ss.peakUse[ci], w.perPath[pi])
		ss.used[ci] = true
	}
}

// closeWindow folds a charged window into its counter's statistics (and
// the trace).
func (r *replay) closeWindow(w *winState) {
	if !w.charged {
		return
	}
	w.charged = false
	if ks := w.stats; ks != nil {
		ks.windows++
		ks.peak = max(ks.peak, w.total)
		ks.sum += w.total
		for i, c := range ks.ceilings {
			if c > 0 && w.total >= c {
				ks.full[i]++
			}
		}
	}
	if !r.in.Trace {
		return
	}
	wt := WindowTotal{Key: w.key, Opened: w.opened, End: w.end, Total: w.total, Max: w.max, PerPath: map[string]int64{}, PathMax: map[string]int64{}}
	for i, v := range w.perPath {
		if v != 0 || w.pathMax[i] != 0 {
			wt.PerPath[r.names[i]] = v
			wt.PathMax[r.names[i]] = w.pathMax[i]
		}
	}
	r.closed = append(r.closed, wt)
}

// take pops n admitted items off stage i at t and moves them on.
func (r *replay) take(i int, n, t int64) {
	ss := &r.stages[i]
	node := &r.nodes[ss.node]
	np := &r.nodePaths[ss.np]
	pa := &r.paths[ss.path]
	for n > 0 && ss.head < len(ss.queue) {
		g := &ss.queue[ss.head]
		k := min(g.n, n)
		node.admitted += k
		np.admitted += k
		if t > g.arrived {
			node.delayed += k
			np.delayed += k
		}
		for _, j := range ss.next {
			r.enqueue(j, k, g.rc, g.origin, t)
		}
		if ss.terminal > 0 {
			pa.delivered += k * int64(ss.terminal)
			if t > g.origin {
				pa.delayed += k * int64(ss.terminal)
			}
		}
		g.n -= k
		n -= k
		ss.queued -= k
		if g.n == 0 {
			ss.head++
		}
	}
	if ss.head > 64 && ss.head*2 > len(ss.queue) {
		ss.queue = append(ss.queue[:0], ss.queue[ss.head:]...)
		ss.head = 0
	}
}

// second serves every stage at t, hop by hop. It reports whether anything
// was admitted and the shortest wait of a refused stage (-1: none).
func (r *replay) second(t int64) (progress bool, minWait time.Duration) {
	minWait = -1
	// One scratch for every second of the replay: a slice made here would
	// be allocated 86,400 times a day.
	active := r.active[:0]
	for d := 0; d < r.depth; d++ {
		active = active[:0]
		for i := range r.stages {
			if r.stages[i].st.Hop == d && r.stages[i].queued > 0 {
				active = append(active, i)
			}
		}
		// Stages of one hop take turns claim by claim; the first turn
		// rotates every second so no stage always goes first.
		if k := len(active); k > 1 {
			off := int(mod((t-r.start)/1000, int64(k)))
			slices.Reverse(active[:off])
			slices.Reverse(active[off:])
			slices.Reverse(active)
		}
		for len(active) > 0 {
			keep := active[:0]
			for _, i := range active {
				n, refused, wait := r.claim(i, t)
				if n > 0 {
					progress = true
				}
				if refused {
					if minWait < 0 || wait < minWait {
						minWait = wait
					}
					continue
				}
				if r.stages[i].queued > 0 {
					keep = append(keep, i)
				}
			}
			active = keep
		}
	}
	r.active = active
	return progress, minWait
}

// backlogs recomputes the backlog of every node, path and node-path.
func (r *replay) backlogs() (total int64) {
	for i := range r.nodes {
		r.nodes[i].backlog = 0
	}
	for i := range r.nodePaths {
		r.nodePaths[i].backlog = 0
	}
	for i := range r.paths {
		r.paths[i].backlog = 0
	}
	for i := range r.stages {
		ss := &r.stages[i]
		r.nodes[ss.node].backlog += ss.queued
		r.nodePaths[ss.np].backlog += ss.queued
		r.paths[ss.path].backlog += ss.queued
		total += ss.queued
	}
	return total
}

func (r *replay) run() {
	in := r.in
	start, end := floorTo(in.Start, 1000), ceilTo(in.End, 1000)
	r.start = start
	for t := start; t < end; t += 1000 {
		r.arrive(t)
		if r.err != nil {
			return
		}
		r.second(t)
		r.backlogs()
		for i := range r.nodes {
			r.nodes[i].peak = max(r.nodes[i].peak, r.nodes[i].backlog)
		}
		for i := range r.nodePaths {
			r.nodePaths[i].peak = max(r.nodePaths[i].peak, r.nodePaths[i].backlog)
		}
		for i := range r.paths {
			r.paths[i].peak = max(r.paths[i].peak, r.paths[i].backlog)
		}
	}
	total := r.backlogs()
	for i := range r.nodes {
		r.nodes[i].final = r.nodes[i].backlog
		if r.nodes[i].backlog == 0 {
			r.nodes[i].drainAt = end
		}
	}
	for i := range r.nodePaths {
		r.nodePaths[i].final = r.nodePaths[i].backlog
	}
	for i := range r.paths {
		r.paths[i].final = r.paths[i].backlog
		if r.paths[i].backlog == 0 {
			r.paths[i].drainAt = end
		}
	}
	graphDrain := int64(-1)
	if total == 0 {
		graphDrain = end
	}
	limit := end + in.DrainLimitSeconds*1000
	t := end
	for total > 0 && t < limit {
		progress, wait := r.second(t)
		total = r.backlogs()
		for i := range r.nodes {
			if r.nodes[i].drainAt < 0 && r.nodes[i].backlog == 0 {
				r.nodes[i].drainAt = t
			}
		}
		for i := range r.paths {
			if r.paths[i].drainAt < 0 && r.paths[i].backlog == 0 {
				r.paths[i].drainAt = t
			}
		}
		if total == 0 {
			graphDrain = t
			break
		}
		step := int64(1000)
		if !progress {
			if wait <= 0 {
				break // nothing can ever move: a ceiling below an item's cost
			}
			step = max(ceilTo(wait.Milliseconds(), 1000), 1000)
		}
		t += step
	}
	// Whatever is still queued was never admitted: delayed.
	for i := range r.stages {
		ss := &r.stages[i]
		if ss.queued > 0 {
			r.nodes[ss.node].delayed += ss.queued
			r.nodePaths[ss.np].delayed += ss.queued
			r.paths[ss.path].delayed += ss.queued * int64(max(ss.terminal, 1))
		}
	}
	for _, w := range r.open {
		r.closeWindow(w)
	}
	sort.Slice(r.closed, func(i, j int) bool {
		if r.closed[i].Key != r.closed[j].Key {
			return r.closed[i].Key < r.closed[j].Key
		}
		return r.closed[i].End < r.closed[j].End
	})
	r.res.Windows = r.closed
	for i := range r.stages {
		ss := &r.stages[i]
		np := &r.nodePaths[ss.np]
		for ci, k := range ss.refused {
			if k > 0 {
				id := ss.window.Counters[ci].BudgetID
				r.nodes[ss.node].refusals[id] += k
				np.refusals[id] += k
			}
		}
		for ci, use := range ss.peakUse {
			if !ss.used[ci] {
				continue
			}
			key := ss.window.Counters[ci].Key
			if old, ok := np.peakUse[key]; !ok || use > old {
				np.peakUse[key] = use
			}
		}
	}
	r.report(end, graphDrain)
}

func drain(at, end int64) *int64 {
	if at < 0 {
		return nil
	}
	v := (at - end) / 1000
	return &v
}

func (r *replay) report(end, graphDrain int64) {
	res := r.res
	p := r.p
	res.DrainSeconds = drain(graphDrain, end)
	res.Nodes = make([]wire.SimNode, 0, len(p.Nodes))
	for i := range p.Nodes {
		n := &p.Nodes[i]
		acc := &r.nodes[i]
		sn := wire.SimNode{Node: n.Name, Arrived: acc.arrived, Admitted: acc.admitted, TooExpensive: acc.tooExpensive,
			DelayedItems: acc.delayed, PeakBacklog: acc.peak, FinalBacklog: acc.final, DrainSeconds: drain(acc.drainAt, end),
			Refusals: []wire.SimRefusal{}, Budgets: []wire.SimBudget{}, Paths: []wire.SimNodePath{}}
		sn.BoundBy, sn.Refusals = bound(n, acc.refusals)
		for _, b := range n.Budgets {
			if unsupported(b) != "" {
				continue
			}
			ceiling := plan.Ceiling(b.CountSub, n.WidestShare)
			sb := wire.SimBudget{ID: b.ID, Key: b.Key, Shared: b.Shared, Ceiling: ceiling, WindowSeconds: b.WindowSubSeconds}
			if ks := r.stats[b.Key]; ks != nil && ks.windows > 0 {
				sb.Windows = ks.windows
				if i := slices.Index(ks.ceilings, ceiling); i >= 0 {
					sb.FullWindows = ks.full[i]
				}
				if ceiling > 0 {
					peak := float64(ks.peak) / float64(ceiling)
					mean := float64(ks.sum) / float64(ks.windows) / float64(ceiling)
					sb.PeakUtilisation, sb.MeanUtilisation = &peak, &mean
				}
			}
			sn.Budgets = append(sn.Budgets, sb)
		}
		for j := range r.nodePaths {
			np := &r.nodePaths[j]
			if np.node != n.Name {
				continue
			}
			snp := wire.SimNodePath{Path: np.path, Arrived: np.arrived, Admitted: np.admitted, DelayedItems: np.delayed,
				PeakBacklog: np.peak, FinalBacklog: np.final, Ceilings: []wire.SimPathCeiling{}}
			snp.BoundBy, _ = bound(n, np.refusals)
			for _, b := range n.Budgets {
				if unsupported(b) != "" {
					continue
				}
				c := b.Ceilings[np.path]
				pc := wire.SimPathCeiling{Budget: b.ID, Ceiling: c}
				if use, ok := np.peakUse[b.Key]; ok && c > 0 {
					u := float64(use) / float64(c)
					pc.PeakUtilisation = &u
				}
				snp.Ceilings = append(snp.Ceilings, pc)
			}
			sn.Paths = append(sn.Paths, snp)
		}
		sort.Slice(sn.Paths, func(a, b int) bool { return sn.Paths[a].Path < sn.Paths[b].Path })
		res.Nodes = append(res.Nodes, sn)
	}
	names := make([]string, 0, len(r.pathIdx))
	for name := range r.pathIdx {
		names = append(names, name)
	}
	sort.Strings(names)
	res.Paths = make([]wire.SimPath, 0, len(names))
	for _, name := range names {
		pa := &r.paths[r.pathIdx[name]]
		res.Paths = append(res.Paths, wire.SimPath{Path: name, Items: pa.items, Delivered: pa.delivered, DelayedItems: pa.delayed,
			PeakBacklog: pa.peak, FinalBacklog: pa.final, DrainSeconds: drain(pa.drainAt, end)})
		res.Items += pa.items
		res.Delivered += pa.delivered
		res.DelayedItems += pa.delayed
	}
}

// bound returns the budget that refused most often (declaration order
// breaks ties) and the refusal counts in declaration order.
func bound(n *plan.Node, refusals map[string]int64) (*string, []wire.SimRefusal) {
	out := []wire.SimRefusal{}
	var best *string
	var bestN int64
	seen := map[string]bool{}
	for _, b := range n.Budgets {
		if seen[b.ID] {
			continue
		}
		seen[b.ID] = true
		c := refusals[b.ID]
		if c == 0 {
			continue
		}
		out = append(out, wire.SimRefusal{Budget: b.ID, Count: c})
		if c > bestN {
			id := b.ID
			best, bestN = &id, c
		}
	}
	// A shared key minted by another node's budget carries that budget's
	// id; count it too.
	var extra []string
	for id := range refusals {
		if !seen[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		c := refusals[id]
		out = append(out, wire.SimRefusal{Budget: id, Count: c})
		if c > bestN {
			v := id
			best, bestN = &v, c
		}
	}
	return best, out
}
