package shadow

import (
	"fmt"
	"math"
	"slices"
	"sort"
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

// NodePath names the per-second arrivals of one node on one path.
type NodePath struct{ Node, Path string }

// Second is the items a node forwarded on a path in one second (T, ms)
// and their summed cost.
type Second struct{ T, Items, Cost int64 }

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
}

// State is what a shadow carries from one minute to the next.
type State struct {
	// Through is the next second to evaluate (ms, a minute boundary).
	Through int64 `json:"through"`
	// Queues are the waiting items per node and path: [arrived ms, items,
	// cost each].
	Queues []QueueState `json:"queues"`
	// Counters are the counters' open windows.
	Counters []CounterState `json:"counters"`
}

// QueueState is one stage's virtual backlog.
type QueueState struct {
	Node   string     `json:"node"`
	Path   string     `json:"path"`
	Groups [][3]int64 `json:"groups"`
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

type stage struct {
	np       NodePath
	node     int // index into Evaluator.nodes
	batch    int
	rule     cost.Rule
	counters []counterRef
	queue    []group
	head     int
	queued   int64
	win      budget.Batch
	idx      []int
	runs     []budget.Run
}

type minuteAcc struct {
	arrived, admitted, delayed int64
	delays                     map[int64]int64
}

// Evaluator runs one candidate plan over a graph's recorded seconds.
type Evaluator struct {
	nodes       []string
	stages      []*stage
	byNP        map[NodePath]int
	table       budget.Table
	through     int64
	acc         []minuteAcc
	keys        map[string]int64 // counter key → ttl seconds
	unsupported []Unsupported
}

// NewEvaluator builds an evaluator of the candidate plan p for the named
// nodes (the candidate's), resuming st.
func NewEvaluator(p *plan.Plan, nodes []string, st State) (*Evaluator, error) {
	if st.Through%60000 != 0 {
		return nil, fmt.Errorf("shadow state through %d is not a minute boundary", st.Through)
	}
	e := &Evaluator{byNP: map[NodePath]int{}, through: st.Through, keys: map[string]int64{}}
	for _, name := range nodes {
		n := p.Node(name)
		if n == nil {
			return nil, fmt.Errorf("the candidate plan has no node %q", name)
		}
		ni := len(e.nodes)
		e.nodes = append(e.nodes, name)
		for _, b := range n.Budgets {
			if r := unsupported(b); r != "" {
				e.unsupported = append(e.unsupported, Unsupported{Node: name, Budget: b.ID, Reason: r})
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
			s := &stage{np: np, node: ni, batch: max(int(ps.Batch), 1), rule: n.Cost}
			for _, b := range n.Budgets {
				if unsupported(b) != "" {
					continue
				}
				ceiling, ok := b.Ceilings[ps.Path]
				if !ok {
					ceiling = plan.Ceiling(b.CountSub, ps.Share)
				}
				s.counters = append(s.counters, counterRef{key: b.Key, id: b.ID, max: ceiling, ttl: b.WindowSubSeconds})
				e.keys[b.Key] = b.WindowSubSeconds
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
		for _, g := range q.Groups {
			if g[1] > 0 {
				s.queue = append(s.queue, group{arrived: g[0], n: g[1], cost: g[2]})
				s.queued += g[1]
			}
		}
	}
	for _, c := range st.Counters {
		if _, ok := e.keys[c.Key]; !ok || c.Value <= 0 || c.Expires <= st.Through {
			continue
		}
		var b budget.Batch
		i := b.Counter(c.Key, math.MaxInt64, c.TTL, "")
		b.Add(c.Value, []int{i})
		e.table.Charge(&b, 1, time.UnixMilli(c.Expires-max(c.TTL, 1)*1000))
	}
	return e, nil
}

// Unsupported lists the candidate budgets the recording cannot judge
// (scoped or operation-filtered): they are not charged.
func (e *Evaluator) Unsupported() []Unsupported { return e.unsupported }

// Through is the next second the evaluator will judge.
func (e *Evaluator) Through() int64 { return e.through }

// unsupported says why a recording of items per second cannot judge b.
func unsupported(b plan.Budget) string {
	if b.ScopeBy != "" {
		return fmt.Sprintf("scoped by %s: the recording keeps no per-value traffic, so the per-key counters cannot be judged", b.ScopeBy)
	}
	if b.WhenOp != nil && !slices.Contains(b.WhenOp, "*") {
		return fmt.Sprintf("applies only to ops %v: the recording keeps no operations, so the items it charges are unknown", b.WhenOp)
	}
	return ""
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

// enqueue puts one recorded second on s.
func (e *Evaluator) enqueue(s *stage, sec Second, t int64) {
	if sec.Items <= 0 {
		return
	}
	e.acc[s.node].arrived += sec.Items
	c := max(s.rule.Default, 1)
	if s.rule.Path == "" {
		s.push(group{arrived: t, n: sec.Items, cost: c})
		return
	}
	// A payload cost: the recorded cost spread over the items, the
	// remainder on the first ones, so the total is kept.
	base, extra := sec.Cost/sec.Items, sec.Cost%sec.Items
	if extra > 0 {
		s.push(group{arrived: t, n: extra, cost: max(base+1, 1)})
	}
	s.push(group{arrived: t, n: sec.Items - extra, cost: max(base, 1)})
}

func (s *stage) push(g group) {
	if g.n <= 0 {
		return
	}
	s.queued += g.n
	if k := len(s.queue); k > s.head {
		last := &s.queue[k-1]
		if last.arrived == g.arrived && last.cost == g.cost {
			last.n += g.n
			return
		}
	}
	s.queue = append(s.queue, g)
}

// serve runs every stage's claims at t: stages of one node take turns
// claim by claim until each is empty or refused.
func (e *Evaluator) serve(t int64) {
	now := time.UnixMilli(t)
	active := make([]*stage, 0, len(e.stages))
	for _, s := range e.stages {
		if s.queued > 0 {
			active = append(active, s)
		}
	}
	for len(active) > 0 {
		keep := active[:0]
		for _, s := range active {
			want := int(min(int64(s.batch), s.queued))
			n := e.claim(s, want, now)
			if n == want && s.queued > 0 {
				keep = append(keep, s)
			}
		}
		active = keep
	}
}

// claim judges one claim of s (its first want items) with the table.
func (e *Evaluator) claim(s *stage, want int, now time.Time) int {
	b := &s.win
	if s.idx == nil {
		s.idx = make([]int, 0, len(s.counters))
		for _, c := range s.counters {
			// A run names each counter once (two budgets on one key
			// share it), as Batch.Add would.
			if i := b.Counter(c.key, c.max, c.ttl, c.id); !slices.Contains(s.idx, i) {
				s.idx = append(s.idx, i)
			}
		}
	}
	// The claim as runs of identical items (budget.Table.AdmitRuns): the
	// same answer and charges as Admit of the items, without one Item per
	// item.
	s.runs = s.runs[:0]
	left := want
	for g := s.head; left > 0 && g < len(s.queue); g++ {
		k := int(min(s.queue[g].n, int64(left)))
		if k > 0 {
			s.runs = append(s.runs, budget.Run{Cost: s.queue[g].cost, N: k, Counters: s.idx})
		}
		left -= k
	}
	a := e.table.AdmitRuns(b, s.runs, now)
	if a.N > 0 {
		e.take(s, int64(a.N), now.UnixMilli())
	}
	return a.N
}

// take pops n admitted items off s at t.
func (e *Evaluator) take(s *stage, n, t int64) {
	acc := &e.acc[s.node]
	for n > 0 && s.head < len(s.queue) {
		g := &s.queue[s.head]
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
		if g.n == 0 {
			s.head++
		}
	}
	if s.head > 64 && s.head*2 > len(s.queue) {
		s.queue = append(s.queue[:0], s.queue[s.head:]...)
		s.head = 0
	}
}

// closeMinute reports and resets every node's accumulator.
func (e *Evaluator) closeMinute(minute int64) []Minute {
	end := minute + 60000
	out := make([]Minute, 0, len(e.nodes))
	for i, name := range e.nodes {
		acc := &e.acc[i]
		m := Minute{Node: name, Minute: minute, Arrived: acc.arrived, Admitted: acc.admitted, Delayed: acc.delayed}
		m.DelayP50Ms, m.DelayMaxMs = percentile(acc.delays)
		for _, s := range e.stages {
			if s.node != i || s.queued == 0 {
				continue
			}
			m.Backlog += s.queued
			m.OldestWaitingMs = max(m.OldestWaitingMs, end-s.queue[s.head].arrived)
		}
		out = append(out, m)
		*acc = minuteAcc{}
	}
	return out
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
		total += len(s.queue) - s.head
	}
	fold := total > MaxGroups
	for _, s := range e.stages {
		if s.queued == 0 {
			continue
		}
		q := QueueState{Node: s.np.Node, Path: s.np.Path}
		groups := s.queue[s.head:]
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
