package load

// Node and path names of the e2e graph.
const (
	NodeFast = "fast"
	NodeBulk = "bulk"
	NodeIP   = "ip"
	PathFast = "fast"
	PathBulk = "bulk"
	// BindingBudget is the id of the shared node's budget.
	BindingBudget = "binding"
	// ShareFast and ShareBulk are the paths' shares on the shared node.
	ShareFast = 1.0
	ShareBulk = 0.5
)

// EgressQueue is the e2e graph's egress queue.
func EgressQueue(app, graph string) string { return "gate.e2e." + app + "." + graph + ".out" }

// Document is the e2e graph: entry nodes fast and bulk (1,000,000 per
// second each, so only the shared node binds), the shared node ip with
// count = rate × window over window × 1000 ms in window sub-windows, and
// two paths through ip with shares 1.0 and 0.5.
func Document(app, graph string, rate, windowS, batch int) map[string]any {
	entry := func(id string) map[string]any {
		return map[string]any{
			"ingress": true,
			"batch":   batch,
			"budgets": []any{map[string]any{"id": id, "count": 1_000_000, "timeMs": 1000}},
		}
	}
	return map[string]any{
		"application": app,
		"graph":       graph,
		"version":     1,
		"nodes": map[string]any{
			NodeFast: entry("entry-fast"),
			NodeBulk: entry("entry-bulk"),
			NodeIP: map[string]any{
				"batch": batch,
				"budgets": []any{map[string]any{
					"id":         BindingBudget,
					"count":      rate * windowS,
					"timeMs":     windowS * 1000,
					"subWindows": windowS,
					"confidence": "documented",
					"source":     "e2e",
					"asOf":       "2026-08-21",
				}},
				"egress": map[string]any{"queue": EgressQueue(app, graph), "group": ConsumerGroup},
			},
		},
		"paths": []any{
			map[string]any{"name": PathFast, "priority": 0, "share": ShareFast, "nodes": []any{NodeFast, NodeIP}},
			map[string]any{"name": PathBulk, "priority": 1, "share": ShareBulk, "nodes": []any{NodeBulk, NodeIP}},
		},
	}
}

// ConsumerGroup is the egress group gate-e2e's consumers pop with.
const ConsumerGroup = "e2e-workers"

// workerGraph is the graph both vendor scenarios declare: one node with a
// Gate-owned ingress of VendorPartitns partitions, the given budget, an
// egress the VendorGroup workers pop, and one path PathMain through it. A
// nil cost declares none.
func workerGraph(app, graph, node string, budget, cost map[string]any) map[string]any {
	spec := map[string]any{
		"ingress": map[string]any{"partitions": VendorPartitns},
		"budgets": []any{budget},
		"egress":  map[string]any{"queue": EgressQueue(app, graph), "group": VendorGroup},
	}
	if cost != nil {
		spec["cost"] = cost
	}
	return map[string]any{
		"application": app,
		"graph":       graph,
		"version":     1,
		"nodes":       map[string]any{node: spec},
		"paths":       []any{map[string]any{"name": PathMain, "nodes": []any{node}}},
	}
}
