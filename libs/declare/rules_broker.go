package declare

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
)

// Broker limits on the names a document chooses freely (budget ids, shared
// keys, application-owned queues and groups), checked at declare time so a
// document is refused instead of failing on every relay call.
const (
	// MaxKVKeyBytes is the broker's longest kv key, in bytes.
	MaxKVKeyBytes = plan.MaxKVKeyBytes
	// ScopeValueBytes is the room kept for the scope value a scoped
	// budget's key gets appended at run time.
	ScopeValueBytes = 64
	// ScopeReserveBytes is what a scoped budget's key must leave free: the
	// ':' separator and ScopeValueBytes.
	ScopeReserveBytes = ScopeValueBytes + 1
	// MaxQueueNameBytes is the longest broker queue or consumer group name.
	MaxQueueNameBytes = 255
)

// kvKeyLength refuses a budget whose kv key (prefix, for a scoped budget)
// the broker would refuse on every admission call.
func (c *checker) kvKeyLength(node string, i int, b *graph.Budget, id string) {
	key := plan.KeyOf(c.doc.Application, c.doc.Graph, node, b, i)
	limit := MaxKVKeyBytes
	if b.ScopeBy != nil {
		limit -= ScopeReserveBytes
	}
	if len(key) <= limit {
		return
	}
	over := len(key) - limit
	at, field := budgetAt(node, i, "id"), "id"
	if b.SharedKey != nil {
		at, field = budgetAt(node, i, "sharedKey"), "sharedKey"
	}
	room := fmt.Sprintf("the broker's limit of %d", MaxKVKeyBytes)
	nums := map[string]float64{"bytes": float64(len(key)), "limit": float64(limit), "over": float64(over), "brokerLimit": MaxKVKeyBytes}
	if b.ScopeBy != nil {
		room = fmt.Sprintf("%d, the broker's %d less %d kept for ':' and a scope value of up to %d bytes", limit, MaxKVKeyBytes, ScopeReserveBytes, ScopeValueBytes)
		nums["scopeReserve"] = ScopeReserveBytes
	}
	c.add(RuleKVKeyLength, at, fmt.Sprintf("budget %s of node %q makes the kv key %s of %d bytes, over %s: the broker would refuse every admission call that charges it, so no item would ever pass the node; shorten the %s by at least %s",
		shortQuote(id), node, shortQuote(key), len(key), room, field, byteCount(over)), nums)
}

// kvKeySeparator refuses ':' inside a budget id or a sharedKey: ':' joins
// the segments of a kv key (and a scope value to its budget's key), so
// "b:app:shared:k:z" would be both sharedKey "k:z" and sharedKey "k" scoped
// by "z" — two budgets spending one counter.
func (c *checker) kvKeySeparator(node string, i int, b *graph.Budget, id string) {
	if strings.Contains(b.ID, ":") {
		c.add(RuleKVKeySeparator, budgetAt(node, i, "id"), fmt.Sprintf("budget %s of node %q contains ':' (at byte %d), the separator of kv keys: the key %s could also be another budget's key with a scope value appended, and the two would spend one counter; use '-', '_' or '.' instead",
			shortQuote(id), node, strings.IndexByte(b.ID, ':'), shortQuote(plan.KeyOf(c.doc.Application, c.doc.Graph, node, b, i))), map[string]float64{"byte": float64(strings.IndexByte(b.ID, ':'))})
	}
	if b.SharedKey != nil && strings.Contains(*b.SharedKey, ":") {
		c.add(RuleKVKeySeparator, budgetAt(node, i, "sharedKey"), fmt.Sprintf("sharedKey %s of budget %s of node %q contains ':' (at byte %d), the separator of kv keys: the key %s could also be another shared key with a scope value appended, and the two would spend one counter; use '-', '_' or '.' instead",
			shortQuote(*b.SharedKey), shortQuote(id), node, strings.IndexByte(*b.SharedKey, ':'), shortQuote(plan.SharedBudgetKey(c.doc.Application, *b.SharedKey))), map[string]float64{"byte": float64(strings.IndexByte(*b.SharedKey, ':'))})
	}
}

// gateQueues refuses an application-owned ingress or egress queue named
// like a Gate-owned ingress or interior queue: Gate mints those for the
// graph they belong to, and a queue named gate.{app}.{graph}.{node}.ingress
// (or .in) from this document would consume another graph's work past its
// budgets, or push into it behind them.
func (c *checker) gateQueues() {
	for _, name := range c.names {
		n := c.doc.Nodes[name]
		if n.Ingress.Named() {
			c.gateQueue(nodeAt(name, "ingress", "queue"), fmt.Sprintf("node %q's ingress", name), n.Ingress.Queue)
		}
		if e := n.Egress; e != nil {
			at := nodeAt(name, "egress")
			if e.Object {
				at = nodeAt(name, "egress", "queue")
			}
			c.gateQueue(at, fmt.Sprintf("node %q's egress", name), e.Queue)
		}
	}
}

func (c *checker) gateQueue(at, what, q string) {
	app, g, node, kind, ok := plan.GateOwnedQueue(q)
	if !ok {
		return
	}
	owner := fmt.Sprintf("node %q of graph %s/%s", node, app, g)
	if app == c.doc.Application && g == c.doc.Graph {
		owner = fmt.Sprintf("node %q of this graph", node)
	}
	c.add(RuleGateQueue, at, fmt.Sprintf("%s is %q, the Gate-owned %s queue of %s: Gate creates and consumes it for that node, so naming it here would %s; declare \"ingress\": true for a queue of your own, or name an application-owned queue (one not starting with \"gate.\")",
		what, q, kind, owner, map[bool]string{true: "copy or steal that node's items", false: "push work past the budgets upstream of it"}[strings.Contains(what, "ingress")]), nil)
}

// queueNames refuses application-owned queue and group names the broker
// cannot take: named ingress queues, egress queues and egress groups.
func (c *checker) queueNames() {
	for _, name := range c.names {
		n := c.doc.Nodes[name]
		if n.Ingress.Named() {
			c.queueName(nodeAt(name, "ingress", "queue"), fmt.Sprintf("node %q's ingress queue", name), "queue", n.Ingress.Queue)
		}
		if e := n.Egress; e != nil {
			at := nodeAt(name, "egress")
			if e.Object {
				at = nodeAt(name, "egress", "queue")
			}
			c.queueName(at, fmt.Sprintf("node %q's egress queue", name), "queue", e.Queue)
			if e.Group != "" {
				c.queueName(nodeAt(name, "egress", "group"), fmt.Sprintf("node %q's egress group", name), "consumer group", e.Group)
			}
		}
	}
}

func (c *checker) queueName(at, what, kind, q string) {
	if len(q) > MaxQueueNameBytes {
		c.add(RuleQueueName, at, fmt.Sprintf("%s %s is %d bytes, over the broker's limit of %d: the broker would refuse to create or pop it, so nothing would reach your workers; use a %s name of at most %d bytes, shorter by at least %s",
			what, shortQuote(q), len(q), MaxQueueNameBytes, kind, MaxQueueNameBytes, byteCount(len(q)-MaxQueueNameBytes)),
			map[string]float64{"bytes": float64(len(q)), "limit": MaxQueueNameBytes, "over": float64(len(q) - MaxQueueNameBytes)})
		return
	}
	for i, r := range q {
		bad := ""
		switch {
		case r == '/':
			bad = "a slash"
		case r == utf8.RuneError:
			bad = "an invalid UTF-8 byte (or U+FFFD)"
		case unicode.IsSpace(r):
			bad = fmt.Sprintf("the whitespace %U", r)
		case unicode.IsControl(r):
			bad = fmt.Sprintf("the control character %U", r)
		}
		if bad != "" {
			c.add(RuleQueueName, at, fmt.Sprintf("%s %s has %s at byte %d: a slash splits the broker's URL path and whitespace or control characters do not survive it, so the broker could not address the %s; use letters, digits, '.', '_' and '-'",
				what, shortQuote(q), bad, i, kind),
				map[string]float64{"byte": float64(i)})
			return
		}
	}
}

func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// shortQuote quotes s, cut to its first 40 bytes (and marked) when longer,
// so a 10 kB name does not flood the message.
func shortQuote(s string) string {
	const keep = 40
	if len(s) <= keep {
		return fmt.Sprintf("%q", s)
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", s[:cut])
}
