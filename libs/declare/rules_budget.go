package declare

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/vendormeter"
)

// Budget limits of the declare rules.
const (
	MinTimeMs      = 100
	MaxSubWindows  = 3600
	MaxBatch       = 1000
	MaxMaxAttempts = 20
)

// sharedSeen is the first declaration of a sharedKey in this document.
type sharedSeen struct {
	node, id      string
	count, timeMs int64
	n             int64
	keys          map[string]int64
}

func (c *checker) budgets() {
	d := c.doc
	if d.MaxAttempts != nil && (*d.MaxAttempts < 1 || *d.MaxAttempts > MaxMaxAttempts) {
		c.add(RuleMaxAttemptsRange, "/maxAttempts", fmt.Sprintf("maxAttempts is %d, outside 1..%d: 0 would refuse every re-entry, and an unbounded count lets a failing item livelock its partition; set it between 1 and %d (absent means %d)", *d.MaxAttempts, MaxMaxAttempts, MaxMaxAttempts, plan.DefaultMaxAttempts),
			map[string]float64{"maxAttempts": float64(*d.MaxAttempts), "min": 1, "max": MaxMaxAttempts})
	}
	shared := map[string]sharedSeen{}
	for _, name := range c.names {
		c.nodeBudgets(name, d.Nodes[name], shared)
	}
}

func (c *checker) nodeBudgets(name string, n *graph.Node, shared map[string]sharedSeen) {
	watching := c.doc.Watching()
	costOK := true
	switch {
	case !n.Cost.Object && n.Cost.Fixed < 1:
		costOK = false
		c.add(RuleCostInteger, nodeAt(name, "cost"), fmt.Sprintf("node %q has cost %d: an item cost is a whole number of at least 1 because the counter is an integer; to charge fractions, count tenths: multiply the cost and every budget count of the node by ten", name, n.Cost.Fixed),
			map[string]float64{"cost": float64(n.Cost.Fixed), "min": 1})
	case n.Cost.Object && n.Cost.Default < 1:
		costOK = false
		c.add(RuleCostInteger, nodeAt(name, "cost", "default"), fmt.Sprintf("node %q has cost.default %d: the default cost must be at least 1, or an item without a usable payload value would charge nothing; set default to 1 or more", name, n.Cost.Default),
			map[string]float64{"default": float64(n.Cost.Default), "min": 1})
	}
	if n.Cost.Object {
		if !cost.ValidPath(n.Cost.Path) {
			c.add(RuleCostPath, nodeAt(name, "cost", "path"), fmt.Sprintf("node %q reads its cost from %q, which is not a payload path: use payload.field or payload.a.b", name, n.Cost.Path), nil)
		} else if cost.AddressesStamp(n.Cost.Path) {
			c.add(RuleCostPath, nodeAt(name, "cost", "path"), fmt.Sprintf("node %q reads its cost from %q, inside payload._gate, the stamp Gate overwrites on every routed message: read a field of your own payload, e.g. payload.units", name, n.Cost.Path), nil)
		}
		if n.Cost.Max != nil && *n.Cost.Max < n.Cost.Default {
			costOK = false
			c.add(RuleCostMax, nodeAt(name, "cost", "max"), fmt.Sprintf("node %q has cost.max %d below cost.default %d: the default cost is itself inadmissible, so every item without a usable value would be refused; raise max to at least %d or lower default", name, *n.Cost.Max, n.Cost.Default, n.Cost.Default),
				map[string]float64{"max": float64(*n.Cost.Max), "default": float64(n.Cost.Default)})
		}
	}
	if n.Batch != nil && (*n.Batch < 1 || *n.Batch > MaxBatch) {
		c.add(RuleBatchRange, nodeAt(name, "batch"), fmt.Sprintf("node %q has batch %d, outside 1..%d: 0 claims nothing, and a claim's distinct scope values set the width of one kv call, so a larger batch makes one admission call too wide; set batch between 1 and %d (absent means %d)", name, *n.Batch, MaxBatch, MaxBatch, plan.DefaultStageBatch),
			map[string]float64{"batch": float64(*n.Batch), "min": 1, "max": MaxBatch})
	}
	if !watching {
		if len(n.Budgets) == 0 {
			c.add(RuleNodeBudget, nodeAt(name, "budgets"), fmt.Sprintf("node %q has no budgets: it would relay without limiting anything, a queue with extra steps; declare at least one budget (count per timeMs), or put the graph in watch to observe traffic first", name),
				map[string]float64{"budgets": 0})
			return
		}
		unconditional := 0
		for i := range n.Budgets {
			if n.Budgets[i].Unconditional() {
				unconditional++
			}
		}
		if unconditional == 0 {
			c.add(RuleNodeUnscopedBudget, nodeAt(name, "budgets"), fmt.Sprintf("node %q has %d budget(s), all scoped or op-filtered: a node needs one budget with neither scopeBy nor whenOp, because the ETA divides by it and a backoff spends it; add one, e.g. {\"id\": \"global\", \"count\": 100, \"timeMs\": 1000}", name, len(n.Budgets)),
				map[string]float64{"budgets": float64(len(n.Budgets)), "unconditional": 0})
		}
	}
	maxCost := n.Cost.Maximum()
	ids := map[string]int{}
	for i := range n.Budgets {
		b := &n.Budgets[i]
		id := plan.BudgetID(b, i)
		valid := true
		if j, dup := ids[id]; dup {
			c.add(RuleBudgetUnique, budgetAt(name, i, "id"), fmt.Sprintf("budget %q of node %q is declared twice (budgets %d and %d): the id is the kv key, so the second budget would spend the first one's counter; give each budget its own id", id, name, j, i),
				map[string]float64{"first": float64(j), "index": float64(i)})
		} else {
			ids[id] = i
		}
		c.kvKeyLength(name, i, b, id)
		c.kvKeySeparator(name, i, b, id)
		if b.Count < 1 {
			valid = false
			c.add(RuleBudgetCount, budgetAt(name, i, "count"), fmt.Sprintf("budget %q of node %q has count %d: nothing ever refills a counter below 1, so no item would ever pass; set count to at least 1", id, name, b.Count),
				map[string]float64{"count": float64(b.Count), "min": 1})
		}
		if b.TimeMs < MinTimeMs {
			valid = false
			c.add(RuleBudgetWindow, budgetAt(name, i, "timeMs"), fmt.Sprintf("budget %q of node %q has timeMs %d: the floor is %d ms, and a window below 1000 ms is enforced per second anyway; set timeMs to at least %d, e.g. 1000", id, name, b.TimeMs, MinTimeMs, MinTimeMs),
				map[string]float64{"timeMs": float64(b.TimeMs), "min": MinTimeMs})
		}
		if sw := b.SubWindows; sw != nil {
			switch {
			case *sw < 1 || *sw > MaxSubWindows:
				valid = false
				c.add(RuleSubwindowRange, budgetAt(name, i, "subWindows"), fmt.Sprintf("budget %q of node %q has subWindows %d, outside 1..%d; set it in that range, or omit it to derive it from the window", id, name, *sw, MaxSubWindows),
					map[string]float64{"subWindows": float64(*sw), "min": 1, "max": MaxSubWindows})
			case int64(*sw) > max(b.Count, 1):
				valid = false
				c.add(RuleSubwindowFits, budgetAt(name, i, "subWindows"), fmt.Sprintf("budget %q of node %q splits count %d into %s: each would get %d/%d, less than one unit, so it would enforce %d per window instead of %d; lower subWindows to at most %d or raise count", id, name, b.Count, subs(int64(*sw)), b.Count, *sw, *sw, b.Count, max(b.Count, 1)),
					map[string]float64{"count": float64(b.Count), "subWindows": float64(*sw), "enforced": float64(*sw)})
			}
		}
		w := plan.Subdivide(b.Count, b.TimeMs, b.SubWindows)
		if valid && costOK && !watching && maxCost > w.CountSub {
			c.add(RuleCostFits, budgetAt(name, i), fmt.Sprintf("node %q's largest item costs %d but budget %q admits only %d per sub-window (%d per %dms in %s): that item can never be admitted; it parks the head of its partition for ever and never reaches the DLQ; raise the budget, lower cost.max, or lower subWindows", name, maxCost, id, w.CountSub, b.Count, b.TimeMs, subs(w.N)),
				map[string]float64{"maxCost": float64(maxCost), "countSub": float64(w.CountSub), "subWindows": float64(w.N), "count": float64(b.Count), "timeMs": float64(b.TimeMs)})
		}
		if b.ScopeBy != nil {
			switch {
			case !cost.ValidPath(*b.ScopeBy):
				c.add(RuleScopePath, budgetAt(name, i, "scopeBy"), fmt.Sprintf("budget %q of node %q scopes by %q, which is not a payload path: use payload.field or payload.a.b", id, name, *b.ScopeBy), nil)
			case cost.AddressesStamp(*b.ScopeBy):
				c.add(RuleScopePath, budgetAt(name, i, "scopeBy"), fmt.Sprintf("budget %q of node %q scopes by %q, inside payload._gate, the stamp Gate overwrites on every routed message: scope by a field of your own payload, e.g. payload.accountId", id, name, *b.ScopeBy), nil)
			}
		}
		if b.WhenOp != nil && len(b.WhenOp) == 0 {
			c.add(RuleWhenopEmpty, budgetAt(name, i, "whenOp"), fmt.Sprintf("budget %q of node %q has whenOp []: it would charge nothing; drop the field to charge every item, or list the ops, e.g. [\"photo.delete\"] or [\"photo.*\"]", id, name),
				map[string]float64{"ops": 0})
		}
		if b.Confidence == graph.ConfidenceDocumented && (b.Source == "" || b.AsOf == "") {
			missing := "source or asOf"
			switch {
			case b.Source != "":
				missing = "asOf"
			case b.AsOf != "":
				missing = "source"
			}
			c.add(RuleProvenance, budgetAt(name, i), fmt.Sprintf("budget %q of node %q is confidence documented but has no %s: a documented limit says where it was read and when; add %s, or mark it inferred or assumed", id, name, missing, missing), nil)
		}
		if m := b.VendorMeter; m != nil {
			c.vendorMeter(name, i, id, b, m)
		}
		if b.Keys != nil {
			c.budgetKeys(name, i, id, b, w, valid && costOK && !watching, maxCost)
		}
		if b.SharedKey != nil && valid && !watching {
			k := *b.SharedKey
			if first, ok := shared[k]; !ok {
				shared[k] = sharedSeen{node: name, id: id, count: b.Count, timeMs: b.TimeMs, n: w.N, keys: b.Keys}
			} else if first.count != b.Count || first.timeMs != b.TimeMs || first.n != w.N {
				c.add(RuleSharedConflict, budgetAt(name, i, "sharedKey"), fmt.Sprintf("sharedKey %q is declared as %d per %dms in %s in node %q (budget %q) and as %d per %dms in %s in node %q (budget %q): both spend one counter, which has one window and one count; make the declarations agree or use different keys", k, first.count, first.timeMs, subs(first.n), first.node, first.id, b.Count, b.TimeMs, subs(w.N), name, id),
					map[string]float64{"count": float64(b.Count), "timeMs": float64(b.TimeMs), "subWindows": float64(w.N), "firstCount": float64(first.count), "firstTimeMs": float64(first.timeMs), "firstSubWindows": float64(first.n)})
			} else if !maps.Equal(first.keys, b.Keys) {
				c.add(RuleSharedConflict, budgetAt(name, i, "keys"), fmt.Sprintf("sharedKey %q gives scope values their own counts differently in node %q (budget %q) and in node %q (budget %q): both spend one counter per value, which has one count; give both budgets the same keys (or set them at runtime, where one row serves every node)", k, first.node, first.id, name, id), nil)
			}
		}
	}
}

// vendorMeter checks a budget's vendorMeter: a known header family, a name
// the headers can carry, an unscoped budget (one vendor answer speaks for
// one counter) and a meter row key that fits the broker.
func (c *checker) vendorMeter(node string, i int, id string, b *graph.Budget, m *graph.VendorMeter) {
	if !vendormeter.Known(vendormeter.Family(m.Headers)) {
		c.add(RuleVendorMeter, budgetAt(node, i, "vendorMeter", "headers"), fmt.Sprintf("budget %q of node %q mirrors headers %q: Gate reads \"ratelimit\" (IETF RateLimit and RateLimit-Policy), \"x-ratelimit\" (X-RateLimit-Limit, -Remaining, -Reset) or \"github\" (the same with -Used and -Resource); name the one your vendor sends", id, node, m.Headers), nil)
	}
	if len(m.Name) > maxMeterName || strings.ContainsAny(m.Name, "\",;\\ \t\r\n") {
		c.add(RuleVendorMeter, budgetAt(node, i, "vendorMeter", "name"), fmt.Sprintf("budget %q of node %q mirrors the meter named %q: a policy or resource name is at most %d bytes without quotes, commas, semicolons or spaces; copy it from the vendor's RateLimit-Policy or X-RateLimit-Resource", id, node, m.Name, maxMeterName), nil)
	}
	if b.ScopeBy != nil || b.WhenOp != nil {
		c.add(RuleVendorMeter, budgetAt(node, i, "vendorMeter"), fmt.Sprintf("budget %q of node %q mirrors a vendor meter but is scoped or op-filtered: one vendor answer speaks for one counter, so only a budget with neither scopeBy nor whenOp can mirror it; move vendorMeter to the node's unscoped budget", id, node), nil)
	}
	if key := plan.MeterKey(plan.KeyOf(c.doc.Application, c.doc.Graph, node, b, i)); len(key) > plan.MaxKVKeyBytes {
		c.add(RuleVendorMeter, budgetAt(node, i, "vendorMeter"), fmt.Sprintf("budget %q of node %q mirrors a vendor meter whose kv row key would be %d bytes, over the broker's %d; shorten the application, graph, node or budget id", id, node, len(key), plan.MaxKVKeyBytes), nil)
	}
}

// maxMeterName is the longest vendor meter name.
const maxMeterName = 64

// maxKeyFindings is how many bad per-key counts one budget reports.
const maxKeyFindings = 20

// budgetKeys checks a budget's per-key counts: only on a scoped budget, at
// most plan.MaxDeclaredKeys of them, each value fitting the key room (its
// counter and its runtime row), each count in 1..plan.MaxKeyCount and
// large enough for the node's largest item (checkCost).
func (c *checker) budgetKeys(node string, i int, id string, b *graph.Budget, w plan.Window, checkCost bool, maxCost int64) {
	at := budgetAt(node, i, "keys")
	if b.ScopeBy == nil {
		c.add(RuleBudgetKeys, at, fmt.Sprintf("budget %q of node %q gives %d scope values their own count but has no scopeBy: an unscoped budget keeps one counter for everything; add scopeBy (e.g. \"payload.accountId\") or drop keys", id, node, len(b.Keys)), nil)
		return
	}
	if len(b.Keys) > plan.MaxDeclaredKeys {
		c.add(RuleBudgetKeys, at, fmt.Sprintf("budget %q of node %q declares %d per-key counts, over the document's %d: set the rest at runtime with PUT …/budgets/%s/keys/{value} (no re-declare, 100,000 and more)", id, node, len(b.Keys), plan.MaxDeclaredKeys, id),
			map[string]float64{"keys": float64(len(b.Keys)), "max": plan.MaxDeclaredKeys})
		return
	}
	room := plan.KeyLimitRoom(plan.KeyOf(c.doc.Application, c.doc.Graph, node, b, i))
	found := 0
	for _, v := range slices.Sorted(maps.Keys(b.Keys)) {
		if found >= maxKeyFindings {
			break
		}
		n := b.Keys[v]
		vat := budgetAt(node, i, "keys", v)
		switch {
		case v == "":
			c.add(RuleBudgetKeys, vat, fmt.Sprintf("budget %q of node %q gives the empty scope value a count: an item without the scope field is not counted per key at all; drop it or name a value", id, node), nil)
		case len(v) > room:
			c.add(RuleBudgetKeys, vat, fmt.Sprintf("budget %q of node %q gives the scope value %.40q (%d bytes) its own count, but a value has at most %d bytes here (the broker's kv key room); shorten the value, the budget id or the names", id, node, v, len(v), room),
				map[string]float64{"bytes": float64(len(v)), "max": float64(room)})
		case n < 1 || n > plan.MaxKeyCount:
			c.add(RuleBudgetKeys, vat, fmt.Sprintf("budget %q of node %q gives scope value %q the count %d, outside 1..%d: a count below 1 never admits, one above limits nothing; set a count per %dms in that range (the budget's own is %d)", id, node, v, n, int64(plan.MaxKeyCount), b.TimeMs, b.Count),
				map[string]float64{"count": float64(n), "min": 1, "max": plan.MaxKeyCount})
		case checkCost && max(1, n/w.N) < maxCost:
			c.add(RuleBudgetKeys, vat, fmt.Sprintf("budget %q of node %q gives scope value %q the count %d, %d per sub-window, below the node's largest item cost %d: that value's large items could never be admitted; raise its count to at least %d", id, node, v, n, max(1, n/w.N), maxCost, maxCost*w.N),
				map[string]float64{"count": float64(n), "countSub": float64(max(1, n/w.N)), "maxCost": float64(maxCost)})
		default:
			continue
		}
		found++
	}
}
