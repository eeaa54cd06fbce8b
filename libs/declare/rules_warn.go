package declare

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// Warning thresholds.
const (
	// RoundingLossLimit is the fraction of count sub-window rounding may
	// lose before subwindow-rounding warns.
	RoundingLossLimit = 0.02
	// BoundaryTTLSeconds is the longest defaulted sub-window that does not
	// get window-boundary.
	BoundaryTTLSeconds = 2
	// HeadOfLineTTLSeconds is the longest scoped sub-window that does not
	// get window-head-of-line.
	HeadOfLineTTLSeconds = 3600
)

// budgetUsable reports whether a budget passed its own value rules, so its
// arithmetic means something.
func budgetUsable(b *graph.Budget) bool {
	return b.Count >= 1 && b.TimeMs >= MinTimeMs &&
		(b.SubWindows == nil || (*b.SubWindows >= 1 && *b.SubWindows <= MaxSubWindows && int64(*b.SubWindows) <= b.Count))
}

// wholeWindow reports whether ttl × 1000 × n equals timeMs exactly.
func wholeWindow(ttl, n, timeMs int64) bool {
	const small = 1 << 20
	if ttl < small && n < small {
		return ttl*1000*n == timeMs
	}
	p := new(big.Int).Mul(big.NewInt(ttl), big.NewInt(n))
	p.Mul(p, big.NewInt(1000))
	return p.IsInt64() && p.Int64() == timeMs
}

func (c *checker) warnings() {
	d := c.doc
	watching := d.Watching()
	if !watching {
		for _, name := range c.names {
			n := d.Nodes[name]
			for i := range n.Budgets {
				b := &n.Budgets[i]
				if !budgetUsable(b) {
					continue
				}
				c.budgetWarnings(name, i, b)
			}
		}
	}
	for pi, p := range d.Paths {
		for i, el := range p.Nodes {
			if !el.Fanout || len(el.Names) < 2 {
				continue
			}
			k := len(el.Names)
			c.add(RuleFanoutMultiplies, pathAt(pi, "nodes", strconv.Itoa(i)), fmt.Sprintf("path %q fans out to [%s] at hop %d: one message becomes %d, each branch charges its own budgets, and the vendor sees %d calls per message; if you meant to route different items to different places, give each branch its own path", p.Name, strings.Join(el.Names, ", "), i, k, k),
				map[string]float64{"hop": float64(i), "branches": float64(k)})
		}
	}
	for _, name := range c.names {
		c.nodeWarnings(name, d.Nodes[name], watching)
	}
	c.sharedAcrossGraphs()
}

func (c *checker) budgetWarnings(name string, i int, b *graph.Budget) {
	id := plan.BudgetID(b, i)
	w := plan.Subdivide(b.Count, b.TimeMs, b.SubWindows)
	if !wholeWindow(w.TTLSeconds, w.N, b.TimeMs) {
		c.add(RuleWindowSubSecond, budgetAt(name, i), fmt.Sprintf("budget %q of node %q declares %d per %dms but is enforced as %d per %ds (%s): a kv TTL is whole seconds, so the window is tighter than declared, never looser, but slower; declare whole seconds per sub-window", id, name, b.Count, b.TimeMs, w.CountSub, w.TTLSeconds, subs(w.N)),
			map[string]float64{"count": float64(b.Count), "timeMs": float64(b.TimeMs), "countSub": float64(w.CountSub), "ttlSeconds": float64(w.TTLSeconds), "subWindows": float64(w.N)})
	}
	if kept := w.CountSub * w.N; w.N > 1 && kept < b.Count && float64(b.Count-kept)/float64(b.Count) > RoundingLossLimit {
		lost := float64(b.Count-kept) / float64(b.Count)
		c.add(RuleSubwindowRounding, budgetAt(name, i), fmt.Sprintf("budget %q of node %q: %s of %d make %d, not the declared %d (%.1f%% lost, because rounding is always down); choose a subWindows that divides %d, or a count that %d divides", id, name, subs(w.N), w.CountSub, kept, b.Count, lost*100, b.Count, w.N),
			map[string]float64{"count": float64(b.Count), "subWindows": float64(w.N), "countSub": float64(w.CountSub), "enforced": float64(kept), "lost": lost})
	}
	if w.TTLSeconds > BoundaryTTLSeconds && b.SubWindows == nil {
		c.add(RuleWindowBoundary, budgetAt(name, i), fmt.Sprintf("budget %q of node %q has sub-windows of %ds and declares no subWindows: an observer's sliding window can see up to 2 × %d = %d across one boundary; raise count so more sub-windows fit, or declare subWindows to accept the trade", id, name, w.TTLSeconds, w.CountSub, 2*w.CountSub),
			map[string]float64{"ttlSeconds": float64(w.TTLSeconds), "countSub": float64(w.CountSub), "burst": float64(2 * w.CountSub)})
	}
}

func (c *checker) nodeWarnings(name string, n *graph.Node, watching bool) {
	in := n.Ingress
	if in.Named() {
		q := in.Queue
		if c.in.Facts == nil {
			c.unchecked(RuleIngressQueue)
			c.unchecked(RuleIngressRetention)
		} else {
			f := c.fact(q)
			if !f.Exists {
				c.add(RuleIngressQueue, nodeAt(name, "ingress", "queue"), fmt.Sprintf("node %q consumes %q, which the broker does not have yet: Gate will consume it from its first message and creates nothing; create it with your SDK or check the name", name, q), nil)
			} else if f.RetentionSeconds > 0 {
				c.add(RuleIngressRetention, nodeAt(name, "ingress", "queue"), fmt.Sprintf("node %q consumes %q, which has a retention of %d seconds: a retention shorter than the drain time deletes paced work before it is admitted; raise or disable the queue's retention in Queen", name, q, f.RetentionSeconds),
					map[string]float64{"retentionSeconds": float64(f.RetentionSeconds)})
			}
		}
	}
	if !watching {
		for i := range n.Budgets {
			b := &n.Budgets[i]
			if b.ScopeBy == nil || !budgetUsable(b) {
				continue
			}
			w := plan.Subdivide(b.Count, b.TimeMs, b.SubWindows)
			if w.TTLSeconds > HeadOfLineTTLSeconds {
				c.add(RuleWindowHeadOfLine, nodeAt(name, "budgets", strconv.Itoa(i)), fmt.Sprintf("budget %q of node %q is scoped by %s with sub-windows of %d seconds: a full key blocks the head of its partition, and the other keys queued behind it, for up to %d seconds until the window rotates; raise subWindows, or partition the ingress by the scope so one key cannot sit in front of another", plan.BudgetID(b, i), name, *b.ScopeBy, w.TTLSeconds, w.TTLSeconds),
					map[string]float64{"ttlSeconds": float64(w.TTLSeconds), "limit": HeadOfLineTTLSeconds})
			}
		}
	}
	if in != nil {
		parts, known := int64(0), true
		switch {
		case !in.Named():
			parts = plan.DefaultPartitions
			if in.Partitions != nil {
				parts = int64(*in.Partitions)
			}
		case c.in.Facts != nil && c.fact(in.Queue).Partitions > 0:
			parts = int64(c.fact(in.Queue).Partitions)
		case in.Partitions != nil:
			parts = int64(*in.Partitions)
		case c.in.Facts == nil:
			known = false
		}
		if !known {
			c.unchecked(RuleSinglePartition)
		} else if parts == 1 {
			q := ingressQueue(c.doc, name)
			c.add(RuleSinglePartition, nodeAt(name, "ingress"), fmt.Sprintf("queue %q has 1 partition: one claim is in flight at a time, and one partition is strict global FIFO; that must not be a surprise, so declare more partitions (and push with a partition key) if order across items does not matter", q),
				map[string]float64{"partitions": 1})
		}
	}
	if c.in.Stored == nil {
		if in.Named() || n.Egress != nil {
			c.unchecked(RuleQueueCrossGraph)
		}
	} else {
		c.crossGraph(name, n)
	}
	if n.Egress != nil {
		if c.in.Stored == nil {
			c.unchecked(RuleEgressOwner)
			return
		}
		// Every other graph that is stored or running: one declared in
		// the store runs as soon as a relay reconciles it.
		for _, s := range c.stored {
			for _, other := range s.doc.NodeNames() {
				if e := s.doc.Nodes[other].Egress; e != nil && e.Queue == n.Egress.Queue {
					c.add(RuleEgressOwner, nodeAt(name, "egress"), fmt.Sprintf("queue %q is also the egress of node %q of graph %s/%s: legal, but the ETA's worker backlog counts both graphs' items; use a queue per graph to keep them apart", n.Egress.Queue, other, s.app, s.name), nil)
					break
				}
			}
		}
	}
}

// crossGraph warns when node name's application-owned ingress is another
// graph's egress (this graph would consume that graph's output, a copy for
// every consumer group, past its workers), or its egress is another graph's
// ingress (this graph's output enters that graph's budgets). Both are legal
// chaining, but never an accident to keep silent.
func (c *checker) crossGraph(name string, n *graph.Node) {
	if n.Ingress.Named() {
		q := n.Ingress.Queue
		for _, s := range c.stored {
			for _, other := range s.doc.NodeNames() {
				if e := s.doc.Nodes[other].Egress; e != nil && e.Queue == q {
					c.add(RuleQueueCrossGraph, nodeAt(name, "ingress", "queue"), fmt.Sprintf("node %q consumes %q, the egress of node %q of graph %s/%s: this graph then takes that graph's paced output, and with its own consumer group gets a copy of every item that graph's workers also get; if that is not the intent, consume a queue of your own", name, q, other, s.app, s.name), nil)
					break
				}
			}
		}
	}
	if e := n.Egress; e != nil {
		for _, s := range c.stored {
			if other := ingressOwner(s.doc, e.Queue); other != "" {
				at := nodeAt(name, "egress")
				if e.Object {
					at = nodeAt(name, "egress", "queue")
				}
				c.add(RuleQueueCrossGraph, at, fmt.Sprintf("node %q delivers to %q, the ingress of node %q of graph %s/%s: what leaves here is paced again by that graph's budgets before anyone works it; if that is not the intent, deliver to a queue of your own", name, e.Queue, other, s.app, s.name), nil)
			}
		}
	}
}

// sharedAcrossGraphs warns when another graph of the application declares
// one of this document's shared keys with another count, window or N.
func (c *checker) sharedAcrossGraphs() {
	d := c.doc
	if d.Watching() {
		return
	}
	hasShared := false
	reported := map[string]bool{}
	for _, name := range c.names {
		n := d.Nodes[name]
		for i := range n.Budgets {
			b := &n.Budgets[i]
			if b.SharedKey == nil || !budgetUsable(b) {
				continue
			}
			hasShared = true
			k := *b.SharedKey
			w := plan.Subdivide(b.Count, b.TimeMs, b.SubWindows)
			for _, s := range c.stored {
				if s.app != d.Application || s.doc.Watching() || reported[k+"\x00"+s.name] {
					continue
				}
				o, on, oi := findShared(s.doc, k)
				if o == nil {
					continue
				}
				ow := plan.Subdivide(o.Count, o.TimeMs, o.SubWindows)
				if o.Count == b.Count && o.TimeMs == b.TimeMs && ow.N == w.N {
					continue
				}
				reported[k+"\x00"+s.name] = true
				c.add(RuleSharedConflictGraph, nodeAt(name, "budgets", strconv.Itoa(i), "sharedKey"), fmt.Sprintf("sharedKey %q is %d per %dms in %s here but %d per %dms in %s in node %q (budget %q) of graph %s/%s: both spend the one counter %q, whose window is set by whichever graph charges first after it expires, and each graph caps it at its own count_sub (%d here, %d there); make the declarations agree by declaring the other graph next", k, b.Count, b.TimeMs, subs(w.N), o.Count, o.TimeMs, subs(ow.N), on, plan.BudgetID(o, oi), s.app, s.name, plan.SharedBudgetKey(d.Application, k), w.CountSub, ow.CountSub),
					map[string]float64{"count": float64(b.Count), "timeMs": float64(b.TimeMs), "subWindows": float64(w.N), "countSub": float64(w.CountSub), "otherCount": float64(o.Count), "otherTimeMs": float64(o.TimeMs), "otherSubWindows": float64(ow.N), "otherCountSub": float64(ow.CountSub)})
			}
		}
	}
	if hasShared && c.in.Stored == nil {
		c.unchecked(RuleSharedConflictGraph)
	}
}

func findShared(d *graph.Document, key string) (*graph.Budget, string, int) {
	for _, name := range d.NodeNames() {
		n := d.Nodes[name]
		for i := range n.Budgets {
			if b := &n.Budgets[i]; b.SharedKey != nil && *b.SharedKey == key && budgetUsable(b) {
				return b, name, i
			}
		}
	}
	return nil, "", 0
}

// subs renders a sub-window count with its noun.
func subs(n int64) string {
	if n == 1 {
		return "1 sub-window"
	}
	return strconv.FormatInt(n, 10) + " sub-windows"
}
