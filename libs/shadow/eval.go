package shadow

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
)

// MaxGroups bounds the virtual backlog a State carries: queued items are
// kept as groups (one per arrival second and cost), at most this many
// across a graph's stages; past it the youngest groups of a stage are
// folded into one (their arrival second becomes the oldest folded one's,
// so a delay is never under-reported).
const MaxGroups = 20_000

// MaxLanes bounds the lanes (distinct recorded scope and op) an Evaluator
// keeps between minutes: past it, at a minute's end, the lanes with
// nothing waiting and the counters whose window has ended are dropped
// (neither changes a later judgement; a lane seen again is rebuilt).
const MaxLanes = 50_000

// NodePath names the per-second arrivals of one node on one path.
type NodePath struct{ Node, Path string }

// Second is the items a node forwarded on a path in one second (T, ms)
// and their summed cost.
type Second struct {
	T, Items, Cost int64
	// Keys are the second's items per recorded scope and op (recorded
	// while a keyed candidate is set). Items and Cost are the totals: what
	// Keys do not hold (the relay's overflow past its cap on distinct
	// values, or seconds recorded before the relay knew the candidate) is
	// judged without its values and counted as approximate.
	Keys []KeyCount
}

// KeyCount is the items of one second with one recorded scope (an
// AppendScope object; "" when no field was recorded) and op.
type KeyCount struct {
	Scope, Op   string
	Items, Cost int64
}

// Minute is one node's shadow figures for one minute.
type Minute struct {
	Node string
	// Minute is the minute's start (ms).
	Minute int64
	// Arrived are the items recorded at the node in the minute; Admitted
	// those the candidate would have let through in it (any arrival time).
	Arrived, Admitted int64
	// Delayed are the items admitted in the minute that waited at least a
	// second; Backlog the items still waiting at the minute's end.
	Delayed, Backlog int64
	// DelayP50Ms and DelayMaxMs are the added delay of the items admitted
	// in the minute (the median and the longest); OldestWaitingMs is how
	// long the oldest item still waiting had waited at the minute's end.
	DelayP50Ms, DelayMaxMs, OldestWaitingMs int64
	// Approximate are the items of the minute a keyed candidate judged
	// without their scope value or op (the recording's overflow): they
	// charged only the budgets that charge every item.
	Approximate int64
	// Missing is, per scoped budget, the items of the minute recorded
	// with no value at its scopeBy (they charge nothing on it, as on the
	// relay); nil when none.
	Missing map[string]int64
}

// State is what a shadow carries from one minute to the next.
type State struct {
	// Through is the next second to evaluate (ms, a minute boundary).
	Through int64 `json:"through"`
	// Queues are the waiting items per node, path and lane: [arrived ms,
	// items, cost each].
	Queues []QueueState `json:"queues"`
	// Counters are the counters' open windows.
	Counters []CounterState `json:"counters"`
}

// QueueState is one lane's virtual backlog: a stage's, or for a keyed
// candidate one recorded scope and op of it (Unknown: the items judged
// without their values).
type QueueState struct {
	Node    string     `json:"node"`
	Path    string     `json:"path"`
	Scope   string     `json:"scope,omitempty"`
	Op      string     `json:"op,omitempty"`
	Unknown bool       `json:"unknown,omitempty"`
	Groups  [][3]int64 `json:"groups"`
}

// CounterState is one counter's open window.
type CounterState struct {
	Key     string `json:"key"`
	Value   int64  `json:"value"`
	Expires int64  `json:"expires"`
	TTL     int64  `json:"ttl"`
}

// Unsupported is a candidate budget the recording cannot judge.
type Unsupported struct{ Node, Budget, Reason string }

type group struct{ arrived, n, cost int64 }

type counterRef struct {
	key, id  string
	max, ttl int64
}

// laneID names a lane of a stage.
type laneID struct {
	scope, op string
	unknown   bool
}

// lane is a FIFO of a stage's items that charge the same counters: the
// whole stage for an unkeyed candidate; for a keyed one, the items of one
// recorded scope and op (a lane's wait holds only its own items, as when
// each value is pushed to its own partition).
type lane struct {
	id laneID
	// win holds the counters its items charge (only its own: a claim
	// costs what they do, not what the stage's many keys do); idx are
	// their indices, nil until first needed.
	win budget.Batch
	idx []int
	// approx: its items are judged without some value; missing: the
	// scoped budgets its items carry no value for.
	approx  bool
	missing []string
	queue   []group
	head    int
	queued  int64
}

type stage struct {
	np       NodePath
	node     int // index into Evaluator.nodes
	batch    int
	rule     cost.Rule
	pn       *plan.Node
	share    float64
	keyed    bool
	counters []counterRef // an unkeyed stage's
	lanes    []*lane
	byLane   map[laneID]*lane
	// one is an unkeyed stage's only lane (no map lookup per second).
	one    *lane
	queued int64
	runs   []budget.Run
}

type minuteAcc struct {
	arrived, admitted, delayed, approx int64
	delays                             map[int64]int64
	missing                            map[string]int64
}

// Evaluator runs one candidate plan over a graph's recorded seconds.
type Evaluator struct {
	nodes   []string
	stages  []*stage
	byNP    map[NodePath]int
	table   budget.Table
	through int64
	acc     []minuteAcc
	keys    map[string]int64 // counter key → ttl seconds
	// scoped are the scoped budgets' key prefixes (key + ":") → ttl: the
	// counters of their values are carried too.
	scoped      map[string]int64
	unsupported []Unsupported
	// lanes counts the lanes kept; past maxLanes (MaxLanes) a minute's
	// end trims them.
	lanes, maxLanes int
	// active is serve's scratch.
	active []turn
}

// NewEvaluator builds an evaluator of the candidate plan p for the named
// nodes (the candidate's), resuming st.
func NewEvaluator(p *plan.Plan, nodes []string, st State) (*Evaluator, error) {
	if st.Through%60000 != 0 {
		return nil, fmt.Errorf("shadow state through %d is not a minute boundary", st.Through)
	}
	e := &Evaluator{byNP: map[NodePath]int{}, through: st.Through, keys: map[string]int64{}, scoped: map[string]int64{}, maxLanes: MaxLanes}
	for _, name := range nodes {
		n := p.Node(name)
		if n == nil {
			return nil, fmt.Errorf("the candidate plan has no node %q", name)
		}
		ni := len(e.nodes)
		e.nodes = append(e.nodes, name)
		isKeyed := false
		for i := range n.Budgets {
			b := &n.Budgets[i]
			if keyed(b) {
				isKeyed = true
			}
			if b.ScopeBy != "" {
				e.scoped[plan.ScopedKey(b.Key, "")] = b.WindowSubSeconds
			}
		}
		for _, ps := range p.Stages {
			if ps.Node != name {
				continue
			}
			np := NodePath{name, ps.Path}
			if _, ok := e.byNP[np]; ok {
				continue
			}
			s := &stage{np: np, node: ni, batch: max(int(ps.Batch), 1), rule: n.Cost, pn: n, share: ps.Share, keyed: isKeyed, byLane: map[laneID]*lane{}}
			if !isKeyed {
				// The cheap path: every item charges the same counters.
				for i := range n.Budgets {
					b := &n.Budgets[i]
					s.counters = append(s.counters, counterRef{key: b.Key, id: b.ID, max: s.ceiling(b), ttl: b.WindowSubSeconds})
					e.keys[b.Key] = b.WindowSubSeconds
				}
			} else {
				for _, b := range n.Budgets {
					if b.ScopeBy == "" {
						e.keys[b.Key] = b.WindowSubSeconds
					}
				}
			}
			e.byNP[np] = len(e.stages)
			e.stages = append(e.stages, s)
		}
	}
	e.acc = make([]minuteAcc, len(e.nodes))
	for _, q := range st.Queues {
		i, ok := e.byNP[NodePath{q.Node, q.Path}]
		if !ok {
			continue // the candidate no longer runs this node: its backlog goes
		}
		s := e.stages[i]
		id := laneID{}
		if s.keyed {
			id = laneID{scope: q.Scope, op: q.Op, unknown: q.Unknown}
		}
		l := e.lane(s, id)
		for _, g := range q.Groups {
			if g[1] > 0 {
				l.queue = append(l.queue, group{arrived: g[0], n: g[1], cost: g[2]})
				l.queued += g[1]
				s.queued += g[1]
			}
		}
	}
	for _, c := range st.Counters {
		ttl, ok := e.keys[c.Key]
		if !ok {
			ttl, ok = e.scopedTTL(c.Key)
		}
		if !ok || c.Value <= 0 || c.Expires <= st.Through {
			continue
		}
		e.keys[c.Key] = ttl
		var b budget.Batch
		i := b.Counter(c.Key, math.MaxInt64, c.TTL, "")
		b.Add(c.Value, []int{i})
		e.table.Charge(&b, 1, time.UnixMilli(c.Expires-max(c.TTL, 1)*1000))
	}
	return e, nil
}

// scopedTTL is the window of a scoped budget's counter key.
func (e *Evaluator) scopedTTL(key string) (int64, bool) {
	for prefix, ttl := range e.scoped {
		if strings.HasPrefix(key, prefix) {
			return ttl, true
		}
	}
	return 0, false
}

// lane is s's lane id, made when new.
func (e *Evaluator) lane(s *stage, id laneID) *lane {
	if l := s.byLane[id]; l != nil {
		return l
	}
	l := &lane{id: id}
	s.byLane[id] = l
	s.lanes = append(s.lanes, l)
	e.lanes++
	return l
}

// ceiling is b's ceiling on s's path (the plan's; one computed from the
// path's share when the plan has none for it).
func (s *stage) ceiling(b *plan.Budget) int64 {
	if c, ok := b.Ceilings[s.np.Path]; ok {
		return c
	}
	return plan.Ceiling(b.CountSub, s.share)
}

// Unsupported lists the candidate budgets the recording cannot judge:
// none since the recording keeps the scope values and ops a keyed
// candidate needs (kept for the answer's shape).
func (e *Evaluator) Unsupported() []Unsupported { return e.unsupported }

// Through is the next second the evaluator will judge.
func (e *Evaluator) Through() int64 { return e.through }

// counters sets l's counters: an unkeyed stage's every budget; a keyed
// one's as the relay's stage builds an item's (a budget limited to other
// ops is skipped, a scoped budget charges its value's key with the
// document's per-key count when it declares one, an item with no value
// there is not charged by it). A lane judged without its values charges
// only the budgets that charge every item.
func (e *Evaluator) counters(s *stage, l *lane) {
	b := &l.win
	l.idx = make([]int, 0, len(s.counters)+1)
	l.approx, l.missing = false, l.missing[:0]
	add := func(key string, ceiling, ttl int64, id string) {
		if i := b.Counter(key, ceiling, ttl, id); !slices.Contains(l.idx, i) {
			// A run names each counter once (two budgets on one key
			// share it), as Batch.Add would.
			l.idx = append(l.idx, i)
		}
	}
	if !s.keyed {
		for _, c := range s.counters {
			add(c.key, c.max, c.ttl, c.id)
		}
		return
	}
	var scope map[string]*string
	if !l.id.unknown && l.id.scope != "" {
		m, err := scopeOf(l.id.scope)
		if err != nil {
			l.approx = true
		} else {
			scope = m
		}
	}
	path := s.np.Path
	for i := range s.pn.Budgets {
		bu := &s.pn.Budgets[i]
		if restricts(bu.WhenOp) {
			if l.id.unknown {
				l.approx = true
				continue
			}
			if !cost.Applies(bu.WhenOp, l.id.op) {
				continue
			}
		}
		key, ceiling := bu.Key, s.ceiling(bu)
		if bu.ScopeBy != "" {
			v, recorded := scope[bu.ScopeBy]
			switch {
			case l.id.unknown || !recorded:
				l.approx = true
				continue
			case v == nil:
				l.missing = append(l.missing, bu.ID)
				continue
			}
			key = plan.ScopedKey(bu.Key, *v)
			if len(key) > plan.MaxKVKeyBytes {
				// The relay would refuse such an item as poison; it is
				// not judged on this budget.
				l.approx = true
				continue
			}
			if count, declared := bu.KeyCount(*v); declared {
				ceiling = s.pn.KeyCeiling(bu, path, count)
			}
		}
		e.keys[key] = bu.WindowSubSeconds
		add(key, ceiling, bu.WindowSubSeconds, bu.ID)
	}
}

// Run judges every second from Through up to to (a minute boundary)
// with arr (per node and path, each sorted by T; seconds outside the
// range are ignored) and returns each node's figures per minute.
func (e *Evaluator) Run(to int64, arr map[NodePath][]Second) []Minute {
	var out []Minute
	cursor := make(map[NodePath]int, len(arr))
	for t := e.through; t < to; t += 1000 {
		for np, secs := range arr {
			i, ok := e.byNP[np]
			if !ok {
				continue
			}
			k := cursor[np]
			for k < len(secs) && secs[k].T < t {
				k++
			}
			for k < len(secs) && secs[k].T == t {
				e.enqueue(e.stages[i], secs[k], t)
				k++
			}
			cursor[np] = k
		}
		e.serve(t)
		if (t+1000)%60000 == 0 {
			out = append(out, e.closeMinute(t+1000-60000)...)
		}
	}
	e.through = max(e.through, to)
	return out
}

// enqueue puts one recorded second on s: on its one lane, or for a keyed
// candidate each recorded scope and op on its own lane and the rest on
// the lane of items judged without their values.
func (e *Evaluator) enqueue(s *stage, sec Second, t int64) {
	if sec.Items <= 0 {
		return
	}
	acc := &e.acc[s.node]
	acc.arrived += sec.Items
	if !s.keyed {
		if s.one == nil {
			s.one = e.lane(s, laneID{})
		}
		e.spread(s, s.one, sec.Items, sec.Cost, t)
		return
	}
	items, total := sec.Items, sec.Cost
	for _, k := range sec.Keys {
		n := min(k.Items, items)
		if n <= 0 {
			continue
		}
		c := min(k.Cost, total)
		items -= n
		total -= c
		l := e.lane(s, laneID{scope: k.Scope, op: k.Op})
		if l.idx == nil {
			e.counters(s, l)
		}
		e.note(acc, l, n)
		e.spread(s, l, n, c, t)
	}
	if items > 0 {
		l := e.lane(s, laneID{unknown: true})
		if l.idx == nil {
			e.counters(s, l)
		}
		e.note(acc, l, items)
		e.spread(s, l, items, total, t)
	}
}

// note counts n items of l in the minute's approximate and missing
// figures.
func (e *Evaluator) note(acc *minuteAcc, l *lane, n int64) {
	if l.approx {
		acc.approx += n
	}
	for _, id := range l.missing {
		if acc.missing == nil {
			acc.missing = map[string]int64{}
		}
		acc.missing[id] += n
	}
}

// spread queues n items of summed cost c arrived at t on l.
func (e *Evaluator) spread(s *stage, l *lane, n, c, t int64) {
	if s.rule.Path == "" {
		s.push(l, group{arrived: t, n: n, cost: max(s.rule.Default, 1)})
		return
	}
	// A payload cost: the recorded cost spread over the items, the
	// remainder on the first ones, so the total is kept.
	base, extra := c/n, c%n
	if extra > 0 {
		s.push(l, group{arrived: t, n: extra, cost: max(base+1, 1)})
	}
	s.push(l, group{arrived: t, n: n - extra, cost: max(base, 1)})
}

func (s *stage) push(l *lane, g group) {
	if g.n <= 0 {
		return
	}
	s.queued += g.n
	l.queued += g.n
	if k := len(l.queue); k > l.head {
		last := &l.queue[k-1]
		if last.arrived == g.arrived && last.cost == g.cost {
			last.n += g.n
			return
		}
	}
	l.queue = append(l.queue, g)
}

// turn is a lane with items waiting, in serve.
type turn struct {
	s *stage
	l *lane
}

// serve runs every lane's claims at t: the lanes of a node's stages take
// turns claim by claim until each is empty or refused.
func (e *Evaluator) serve(t int64) {
	now := time.UnixMilli(t)
	active := e.active[:0]
	for _, s := range e.stages {
		if s.queued == 0 {
			continue
		}
		for _, l := range s.lanes {
			if l.queued > 0 {
				active = append(active, turn{s, l})
			}
		}
	}
	for len(active) > 0 {
		keep := active[:0]
		for _, a := range active {
			want := int(min(int64(a.s.batch), a.l.queued))
			n := e.claim(a.s, a.l, want, now)
			if n == want && a.l.queued > 0 {
				keep = append(keep, a)
			}
		}
		active = keep
	}
	e.active = active[:0]
}

// claim judges one claim of l (its first want items) with the table.
func (e *Evaluator) claim(s *stage, l *lane, want int, now time.Time) int {
	if l.idx == nil {
		e.counters(s, l)
	}
	// The claim as runs of identical items (budget.Table.AdmitRuns): the
	// same answer and charges as Admit of the items, without one Item per
	// item.
	s.runs = s.runs[:0]
	left := want
	for g := l.head; left > 0 && g < len(l.queue); g++ {
		k := int(min(l.queue[g].n, int64(left)))
		if k > 0 {
			s.runs = append(s.runs, budget.Run{Cost: l.queue[g].cost, N: k, Counters: l.idx})
		}
		left -= k
	}
	a := e.table.AdmitRuns(&l.win, s.runs, now)
	if a.N > 0 {
		e.take(s, l, int64(a.N), now.UnixMilli())
	}
	return a.N
}

// take pops n admitted items off l at t.
func (e *Evaluator) take(s *stage, l *lane, n, t int64) {
	acc := &e.acc[s.node]
	for n > 0 && l.head < len(l.queue) {
		g := &l.queue[l.head]
		k := min(g.n, n)
		acc.admitted += k
		d := t - g.arrived
		if d > 0 {
			acc.delayed += k
		}
		if acc.delays == nil {
			acc.delays = map[int64]int64{}
		}
		acc.delays[d] += k
		g.n -= k
		n -= k
		s.queued -= k
		l.queued -= k
		if g.n == 0 {
			l.head++
		}
	}
	if l.head > 64 && l.head*2 > len(l.queue) {
		l.queue = append(l.queue[:0], l.queue[l.head:]...)
		l.head = 0
	}
	if l.queued == 0 {
		l.queue, l.head = l.queue[:0], 0
	}
}

// closeMinute reports and resets every node's accumulator, then keeps the
// lanes within MaxLanes.
func (e *Evaluator) closeMinute(minute int64) []Minute {
	end := minute + 60000
	out := make([]Minute, 0, len(e.nodes))
	for i, name := range e.nodes {
		acc := &e.acc[i]
		m := Minute{Node: name, Minute: minute, Arrived: acc.arrived, Admitted: acc.admitted, Delayed: acc.delayed,
			Approximate: acc.approx, Missing: acc.missing}
		m.DelayP50Ms, m.DelayMaxMs = percentile(acc.delays)
		for _, s := range e.stages {
			if s.node != i || s.queued == 0 {
				continue
			}
			m.Backlog += s.queued
			for _, l := range s.lanes {
				if l.queued > 0 {
					m.OldestWaitingMs = max(m.OldestWaitingMs, end-l.queue[l.head].arrived)
				}
			}
		}
		out = append(out, m)
		*acc = minuteAcc{}
	}
	if e.lanes > e.maxLanes {
		e.trim(time.UnixMilli(end))
	}
	return out
}

// trim drops the lanes with nothing waiting and the counters whose window
// ended by now; every kept lane's batch is rebuilt (it remembers table
// rows).
func (e *Evaluator) trim(now time.Time) {
	e.lanes = 0
	for _, s := range e.stages {
		kept := s.lanes[:0]
		for _, l := range s.lanes {
			if l.queued == 0 && s.keyed {
				delete(s.byLane, l.id)
				continue
			}
			l.win.Reset()
			l.idx = nil
			kept = append(kept, l)
		}
		clear(s.lanes[len(kept):])
		s.lanes = kept
		e.lanes += len(kept)
	}
	e.table.Forget(now)
	for k := range e.keys {
		if _, _, ok := e.table.Value(k, now); !ok {
			if _, scoped := e.scopedTTL(k); scoped {
				delete(e.keys, k)
			}
		}
	}
}

// percentile is the weighted median and the maximum of delays.
func percentile(delays map[int64]int64) (p50, most int64) {
	if len(delays) == 0 {
		return 0, 0
	}
	keys := make([]int64, 0, len(delays))
	var total int64
	for d, n := range delays {
		keys = append(keys, d)
		total += n
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	half := (total + 1) / 2
	var seen int64
	p50 = keys[len(keys)-1]
	for _, d := range keys {
		seen += delays[d]
		if seen >= half {
			p50 = d
			break
		}
	}
	return p50, keys[len(keys)-1]
}

// State is what to carry to the next run.
func (e *Evaluator) State() State {
	st := State{Through: e.through, Queues: []QueueState{}, Counters: []CounterState{}}
	total := 0
	for _, s := range e.stages {
		for _, l := range s.lanes {
			total += len(l.queue) - l.head
		}
	}
	fold := total > MaxGroups
	for _, s := range e.stages {
		if s.queued == 0 {
			continue
		}
		for _, l := range s.lanes {
			if l.queued == 0 {
				continue
			}
			q := QueueState{Node: s.np.Node, Path: s.np.Path, Scope: l.id.scope, Op: l.id.op, Unknown: l.id.unknown}
			groups := l.queue[l.head:]
			limit := len(groups)
			if fold {
				limit = max(1, len(groups)*MaxGroups/total)
			}
			for i, g := range groups {
				if i >= limit-1 && len(groups) > limit {
					// Fold the rest into one group at this arrival (older
					// than theirs): costs are kept per item on average.
					var n, c int64
					for _, r := range groups[i:] {
						n += r.n
						c += r.n * r.cost
					}
					q.Groups = append(q.Groups, [3]int64{g.arrived, n, max(c/max(n, 1), 1)})
					break
				}
				q.Groups = append(q.Groups, [3]int64{g.arrived, g.n, g.cost})
			}
			st.Queues = append(st.Queues, q)
		}
	}
	now := time.UnixMilli(e.through)
	keys := make([]string, 0, len(e.keys))
	for k := range e.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, exp, ok := e.table.Value(k, now); ok && v > 0 {
			st.Counters = append(st.Counters, CounterState{Key: k, Value: v, Expires: exp.UnixMilli(), TTL: e.keys[k]})
		}
	}
	return st
}
