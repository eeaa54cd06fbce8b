package diff

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// Side is one side of a diff: a graph's document, compiled. The zero Side
// is "nothing stored".
type Side struct {
	// Doc is the parsed document; nil means nothing is stored.
	Doc *graph.Document
	// Plan is its compiled plan; nil when the document does not compile
	// (its budgets, queues, groups and counters then count as none).
	Plan *plan.Plan
	// Body is the document exactly as stored (or as it would be stored):
	// Changed compares the two sides' bodies byte for byte.
	Body []byte
}

// exists reports whether s holds a document.
func (s Side) exists() bool { return s.Doc != nil }

// Compute is the diff from (the stored document) to to (the declared one):
// what storing to changes. A zero from is a created graph, a zero to a
// deleted one. The result is deterministic: every list is sorted by name.
func Compute(from, to Side) wire.Diff {
	d := wire.Diff{
		Nodes: []wire.NodeChange{}, Paths: []wire.PathChange{}, Queues: []wire.QueueChange{},
		Groups: []wire.GroupChange{}, Counters: []wire.CounterChange{}, Settings: []wire.FieldChange{},
	}
	switch {
	case !from.exists() && !to.exists():
		return d
	case !from.exists():
		d.Created, d.Changed = true, true
	case !to.exists():
		d.Deleted, d.Changed = true, true
	default:
		d.Changed = !bytes.Equal(from.Body, to.Body)
	}
	if from.exists() {
		d.FromVersion = new(from.Doc.Version)
	}
	if to.exists() {
		d.ToVersion = new(to.Doc.Version)
	}
	if from.exists() && to.exists() && from.Doc.Watching() != to.Doc.Watching() {
		d.Mode = &wire.ModeChange{From: mode(from.Doc), To: mode(to.Doc)}
	}
	d.Nodes = nodes(from, to)
	d.Paths = paths(from, to)
	d.Queues = queues(from.Plan, to.Plan)
	d.Groups = groups(from.Plan, to.Plan)
	d.Counters = counters(from.Plan, to.Plan)
	if from.exists() && to.exists() {
		d.Settings = settings(from, to)
	}
	return d
}

func mode(d *graph.Document) string {
	if d.Watching() {
		return wire.ModeWatch
	}
	return wire.ModeEnforce
}

// change is the Change of a named thing present on the sides that have it.
func change(inFrom, inTo bool) string {
	switch {
	case !inFrom:
		return wire.ChangeAdded
	case !inTo:
		return wire.ChangeRemoved
	}
	return wire.ChangeChanged
}

// union is the sorted names of both maps' keys.
func union[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// planNodes indexes a plan's nodes by name (empty for a nil plan).
func planNodes(p *plan.Plan) map[string]*plan.Node {
	out := map[string]*plan.Node{}
	if p != nil {
		for i := range p.Nodes {
			out[p.Nodes[i].Name] = &p.Nodes[i]
		}
	}
	return out
}

// docNodes is a document's nodes (empty when nothing is stored).
func docNodes(s Side) map[string]*graph.Node {
	if s.Doc == nil {
		return map[string]*graph.Node{}
	}
	return s.Doc.Nodes
}

func nodes(from, to Side) []wire.NodeChange {
	fd, td := docNodes(from), docNodes(to)
	fp, tp := planNodes(from.Plan), planNodes(to.Plan)
	out := []wire.NodeChange{}
	for _, name := range union(fd, td) {
		_, inFrom := fd[name]
		_, inTo := td[name]
		nc := wire.NodeChange{Node: name, Change: change(inFrom, inTo), Fields: []wire.FieldChange{}}
		if inFrom && inTo {
			nc.Fields = fieldChanges(nodeFields(fd[name], fp[name]), nodeFields(td[name], tp[name]))
		}
		nc.Budgets = budgets(fp[name], tp[name])
		if nc.Change == wire.ChangeChanged && len(nc.Fields) == 0 && len(nc.Budgets) == 0 {
			continue
		}
		out = append(out, nc)
	}
	return out
}

// field is one rendered setting: its name and value (nil when absent).
type field struct {
	name  string
	value *string
}

func text(s string) *string { return &s }

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nodeFields renders a node's settings as the diff names them, from the
// compiled node when there is one (its values are the effective ones),
// else from the document.
func nodeFields(n *graph.Node, p *plan.Node) []field {
	var out []field
	if p != nil {
		var parts *string
		if p.IngressQueue != "" && p.IngressPartitions > 0 {
			parts = text(strconv.FormatUint(uint64(p.IngressPartitions), 10))
		}
		ingress := p.IngressQueue
		if ingress != "" && p.IngressOwnedByGate {
			ingress += " (Gate-owned)"
		}
		out = append(out,
			field{"ingress", optText(ingress)},
			field{"ingress partitions", parts},
			field{"http push", text(strconv.FormatBool(p.HTTPPush))},
			field{"shed", text(strconv.FormatBool(p.Shed))},
			field{"egress", optText(p.EgressQueue)},
			field{"egress group", optText(p.EgressGroup)},
			field{"cost", text(costText(p.Cost.Path, p.Cost.Default, p.Cost.Max))},
		)
	} else if n != nil {
		var ingress, egress *string
		if n.Ingress != nil {
			ingress = text(cmp.Or(n.Ingress.Queue, "(Gate-owned)"))
		}
		if n.Egress != nil {
			egress = optText(n.Egress.Queue)
		}
		out = append(out, field{"ingress", ingress}, field{"egress", egress})
	}
	if n != nil {
		out = append(out, field{"batch", uintText(n.Batch)}, field{"concurrency", uintText(n.Concurrency)})
	}
	return out
}

func uintText(p *uint32) *string {
	if p == nil {
		return nil
	}
	return text(strconv.FormatUint(uint64(*p), 10))
}

// costText renders a cost rule: "1" for a fixed cost, else its payload
// path with the default and the maximum.
func costText(path string, def, most int64) string {
	if path == "" {
		return strconv.FormatInt(max(def, 1), 10)
	}
	return fmt.Sprintf("%s (default %d, max %d)", path, def, most)
}

// fieldChanges lists the fields whose value differs between a and b
// (fields of one name, in a's order, then b's new ones).
func fieldChanges(a, b []field) []wire.FieldChange {
	out := []wire.FieldChange{}
	bv := map[string]*string{}
	var order []string
	for _, f := range a {
		order = append(order, f.name)
	}
	for _, f := range b {
		bv[f.name] = f.value
		if !slices.Contains(order, f.name) {
			order = append(order, f.name)
		}
	}
	av := map[string]*string{}
	for _, f := range a {
		av[f.name] = f.value
	}
	for _, name := range order {
		x, y := av[name], bv[name]
		if (x == nil) != (y == nil) || (x != nil && *x != *y) {
			out = append(out, wire.FieldChange{Field: name, From: x, To: y})
		}
	}
	return out
}

// budgets compares the enforced budgets of one node on both sides (nil:
// the node is absent, or has no plan).
func budgets(from, to *plan.Node) []wire.BudgetChange {
	index := func(n *plan.Node) map[string]*plan.Budget {
		out := map[string]*plan.Budget{}
		if n != nil {
			for i := range n.Budgets {
				out[n.Budgets[i].ID] = &n.Budgets[i]
			}
		}
		return out
	}
	fb, tb := index(from), index(to)
	out := []wire.BudgetChange{}
	for _, id := range union(fb, tb) {
		a, b := fb[id], tb[id]
		bc := wire.BudgetChange{Budget: id, Change: change(a != nil, b != nil)}
		if a != nil {
			bc.From = budgetShape(a)
		}
		if b != nil {
			bc.To = budgetShape(b)
		}
		if a != nil && b != nil && sameBudget(bc.From, bc.To) {
			continue
		}
		out = append(out, bc)
	}
	return out
}

func budgetShape(b *plan.Budget) *wire.BudgetShape {
	s := &wire.BudgetShape{
		Key: b.Key, Count: b.Count, TimeMs: b.TimeMs, SubWindows: b.SubWindows, CountSub: b.CountSub,
		WindowSubSeconds: b.WindowSubSeconds, ScopeBy: optText(b.ScopeBy), WhenOp: slices.Clone(b.WhenOp),
		Ceilings: []wire.PathCeiling{},
	}
	if s.WhenOp == nil {
		s.WhenOp = []string{}
	}
	if b.Shared {
		s.SharedKey = text(b.SharedKey)
	}
	for _, path := range slices.Sorted(maps.Keys(b.Ceilings)) {
		s.Ceilings = append(s.Ceilings, wire.PathCeiling{Path: path, Ceiling: b.Ceilings[path]})
	}
	return s
}

func sameBudget(a, b *wire.BudgetShape) bool {
	return a.Key == b.Key && a.Count == b.Count && a.TimeMs == b.TimeMs && a.SubWindows == b.SubWindows &&
		a.CountSub == b.CountSub && a.WindowSubSeconds == b.WindowSubSeconds && eqText(a.ScopeBy, b.ScopeBy) &&
		eqText(a.SharedKey, b.SharedKey) && slices.Equal(a.WhenOp, b.WhenOp) && slices.Equal(a.Ceilings, b.Ceilings)
}

func eqText(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func paths(from, to Side) []wire.PathChange {
	index := func(s Side) map[string]*wire.PathShape {
		out := map[string]*wire.PathShape{}
		if s.Doc == nil {
			return out
		}
		pn := planNodes(s.Plan)
		for _, p := range s.Doc.Paths {
			shape := &wire.PathShape{Hops: []wire.Hop{}, Priority: p.Priority, Shares: []wire.NodeShare{}}
			if p.Share != nil {
				shape.Share = new(*p.Share)
			}
			for _, h := range p.Nodes {
				shape.Hops = append(shape.Hops, wire.Hop{Names: slices.Clone(h.Names), Fanout: h.Fanout})
				for _, n := range h.Names {
					if node := pn[n]; node != nil {
						if share, ok := node.Shares[p.Name]; ok {
							shape.Shares = append(shape.Shares, wire.NodeShare{Node: n, Share: share})
						}
					}
				}
			}
			out[p.Name] = shape
		}
		return out
	}
	fp, tp := index(from), index(to)
	out := []wire.PathChange{}
	for _, name := range union(fp, tp) {
		a, b := fp[name], tp[name]
		if a != nil && b != nil && samePath(a, b) {
			continue
		}
		out = append(out, wire.PathChange{Path: name, Change: change(a != nil, b != nil), From: a, To: b})
	}
	return out
}

func samePath(a, b *wire.PathShape) bool {
	if a.Priority != b.Priority || (a.Share == nil) != (b.Share == nil) || (a.Share != nil && *a.Share != *b.Share) ||
		!slices.Equal(a.Shares, b.Shares) || len(a.Hops) != len(b.Hops) {
		return false
	}
	for i := range a.Hops {
		if a.Hops[i].Fanout != b.Hops[i].Fanout || !slices.Equal(a.Hops[i].Names, b.Hops[i].Names) {
			return false
		}
	}
	return true
}

func queues(from, to *plan.Plan) []wire.QueueChange {
	index := func(p *plan.Plan) map[string]*wire.QueueShape {
		out := map[string]*wire.QueueShape{}
		if p != nil {
			for _, q := range p.Queues {
				s := &wire.QueueShape{Kind: q.Kind, OwnedByGate: q.OwnedByGate}
				if q.Partitions > 0 {
					s.Partitions = new(q.Partitions)
				}
				out[q.Name] = s
			}
		}
		return out
	}
	fq, tq := index(from), index(to)
	out := []wire.QueueChange{}
	for _, name := range union(fq, tq) {
		a, b := fq[name], tq[name]
		if a != nil && b != nil && a.Kind == b.Kind && a.OwnedByGate == b.OwnedByGate &&
			(a.Partitions == nil) == (b.Partitions == nil) && (a.Partitions == nil || *a.Partitions == *b.Partitions) {
			continue
		}
		out = append(out, wire.QueueChange{Queue: name, Change: change(a != nil, b != nil), From: a, To: b})
	}
	return out
}

func groups(from, to *plan.Plan) []wire.GroupChange {
	type key struct{ queue, group string }
	index := func(p *plan.Plan) map[key]*plan.Stage {
		out := map[key]*plan.Stage{}
		if p != nil {
			for i := range p.Stages {
				st := &p.Stages[i]
				k := key{st.Source, st.Group}
				if out[k] == nil {
					out[k] = st
				}
			}
		}
		return out
	}
	fg, tg := index(from), index(to)
	var out []wire.GroupChange
	for k, st := range tg {
		if fg[k] == nil {
			seeds := wire.SeedsAtHead
			if st.SourceIsInterior {
				seeds = wire.SeedsAtTail
			}
			out = append(out, wire.GroupChange{Queue: k.queue, Group: k.group, Change: wire.ChangeAdded, Path: st.Path, Node: st.Node, SeedsAt: seeds})
		}
	}
	for k, st := range fg {
		if tg[k] == nil {
			out = append(out, wire.GroupChange{Queue: k.queue, Group: k.group, Change: wire.ChangeRemoved, Path: st.Path, Node: st.Node})
		}
	}
	slices.SortFunc(out, func(a, b wire.GroupChange) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Group, b.Group))
	})
	if out == nil {
		out = []wire.GroupChange{}
	}
	return out
}

func counters(from, to *plan.Plan) []wire.CounterChange {
	type counter struct {
		node string
		b    *plan.Budget
	}
	index := func(p *plan.Plan) map[string]counter {
		out := map[string]counter{}
		if p != nil {
			for i := range p.Nodes {
				n := &p.Nodes[i]
				for j := range n.Budgets {
					b := &n.Budgets[j]
					if _, seen := out[b.Key]; !seen {
						out[b.Key] = counter{n.Name, b}
					}
				}
			}
		}
		return out
	}
	fc, tc := index(from), index(to)
	out := []wire.CounterChange{}
	for _, key := range slices.Sorted(maps.Keys(tc)) {
		a, ok := fc[key]
		b := tc[key]
		if !ok || a.b.WindowSubSeconds == b.b.WindowSubSeconds {
			continue
		}
		out = append(out, wire.CounterChange{
			Key: key, Node: b.node, Budget: b.b.ID, Shared: b.b.Shared,
			FromWindowSeconds: a.b.WindowSubSeconds, ToWindowSeconds: b.b.WindowSubSeconds,
			FromCountSub: a.b.CountSub, ToCountSub: b.b.CountSub,
		})
	}
	return out
}

// settings are the graph's own settings that change.
func settings(from, to Side) []wire.FieldChange {
	render := func(s Side) []field {
		var attempts, rollups *string
		if s.Plan != nil {
			attempts = text(strconv.FormatUint(uint64(s.Plan.MaxAttempts), 10))
			if s.Plan.CountersWindowSeconds > 0 {
				rollups = text(strconv.FormatUint(uint64(s.Plan.CountersWindowSeconds), 10) + " s")
			}
		} else if s.Doc.MaxAttempts != nil {
			attempts = uintText(s.Doc.MaxAttempts)
		}
		var watch *string
		if s.Doc.Watch != nil {
			watch = text(Seconds(s.Doc.Watch.DurationSeconds))
		}
		return []field{{"maxAttempts", attempts}, {"counters.windowSeconds", rollups}, {"watch.durationSeconds", watch}}
	}
	return fieldChanges(render(from), render(to))
}

// Seconds renders a duration in seconds the way the diff's text does:
// "90 s", "15 min", "2 h", "3 d" when it divides evenly.
func Seconds(s int64) string {
	switch {
	case s >= 86400 && s%86400 == 0:
		return strconv.FormatInt(s/86400, 10) + " d"
	case s >= 3600 && s%3600 == 0:
		return strconv.FormatInt(s/3600, 10) + " h"
	case s >= 60 && s%60 == 0:
		return strconv.FormatInt(s/60, 10) + " min"
	}
	return strconv.FormatInt(s, 10) + " s"
}

// Empty reports whether d changes nothing at all: no document change and
// nothing in any list.
func Empty(d wire.Diff) bool {
	return !d.Changed && d.Mode == nil && len(d.Nodes) == 0 && len(d.Paths) == 0 && len(d.Queues) == 0 &&
		len(d.Groups) == 0 && len(d.Counters) == 0 && len(d.Settings) == 0
}
