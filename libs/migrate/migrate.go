package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/queen-mq/gate/libs/finding"
)

// Migration rule names. They are API: a client may match on them. Each names
// the v1 field (or field group) whose mapping it reports.
const (
	// RuleName reports that a v1 target's name became the graph and node name.
	RuleName = "name"
	// RuleCap reports that cap/periodSeconds became count/timeMs.
	RuleCap = "cap"
	// RuleAlignment reports that alignment (rolling or calendar) became subWindows.
	RuleAlignment = "alignment"
	// RuleMatch reports that match.op became whenOp (or was dropped when empty).
	RuleMatch = "match"
	// RuleScope reports that scope became scopeBy (first dimension only).
	RuleScope = "scope"
	// RuleMaxKeys reports that maxKeys was dropped: counters are rows with a TTL.
	RuleMaxKeys = "maxKeys"
	// RuleStore reports what store became (kv: a sharedKey; gate: node-local).
	RuleStore = "store"
	// RuleCost reports that cost {field, default, max} became {path, default, max}.
	RuleCost = "cost"
	// RuleNodeBudget reports the appended pass-through budget of a node with
	// no unconditional budget.
	RuleNodeBudget = "node-budget"
	// RuleLaneConcurrency reports that lane concurrency was not carried over.
	RuleLaneConcurrency = "lane-concurrency"
	// RulePacing reports that pacing.leaseSeconds was dropped and pacing.batch became batch.
	RulePacing = "pacing"
	// RuleAdmitted reports that admitted.partitions became ingress partitions
	// and partitionBy was ignored.
	RuleAdmitted = "admitted"
	// RuleShards reports that shardBy/shards were dropped.
	RuleShards = "shards"
	// RuleEgress reports that a v1 free-text egress was ignored.
	RuleEgress = "egress"
	// RuleEntry reports that entry: true became a Gate-owned ingress.
	RuleEntry = "entry"
	// RuleConsume reports the egress queue that replaced v1's admitted stream.
	RuleConsume = "consume"
	// RuleLanes reports that lanes became paths.
	RuleLanes = "lanes"
	// RuleLaneCap reports the share a lane cap became.
	RuleLaneCap = "lane-cap"
	// RuleEdges reports that edges became paths.
	RuleEdges = "edges"
	// RuleBreach reports that breach rules became maxAttempts and re-entry.
	RuleBreach = "breach"
)

// PassthroughID is the id of the budget appended to a v1 node that has no
// unconditional budget: 1,000,000 per second, one sub-window.
const PassthroughID = "passthrough"

const (
	passthroughCount  = 1_000_000
	passthroughTimeMs = 1000
)

const (
	maxEdgeSteps       = 32
	laneCapacityPerSec = 1000
	workLeaseSeconds   = 10
)

// Shape selects which v1 shape a body is read as.
type Shape int

const (
	// ShapeDetect (the zero value) reads a body with a "nodes" field as a
	// GraphSpec and any other body as a TargetSpec.
	ShapeDetect Shape = iota
	// ShapeTarget reads the body as a v1 TargetSpec (the target routes' fallback).
	ShapeTarget
	// ShapeGraph reads the body as a v1 GraphSpec (the graph routes' fallback).
	ShapeGraph
)

// Options tunes Map. The zero value detects the shape and keeps the
// document's own application and name.
type Options struct {
	// Shape is the v1 shape to read; zero detects it.
	Shape Shape
	// Application, when non-empty, replaces the document's application, as
	// the route /v1/apps/{app}/... pins it. Empty keeps the document's (or "default").
	Application string
	// Name, when non-empty, replaces the document's name, as the route pins it.
	// Empty keeps the document's.
	Name string
}

// v2OnlyRoot are root fields only a v2 document has; v1Only* are fields only
// a v1 document has, at the root, on a node and on a budget.
var (
	v2OnlyRoot   = []string{"graph", "paths", "maxAttempts", "counters", "watch"}
	v1OnlyRoot   = []string{"name", "budgets", "lanes", "cost", "pacing", "admitted", "shardBy", "shards", "egress", "edges", "consume", "breach"}
	v2OnlyNode   = []string{"ingress", "batch", "concurrency"}
	v1OnlyNode   = []string{"entry", "lanes", "pacing", "admitted", "shardBy", "shards"}
	v1OnlyBudget = []string{"cap", "periodSeconds", "alignment", "match", "scope", "maxKeys", "store"}
)

// IsV1 reports whether body looks like a v1 document (spec §7): a JSON object
// with no v2-only root field (graph, paths, maxAttempts, counters, watch) and
// at least one v1-only field at the root (name, budgets, lanes, cost, edges,
// consume, breach, …), on a node (entry, lanes, pacing, …) or on a budget
// (cap, periodSeconds, alignment, …). It only looks at field names; ToV2
// decides whether the document is well formed.
func IsV1(body []byte) bool {
	var root map[string]json.RawMessage
	if json.Unmarshal(body, &root) != nil || root == nil {
		return false
	}
	if hasAny(root, v2OnlyRoot) {
		return false
	}
	if hasAny(root, v1OnlyRoot) {
		return true
	}
	var nodes map[string]json.RawMessage
	if json.Unmarshal(root["nodes"], &nodes) != nil {
		return false
	}
	v1 := false
	for _, raw := range nodes {
		var node map[string]json.RawMessage
		if json.Unmarshal(raw, &node) != nil {
			continue
		}
		if hasAny(node, v2OnlyNode) {
			return false
		}
		if hasAny(node, v1OnlyNode) {
			v1 = true
		}
		var budgets []map[string]json.RawMessage
		if json.Unmarshal(node["budgets"], &budgets) != nil {
			continue
		}
		for _, b := range budgets {
			if hasAny(b, v1OnlyBudget) {
				v1 = true
			}
		}
	}
	return v1
}

func hasAny(m map[string]json.RawMessage, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// ToV2 maps a v1 document to v2 bytes, with the shape detected and the
// document's own application and name. It is Map(body, Options{}).
//
// The v2 bytes are compact JSON and deterministic: the same input always
// yields the same bytes. warnings holds one Severity warning finding per v1
// field that was mapped or ignored, in the order of spec §7.2, each At a JSON
// pointer into body. err wraps ErrShape (as a *ShapeError naming the pointer)
// when body is not a well-formed v1 document; the mapping itself refuses
// nothing, so the v2 document may still fail v2 validation.
func ToV2(body []byte) (v2 []byte, warnings finding.List, err error) {
	return Map(body, Options{})
}

// Map maps a v1 document to v2 bytes under opts. See ToV2.
func Map(body []byte, opts Options) (v2 []byte, warnings finding.List, err error) {
	shape := opts.Shape
	if shape == ShapeDetect {
		shape = ShapeTarget
		var root map[string]json.RawMessage
		if json.Unmarshal(body, &root) == nil {
			if _, ok := root["nodes"]; ok {
				shape = ShapeGraph
			}
		}
	}
	var doc *v2Doc
	var w collector
	switch shape {
	case ShapeTarget:
		t, err := readTarget(body, opts.Name != "")
		if err != nil {
			return nil, nil, err
		}
		if opts.Application != "" {
			t.application = opts.Application
		}
		if opts.Name != "" {
			t.name = opts.Name
		}
		doc = mapTarget(&w, t)
	case ShapeGraph:
		g, err := readGraph(body, opts.Name != "")
		if err != nil {
			return nil, nil, err
		}
		if opts.Application != "" {
			g.application = opts.Application
		}
		if opts.Name != "" {
			g.name = opts.Name
		}
		doc = mapGraph(&w, g)
	default:
		return nil, nil, fmt.Errorf("migrate: unknown shape %d", shape)
	}
	out, err := doc.encode()
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: encoding the v2 document: %w", err)
	}
	return out, w.list, nil
}

// collector gathers warning findings in emission order.
type collector struct{ list finding.List }

func (w *collector) add(rule, at string, numbers map[string]float64, format string, args ...any) {
	w.list = append(w.list, finding.Finding{
		Rule:     rule,
		Severity: finding.Warning,
		At:       at,
		Message:  fmt.Sprintf(format, args...),
		Numbers:  numbers,
	})
}

// scope carries the names a node's mapping needs.
type scope struct {
	app, graph, node string
}

func mapTarget(w *collector, t *v1Target) *v2Doc {
	short := t.name
	if i := strings.LastIndexByte(short, '.'); i >= 0 {
		short = short[i+1:]
	}
	n := &t.node
	n.name = short
	sc := scope{app: t.application, graph: short, node: short}
	w.add(RuleName, "/name", nil,
		"v1 target %q became graph %q with one node %q: a v2 graph and node name is one segment, so only the part after the last dot is kept (push to /v1/apps/%s/graphs/%s/nodes/%s/push)",
		t.name, short, short, t.application, short, short)

	node := mapLimits(w, n, sc)
	mapRuntime(w, n, node, sc, true)
	lane0 := laneZero(n.lanes)
	queue := "gate." + t.application + "." + t.name + ".admitted." + lane0
	node.Egress = queue
	w.add(RuleConsume, "", nil,
		"admitted items of target %q now leave on the egress queue %q (lane %q): your workers pop it with their own SDK and their own ack; Gate no longer hands out leases (GET .../next answers 410)",
		t.name, queue, lane0)
	used := map[string]bool{}
	paths := lanePaths(w, n, short, used)
	return &v2Doc{
		Application: t.application,
		Graph:       short,
		Version:     t.version,
		Nodes:       map[string]*v2Node{short: node},
		Paths:       paths,
	}
}

func mapGraph(w *collector, g *v1Graph) *v2Doc {
	doc := &v2Doc{
		Application: g.application,
		Graph:       g.name,
		Version:     g.version,
		Nodes:       map[string]*v2Node{},
		Paths:       []v2Path{},
	}
	if len(g.breach) > 0 {
		most := int64(1)
		var ignored []string
		for _, b := range g.breach {
			most = max(most, b.maxAttempts)
			if b.hasRetryTo && b.retryTo != "origin-entry" {
				ignored = append(ignored, fmt.Sprintf("%q", b.retryTo))
			}
		}
		attempts := clampU32(most)
		doc.MaxAttempts = &attempts
		msg := fmt.Sprintf("%d breach rule(s) became maxAttempts %d; the trigger (when) moved to your worker, which sees the vendor's answer and Gate does not: on a throttle it calls backoff (POST /v1/apps/%s/graphs/%s/nodes/{node}/backoff pauses the node), and for an item to retry it calls reenter (POST /v1/apps/%s/graphs/%s/reenter sends it back to the ingress of its path's first node, up to maxAttempts)",
			len(g.breach), attempts, g.application, g.name, g.application, g.name)
		if len(ignored) > 0 {
			msg += fmt.Sprintf("; retryTo %s ignored (re-entry always starts at the path's first node)", strings.Join(ignored, ", "))
		}
		w.add(RuleBreach, "/breach", map[string]float64{"rules": float64(len(g.breach)), "maxAttempts": float64(attempts)}, "%s", msg)
	}

	consumeAt := map[string]int{}
	nodeNames := map[string]bool{}
	for _, n := range g.nodes {
		nodeNames[n.name] = true
	}
	var unknownConsume, repeatedConsume []int
	for i, c := range g.consume {
		if !nodeNames[c] {
			unknownConsume = append(unknownConsume, i)
			continue
		}
		if _, seen := consumeAt[c]; seen {
			repeatedConsume = append(repeatedConsume, i)
			continue
		}
		consumeAt[c] = i
	}

	for i := range g.nodes {
		n := &g.nodes[i]
		sc := scope{app: g.application, graph: g.name, node: n.name}
		if n.entry {
			w.add(RuleEntry, pointer(n.at, "entry"), nil,
				"node `%s`: entry true became a Gate-owned ingress: Gate owns the queue %q and its HTTP front door",
				n.name, "gate."+g.application+"."+g.name+"."+n.name+".ingress")
		}
		node := mapLimits(w, n, sc)
		if idx, ok := consumeAt[n.name]; ok {
			lane0 := laneZero(n.lanes)
			queue := "gate." + g.application + "." + g.name + "." + n.name + ".admitted." + lane0
			node.Egress = &v2Egress{Queue: queue}
			w.add(RuleConsume, pointer("/consume", idx), nil,
				"consume %q became egress {\"queue\": %q} with no group: your workers pop it with their own SDK and their own ack; Gate no longer hands out leases (GET .../next answers 410)",
				n.name, queue)
		}
		mapRuntime(w, n, node, sc, n.entry)
		doc.Nodes[n.name] = node
	}
	for _, i := range unknownConsume {
		w.add(RuleConsume, pointer("/consume", i), nil,
			"consume %q names no node of this graph, so it was ignored; declared nodes: %s",
			g.consume[i], strings.Join(sortedKeys(nodeNames), ", "))
	}
	for _, i := range repeatedConsume {
		w.add(RuleConsume, pointer("/consume", i), nil,
			"consume %q repeats /consume/%d, so it was ignored: a node has one egress queue",
			g.consume[i], consumeAt[g.consume[i]])
	}

	used := map[string]bool{}
	followed := make([]bool, len(g.edges))
	paths := 0
	for i := range g.nodes {
		n := &g.nodes[i]
		if !n.entry {
			if n.hasLanes && len(n.lanes) > 0 {
				w.add(RuleLanes, pointer(n.at, "lanes"), map[string]float64{"lanes": float64(len(n.lanes))},
					"node `%s` is not an entry, so its %d lane(s) were ignored: only an entry node's lanes become paths",
					n.name, len(n.lanes))
			}
			continue
		}
		chain, prio, hasPrio := followEdges(g.edges, n.name, followed)
		for _, p := range lanePaths(w, n, n.name, used) {
			p.Nodes = chain
			if hasPrio {
				p.Priority = prio
			}
			doc.Paths = append(doc.Paths, p)
			paths++
		}
	}
	var skipped []string
	for i, e := range g.edges {
		if !followed[i] {
			skipped = append(skipped, e.from+" -> "+e.to)
		}
	}
	at := ""
	if g.hasEdges {
		at = g.edgesAt
	}
	msg := fmt.Sprintf("%d edge(s) became %d path(s): from each entry node the first edge out of each node is followed (at most %d steps, stopping on a cycle), and every path from an entry takes the priority of that entry's first edge; priority is now capacity (a path's share of each counter), not queue position",
		len(g.edges), paths, maxEdgeSteps)
	if len(skipped) > 0 {
		msg += "; edges not followed: " + strings.Join(skipped, ", ") + " (declare another path for each branch you need)"
	}
	w.add(RuleEdges, at, map[string]float64{"edges": float64(len(g.edges)), "paths": float64(paths)}, "%s", msg)
	return doc
}

// followEdges walks the first edge out of each node from entry. It returns
// the chain, the priority of the entry's first edge, and whether there was one.
func followEdges(edges []v1Edge, entry string, followed []bool) ([]string, uint32, bool) {
	chain := []string{entry}
	seen := map[string]bool{entry: true}
	var prio uint32
	hasPrio := false
	cur := entry
	for step := 0; step < maxEdgeSteps; step++ {
		idx := -1
		for i, e := range edges {
			if e.from == cur {
				idx = i
				break
			}
		}
		if idx < 0 {
			break
		}
		e := edges[idx]
		if step == 0 {
			prio, hasPrio = clampU32(e.priority), true
		}
		if seen[e.to] {
			break
		}
		followed[idx] = true
		seen[e.to] = true
		chain = append(chain, e.to)
		cur = e.to
	}
	return chain, prio, hasPrio
}

// mapLimits maps the budgets and cost of a node, emitting the per-budget
// warnings, then cost, then node-budget.
func mapLimits(w *collector, n *v1Node, sc scope) *v2Node {
	defv := max(ceilSat(n.cost.def), 1)
	maxv := max(ceilSat(n.cost.max), defv)
	costMaxR := max(ceilSat(n.cost.max), 1)
	node := &v2Node{
		Cost:    v2Cost{Path: "payload." + n.cost.field, Default: defv, Max: maxv},
		Budgets: []v2Budget{},
	}
	for _, b := range n.budgets {
		node.Budgets = append(node.Budgets, mapBudget(w, b, sc, costMaxR, maxv))
	}

	costAt := pointer(n.at, "cost")
	msg := fmt.Sprintf("node `%s`: cost {field %q} became {\"path\": %q, \"default\": %d, \"max\": %d}: v2 reads the item's cost at a payload path and always carries a max",
		sc.node, n.cost.field, node.Cost.Path, defv, maxv)
	if frac(n.cost.def) || frac(n.cost.max) {
		msg += fmt.Sprintf("; default %s became %d and max %s became %d, because a counter is an integer and a fraction rounds up (count tenths and scale the budget by ten to keep precision)",
			num(n.cost.def), defv, num(n.cost.max), maxv)
	} else if !n.cost.hasDefault || defv != ceilSat(n.cost.def) || maxv != ceilSat(n.cost.max) {
		msg += fmt.Sprintf("; default %s became %d and max %s became %d (a default is at least 1 and a max at least the default)",
			num(n.cost.def), defv, num(n.cost.max), maxv)
	}
	w.add(RuleCost, costAt, map[string]float64{"default": float64(defv), "max": float64(maxv)}, "%s", msg)

	unconditional := false
	for _, b := range node.Budgets {
		if b.ScopeBy == "" && len(b.WhenOp) == 0 {
			unconditional = true
		}
	}
	if !unconditional {
		node.Budgets = append(node.Budgets, v2Budget{
			ID: PassthroughID, Count: passthroughCount, TimeMs: passthroughTimeMs, SubWindows: 1,
			Confidence: "inferred",
		})
		at := n.at
		if n.hasBudget {
			at = pointer(n.at, "budgets")
		}
		w.add(RuleNodeBudget, at, map[string]float64{"count": passthroughCount, "timeMs": passthroughTimeMs},
			"node `%s` has no budget without scope or match (it has %d budget(s)), and v2 needs one as the ETA's denominator and the breaker's lever: a pass-through budget %q of %d per second was appended; replace it with the node's real ceiling",
			sc.node, len(n.budgets), PassthroughID, passthroughCount)
	}
	return node
}

func mapBudget(w *collector, b v1Budget, sc scope, costMaxR, largest int64) v2Budget {
	count := max(floorSat(b.cap), 1)
	timeMs := mulSat(max(b.periodSeconds, 1), 1000)
	out := v2Budget{ID: b.id, Count: count, TimeMs: timeMs, Confidence: b.confidence, Source: b.source, AsOf: b.asOf}
	w.add(RuleCap, pointer(b.at, "cap"), map[string]float64{"cap": b.cap, "periodSeconds": float64(b.periodSeconds), "count": float64(count), "timeMs": float64(timeMs)},
		"budget `%s` of node `%s`: cap %s per periodSeconds %d became count %d per timeMs %d: v2 counts whole items per millisecond window (a fractional cap rounds down, and both are at least 1)",
		b.id, sc.node, num(b.cap), b.periodSeconds, count, timeMs)

	if b.alignment == "rolling" {
		n := rollingSubWindows(count, timeMs, costMaxR)
		out.SubWindows = uint32(n)
		perSub := (timeMs / n) / 1000
		exposure := 2 * max(count/n, 1)
		w.add(RuleAlignment, pointer(b.at, "alignment"),
			map[string]float64{"subWindows": float64(n), "secondsPerSubWindow": float64(perSub), "boundaryExposure": float64(exposure), "unsubdividedExposure": float64(satDouble(count)), "largestItem": float64(largest)},
			"budget `%s` of node `%s`: alignment rolling became subWindows %d (fixed sub-windows of %ds each): a burst across one sub-window boundary can reach %d instead of %d without subdivision; the node's largest item costs %d",
			b.id, sc.node, n, perSub, exposure, satDouble(count), largest)
	} else {
		out.SubWindows = 1
		w.add(RuleAlignment, pointer(b.at, "alignment"), map[string]float64{"subWindows": 1, "timeMs": float64(timeMs)},
			"budget `%s` of node `%s`: alignment calendar became subWindows 1: a single fixed window of %dms that starts at the first admission after the previous window expired; it is no longer aligned to the wall clock",
			b.id, sc.node, timeMs)
	}

	if b.hasMatch {
		if len(b.matchOp) > 0 {
			out.WhenOp = append([]string(nil), b.matchOp...)
			w.add(RuleMatch, pointer(b.at, "match"), nil,
				"budget `%s` of node `%s`: match.op %s became whenOp: the budget charges only items whose payload.op matches",
				b.id, sc.node, quoteList(b.matchOp))
		} else {
			w.add(RuleMatch, pointer(b.at, "match"), nil,
				"budget `%s` of node `%s`: match has no op, so it was dropped and the budget charges every item (an empty whenOp would charge nothing)",
				b.id, sc.node)
		}
	}

	switch {
	case len(b.scope) == 1:
		out.ScopeBy = "payload." + b.scope[0]
		w.add(RuleScope, pointer(b.at, "scope"), map[string]float64{"dimensions": 1},
			"budget `%s` of node `%s`: scope [%q] became scopeBy %q: one counter per distinct value, each a kv row with a TTL",
			b.id, sc.node, b.scope[0], out.ScopeBy)
	case len(b.scope) > 1:
		out.ScopeBy = "payload." + b.scope[0]
		w.add(RuleScope, pointer(b.at, "scope"), map[string]float64{"dimensions": float64(len(b.scope)), "dropped": float64(len(b.scope) - 1)},
			"budget `%s` of node `%s`: scope has %d dimensions but v2 scopes a budget by one payload path: only the first became scopeBy %q; dropped %d: %s (combine them into one payload field to keep the finer scope)",
			b.id, sc.node, len(b.scope), out.ScopeBy, len(b.scope)-1, quoteList(b.scope[1:]))
	case b.hasScope:
		w.add(RuleScope, pointer(b.at, "scope"), map[string]float64{"dimensions": 0},
			"budget `%s` of node `%s`: scope [] is empty and was dropped: the budget has one counter for every item",
			b.id, sc.node)
	}

	if b.hasMaxKeys {
		w.add(RuleMaxKeys, pointer(b.at, "maxKeys"), map[string]float64{"maxKeys": float64(b.maxKeys)},
			"budget `%s` of node `%s`: maxKeys %d is a no-op and was dropped: cardinality is now kv rows with a TTL, one per scope value, so there is no key table to bound",
			b.id, sc.node, b.maxKeys)
	}

	if b.store == "kv" {
		out.SharedKey = b.id
		w.add(RuleStore, pointer(b.at, "store"), nil,
			"budget `%s` of node `%s`: store kv became sharedKey %q: the same counter (kv key %q), shared by every node and graph of application %q that names it, with no capacity lease",
			b.id, sc.node, b.id, "b:"+sc.app+":shared:"+b.id, sc.app)
	} else if b.hasStore {
		w.add(RuleStore, pointer(b.at, "store"), nil,
			"budget `%s` of node `%s`: store gate was dropped: every v2 counter is a kv row, and this one is node-local (kv key %q) with no capacity lease",
			b.id, sc.node, "b:"+sc.app+":"+sc.graph+":"+sc.node+":"+b.id)
	}
	return out
}

// rollingSubWindows is R of spec §7.2: the largest divisor of the period, in
// seconds, that keeps at least one largest item per sub-window.
func rollingSubWindows(count, timeMs, costMax int64) int64 {
	seconds := max(timeMs/1000, 1)
	perItem := max(count/max(costMax, 1), 1)
	ceiling := min(min(max(count, 1), 3600), perItem, seconds)
	n := max(min(seconds, ceiling), 1)
	for n > 1 && seconds%n != 0 {
		n--
	}
	return n
}

// mapRuntime emits lane-concurrency, pacing, admitted, shards and egress, and
// sets the node's batch and (for an entry) ingress.
func mapRuntime(w *collector, n *v1Node, node *v2Node, sc scope, entry bool) {
	lanes := n.lanes
	synthesised := !n.hasLanes || len(lanes) == 0
	most := int64(defaultLaneConcurrency)
	if !synthesised {
		most = 0
		for _, l := range lanes {
			most = max(most, l.concurrency)
		}
	}
	if most > 0 {
		at := n.at
		if n.hasLanes {
			at = pointer(n.at, "lanes")
		}
		why := ""
		if synthesised {
			why = fmt.Sprintf(" (no lanes were declared, so v1's default lane with concurrency %d applied)", defaultLaneConcurrency)
		}
		w.add(RuleLaneConcurrency, at, map[string]float64{"concurrency": float64(most), "laneCapacity": laneCapacityPerSec},
			"node `%s`: lane concurrency %d was not carried over%s: v2 derives a stage's workers from its budget, one per %d items/s of ceiling (GATE_LANE_CAPACITY), because a limiter never needs to drain faster than it admits; set the node's concurrency to override",
			sc.node, most, why, laneCapacityPerSec)
	}

	batch := uint32(min(max(n.pacing.batch, 1), 1000))
	node.Batch = &batch
	pacingAt, pacingWhat := n.at, "pacing was absent, so v1's default {leaseSeconds 1, batch 200} applied"
	if n.pacing.present {
		pacingAt, pacingWhat = pointer(n.at, "pacing"), "pacing"
	}
	w.add(RulePacing, pacingAt, map[string]float64{"leaseSeconds": float64(n.pacing.leaseSeconds), "batch": float64(batch), "workLeaseSeconds": workLeaseSeconds},
		"node `%s`: %s: leaseSeconds %d was dropped, because the work lease is Gate's GATE_LEASE_SECONDS (default %d s), renewed while a handler runs; batch %d became the node's batch %d (the claim size, 1..1000)",
		sc.node, pacingWhat, n.pacing.leaseSeconds, workLeaseSeconds, n.pacing.batch, batch)

	admittedAt := n.at
	if n.admitted.present {
		admittedAt = pointer(n.at, "admitted")
	}
	if entry {
		parts := clampU32(max(n.admitted.partitions, 1))
		node.Ingress = &v2Ingress{Partitions: parts, HTTP: true}
		w.add(RuleAdmitted, admittedAt, map[string]float64{"partitions": float64(parts)},
			"node `%s`: admitted.partitions %d became the ingress partitions %d; admitted.partitionBy %q is ignored: the producer's partition passes through unchanged at every hop",
			sc.node, n.admitted.partitions, parts, n.admitted.partitionBy)
	} else {
		w.add(RuleAdmitted, admittedAt, map[string]float64{"partitions": float64(n.admitted.partitions)},
			"node `%s`: admitted (partitionBy %q, partitions %d) is ignored: the node is not an entry, so it has no ingress to size, and a message keeps its partition at every hop",
			sc.node, n.admitted.partitionBy, n.admitted.partitions)
	}

	if n.hasShard || n.hasShards {
		at := pointer(n.at, "shards")
		if n.hasShard {
			at = pointer(n.at, "shardBy")
		}
		var parts []string
		if n.hasShard {
			parts = append(parts, fmt.Sprintf("shardBy %q", n.shardBy))
		}
		if n.hasShards {
			parts = append(parts, fmt.Sprintf("shards %d", n.shards))
		}
		verb := "is a no-op and was"
		if len(parts) > 1 {
			verb = "are no-ops and were"
		}
		w.add(RuleShards, at, nil,
			"node `%s`: %s %s dropped: cardinality is now kv rows with a TTL, and a stage's workers come from its budget and spread over partitions by the broker's long-poll",
			sc.node, strings.Join(parts, " and "), verb)
	}

	if n.hasEgress {
		w.add(RuleEgress, pointer(n.at, "egress"), nil,
			"node `%s`: egress %q is free text and was ignored: a v2 egress is a queue your workers pop, and it comes from consume (a target's is gate.{app}.{name}.admitted.{lane})",
			sc.node, n.egress)
	}
}

// laneZero is the lane marked default, else the first lane, else "default".
func laneZero(lanes []v1Lane) string {
	for _, l := range lanes {
		if l.isDefault {
			return l.name
		}
	}
	if len(lanes) > 0 {
		return lanes[0].name
	}
	return defaultLaneName
}

// lanePaths maps an entry node's lanes onto paths (nodes still to be set by
// the caller for a graph) and emits lanes and lane-cap.
func lanePaths(w *collector, n *v1Node, entry string, used map[string]bool) []v2Path {
	lanesAt := pointer(n.at, "lanes")
	if len(n.lanes) <= 1 {
		name := unique(entry, entry, used)
		p := v2Path{Name: name, Priority: 0, Share: 1, Nodes: []string{entry}}
		if len(n.lanes) == 1 {
			l := n.lanes[0]
			w.add(RuleLanes, lanesAt, map[string]float64{"lanes": 1, "paths": 1},
				"node `%s`: lane %q became path %q (priority 0, share 1.0)", entry, l.name, name)
			if l.cap.kind != capCeiling {
				w.add(RuleLaneCap, pointer(l.at, "cap"), map[string]float64{"share": 1},
					"lane %q: cap %q was ignored: a node crossed by one path always spends the full ceiling (share 1.0)", l.name, l.cap.text)
			}
		}
		return []v2Path{p}
	}

	tightest, hasTightest := math.Inf(1), false
	for _, b := range n.budgets {
		rate := b.cap / float64(max(b.periodSeconds, 1))
		if rate < tightest {
			tightest, hasTightest = rate, true
		}
	}
	paths := make([]v2Path, 0, len(n.lanes))
	names := make([]string, 0, len(n.lanes))
	type capNote struct {
		lane  v1Lane
		share float64
	}
	var notes []capNote
	for i, l := range n.lanes {
		name := unique(l.name, entry+"-"+l.name, used)
		share := 1.0
		if i > 0 {
			switch l.cap.kind {
			case capShare:
				share = clamp(l.cap.value, 0.01, 1)
			case capAbsolute:
				if hasTightest && tightest > 0 {
					share = clamp(l.cap.value/tightest, 0.01, 1)
				}
			case capCeilingMeasured:
				share = math.Round(clamp(1-clamp(l.floor, 0, 1), 0.05, 1)*20) / 20
			}
		}
		paths = append(paths, v2Path{Name: name, Priority: uint32(i), Share: share, Nodes: []string{entry}})
		names = append(names, fmt.Sprintf("%q", name))
		notes = append(notes, capNote{lane: l, share: share})
	}
	w.add(RuleLanes, lanesAt, map[string]float64{"lanes": float64(len(n.lanes)), "paths": float64(len(paths))},
		"node `%s`: %d lanes became %d paths (%s), priority = lane index, the first at share 1.0: every path on an ingress node receives every message (pub-sub), so lanes no longer split one stream; a share is a ceiling on the node's one counter, not a queue position",
		entry, len(n.lanes), len(paths), strings.Join(names, ", "))
	for i, c := range notes {
		l := c.lane
		at := pointer(l.at, "cap")
		switch {
		case i == 0 && l.cap.kind != capCeiling:
			w.add(RuleLaneCap, at, map[string]float64{"share": 1},
				"lane %q: cap %q was ignored: the first lane's path takes share 1.0, so the headroom above every lower share belongs to it", l.name, l.cap.text)
		case i == 0:
		case l.cap.kind == capAbsolute:
			rate := tightest
			if !hasTightest {
				rate = 0
			}
			w.add(RuleLaneCap, at, map[string]float64{"absolute": l.cap.value, "tightest": rate, "share": c.share},
				"lane %q: cap absolute:%s became share %.2f of the node's tightest budget (%s items/s): an absolute lane rate is now a fraction of the counter",
				l.name, num(l.cap.value), c.share, num(rate))
		case l.cap.kind == capCeilingMeasured:
			w.add(RuleLaneCap, at, map[string]float64{"floor": l.floor, "share": c.share},
				"lane %q: cap ceiling-minus-measured with floor %s became share %.2f (1 − floor, at least 0.05, to the nearest 0.05): nothing is measured any more, the reserve above it belongs to higher paths",
				l.name, num(l.floor), c.share)
		case l.cap.kind == capShare && c.share != l.cap.value:
			w.add(RuleLaneCap, at, map[string]float64{"declared": l.cap.value, "share": c.share},
				"lane %q: cap share:%s became share %.2f: a share is clamped to 0.01..1", l.name, num(l.cap.value), c.share)
		}
	}
	return paths
}

// unique returns first if unused, else second; it marks the result used.
func unique(first, second string, used map[string]bool) string {
	name := first
	if used[name] {
		name = second
	}
	used[name] = true
	return name
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

func clampU32(v int64) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

// floorSat and ceilSat convert to int64, saturating like Rust's `as i64`.
func floorSat(f float64) int64 { return toInt(math.Floor(f)) }
func ceilSat(f float64) int64  { return toInt(math.Ceil(f)) }

func toInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func mulSat(a, b int64) int64 {
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func satDouble(v int64) int64 { return mulSat(v, 2) }

func frac(f float64) bool { return f != math.Trunc(f) }

// num renders a float without a needless exponent or trailing zeros.
func num(f float64) string {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Sprint(f)
	}
	return string(bytes.TrimSpace(b))
}

func quoteList(s []string) string {
	return "[" + strings.Join(quoteAll(s), ", ") + "]"
}
