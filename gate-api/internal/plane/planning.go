package plane

import (
	"strconv"

	"github.com/queen-mq/gate/libs/plan"
)

// NodeNames are the plan's nodes, in plan order.
func NodeNames(p *plan.Plan) []string {
	out := make([]string, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// EntryNodes are the plan's nodes with an ingress queue, in plan order.
func EntryNodes(p *plan.Plan) []string {
	var out []string
	for _, n := range p.Nodes {
		if n.IngressQueue != "" {
			out = append(out, n.Name)
		}
	}
	return out
}

// StageID identifies a stage by path, node and hop across plans and the
// relays' status.
func StageID(path, node string, hop int) [3]string { return [3]string{path, node, strconv.Itoa(hop)} }

// NonNil is s, or an empty list for nil (a list a client iterates is never
// null on the wire).
func NonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Optional is s as an optional wire field: nil for "".
func Optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
