package declare

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// MaxNameBytes is the longest application, graph, node or path name, and
// the longest interior queue name.
const MaxNameBytes = 63

// ValidName reports whether s passes the name rule: 1 to 63 bytes of
// [a-z0-9-], the first one not a dash.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameBytes || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

const nameAlphabet = "1 to 63 characters of a-z, 0-9 and '-', starting with a letter or digit"

func pathAt(i int, tokens ...string) string {
	return graph.Pointer("/paths", append([]string{strconv.Itoa(i)}, tokens...)...)
}

func nodeAt(name string, tokens ...string) string {
	return graph.Pointer("/nodes", append([]string{name}, tokens...)...)
}

func budgetAt(node string, i int, tokens ...string) string {
	return graph.Pointer("/nodes", append([]string{node, "budgets", strconv.Itoa(i)}, tokens...)...)
}

func hopAt(path, hop int, tokens ...string) string {
	return graph.Pointer("/paths", append([]string{strconv.Itoa(path), "nodes", strconv.Itoa(hop)}, tokens...)...)
}

func (c *checker) naming() {
	d := c.doc
	if !ValidName(d.Application) {
		c.add(RuleApplication, "/application", fmt.Sprintf("application %q is not a valid name (%d bytes): use %s; it becomes part of every queue name (gate.%s...) and kv key, where a dot or capital would split or break them; rename the application", d.Application, len(d.Application), nameAlphabet, d.Application),
			map[string]float64{"length": float64(len(d.Application)), "limit": MaxNameBytes})
	}
	if !ValidName(d.Graph) {
		c.add(RuleGraphName, "/graph", fmt.Sprintf("graph %q is not a valid name (%d bytes): a graph name is one segment of %s, because the dot joins graph and node in queue names; rename the graph", d.Graph, len(d.Graph), nameAlphabet),
			map[string]float64{"length": float64(len(d.Graph)), "limit": MaxNameBytes})
	}
	for _, name := range c.names {
		interior := plan.InteriorQueue(d.Application, d.Graph, name)
		if !ValidName(name) {
			c.add(RuleNodeName, nodeAt(name), fmt.Sprintf("node %q is not a valid name: use %s; it becomes the queue %q; rename the node", name, nameAlphabet, interior),
				map[string]float64{"length": float64(len(name)), "limit": MaxNameBytes})
			continue
		}
		if len(interior) > MaxNameBytes {
			c.add(RuleNodeName, nodeAt(name), fmt.Sprintf("node %q makes the interior queue %q, %d characters, over the broker's limit of %d; shorten the graph or the node by %d characters", name, interior, len(interior), MaxNameBytes, len(interior)-MaxNameBytes),
				map[string]float64{"length": float64(len(interior)), "limit": MaxNameBytes, "over": float64(len(interior) - MaxNameBytes)})
		}
	}
	first := map[string]int{}
	for i, p := range d.Paths {
		if !ValidName(p.Name) {
			c.add(RulePathName, pathAt(i, "name"), fmt.Sprintf("path %q is not a valid name: use %s; it names a consumer group per node (%s); rename the path", p.Name, nameAlphabet, plan.Group(d.Application, d.Graph, p.Name, "{node}")),
				map[string]float64{"length": float64(len(p.Name)), "limit": MaxNameBytes})
		}
		if j, dup := first[p.Name]; dup {
			c.add(RulePathName, pathAt(i, "name"), fmt.Sprintf("path name %q is used by paths %d and %d: two paths with one name would share one consumer group cursor and split the stream between them instead of each receiving it; rename one of them", p.Name, j, i),
				map[string]float64{"first": float64(j), "index": float64(i)})
		} else {
			first[p.Name] = i
		}
	}
	if len(d.Nodes) == 0 {
		c.add(RuleNodes, "/nodes", "the graph declares no nodes: a graph with no nodes limits nothing; declare at least one node with an ingress, a budget and an egress", map[string]float64{"nodes": 0})
	}
	if len(d.Paths) == 0 {
		c.add(RulePaths, "/paths", `the graph declares no paths: a graph with no paths moves nothing; declare at least one, e.g. {"name": "main", "nodes": ["limit"]}`, map[string]float64{"paths": 0})
	}
	c.queueNames()
}

func (c *checker) shape() {
	d := c.doc
	declared := strings.Join(c.names, ", ")
	for pi, p := range d.Paths {
		if len(p.Nodes) == 0 {
			c.add(RulePathLength, pathAt(pi, "nodes"), fmt.Sprintf("path %q is empty: it has no hop to consume or deliver; list its nodes, e.g. [\"first\", \"last\"]", p.Name), map[string]float64{"hops": 0})
			continue
		}
		last := len(p.Nodes) - 1
		for i, el := range p.Nodes {
			if el.Fanout && len(el.Names) < 2 {
				c.add(RuleFanoutBranch, hopAt(pi, i), fmt.Sprintf("path %q hop %d is a fan-out of %d node name(s): a fan-out is a flat array of at least two node names; write a single node as a string, or add the other branch", p.Name, i, len(el.Names)),
					map[string]float64{"hop": float64(i), "branches": float64(len(el.Names)), "minimum": 2})
			}
			if el.Fanout && len(el.Names) >= 2 && i != last {
				c.add(RuleFanoutTerminal, hopAt(pi, i), fmt.Sprintf("path %q fans out to [%s] at hop %d, but the path has %d hops: a fan-out pushes each branch to its egress and cannot relay further; make the fan-out the last hop, or give each branch its own path", p.Name, strings.Join(el.Names, ", "), i, len(p.Nodes)),
					map[string]float64{"hop": float64(i), "hops": float64(len(p.Nodes))})
			}
			for bi, name := range el.Names {
				nat := func() string {
					if el.Fanout {
						return hopAt(pi, i, strconv.Itoa(bi))
					}
					return hopAt(pi, i)
				}
				n, ok := d.Nodes[name]
				if !ok {
					c.add(RulePathNode, nat(), fmt.Sprintf("path %q hop %d names node %q, which is not declared (declared nodes: %s); declare it or fix the name", p.Name, i, name, declared),
						map[string]float64{"hop": float64(i)})
					continue
				}
				if i == 0 && n.Ingress == nil {
					c.add(RulePathEntry, nat(), fmt.Sprintf("path %q starts at node %q, which has no ingress: nothing can enter the path, so it never carries work; give the node an ingress (\"ingress\": true) or start the path at a node that has one", p.Name, name), nil)
				}
				if i == last && n.Egress == nil {
					c.add(RulePathTerminal, nat(), fmt.Sprintf("path %q ends (hop %d) at node %q, which has no egress: items would be admitted and then have nowhere to go; add \"egress\": %q (or your own queue) to node %q", p.Name, i, name, d.Application+"."+d.Graph+".out", name),
						map[string]float64{"hop": float64(i)})
				}
			}
		}
	}
	c.acyclic()
	for _, name := range c.names {
		if len(c.visitors[name]) == 0 {
			c.add(RuleNodeOrphan, nodeAt(name), fmt.Sprintf("node %q is declared but no path visits it: it can never hold work; add it to a path or remove it", name), map[string]float64{"paths": 0})
		}
	}
}

type edge struct {
	from, to string
	path     int
	hop      int
}

// acyclic finds a cycle in the union of path edges (Kahn's algorithm) and
// reports the first edge, in path and hop order, that lies on one.
func (c *checker) acyclic() {
	d := c.doc
	var edges []edge
	adj := map[string][]string{}
	indeg := map[string]int{}
	seen := map[[2]string]bool{}
	for pi, p := range d.Paths {
		for i := 0; i+1 < len(p.Nodes); i++ {
			for _, a := range p.Nodes[i].Names {
				for _, b := range p.Nodes[i+1].Names {
					edges = append(edges, edge{a, b, pi, i})
					if seen[[2]string{a, b}] {
						continue
					}
					seen[[2]string{a, b}] = true
					adj[a] = append(adj[a], b)
					indeg[b]++
					if _, ok := indeg[a]; !ok {
						indeg[a] = 0
					}
				}
			}
		}
	}
	var queue []string
	for n, k := range indeg {
		if k == 0 {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, m := range adj[n] {
			indeg[m]--
			if indeg[m] == 0 {
				queue = append(queue, m)
			}
		}
		delete(indeg, n)
	}
	if len(indeg) == 0 {
		return
	}
	for _, e := range edges {
		if _, a := indeg[e.from]; !a {
			continue
		}
		if _, b := indeg[e.to]; !b {
			continue
		}
		back := route(adj, indeg, e.to, e.from)
		if back == nil {
			continue
		}
		cycle := append([]string{e.from}, back...)
		c.add(RuleAcyclic, pathAt(e.path, "nodes", strconv.Itoa(e.hop+1)), fmt.Sprintf("the paths form a cycle %s (path %q, hop %d): a message would circle and charge the budgets again on every lap; remove the hop that returns to an earlier node", strings.Join(cycle, " -> "), d.Paths[e.path].Name, e.hop+1),
			map[string]float64{"hop": float64(e.hop + 1), "length": float64(len(cycle) - 1)})
		return
	}
}

// route is the shortest node sequence from → … → to inside the stuck set.
func route(adj map[string][]string, stuck map[string]int, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			var out []string
			for x := to; x != ""; x = prev[x] {
				out = append([]string{x}, out...)
				if x == from {
					break
				}
			}
			return out
		}
		for _, m := range adj[n] {
			if _, ok := stuck[m]; !ok {
				continue
			}
			if _, ok := prev[m]; ok {
				continue
			}
			prev[m] = n
			queue = append(queue, m)
		}
	}
	return nil
}
