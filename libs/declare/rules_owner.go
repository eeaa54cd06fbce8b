package declare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// Watch limits, in seconds.
const (
	MinWatchSeconds = 120
	MaxWatchSeconds = 2_592_000
)

// CountersWindowSeconds is the only accepted counters.windowSeconds.
const CountersWindowSeconds = 60

func (c *checker) ownership() {
	d := c.doc
	c.gateQueues()
	owner := map[string]string{}
	for _, name := range c.names {
		q := ingressQueue(d, name)
		if q == "" {
			continue
		}
		if first, dup := owner[q]; dup {
			c.add(RuleIngressOwner, nodeAt(name, "ingress"), fmt.Sprintf("queue %q is the ingress of nodes %q and %q: two consumer groups on one queue each get every message, which doubles what leaves; give each node its own ingress queue, or route both paths through one entry node", q, first, name), nil)
			continue
		}
		owner[q] = name
	}
	named := false
	for _, name := range c.names {
		if !d.Nodes[name].Ingress.Named() {
			continue
		}
		named = true
		q := d.Nodes[name].Ingress.Queue
		for _, s := range c.stored {
			if !s.running {
				continue
			}
			if other := ingressOwner(s.doc, q); other != "" {
				c.add(RuleIngressOwner, nodeAt(name, "ingress", "queue"), fmt.Sprintf("queue %q is already the ingress of node %q of graph %s/%s, running on this replica: two consumer groups on one queue each get every message, which doubles what leaves; use another queue, or delete that graph first", q, other, s.app, s.name), nil)
			}
		}
	}
	if named && c.in.Stored == nil {
		c.unchecked(RuleIngressOwner)
	}
}

// ingressOwner is the node of d whose ingress queue is q, or "".
func ingressOwner(d *graph.Document, q string) string {
	for _, n := range d.NodeNames() {
		if ingressQueue(d, n) == q {
			return n
		}
	}
	return ""
}

func (c *checker) watchRules() {
	d := c.doc
	if w := d.Watch; w != nil && (w.DurationSeconds < MinWatchSeconds || w.DurationSeconds > MaxWatchSeconds) {
		c.add(RuleWatchDuration, "/watch/durationSeconds", fmt.Sprintf("watch.durationSeconds is %d, outside %d..%d (2 minutes to 30 days); choose an observation period in that range, e.g. 86400 for one day", w.DurationSeconds, MinWatchSeconds, MaxWatchSeconds),
			map[string]float64{"durationSeconds": float64(w.DurationSeconds), "min": MinWatchSeconds, "max": MaxWatchSeconds})
	}
	if ct := d.Counters; ct != nil && ct.WindowSeconds != CountersWindowSeconds {
		c.add(RuleCountersWindow, "/counters/windowSeconds", fmt.Sprintf("counters.windowSeconds is %d: roll-ups are stored per minute, so %d is the only accepted value; set it to %d, or drop counters to switch roll-ups off", ct.WindowSeconds, CountersWindowSeconds, CountersWindowSeconds),
			map[string]float64{"windowSeconds": float64(ct.WindowSeconds), "accepted": CountersWindowSeconds})
	}
}

// conflicts runs the checks against the running or stored copy of this
// graph and against other graphs' stored documents; a refusal here is a 409.
func (c *checker) conflicts() {
	d := c.doc
	if c.in.Stored == nil {
		c.unchecked(RuleVersionBump)
		c.unchecked(RuleVersionOrder)
		c.unchecked(RuleIngressOwner)
		return
	}
	if c.self != nil {
		old := c.self.doc
		if d.Version < old.Version {
			// An older declaration that arrives late (a retry, a slow
			// client, a PUT racing a newer one) must not replace what was
			// acknowledged after it. A document identical to the stored
			// one carries its version, so it is never below it.
			c.res.Conflict = true
			c.add(RuleVersionOrder, "/version", fmt.Sprintf("version %d is below the stored version %d: a declaration never replaces a newer one, so nothing was changed; read the graph to see what version %d holds, then declare version %d or higher", d.Version, old.Version, old.Version, old.Version),
				map[string]float64{"version": float64(d.Version), "storedVersion": float64(old.Version)})
		} else if reasons := NeedsVersionBump(old, d); len(reasons) > 0 && d.Version <= old.Version {
			c.res.Conflict = true
			c.add(RuleVersionBump, "/version", fmt.Sprintf("version %d does not raise the running version %d, but the change %s: bump version above %d; to move the work without loss, drain the old path or node first (stop its producers and wait until its queues are empty), then declare the new version", d.Version, old.Version, strings.Join(reasons, "; "), old.Version),
				map[string]float64{"version": float64(d.Version), "runningVersion": float64(old.Version), "reasons": float64(len(reasons))})
		}
	}
	for _, name := range c.names {
		q := ingressQueue(d, name)
		if q == "" {
			continue
		}
		for _, s := range c.stored {
			if !s.inStore {
				continue
			}
			if other := ingressOwner(s.doc, q); other != "" {
				c.res.Conflict = true
				c.add(RuleIngressOwner, nodeAt(name, "ingress"), fmt.Sprintf("queue %q is already the ingress of node %q of graph %s/%s, declared on another replica: two consumer groups on one queue each get every message, which doubles what leaves; use another queue, or delete that graph first", q, other, s.app, s.name), nil)
			}
		}
	}
}

// NeedsVersionBump lists why replacing old with new needs a higher version:
// a counter re-founded (a node-local or shared budget key removed or
// renamed, or its scopeBy changed), a node removed, a surviving node's
// ingress queue changed, a path removed, or a switch between watch and
// enforce. Everything else is a hot change. Both documents must carry the
// same application and graph.
func NeedsVersionBump(old, new *graph.Document) []string {
	var reasons []string
	if old.Watching() != new.Watching() {
		mode := "switches from enforce to watch"
		if old.Watching() {
			mode = "switches from watch to enforce"
		}
		reasons = append(reasons, mode)
	}
	op := plan.Build(old, plan.Options{})
	np := plan.Build(new, plan.Options{})
	for _, on := range op.Nodes {
		nn := np.Node(on.Name)
		if nn == nil {
			reasons = append(reasons, fmt.Sprintf("removes node %q", on.Name))
			continue
		}
		for _, ob := range on.Budgets {
			i := slices.IndexFunc(nn.Budgets, func(b plan.Budget) bool { return b.Key == ob.Key })
			switch {
			case i < 0:
				reasons = append(reasons, fmt.Sprintf("drops counter %q of node %q", ob.Key, on.Name))
			case nn.Budgets[i].ScopeBy != ob.ScopeBy:
				reasons = append(reasons, fmt.Sprintf("changes the scope of counter %q of node %q from %q to %q", ob.Key, on.Name, ob.ScopeBy, nn.Budgets[i].ScopeBy))
			}
		}
		if on.IngressQueue != nn.IngressQueue || on.IngressOwnedByGate != nn.IngressOwnedByGate {
			reasons = append(reasons, fmt.Sprintf("changes node %q's ingress queue from %q to %q", on.Name, on.IngressQueue, nn.IngressQueue))
		}
	}
	for _, p := range old.Paths {
		if !slices.ContainsFunc(new.Paths, func(q graph.Path) bool { return q.Name == p.Name }) {
			reasons = append(reasons, fmt.Sprintf("removes path %q", p.Name))
		}
	}
	return reasons
}
