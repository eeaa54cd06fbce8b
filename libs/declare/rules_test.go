package declare

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/finding"
	"github.com/queen-mq/gate/libs/plan"
)

// ruleCase is one document that must (fire) or must not (near miss) make a
// rule fire.
type ruleCase struct {
	name string
	rule string
	fire bool
	doc  func() m
	// in adjusts the Input (identity, facts, stored graphs, options).
	in func(*Input)
	// at is the expected JSON pointer of the first finding of rule.
	at string
	// nums must be a subset of the finding's Numbers.
	nums map[string]float64
	// msg are substrings the message must contain.
	msg []string
}

func with(f func(d m)) func() m {
	return func() m {
		d := base()
		f(d)
		return d
	}
}

func crossWith(f func(d m)) func() m {
	return func() m {
		d := crossing()
		f(d)
		return d
	}
}

func withStored(docs ...Stored) func(*Input) {
	return func(in *Input) { in.Stored = docs }
}

func otherGraph(app, name string, running bool, mut func(d m)) Stored {
	d := base()
	d["application"], d["graph"] = app, name
	nodeOf(d, "in")["ingress"] = m{"queue": "theirs.in"}
	nodeOf(d, "in")["egress"] = "theirs.out"
	if mut != nil {
		mut(d)
	}
	b, _ := jsonMarshal(d)
	return Stored{App: app, Name: name, Body: b, Running: running}
}

func ruleCases() []ruleCase { return append(baseRuleCases(), historyRuleCases()...) }

func baseRuleCases() []ruleCase {
	long := func(n int) string { return strings.Repeat("n", n) }
	return []ruleCase{
		// naming
		{name: "capital in application", rule: RuleApplication, fire: true, doc: base, in: func(in *Input) { in.App = "Demo" }, at: "/application", nums: map[string]float64{"length": 4}, msg: []string{`"Demo"`, "rename"}},
		{name: "dashed application", rule: RuleApplication, doc: base, in: func(in *Input) { in.App = "demo-1-" }},
		{name: "dotted graph", rule: RuleGraphName, fire: true, doc: with(func(d m) { d["graph"] = "a.b" }), at: "/graph", msg: []string{"one segment"}},
		{name: "empty graph", rule: RuleGraphName, fire: true, doc: with(func(d m) { delete(d, "graph") }), at: "/graph", nums: map[string]float64{"length": 0}},
		{name: "dashed graph", rule: RuleGraphName, doc: with(func(d m) { d["graph"] = "a-b" })},
		{name: "underscore node", rule: RuleNodeName, fire: true, doc: with(func(d m) {
			nodesOf(d)["bad_name"] = nodesOf(d)["in"]
			delete(nodesOf(d), "in")
			pathOf(d, 0)["nodes"] = a{"bad_name"}
		}), at: "/nodes/bad_name", msg: []string{"gate.demo.g.bad_name.in"}},
		{name: "interior queue of 64 characters", rule: RuleNodeName, fire: true, doc: with(func(d m) {
			nodesOf(d)[long(49)] = nodesOf(d)["in"]
			delete(nodesOf(d), "in")
			pathOf(d, 0)["nodes"] = a{long(49)}
		}), at: "/nodes/" + long(49), nums: map[string]float64{"length": 64, "limit": 63, "over": 1}, msg: []string{"shorten the graph or the node by 1"}},
		{name: "interior queue of 63 characters", rule: RuleNodeName, doc: with(func(d m) {
			nodesOf(d)[long(48)] = nodesOf(d)["in"]
			delete(nodesOf(d), "in")
			pathOf(d, 0)["nodes"] = a{long(48)}
		})},
		{name: "capital path", rule: RulePathName, fire: true, doc: with(func(d m) { pathOf(d, 0)["name"] = "Main" }), at: "/paths/0/name"},
		{name: "repeated path", rule: RulePathName, fire: true, doc: with(func(d m) {
			d["paths"] = append(d["paths"].(a), m{"name": "main", "nodes": a{"in"}})
		}), at: "/paths/1/name", nums: map[string]float64{"first": 0, "index": 1}, msg: []string{"split the stream"}},
		{name: "distinct paths", rule: RulePathName, doc: with(func(d m) {
			d["paths"] = append(d["paths"].(a), m{"name": "main-2", "nodes": a{"in"}})
		})},
		{name: "no nodes", rule: RuleNodes, fire: true, doc: with(func(d m) { d["nodes"] = m{}; d["paths"] = a{} }), at: "/nodes", msg: []string{"limits nothing"}},
		{name: "one node", rule: RuleNodes, doc: base},
		{name: "no paths", rule: RulePaths, fire: true, doc: with(func(d m) { d["paths"] = a{} }), at: "/paths", msg: []string{"moves nothing"}},
		{name: "one path", rule: RulePaths, doc: base},
		{name: "egress queue of 256 bytes", rule: RuleQueueName, fire: true, doc: with(func(d m) { nodeOf(d, "in")["egress"] = long(256) }),
			at: "/nodes/in/egress", nums: map[string]float64{"bytes": 256, "limit": 255, "over": 1}, msg: []string{"over the broker's limit of 255", "at most 255 bytes"}},
		{name: "egress queue of 255 bytes", rule: RuleQueueName, doc: with(func(d m) { nodeOf(d, "in")["egress"] = long(255) })},
		{name: "slash in an egress queue object", rule: RuleQueueName, fire: true, doc: with(func(d m) { nodeOf(d, "in")["egress"] = m{"queue": "demo/out", "group": "workers"} }),
			at: "/nodes/in/egress/queue", nums: map[string]float64{"byte": 4}, msg: []string{"a slash at byte 4", "use letters"}},
		{name: "space in an application ingress queue", rule: RuleQueueName, fire: true, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "demo in"} }),
			at: "/nodes/in/ingress/queue", msg: []string{"whitespace U+0020", "ingress queue"}},
		{name: "control character in an egress group", rule: RuleQueueName, fire: true, doc: with(func(d m) { nodeOf(d, "in")["egress"] = m{"queue": "demo.out", "group": "work\x01ers"} }),
			at: "/nodes/in/egress/group", msg: []string{"control character U+0001", "egress group"}},
		{name: "dotted, dashed and underscored names", rule: RuleQueueName, doc: with(func(d m) {
			nodeOf(d, "in")["ingress"] = m{"queue": "Demo_In-1.q"}
			nodeOf(d, "in")["egress"] = m{"queue": "demo.out_2-x", "group": "Workers.v2"}
		})},

		// shape
		{name: "empty path", rule: RulePathLength, fire: true, doc: with(func(d m) {
			d["paths"] = append(d["paths"].(a), m{"name": "empty", "nodes": a{}})
		}), at: "/paths/1/nodes", nums: map[string]float64{"hops": 0}},
		{name: "one-hop path", rule: RulePathLength, doc: base},
		{name: "fan-out of one", rule: RuleFanoutBranch, fire: true, doc: with(func(d m) {
			nodesOf(d)["o"] = m{"budgets": a{m{"count": 10, "timeMs": 1000}}, "egress": "demo.g.o"}
			delete(nodeOf(d, "in"), "egress")
			pathOf(d, 0)["nodes"] = a{"in", a{"o"}}
		}), at: "/paths/0/nodes/1", nums: map[string]float64{"hop": 1, "branches": 1, "minimum": 2}},
		{name: "fan-out of two", rule: RuleFanoutBranch, doc: fanout},
		{name: "fan-out before the last hop", rule: RuleFanoutTerminal, fire: true, doc: func() m {
			d := fanout()
			nodesOf(d)["z"] = m{"budgets": a{m{"count": 10, "timeMs": 1000}}, "egress": "demo.g.z"}
			pathOf(d, 0)["nodes"] = a{"in", a{"o1", "o2"}, "z"}
			return d
		}, at: "/paths/0/nodes/1", nums: map[string]float64{"hop": 1, "hops": 3}, msg: []string{"[o1, o2]", "its own path"}},
		{name: "fan-out as the last hop", rule: RuleFanoutTerminal, doc: fanout},
		{name: "undeclared node", rule: RulePathNode, fire: true, doc: with(func(d m) {
			pathOf(d, 0)["nodes"] = a{"in", "nope"}
		}), at: "/paths/0/nodes/1", nums: map[string]float64{"hop": 1}, msg: []string{`"nope"`, "declared nodes: in"}},
		{name: "declared nodes", rule: RulePathNode, doc: base},
		{name: "path starts without ingress", rule: RulePathEntry, fire: true, doc: with(func(d m) {
			nodesOf(d)["mid"] = m{"budgets": a{m{"count": 10, "timeMs": 1000}}, "egress": "demo.g.mid"}
			d["paths"] = append(d["paths"].(a), m{"name": "side", "nodes": a{"mid"}})
		}), at: "/paths/1/nodes/0", msg: []string{`"mid"`, "no ingress"}},
		{name: "path starts at ingress", rule: RulePathEntry, doc: base},
		{name: "path ends without egress", rule: RulePathTerminal, fire: true, doc: with(func(d m) { delete(nodeOf(d, "in"), "egress") }),
			at: "/paths/0/nodes/0", msg: []string{`"egress": "demo.g.out"`}},
		{name: "path ends at egress", rule: RulePathTerminal, doc: base},
		{name: "a path returns to its first node", rule: RuleAcyclic, fire: true, doc: with(func(d m) {
			nodesOf(d)["b"] = m{"budgets": a{m{"count": 10, "timeMs": 1000}}}
			pathOf(d, 0)["nodes"] = a{"in", "b", "in"}
		}), at: "/paths/0/nodes/1", nums: map[string]float64{"hop": 1, "length": 2}, msg: []string{"in -> b -> in"}},
		{name: "two paths close a cycle", rule: RuleAcyclic, fire: true, doc: crossWith(func(d m) {
			nodeOf(d, "x")["ingress"] = true
			d["paths"] = append(d["paths"].(a), m{"name": "r", "nodes": a{"x", "a", "x"}})
		}), msg: []string{"->"}},
		{name: "a chain", rule: RuleAcyclic, doc: crossing},
		{name: "unvisited node", rule: RuleNodeOrphan, fire: true, doc: with(func(d m) {
			nodesOf(d)["spare"] = m{"budgets": a{m{"count": 10, "timeMs": 1000}}}
		}), at: "/nodes/spare", msg: []string{"never hold work"}},
		{name: "every node visited", rule: RuleNodeOrphan, doc: crossing},

		// budgets and cost
		{name: "maxAttempts 0", rule: RuleMaxAttemptsRange, fire: true, doc: with(func(d m) { d["maxAttempts"] = 0 }), at: "/maxAttempts", nums: map[string]float64{"maxAttempts": 0, "min": 1, "max": 20}},
		{name: "maxAttempts 21", rule: RuleMaxAttemptsRange, fire: true, doc: with(func(d m) { d["maxAttempts"] = 21 }), nums: map[string]float64{"maxAttempts": 21}},
		{name: "maxAttempts 20", rule: RuleMaxAttemptsRange, doc: with(func(d m) { d["maxAttempts"] = 20 })},
		{name: "maxAttempts 1", rule: RuleMaxAttemptsRange, doc: with(func(d m) { d["maxAttempts"] = 1 })},
		{name: "fixed cost 0", rule: RuleCostInteger, fire: true, doc: with(func(d m) { nodeOf(d, "in")["cost"] = 0 }), at: "/nodes/in/cost", nums: map[string]float64{"cost": 0, "min": 1}, msg: []string{"count tenths"}},
		{name: "default cost -1", rule: RuleCostInteger, fire: true, doc: with(func(d m) { nodeOf(d, "in")["cost"] = m{"path": "payload.units", "default": -1} }), at: "/nodes/in/cost/default", nums: map[string]float64{"default": -1}},
		{name: "fixed cost 1", rule: RuleCostInteger, doc: with(func(d m) { nodeOf(d, "in")["cost"] = 1 })},
		{name: "cost path without payload", rule: RuleCostPath, fire: true, doc: with(func(d m) { nodeOf(d, "in")["cost"] = m{"path": "units"} }), at: "/nodes/in/cost/path", msg: []string{"payload.a.b"}},
		{name: "cost path with an empty segment", rule: RuleCostPath, fire: true, doc: with(func(d m) { nodeOf(d, "in")["cost"] = m{"path": "payload..units"} })},
		{name: "cost path in the stamp", rule: RuleCostPath, fire: true, doc: with(func(d m) { nodeOf(d, "in")["cost"] = m{"path": "payload._gate.hop"} }), msg: []string{"_gate"}},
		{name: "nested cost path", rule: RuleCostPath, doc: with(func(d m) { nodeOf(d, "in")["cost"] = m{"path": "payload.a.b", "max": 5} })},
		{name: "max below default", rule: RuleCostMax, fire: true, doc: with(func(d m) { nodeOf(d, "in")["cost"] = m{"path": "payload.units", "default": 5, "max": 4} }), at: "/nodes/in/cost/max", nums: map[string]float64{"max": 4, "default": 5}},
		{name: "max equal to default", rule: RuleCostMax, doc: with(func(d m) { nodeOf(d, "in")["cost"] = m{"path": "payload.units", "default": 5, "max": 5} })},
		{name: "batch 0", rule: RuleBatchRange, fire: true, doc: with(func(d m) { nodeOf(d, "in")["batch"] = 0 }), at: "/nodes/in/batch", nums: map[string]float64{"batch": 0, "min": 1, "max": 1000}},
		{name: "batch 1001", rule: RuleBatchRange, fire: true, doc: with(func(d m) { nodeOf(d, "in")["batch"] = 1001 }), nums: map[string]float64{"batch": 1001}},
		{name: "batch 1000", rule: RuleBatchRange, doc: with(func(d m) { nodeOf(d, "in")["batch"] = 1000 })},
		{name: "no budgets", rule: RuleNodeBudget, fire: true, doc: with(func(d m) { nodeOf(d, "in")["budgets"] = a{} }), at: "/nodes/in/budgets", msg: []string{"a queue with extra steps"}},
		{name: "no budgets in watch", rule: RuleNodeBudget, doc: with(func(d m) { nodeOf(d, "in")["budgets"] = a{}; d["watch"] = m{"durationSeconds": 86400} })},
		{name: "only scoped and op budgets", rule: RuleNodeUnscopedBudget, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = a{
				m{"id": "per-account", "count": 10, "timeMs": 1000, "scopeBy": "payload.accountId"},
				m{"id": "writes", "count": 10, "timeMs": 1000, "whenOp": a{"write.*"}},
			}
		}), at: "/nodes/in/budgets", nums: map[string]float64{"budgets": 2, "unconditional": 0}},
		{name: "scoped budget beside a global one", rule: RuleNodeUnscopedBudget, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "per-account", "count": 10, "timeMs": 1000, "scopeBy": "payload.accountId"})
		})},
		{name: "only scoped budgets in watch", rule: RuleNodeUnscopedBudget, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = a{m{"count": 10, "timeMs": 1000, "scopeBy": "payload.accountId"}}
			d["watch"] = m{"durationSeconds": 600}
		})},
		{name: "repeated id", rule: RuleBudgetUnique, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = a{m{"id": "global", "count": 100, "timeMs": 1000}, m{"id": "global", "count": 10, "timeMs": 60000}}
		}), at: "/nodes/in/budgets/1/id", nums: map[string]float64{"first": 0, "index": 1}},
		{name: "explicit id equal to a default id", rule: RuleBudgetUnique, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = a{m{"count": 100, "timeMs": 1000}, m{"id": "b0", "count": 10, "timeMs": 60000}}
		}), msg: []string{`"b0"`}},
		{name: "default ids", rule: RuleBudgetUnique, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = a{m{"count": 100, "timeMs": 1000}, m{"count": 1000, "timeMs": 60000, "subWindows": 60}}
		})},
		// b:demo:g:in: is 12 bytes, b:demo:shared: 14.
		{name: "kv key of 513 bytes", rule: RuleKVKeyLength, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["id"] = long(501) }),
			at: "/nodes/in/budgets/0/id", nums: map[string]float64{"bytes": 513, "limit": 512, "over": 1, "brokerLimit": 512}, msg: []string{"of 513 bytes", "refuse every admission call", "shorten the id by at least 1 byte"}},
		{name: "kv key of 512 bytes", rule: RuleKVKeyLength, doc: with(func(d m) { budgetOf(d, "in", 0)["id"] = long(500) })},
		{name: "scoped kv key of 448 bytes", rule: RuleKVKeyLength, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": long(436), "count": 10, "timeMs": 1000, "scopeBy": "payload.accountId"})
		}), at: "/nodes/in/budgets/1/id", nums: map[string]float64{"bytes": 448, "limit": 447, "over": 1, "scopeReserve": 65}, msg: []string{"less 65"}},
		{name: "scoped kv key of 447 bytes", rule: RuleKVKeyLength, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": long(435), "count": 10, "timeMs": 1000, "scopeBy": "payload.accountId"})
		})},
		{name: "shared kv key of 513 bytes", rule: RuleKVKeyLength, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["sharedKey"] = long(499) }),
			at: "/nodes/in/budgets/0/sharedKey", nums: map[string]float64{"bytes": 513, "over": 1}, msg: []string{"shorten the sharedKey"}},
		{name: "shared kv key of 512 bytes", rule: RuleKVKeyLength, doc: with(func(d m) { budgetOf(d, "in", 0)["sharedKey"] = long(498) })},
		{name: "kv key of 513 bytes in watch", rule: RuleKVKeyLength, fire: true, doc: with(func(d m) {
			budgetOf(d, "in", 0)["id"] = long(501)
			d["watch"] = m{"durationSeconds": 600}
		})},
		{name: "colon in a budget id", rule: RuleKVKeySeparator, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["id"] = "k:z" }),
			at: "/nodes/in/budgets/0/id", nums: map[string]float64{"byte": 1}, msg: []string{`"k:z"`, "one counter"}},
		{name: "colon in a shared key", rule: RuleKVKeySeparator, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["sharedKey"] = "k:z" }),
			at: "/nodes/in/budgets/0/sharedKey", msg: []string{`"b:demo:shared:k:z"`}},
		{name: "dots and dashes in ids and shared keys", rule: RuleKVKeySeparator, doc: with(func(d m) { budgetOf(d, "in", 0)["id"] = "k.z-1"; budgetOf(d, "in", 0)["sharedKey"] = "k_z.2" })},
		{name: "count 0", rule: RuleBudgetCount, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 0 }), at: "/nodes/in/budgets/0/count", nums: map[string]float64{"count": 0, "min": 1}},
		{name: "count 0 in watch", rule: RuleBudgetCount, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 0; d["watch"] = m{"durationSeconds": 600} })},
		{name: "count 1", rule: RuleBudgetCount, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 1 })},
		{name: "timeMs 99", rule: RuleBudgetWindow, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["timeMs"] = 99 }), at: "/nodes/in/budgets/0/timeMs", nums: map[string]float64{"timeMs": 99, "min": 100}},
		{name: "timeMs 100", rule: RuleBudgetWindow, doc: with(func(d m) { budgetOf(d, "in", 0)["timeMs"] = 100 })},
		{name: "subWindows 0", rule: RuleSubwindowRange, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["subWindows"] = 0 }), at: "/nodes/in/budgets/0/subWindows", nums: map[string]float64{"subWindows": 0, "min": 1, "max": 3600}},
		{name: "subWindows 3601", rule: RuleSubwindowRange, fire: true, doc: with(func(d m) {
			budgetOf(d, "in", 0)["count"] = 10000
			budgetOf(d, "in", 0)["timeMs"] = 3601000
			budgetOf(d, "in", 0)["subWindows"] = 3601
		}), nums: map[string]float64{"subWindows": 3601}},
		{name: "subWindows 3600", rule: RuleSubwindowRange, doc: with(func(d m) {
			budgetOf(d, "in", 0)["count"] = 3600
			budgetOf(d, "in", 0)["timeMs"] = 3600000
			budgetOf(d, "in", 0)["subWindows"] = 3600
		})},
		{name: "more sub-windows than count", rule: RuleSubwindowFits, fire: true, doc: with(func(d m) {
			budgetOf(d, "in", 0)["count"] = 10
			budgetOf(d, "in", 0)["timeMs"] = 60000
			budgetOf(d, "in", 0)["subWindows"] = 11
		}), at: "/nodes/in/budgets/0/subWindows", nums: map[string]float64{"count": 10, "subWindows": 11, "enforced": 11}, msg: []string{"at most 10"}},
		{name: "as many sub-windows as count", rule: RuleSubwindowFits, doc: with(func(d m) {
			budgetOf(d, "in", 0)["count"] = 10
			budgetOf(d, "in", 0)["timeMs"] = 10000
			budgetOf(d, "in", 0)["subWindows"] = 10
		})},
		{name: "item above the sub-window", rule: RuleCostFits, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["cost"] = m{"path": "payload.units", "max": 6}
			budgetOf(d, "in", 0)["count"] = 300
			budgetOf(d, "in", 0)["timeMs"] = 60000
			budgetOf(d, "in", 0)["subWindows"] = 60
		}), at: "/nodes/in/budgets/0", nums: map[string]float64{"maxCost": 6, "countSub": 5, "subWindows": 60}, msg: []string{"never reaches the DLQ"}},
		{name: "item above a scoped sub-window", rule: RuleCostFits, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["cost"] = 20
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.a"})
		}), at: "/nodes/in/budgets/1", nums: map[string]float64{"maxCost": 20, "countSub": 10}},
		{name: "item equal to the sub-window", rule: RuleCostFits, doc: with(func(d m) {
			nodeOf(d, "in")["cost"] = m{"path": "payload.units", "max": 5}
			budgetOf(d, "in", 0)["count"] = 300
			budgetOf(d, "in", 0)["timeMs"] = 60000
			budgetOf(d, "in", 0)["subWindows"] = 60
		})},
		{name: "scope without payload", rule: RuleScopePath, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "accountId"})
		}), at: "/nodes/in/budgets/1/scopeBy", msg: []string{`"accountId"`}},
		{name: "scope in the stamp", rule: RuleScopePath, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload._gate"})
		}), msg: []string{"_gate"}},
		{name: "scope in the payload", rule: RuleScopePath, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.accountId"})
		})},
		{name: "whenOp []", rule: RuleWhenopEmpty, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "w", "count": 10, "timeMs": 1000, "whenOp": a{}})
		}), at: "/nodes/in/budgets/1/whenOp", nums: map[string]float64{"ops": 0}},
		{name: "whenOp with an op", rule: RuleWhenopEmpty, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "w", "count": 10, "timeMs": 1000, "whenOp": a{"write"}})
		})},
		{name: "documented without source or asOf", rule: RuleProvenance, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["confidence"] = "documented" }), at: "/nodes/in/budgets/0", msg: []string{"no source or asOf"}},
		{name: "documented without asOf", rule: RuleProvenance, fire: true, doc: with(func(d m) {
			budgetOf(d, "in", 0)["confidence"] = "documented"
			budgetOf(d, "in", 0)["source"] = "https://vendor.example/limits"
		}), msg: []string{"no asOf"}},
		{name: "documented with both", rule: RuleProvenance, doc: with(func(d m) {
			budgetOf(d, "in", 0)["confidence"] = "documented"
			budgetOf(d, "in", 0)["source"] = "https://vendor.example/limits"
			budgetOf(d, "in", 0)["asOf"] = "2026-11-01"
		})},
		{name: "assumed without source", rule: RuleProvenance, doc: with(func(d m) { budgetOf(d, "in", 0)["confidence"] = "assumed" })},
		{name: "a vendor meter of an unknown family", rule: RuleVendorMeter, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["vendorMeter"] = m{"headers": "x-rate-limit"} }), at: "/nodes/in/budgets/0/vendorMeter/headers", msg: []string{`"x-rate-limit"`, `"x-ratelimit"`}},
		{name: "a vendor meter on a scoped budget", rule: RuleVendorMeter, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "k", "count": 10, "timeMs": 1000, "scopeBy": "payload.key", "vendorMeter": m{"headers": "ratelimit"}})
		}), at: "/nodes/in/budgets/1/vendorMeter", msg: []string{"only a budget with neither scopeBy nor whenOp"}},
		{name: "a vendor meter name with a comma", rule: RuleVendorMeter, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["vendorMeter"] = m{"headers": "ratelimit", "name": "a,b"} }), at: "/nodes/in/budgets/0/vendorMeter/name"},
		{name: "a GitHub core meter", rule: RuleVendorMeter, doc: with(func(d m) { budgetOf(d, "in", 0)["vendorMeter"] = m{"headers": "github", "name": "core"} })},
		{name: "per-key counts on a scoped budget, higher and lower", rule: RuleBudgetKeys, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "keys": m{"acct-42": 500, "acct-9": 1}})
		})},
		{name: "per-key counts on an unscoped budget", rule: RuleBudgetKeys, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["keys"] = m{"acct-42": 500} }), at: "/nodes/in/budgets/0/keys", msg: []string{"has no scopeBy"}},
		{name: "a per-key count of 0", rule: RuleBudgetKeys, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "keys": m{"acct-42": 0}})
		}), at: "/nodes/in/budgets/1/keys/acct-42", msg: []string{"outside 1.."}, nums: map[string]float64{"count": 0}},
		{name: "an absurd per-key count", rule: RuleBudgetKeys, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "keys": m{"a": int64(plan.MaxKeyCount) + 1}})
		}), at: "/nodes/in/budgets/1/keys/a"},
		{name: "a per-key value past the key room", rule: RuleBudgetKeys, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "keys": m{strings.Repeat("v", 500): 5}})
		}), msg: []string{"kv key room"}},
		{name: "more per-key counts than the document holds", rule: RuleBudgetKeys, fire: true, doc: with(func(d m) {
			keys := m{}
			for i := range plan.MaxDeclaredKeys + 1 {
				keys[fmt.Sprintf("k%d", i)] = 5
			}
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "keys": keys})
		}), at: "/nodes/in/budgets/1/keys", msg: []string{"PUT …/budgets/acct/keys/{value}"}},
		{name: "one shared key, two sets of per-key counts", rule: RuleSharedConflict, fire: true, doc: crossWith(func(d m) {
			for _, n := range []string{"a", "b"} {
				nodeOf(d, n)["budgets"] = append(nodeOf(d, n)["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "sharedKey": "acct"})
			}
			budgetOf(d, "a", 1)["keys"] = m{"gold": 40}
			budgetOf(d, "b", 1)["keys"] = m{"gold": 20}
		}), at: "/nodes/b/budgets/1/keys", msg: []string{"one counter per value"}},
		{name: "one shared key, the same per-key counts", rule: RuleSharedConflict, doc: crossWith(func(d m) {
			for _, n := range []string{"a", "b"} {
				nodeOf(d, n)["budgets"] = append(nodeOf(d, n)["budgets"].(a), m{"id": "acct", "count": 10, "timeMs": 1000, "scopeBy": "payload.acct", "sharedKey": "acct", "keys": m{"gold": 40}})
			}
		})},
		{name: "one shared key, two counts", rule: RuleSharedConflict, fire: true, doc: crossWith(func(d m) {
			budgetOf(d, "a", 0)["sharedKey"] = "ip"
			budgetOf(d, "b", 0)["sharedKey"] = "ip"
			budgetOf(d, "b", 0)["count"] = 200
		}), at: "/nodes/b/budgets/0/sharedKey", nums: map[string]float64{"count": 200, "firstCount": 100, "timeMs": 1000, "firstTimeMs": 1000}},
		{name: "one shared key, two defaulted sub-window counts", rule: RuleSharedConflict, fire: true, doc: crossWith(func(d m) {
			budgetOf(d, "a", 0)["sharedKey"] = "ip"
			budgetOf(d, "a", 0)["timeMs"] = 10000
			budgetOf(d, "b", 0)["sharedKey"] = "ip"
			budgetOf(d, "b", 0)["timeMs"] = 10000
			budgetOf(d, "b", 0)["subWindows"] = 5
		}), nums: map[string]float64{"subWindows": 5, "firstSubWindows": 10}},
		{name: "one shared key declared alike", rule: RuleSharedConflict, doc: crossWith(func(d m) {
			budgetOf(d, "a", 0)["sharedKey"] = "ip"
			budgetOf(d, "a", 0)["timeMs"] = 10000
			budgetOf(d, "b", 0)["sharedKey"] = "ip"
			budgetOf(d, "b", 0)["timeMs"] = 10000
			budgetOf(d, "b", 0)["subWindows"] = 10
		})},

		// shares
		{name: "share 0", rule: RuleShareRange, fire: true, doc: with(func(d m) { pathOf(d, 0)["share"] = 0 }), at: "/paths/0/share", nums: map[string]float64{"share": 0, "min": 0, "max": 1}},
		{name: "share 1.5 on a sole path", rule: RuleShareRange, fire: true, doc: with(func(d m) { pathOf(d, 0)["share"] = 1.5 }), nums: map[string]float64{"share": 1.5}},
		{name: "share 1", rule: RuleShareRange, doc: with(func(d m) { pathOf(d, 0)["share"] = 1 })},
		{name: "no tied top path at share 1", rule: RuleShareTop, fire: true, doc: crossWith(func(d m) {
			pathOf(d, 0)["share"] = 0.5
			pathOf(d, 1)["share"] = 0.8
		}), at: "/nodes/x", nums: map[string]float64{"priority": 0, "paths": 2}, msg: []string{`"p" at 0.5`, `"q" at 0.8`}},
		{name: "the product description's tie: one top path at share 1", rule: RuleShareTop, doc: crossWith(func(d m) {
			pathOf(d, 0)["share"] = 1.0
			pathOf(d, 1)["share"] = 0.5
		})},
		{name: "a lower path at share 1 does not cover the top", rule: RuleShareTop, fire: true, doc: crossWith(func(d m) {
			pathOf(d, 0)["share"] = 0.9
			pathOf(d, 1)["priority"] = 1
			pathOf(d, 1)["share"] = 0.5
		}), nums: map[string]float64{"priority": 0, "paths": 1}},
		{name: "less important path with the larger share", rule: RuleShareOrder, fire: true, doc: crossWith(func(d m) {
			pathOf(d, 0)["share"] = 0.6
			pathOf(d, 0)["priority"] = 1
			nodeOf(d, "x")["ingress"] = true
			d["paths"] = append(d["paths"].(a), m{"name": "top", "nodes": a{"x"}})
			pathOf(d, 1)["share"] = 0.8
			pathOf(d, 1)["priority"] = 2
		}), at: "/paths/1/share", nums: map[string]float64{"lowPriority": 2, "lowShare": 0.8, "highPriority": 1, "highShare": 0.6}},
		{name: "shares follow priorities", rule: RuleShareOrder, doc: crossWith(func(d m) {
			pathOf(d, 1)["priority"] = 1
			pathOf(d, 1)["share"] = 0.5
		})},
		{name: "equal priorities may differ", rule: RuleShareOrder, doc: crossWith(func(d m) { pathOf(d, 1)["share"] = 0.5 })},
		{name: "ceiling below the largest item", rule: RuleShareRoundsOut, fire: true, doc: crossWith(func(d m) {
			nodeOf(d, "x")["cost"] = m{"path": "payload.units", "max": 10}
			budgetOf(d, "x", 0)["count"] = 15
			pathOf(d, 1)["priority"] = 1
			pathOf(d, 1)["share"] = 0.5
		}), at: "/nodes/x", nums: map[string]float64{"share": 0.5, "countSub": 15, "ceiling": 8, "maxCost": 10}, msg: []string{"round(15 × 0.5) = 8"}},
		{name: "ceiling rounds half away from zero to the item", rule: RuleShareRoundsOut, doc: crossWith(func(d m) {
			nodeOf(d, "x")["cost"] = m{"path": "payload.units", "max": 3}
			budgetOf(d, "x", 0)["count"] = 5
			pathOf(d, 1)["priority"] = 1
			pathOf(d, 1)["share"] = 0.5
		})},

		// ownership
		{name: "two nodes on one ingress queue", rule: RuleIngressOwner, fire: true, doc: crossWith(func(d m) {
			nodeOf(d, "a")["ingress"] = m{"queue": "demo.in"}
			nodeOf(d, "b")["ingress"] = m{"queue": "demo.in"}
		}), at: "/nodes/b/ingress", msg: []string{`"demo.in"`, `"a"`, "doubles"}},
		{name: "ingress of a graph running here", rule: RuleIngressOwner, fire: true, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "theirs.in"} }),
			in: withStored(otherGraph("demo", "other", true, nil)), at: "/nodes/in/ingress/queue", msg: []string{"running on this replica"}},
		{name: "ingress of a stored graph", rule: RuleIngressOwner, fire: true, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "theirs.in"} }),
			in: withStored(otherGraph("other-app", "other", false, nil)), at: "/nodes/in/ingress", msg: []string{"declared on another replica"}},
		{name: "own queue, other graphs elsewhere", rule: RuleIngressOwner, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "mine.in"} }),
			in: withStored(otherGraph("demo", "other", true, nil))},
		{name: "redeclaring itself", rule: RuleIngressOwner, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "theirs.in"} }),
			in: withStored(otherGraph("demo", "g", true, nil))},

		{name: "ingress on another graph's Gate-owned interior queue", rule: RuleGateQueue, fire: true, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "gate.other.g2.x.in"} }),
			at: "/nodes/in/ingress/queue", msg: []string{`"gate.other.g2.x.in"`, "interior", `node "x" of graph other/g2`}},
		{name: "egress onto another graph's Gate-owned ingress", rule: RuleGateQueue, fire: true, doc: with(func(d m) { nodeOf(d, "in")["egress"] = "gate.demo.g2.entry.ingress" }),
			at: "/nodes/in/egress", msg: []string{"Gate-owned ingress", "past the budgets"}},
		{name: "v1-shaped admitted egress under gate.", rule: RuleGateQueue, doc: with(func(d m) { nodeOf(d, "in")["egress"] = "gate.demo.g.admitted.default" })},
		{name: "application queue ending in .in", rule: RuleGateQueue, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "demo.orders.in"} })},

		// watch, counters, plan
		{name: "watch of 119 s", rule: RuleWatchDuration, fire: true, doc: with(func(d m) { d["watch"] = m{"durationSeconds": 119} }), at: "/watch/durationSeconds", nums: map[string]float64{"durationSeconds": 119, "min": 120, "max": 2592000}},
		{name: "watch of 30 days and a second", rule: RuleWatchDuration, fire: true, doc: with(func(d m) { d["watch"] = m{"durationSeconds": 2592001} })},
		{name: "watch of 120 s", rule: RuleWatchDuration, doc: with(func(d m) { d["watch"] = m{"durationSeconds": 120} })},
		{name: "watch of 30 days", rule: RuleWatchDuration, doc: with(func(d m) { d["watch"] = m{"durationSeconds": 2592000} })},
		{name: "counters every 30 s", rule: RuleCountersWindow, fire: true, doc: with(func(d m) { d["counters"] = m{"windowSeconds": 30} }), at: "/counters/windowSeconds", nums: map[string]float64{"windowSeconds": 30, "accepted": 60}},
		{name: "counters every minute", rule: RuleCountersWindow, doc: with(func(d m) { d["counters"] = m{"windowSeconds": 60} })},
		{name: "8192 workers", rule: RuleWorkerTotal, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["concurrency"] = 4096
			d["paths"] = append(d["paths"].(a), m{"name": "copy", "nodes": a{"in"}})
		}), nums: map[string]float64{"workers": 8192, "limit": 4096}},
		{name: "4096 workers", rule: RuleWorkerTotal, doc: with(func(d m) {
			nodeOf(d, "in")["concurrency"] = 2048
			d["paths"] = append(d["paths"].(a), m{"name": "copy", "nodes": a{"in"}})
		})},

		// version
		{name: "renamed budget at the same version", rule: RuleVersionBump, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["id"] = "renamed" }),
			in: withStored(self(nil)), at: "/version", nums: map[string]float64{"version": 1, "runningVersion": 1, "reasons": 1}, msg: []string{`drops counter "b:demo:g:in:global"`, "bump version above 1"}},
		{name: "watch to enforce at the same version", rule: RuleVersionBump, fire: true, doc: base,
			in: withStored(self(func(d m) { d["watch"] = m{"durationSeconds": 600} })), msg: []string{"switches from watch to enforce"}},
		{name: "renamed budget at a higher version", rule: RuleVersionBump, doc: with(func(d m) { budgetOf(d, "in", 0)["id"] = "renamed"; d["version"] = 2 }),
			in: withStored(self(nil))},
		{name: "hot change at a lower version", rule: RuleVersionBump, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 50; d["version"] = 0 }),
			in: withStored(self(nil))},
		{name: "hot change at a lower version is older", rule: RuleVersionOrder, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 50; d["version"] = 0 }),
			in: withStored(self(nil)), at: "/version", nums: map[string]float64{"version": 0, "storedVersion": 1}, msg: []string{"version 0 is below the stored version 1", "declare version 1 or higher"}},
		{name: "the stored document itself", rule: RuleVersionOrder, doc: base, in: withStored(self(nil))},
		{name: "a newer version", rule: RuleVersionOrder, doc: with(func(d m) { d["version"] = 2 }), in: withStored(self(nil))},

		// warnings
		{name: "500 ms window", rule: RuleWindowSubSecond, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 10; budgetOf(d, "in", 0)["timeMs"] = 500 }),
			at: "/nodes/in/budgets/0", nums: map[string]float64{"count": 10, "timeMs": 500, "countSub": 10, "ttlSeconds": 1, "subWindows": 1}, msg: []string{"declares 10 per 500ms", "enforced as 10 per 1s"}},
		{name: "whole-second window rounded up", rule: RuleWindowSubSecond, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 7; budgetOf(d, "in", 0)["timeMs"] = 10000 }),
			nums: map[string]float64{"countSub": 1, "ttlSeconds": 2, "subWindows": 7}},
		{name: "ten one-second windows", rule: RuleWindowSubSecond, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 10; budgetOf(d, "in", 0)["timeMs"] = 10000 })},
		{name: "10% lost to rounding", rule: RuleSubwindowRounding, fire: true, doc: with(func(d m) {
			budgetOf(d, "in", 0)["timeMs"] = 30000
			budgetOf(d, "in", 0)["subWindows"] = 30
		}), at: "/nodes/in/budgets/0", nums: map[string]float64{"count": 100, "subWindows": 30, "countSub": 3, "enforced": 90, "lost": 0.1}},
		{name: "2% lost to rounding", rule: RuleSubwindowRounding, doc: with(func(d m) {
			budgetOf(d, "in", 0)["timeMs"] = 49000
			budgetOf(d, "in", 0)["subWindows"] = 49
		})},
		{name: "defaulted 5 s sub-windows", rule: RuleWindowBoundary, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["count"] = 2; budgetOf(d, "in", 0)["timeMs"] = 10000 }),
			at: "/nodes/in/budgets/0", nums: map[string]float64{"ttlSeconds": 5, "countSub": 1, "burst": 2}},
		{name: "declared 5 s sub-windows", rule: RuleWindowBoundary, doc: with(func(d m) {
			budgetOf(d, "in", 0)["count"] = 2
			budgetOf(d, "in", 0)["timeMs"] = 10000
			budgetOf(d, "in", 0)["subWindows"] = 2
		})},
		{name: "fan-out of two", rule: RuleFanoutMultiplies, fire: true, doc: fanout, at: "/paths/0/nodes/1", nums: map[string]float64{"hop": 1, "branches": 2}},
		{name: "no fan-out", rule: RuleFanoutMultiplies, doc: base},
		{name: "missing ingress queue", rule: RuleIngressQueue, fire: true, doc: withNamed(nil), in: withFacts(facts{}), at: "/nodes/in/ingress/queue", msg: []string{`"demo.in"`, "creates nothing"}},
		{name: "existing ingress queue", rule: RuleIngressQueue, doc: withNamed(nil), in: withFacts(facts{"demo.in": {Exists: true, Partitions: 4}})},
		{name: "retention on the ingress queue", rule: RuleIngressRetention, fire: true, doc: withNamed(nil), in: withFacts(facts{"demo.in": {Exists: true, Partitions: 4, RetentionSeconds: 3600}}),
			nums: map[string]float64{"retentionSeconds": 3600}, msg: []string{"3600 seconds"}},
		{name: "no retention on the ingress queue", rule: RuleIngressRetention, doc: withNamed(nil), in: withFacts(facts{"demo.in": {Exists: true, Partitions: 4}})},
		{name: "scoped week", rule: RuleWindowHeadOfLine, fire: true, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "per-listing", "count": 100, "timeMs": 604800000, "subWindows": 1, "scopeBy": "payload.listingId"})
		}), at: "/nodes/in/budgets/1", nums: map[string]float64{"ttlSeconds": 604800, "limit": 3600}, msg: []string{"payload.listingId"}},
		{name: "scoped hour", rule: RuleWindowHeadOfLine, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "per-listing", "count": 100, "timeMs": 3600000, "subWindows": 1, "scopeBy": "payload.listingId"})
		})},
		{name: "unscoped week", rule: RuleWindowHeadOfLine, doc: with(func(d m) {
			nodeOf(d, "in")["budgets"] = append(nodeOf(d, "in")["budgets"].(a), m{"id": "week", "count": 100, "timeMs": 604800000, "subWindows": 1})
		})},
		{name: "Gate-owned ingress of one partition", rule: RuleSinglePartition, fire: true, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"partitions": 1} }), at: "/nodes/in/ingress", nums: map[string]float64{"partitions": 1}, msg: []string{"gate.demo.g.in.ingress"}},
		{name: "broker reports one partition", rule: RuleSinglePartition, fire: true, doc: withNamed(nil), in: withFacts(facts{"demo.in": {Exists: true, Partitions: 1}})},
		{name: "broker reports two partitions", rule: RuleSinglePartition, doc: withNamed(func(in m) { in["partitions"] = 1 }), in: withFacts(facts{"demo.in": {Exists: true, Partitions: 2}})},
		{name: "Gate-owned ingress of 16", rule: RuleSinglePartition, doc: base},
		{name: "egress of a graph running here", rule: RuleEgressOwner, fire: true, doc: with(func(d m) { nodeOf(d, "in")["egress"] = "theirs.out" }),
			in: withStored(otherGraph("demo", "other", true, nil)), at: "/nodes/in/egress", msg: []string{`"theirs.out"`, "demo/other"}},
		{name: "egress of a graph only in the store", rule: RuleEgressOwner, fire: true, doc: with(func(d m) { nodeOf(d, "in")["egress"] = "theirs.out" }),
			in: withStored(otherGraph("other-app", "other", false, nil)), at: "/nodes/in/egress", msg: []string{`"theirs.out"`, "other-app/other"}},
		{name: "own egress, other graphs stored", rule: RuleEgressOwner, doc: with(func(d m) { nodeOf(d, "in")["egress"] = "mine.out" }),
			in: withStored(otherGraph("demo", "other", false, nil))},
		{name: "egress of itself", rule: RuleEgressOwner, doc: with(func(d m) { nodeOf(d, "in")["egress"] = "theirs.out" }),
			in: withStored(otherGraph("demo", "g", true, nil))},
		{name: "ingress on another application's egress", rule: RuleQueueCrossGraph, fire: true, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "theirs.out"} }),
			in: withStored(otherGraph("other-app", "other", false, nil)), at: "/nodes/in/ingress/queue", msg: []string{`"theirs.out"`, "egress of node", "other-app/other", "copy"}},
		{name: "egress onto another graph's ingress", rule: RuleQueueCrossGraph, fire: true, doc: with(func(d m) { nodeOf(d, "in")["egress"] = "theirs.in" }),
			in: withStored(otherGraph("other-app", "other", true, nil)), at: "/nodes/in/egress", msg: []string{`"theirs.in"`, "ingress of node", "other-app/other"}},
		{name: "own queues beside other graphs", rule: RuleQueueCrossGraph, doc: with(func(d m) { nodeOf(d, "in")["ingress"] = m{"queue": "mine.in"} }),
			in: withStored(otherGraph("other-app", "other", true, nil))},
		{name: "shared key declared differently by another graph", rule: RuleSharedConflictGraph, fire: true, doc: with(func(d m) { budgetOf(d, "in", 0)["sharedKey"] = "ip" }),
			in: withStored(otherGraph("demo", "other", false, func(o m) { budgetOf(o, "in", 0)["sharedKey"] = "ip"; budgetOf(o, "in", 0)["count"] = 50 })),
			at: "/nodes/in/budgets/0/sharedKey", nums: map[string]float64{"count": 100, "otherCount": 50, "countSub": 100, "otherCountSub": 50}, msg: []string{"b:demo:shared:ip", "demo/other"}},
		{name: "shared key declared alike by another graph", rule: RuleSharedConflictGraph, doc: with(func(d m) { budgetOf(d, "in", 0)["sharedKey"] = "ip" }),
			in: withStored(otherGraph("demo", "other", false, func(o m) { budgetOf(o, "in", 0)["sharedKey"] = "ip" }))},
		{name: "same key in another application", rule: RuleSharedConflictGraph, doc: with(func(d m) { budgetOf(d, "in", 0)["sharedKey"] = "ip" }),
			in: withStored(otherGraph("elsewhere", "other", false, func(o m) { budgetOf(o, "in", 0)["sharedKey"] = "ip"; budgetOf(o, "in", 0)["count"] = 50 }))},
	}
}

func fanout() m {
	d := base()
	delete(nodeOf(d, "in"), "egress")
	nodesOf(d)["o1"] = m{"budgets": a{m{"count": 10, "timeMs": 1000}}, "egress": "demo.g.o1"}
	nodesOf(d)["o2"] = m{"budgets": a{m{"count": 10, "timeMs": 1000}}, "egress": "demo.g.o2"}
	pathOf(d, 0)["nodes"] = a{"in", a{"o1", "o2"}}
	return d
}

// withNamed makes node "in" consume the application's queue demo.in.
func withNamed(f func(in m)) func() m {
	return with(func(d m) {
		in := m{"queue": "demo.in"}
		if f != nil {
			f(in)
		}
		nodeOf(d, "in")["ingress"] = in
	})
}

func withFacts(f facts) func(*Input) { return func(in *Input) { in.Facts = f } }

// self is the running copy of demo/g (the base document, mutated).
func self(mut func(d m)) Stored {
	d := base()
	if mut != nil {
		mut(d)
	}
	b, _ := jsonMarshal(d)
	return Stored{App: "demo", Name: "g", Body: b, Running: true}
}

func TestRules(t *testing.T) {
	t.Parallel()
	for _, tc := range ruleCases() {
		t.Run(tc.rule+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			in := Input{Body: body(t, tc.doc())}
			if tc.in != nil {
				tc.in(&in)
			}
			res := compileT(t, in)
			got := byRule(res.Findings, tc.rule)
			if !tc.fire {
				if len(got) > 0 {
					t.Fatalf("rule %s fired on a near miss: %v", tc.rule, got)
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("rule %s did not fire; findings: %v", tc.rule, res.Findings)
			}
			f := got[0]
			rule, ok := Lookup(tc.rule)
			if !ok {
				t.Fatalf("rule %s is not in the catalogue", tc.rule)
			}
			if f.Severity != rule.Severity {
				t.Errorf("severity %s, catalogue says %s", f.Severity, rule.Severity)
			}
			if tc.at != "" && f.At != tc.at {
				t.Errorf("at %q, want %q", f.At, tc.at)
			}
			for k, want := range tc.nums {
				if have, ok := f.Numbers[k]; !ok || have != want {
					t.Errorf("Numbers[%q] = %v (present %t), want %v; all: %v", k, have, ok, want, f.Numbers)
				}
			}
			for _, s := range tc.msg {
				if !strings.Contains(f.Message, s) {
					t.Errorf("message %q does not contain %q", f.Message, s)
				}
			}
			assertNumbersNamed(t, f)
			if rule.Severity == finding.Error {
				if res.Plan != nil {
					t.Errorf("a refused document has a plan")
				}
				wantStatus := 422
				if res.Conflict {
					wantStatus = 409
				}
				if res.Status() != wantStatus {
					t.Errorf("status %d, want %d", res.Status(), wantStatus)
				}
			}
		})
	}
}

// assertNumbersNamed checks that every whole figure of a finding appears in
// its message, so a reader never has to open Numbers.
func assertNumbersNamed(t *testing.T, f finding.Finding) {
	t.Helper()
	for k, v := range f.Numbers {
		switch k {
		case "first", "index", "path", "reasons", "length", "unconditional", "ops", "budgets", "hops", "paths", "nodes", "lost", "min", "max", "limit", "accepted", "minimum":
			continue
		}
		if v != float64(int64(v)) {
			continue
		}
		if !strings.Contains(f.Message, strconv.FormatInt(int64(v), 10)) {
			t.Errorf("message does not name %s = %v: %s", k, v, f.Message)
		}
	}
}

// TestEveryRuleIsCovered keeps the table honest: every catalogue rule has a
// case that fires it and a near miss that does not.
func TestEveryRuleIsCovered(t *testing.T) {
	t.Parallel()
	fires, misses := map[string]bool{}, map[string]bool{}
	for _, tc := range ruleCases() {
		if tc.fire {
			fires[tc.rule] = true
		} else {
			misses[tc.rule] = true
		}
	}
	for _, r := range Catalogue {
		if !fires[r.Name] {
			t.Errorf("no case fires %s", r.Name)
		}
		if !misses[r.Name] {
			t.Errorf("no near miss for %s", r.Name)
		}
	}
}
