package plan

import (
	"math"
	"slices"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/graph"
)

// Build compiles a parsed document into its plan. The document's
// Application and Graph are the names used; Build never fails and never
// panics, but its output is only meaningful for a document the declare
// rules accepted (unknown node names in paths are skipped, for example).
func Build(d *graph.Document, opts Options) *Plan {
	app, g := d.Application, d.Graph
	p := &Plan{
		Application: app,
		Graph:       g,
		Version:     d.Version,
		Namespace:   Namespace(app),
		DocumentKey: DocumentKey(app, g),
		MaxAttempts: DefaultMaxAttempts,
		Watching:    d.Watching(),
	}
	if d.MaxAttempts != nil {
		p.MaxAttempts = max(*d.MaxAttempts, 1)
	}
	switch {
	case p.Watching:
		p.CountersWindowSeconds = WatchCountersSeconds
	case d.Counters != nil:
		p.CountersWindowSeconds = d.Counters.WindowSeconds
	}

	shares := Shares(d)
	names := d.NodeNames()
	p.Nodes = make([]Node, 0, len(names))
	for _, name := range names {
		p.Nodes = append(p.Nodes, buildNode(d, name, d.Nodes[name], shares[name], p.Watching))
	}
	p.Stages = buildStages(d, p, opts)
	p.Queues = buildQueues(d, p)
	return p
}

// Shares returns, per node name, the effective share of every path that
// visits it: 1.0 for a node one path visits, otherwise the declared share or
// the default (K − rank) / K over the K distinct priorities at the node.
func Shares(d *graph.Document) map[string]map[string]float64 {
	visitors := Visitors(d)
	out := make(map[string]map[string]float64, len(visitors))
	byName := make(map[string]*graph.Path, len(d.Paths))
	for i := range d.Paths {
		if _, dup := byName[d.Paths[i].Name]; !dup {
			byName[d.Paths[i].Name] = &d.Paths[i]
		}
	}
	for node, paths := range visitors {
		m := make(map[string]float64, len(paths))
		out[node] = m
		if len(paths) == 1 {
			m[paths[0]] = 1
			continue
		}
		prios := make([]uint32, 0, len(paths))
		for _, name := range paths {
			prios = append(prios, byName[name].Priority)
		}
		slices.Sort(prios)
		prios = slices.Compact(prios)
		for _, name := range paths {
			path := byName[name]
			if path.Share != nil {
				m[name] = *path.Share
				continue
			}
			rank, _ := slices.BinarySearch(prios, path.Priority)
			m[name] = DefaultShare(rank, len(prios))
		}
	}
	return out
}

// Visitors returns, per declared node, the distinct names of the paths that
// visit it (in any element, fan-out branches included) in path order.
func Visitors(d *graph.Document) map[string][]string {
	out := make(map[string][]string, len(d.Nodes))
	// seen holds node → path pairs already listed: one lookup each, so a
	// node crossed by thousands of paths costs linear time, not quadratic.
	type visit struct{ node, path string }
	seen := make(map[visit]struct{})
	for _, path := range d.Paths {
		for _, hop := range path.Nodes {
			for _, n := range hop.Names {
				if _, ok := d.Nodes[n]; !ok {
					continue
				}
				if _, dup := seen[visit{n, path.Name}]; !dup {
					seen[visit{n, path.Name}] = struct{}{}
					out[n] = append(out[n], path.Name)
				}
			}
		}
	}
	return out
}

// CostRule converts a declared cost to the runtime rule.
func CostRule(c graph.Cost) cost.Rule {
	if !c.Object {
		return cost.Fixed(c.Fixed)
	}
	return cost.Rule{Path: c.Path, Default: c.Default, Max: c.Maximum()}
}

// BudgetID is the id of the budget at index i: declared, or `b{i}`.
func BudgetID(b *graph.Budget, i int) string {
	if b.ID != "" {
		return b.ID
	}
	return DefaultBudgetID(i)
}

// KeyOf is the kv key (prefix, for a scoped budget) of the budget at index i
// of node in the graph app/g.
func KeyOf(app, g, node string, b *graph.Budget, i int) string {
	if b.SharedKey != nil {
		return SharedBudgetKey(app, *b.SharedKey)
	}
	return BudgetKey(app, g, node, BudgetID(b, i))
}

func buildNode(d *graph.Document, name string, n *graph.Node, shares map[string]float64, watching bool) Node {
	app, g := d.Application, d.Graph
	e := Node{
		Name:          name,
		InteriorQueue: InteriorQueue(app, g, name),
		BreakerKey:    BreakerKey(app, g, name),
		Cost:          CostRule(n.Cost),
		Shares:        shares,
		Budgets:       []Budget{},
	}
	if e.Shares == nil {
		e.Shares = map[string]float64{}
	}
	for _, s := range e.Shares {
		e.WidestShare = max(e.WidestShare, s)
	}
	if in := n.Ingress; in != nil {
		e.HTTPPush = in.HTTPPush()
		e.Shed = in.Sheds() && !watching
		if in.Named() {
			e.IngressQueue = in.Queue
			if in.Partitions != nil {
				e.IngressPartitions = *in.Partitions
			}
		} else {
			e.IngressQueue = IngressQueue(app, g, name)
			e.IngressOwnedByGate = true
			e.IngressPartitions = DefaultPartitions
			if in.Partitions != nil {
				e.IngressPartitions = *in.Partitions
			}
		}
	}
	if n.Egress != nil {
		e.EgressQueue, e.EgressGroup = n.Egress.Queue, n.Egress.Group
	}
	if watching {
		return e
	}
	for i := range n.Budgets {
		b := &n.Budgets[i]
		w := Subdivide(b.Count, b.TimeMs, b.SubWindows)
		cb := Budget{
			ID:                 BudgetID(b, i),
			Key:                KeyOf(app, g, name, b, i),
			WhenOp:             b.WhenOp,
			Confidence:         b.Confidence,
			Count:              b.Count,
			TimeMs:             b.TimeMs,
			SubWindows:         w.N,
			SubWindowsDeclared: b.SubWindows != nil,
			CountSub:           w.CountSub,
			WindowSubSeconds:   w.TTLSeconds,
			Ceilings:           make(map[string]int64, len(e.Shares)),
		}
		if cb.Confidence == "" {
			cb.Confidence = graph.DefaultConfidence
		}
		if b.ScopeBy != nil {
			cb.ScopeBy = *b.ScopeBy
		}
		if b.SharedKey != nil {
			cb.SharedKey, cb.Shared = *b.SharedKey, true
		}
		if m := b.VendorMeter; m != nil {
			cb.VendorMeter = &VendorMeter{Headers: m.Headers, Name: m.Name, Key: MeterKey(cb.Key)}
		}
		if b.Keys != nil {
			cb.Keys = make(map[string]int64, len(b.Keys))
			for v, c := range b.Keys {
				cb.Keys[v] = c
			}
		}
		for path, share := range e.Shares {
			cb.Ceilings[path] = Ceiling(w.CountSub, share)
		}
		e.Budgets = append(e.Budgets, cb)
	}
	return e
}

func buildStages(d *graph.Document, p *Plan, opts Options) []Stage {
	app, g := d.Application, d.Graph
	var stages []Stage
	for _, path := range d.Paths {
		last := len(path.Nodes) - 1
		for hop, el := range path.Nodes {
			for branch, name := range el.Names {
				n := d.Nodes[name]
				entry := p.Node(name)
				if n == nil || entry == nil {
					continue
				}
				s := Stage{
					Path: path.Name, Node: name, Hop: hop, Branch: branch,
					Priority: path.Priority, Share: entry.Shares[path.Name],
					Group: Group(app, g, path.Name, name),
				}
				if hop == 0 && entry.IngressQueue != "" {
					s.Source = entry.IngressQueue
				} else {
					s.Source, s.SourceIsInterior = entry.InteriorQueue, true
				}
				if hop == last {
					if entry.EgressQueue != "" {
						s.Destinations = []Destination{{
							Node: name, Queue: entry.EgressQueue, Terminal: true,
							Label: TerminalLabel(app, g, path.Name, name),
						}}
					}
				} else {
					for _, next := range path.Nodes[hop+1].Names {
						if d.Nodes[next] == nil {
							continue
						}
						s.Destinations = append(s.Destinations, Destination{
							Node: next, Queue: InteriorQueue(app, g, next),
							Label: HopLabel(app, g, path.Name, next),
						})
					}
				}
				if s.Destinations == nil {
					s.Destinations = []Destination{}
				}
				s.Batch = stageBatch(n, entry, s.Share, opts)
				s.Concurrency = stageWorkers(n, entry, s, opts, p.Watching)
				stages = append(stages, s)
			}
		}
	}
	readers := map[string]int{}
	pushers := map[string]int{}
	for _, s := range stages {
		readers[s.Source]++
		for _, dst := range s.Destinations {
			pushers[dst.Queue]++
		}
	}
	owned := map[string]bool{}
	for i := range stages {
		s := &stages[i]
		s.ChecksForeign = s.Hop > 0 && readers[s.Source] > 1
		if !owned[s.Source] {
			owned[s.Source], s.OwnsUnstamped = true, true
		}
		for j := range s.Destinations {
			dst := &s.Destinations[j]
			dst.DerivesTransactionID = dst.Terminal || len(s.Destinations) > 1 || pushers[dst.Queue] > 1
		}
	}
	if stages == nil {
		stages = []Stage{}
	}
	return stages
}

// declaredBatch is the node's batch or the configured one, within 1..1000
// for the configured value and at least 1 for both.
func declaredBatch(n *graph.Node, opts Options) int64 {
	if n.Batch != nil {
		return max(int64(*n.Batch), 1)
	}
	b := int64(opts.StageBatch)
	if b == 0 {
		b = DefaultStageBatch
	}
	return min(max(b, 1), MaxStageBatch)
}

func stageBatch(n *graph.Node, e *Node, share float64, opts Options) uint32 {
	batch := declaredBatch(n, opts)
	d := n.Cost.Typical()
	for i := range e.Budgets {
		b := &e.Budgets[i]
		if b.ScopeBy != "" {
			continue
		}
		batch = min(batch, max(1, Ceiling(b.CountSub, share)/d))
	}
	return uint32(min(batch, math.MaxUint32))
}

func stageWorkers(n *graph.Node, e *Node, s Stage, opts Options, watching bool) uint32 {
	if n.Concurrency != nil {
		return max(*n.Concurrency, 1)
	}
	if opts.StageConcurrency > 0 {
		return uint32(min(opts.StageConcurrency, math.MaxUint32))
	}
	parts := int64(DefaultPartitions)
	if observed := opts.ObservedPartitions[s.Source]; observed > 0 && !s.SourceIsInterior && !e.IngressOwnedByGate {
		parts = int64(observed)
	} else if n.Ingress != nil && n.Ingress.Partitions != nil {
		parts = int64(*n.Ingress.Partitions)
	}
	parts = max(parts, 1)
	if watching {
		return uint32(min(parts, math.MaxUint32))
	}
	capRate := math.Inf(1)
	for i := range e.Budgets {
		b := &e.Budgets[i]
		if b.ScopeBy != "" || b.ID == PassthroughBudgetID {
			continue
		}
		capRate = min(capRate, float64(Ceiling(b.CountSub, s.Share))/float64(b.WindowSubSeconds))
	}
	if math.IsInf(capRate, 1) {
		return 1
	}
	lane := float64(opts.LaneCapacity)
	if lane <= 0 {
		lane = DefaultLaneCapacity
	}
	w := int64(math.Ceil(capRate / lane))
	return uint32(min(max(w, 1), parts))
}

func buildQueues(d *graph.Document, p *Plan) []Queue {
	seen := map[string]bool{}
	queues := []Queue{}
	add := func(q Queue) {
		if q.Name == "" || seen[q.Name] {
			return
		}
		seen[q.Name] = true
		queues = append(queues, q)
	}
	for _, n := range p.Nodes {
		if n.IngressQueue == "" {
			continue
		}
		if n.IngressOwnedByGate {
			add(Queue{Name: n.IngressQueue, Kind: KindIngress, OwnedByGate: true, Partitions: n.IngressPartitions})
		} else {
			add(Queue{Name: n.IngressQueue, Kind: KindIngressYours, Partitions: n.IngressPartitions})
		}
	}
	for _, s := range p.Stages {
		if s.Hop > 0 {
			add(Queue{Name: s.Source, Kind: KindInterior, OwnedByGate: true})
		}
	}
	for _, n := range p.Nodes {
		add(Queue{Name: n.EgressQueue, Kind: KindEgress})
	}
	return queues
}
