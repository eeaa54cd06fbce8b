package declare

import "github.com/queen-mq/gate/libs/graph"

// Links are the names through which the cross-graph rules relate a graph
// to another: every ingress queue of its nodes (named or Gate-owned, as
// the rules mint it from the document's application and graph), every
// egress queue, and every shared budget key with its application. Two
// graphs with no link in common never make a cross-graph rule fire
// (ingress-owner, egress-owner, queue-cross-graph, shared-conflict-graph),
// so a caller holding thousands of graphs indexes them by their links and
// gives Compile only those that share one with the declared graph (see
// Input.Related): the checks then cost what is related, not every graph.
// d's Application and Graph must be the stored names (Compile sets them
// from Input.App and Input.Name).
func Links(d *graph.Document) []string {
	if d == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, name := range d.NodeNames() {
		n := d.Nodes[name]
		if n == nil {
			continue
		}
		if q := ingressQueue(d, name); q != "" {
			add("queue\x00" + q)
		}
		if n.Egress != nil && n.Egress.Queue != "" {
			add("queue\x00" + n.Egress.Queue)
		}
		for i := range n.Budgets {
			if k := n.Budgets[i].SharedKey; k != nil {
				add("shared\x00" + d.Application + "\x00" + *k)
			}
		}
	}
	return out
}
