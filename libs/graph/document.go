package graph

import "sort"

// DefaultApplication is the owner of a document that names none.
const DefaultApplication = "default"

// DefaultConfidence is the confidence of a budget that declares none.
const DefaultConfidence = "inferred"

// Confidence values a budget may declare.
const (
	ConfidenceDocumented = "documented"
	ConfidenceInferred   = "inferred"
	ConfidenceAssumed    = "assumed"
)

// Document is one v2 graph declaration: the whole body of a PUT.
//
// The zero value is an empty document (version 0, no nodes, no paths), which
// the compiler refuses with the rules `nodes` and `paths`.
type Document struct {
	// Application owns the graph. The parser fills "default" when the body
	// omits it; a route always overwrites it.
	Application string
	// Graph is the graph's name. A route always overwrites it.
	Graph string
	// Version is the document's single version number (0 is legal).
	Version uint32
	// Nodes maps a node name to its declaration. Every consumer iterates it
	// in ascending byte order of the name (NodeNames).
	Nodes map[string]*Node
	// Paths are the routes messages take, in declaration order.
	Paths []Path
	// MaxAttempts bounds re-entry; nil means absent (the plan uses 3).
	MaxAttempts *uint32
	// Counters opts in to minute roll-ups; nil means off.
	Counters *Counters
	// Watch puts the whole graph in observation mode; nil means enforce.
	Watch *Watch
}

// NodeNames returns the node names in ascending byte order.
func (d *Document) NodeNames() []string {
	names := make([]string, 0, len(d.Nodes))
	for n := range d.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Watching reports whether the document is in watch (observation) mode.
func (d *Document) Watching() bool { return d.Watch != nil }

// Counters is the opt-in minute roll-up setting.
type Counters struct {
	// WindowSeconds is the roll-up window; only 60 is accepted.
	WindowSeconds uint32
}

// Watch is observation mode: Gate relays without budgets and records traffic.
type Watch struct {
	// DurationSeconds is the observation period, 120 to 2,592,000.
	DurationSeconds int64
	// StartedAt is the server-set start in Unix milliseconds; nil until set.
	StartedAt *int64
}

// Node is a place where limits apply.
//
// The zero value has no budgets, a fixed cost of 0 (the parser fills 1 when
// cost is absent), no ingress and no egress.
type Node struct {
	// Budgets are the node's limits, in declaration order.
	Budgets []Budget
	// Cost is what one item charges each budget of this node.
	Cost Cost
	// Ingress makes the node an entry point; nil means it is not one
	// (`"ingress": false` parses to nil).
	Ingress *Ingress
	// Egress is where admitted items leave; nil means the node has none.
	Egress *Egress
	// Batch is the declared claim size; nil means the server default.
	Batch *uint32
	// Concurrency overrides the derived worker count; nil means derived.
	Concurrency *uint32
}

// Cost is either a fixed integer or a payload path with default and max.
type Cost struct {
	// Object is true for the `{path, default, max}` form, false for a
	// fixed integer.
	Object bool
	// Fixed is the cost of every item when Object is false.
	Fixed int64
	// Path is the payload path read per item (Object form only).
	Path string
	// Default is used when the payload value is unusable (Object form; the
	// parser fills 1 when absent).
	Default int64
	// Max is the largest admissible cost; nil means Default.
	Max *int64
}

// FixedCost returns a fixed cost of n per item.
func FixedCost(n int64) Cost { return Cost{Fixed: n} }

// Maximum is the largest cost one item can have: the fixed cost, max, or
// default when max is absent.
func (c Cost) Maximum() int64 {
	if !c.Object {
		return c.Fixed
	}
	if c.Max != nil {
		return *c.Max
	}
	return c.Default
}

// Typical is the cost assumed for batch sizing: the fixed value or the
// default, floored at 1.
func (c Cost) Typical() int64 {
	v := c.Fixed
	if c.Object {
		v = c.Default
	}
	return max(v, 1)
}

// Ingress is a node's entry queue: Gate-owned, or the application's own.
type Ingress struct {
	// Bool is true when the document said `"ingress": true`.
	Bool bool
	// Queue names an application-owned queue; "" means Gate owns the queue.
	Queue string
	// Partitions is the announced width (Gate-owned) or a hint (named).
	Partitions *uint32
	// HTTP turns the push front door on or off; nil means the default
	// (on for a Gate-owned queue, off for a named one).
	HTTP *bool
	// Shed answers 429 at the front door when the node is full; nil is off.
	Shed *bool
}

// Named reports whether the application owns the ingress queue.
func (i *Ingress) Named() bool { return i != nil && i.Queue != "" }

// HTTPPush reports whether the push front door is on.
func (i *Ingress) HTTPPush() bool {
	if i == nil {
		return false
	}
	if i.HTTP != nil {
		return *i.HTTP
	}
	return i.Queue == ""
}

// Sheds reports whether the front door answers 429 when the node is full.
func (i *Ingress) Sheds() bool { return i != nil && i.Shed != nil && *i.Shed }

// Egress is the queue admitted items leave on, and the application's group.
type Egress struct {
	// Object is true for the `{queue, group}` form, false for a string.
	Object bool
	// Queue is the egress queue name.
	Queue string
	// Group is the application's own consumer group ("" = not declared);
	// Gate only reports it.
	Group string
}

// Budget is one limit of a node: count per timeMs.
type Budget struct {
	// ID is part of the kv key; "" means the default `b{index}`.
	ID string
	// Count is the number of cost units per window.
	Count int64
	// TimeMs is the window length in milliseconds.
	TimeMs int64
	// SubWindows is the declared subdivision; nil means derived.
	SubWindows *uint32
	// ScopeBy is the payload path of the scope value; nil means unscoped.
	ScopeBy *string
	// SharedKey makes the counter application-wide; nil means node-local.
	SharedKey *string
	// WhenOp restricts charging to matching ops; nil means every item.
	// A non-nil empty slice is the declared `[]` (refused by whenop-empty).
	WhenOp []string
	// Confidence is documented, inferred (the default) or assumed.
	Confidence string
	// Source and AsOf document where the number came from; "" is absent.
	Source, AsOf string
	// VendorMeter declares that the budget mirrors the vendor's own meter:
	// the vendor's answers, reported to observe, may lower its ceiling and
	// raise its counter (never the other way). nil mirrors nothing.
	VendorMeter *VendorMeter
	// Keys gives some scope values of a scoped budget their own count per
	// timeMs (higher or lower than Count); every other value counts Count.
	// nil declares none. A runtime key limit (…/budgets/{id}/keys/{value})
	// wins over the document's for the same value.
	Keys map[string]int64
}

// VendorMeter names the response headers that speak for the vendor's
// meter a budget mirrors.
type VendorMeter struct {
	// Headers is the family: "ratelimit" (IETF RateLimit and
	// RateLimit-Policy), "x-ratelimit" (X-RateLimit-Limit, -Remaining,
	// -Reset) or "github" (the same with -Used and -Resource).
	Headers string
	// Name is the IETF policy or GitHub resource mirrored; "" takes the
	// first policy the vendor lists, or any resource.
	Name string
}

// Scoped reports whether the budget keeps one counter per scope value.
func (b *Budget) Scoped() bool { return b.ScopeBy != nil }

// Unconditional reports whether the budget charges every item of its node:
// it has neither scopeBy nor whenOp.
func (b *Budget) Unconditional() bool { return b.ScopeBy == nil && b.WhenOp == nil }

// Path is a route through the graph; it names the consumer groups.
type Path struct {
	// Name must be unique in the document.
	Name string
	// Priority ranks paths for shares; lower is more important.
	Priority uint32
	// Share is the fraction of each shared node's counter; nil means the
	// default derived from priorities.
	Share *float64
	// Nodes are the hops: element i relays into element i+1.
	Nodes []Hop
}

// Hop is one path element: a node name, or a fan-out of several.
type Hop struct {
	// Fanout is true when the element was a JSON array.
	Fanout bool
	// Names are the node names of the element (one unless Fanout).
	Names []string
}

// Node1 returns a hop of one node name.
func Node1(name string) Hop { return Hop{Names: []string{name}} }

// IsTarget reports whether the document has the one-node target form that
// the /targets/{name} routes and the target push route work with. The
// routes accept any v2 document; a target is simply a graph of one node.
func (d *Document) IsTarget() bool { return len(d.Nodes) == 1 }
