package plan

import "github.com/queen-mq/gate/libs/cost"

// Queue kinds, as the 200 response names them.
const (
	KindIngress      = "ingress"
	KindIngressYours = "ingress (yours)"
	KindInterior     = "interior"
	KindEgress       = "egress"
)

// Defaults the compiler uses when a document or Options leave a value unset.
const (
	// DefaultStageBatch is GATE_STAGE_BATCH's default claim size.
	DefaultStageBatch = 200
	// MaxStageBatch is the largest claim size (declared or configured).
	MaxStageBatch = 1000
	// DefaultLaneCapacity is GATE_LANE_CAPACITY's default, items/s per worker.
	DefaultLaneCapacity = 1000
	// DefaultPartitions is the width of a Gate-owned ingress queue that
	// declares none, and the worker-count hint when nothing better is known.
	DefaultPartitions = 16
	// DefaultMaxAttempts is the re-entry bound when maxAttempts is absent.
	DefaultMaxAttempts = 3
	// WatchCountersSeconds is the roll-up window forced on in watch mode.
	WatchCountersSeconds = 60
	// PassthroughBudgetID is the id of the pass-through budget the v1
	// mapping appends; it never limits the derived worker count.
	PassthroughBudgetID = "passthrough"
)

// Plan is a compiled graph: everything the relay runs and the API reports.
//
// Plans are built by Build from a validated document and are immutable
// afterwards; the same document and Options always give the same Plan and
// byte-identical JSON.
type Plan struct {
	// Application and Graph identify the graph (route-pinned).
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Version is the document's version.
	Version uint32 `json:"version"`
	// Namespace is the broker namespace of Gate-owned queues, `gate.{app}`.
	Namespace string `json:"namespace"`
	// DocumentKey is the kv key the document is stored under.
	DocumentKey string `json:"documentKey"`
	// MaxAttempts bounds re-entry (declared, or 3; at least 1).
	MaxAttempts uint32 `json:"maxAttempts"`
	// Watching is true in watch mode: nodes carry no budgets, shedding is
	// off, counters are on.
	Watching bool `json:"watching"`
	// CountersWindowSeconds is the roll-up window; 0 means roll-ups are off.
	CountersWindowSeconds uint32 `json:"countersWindowSeconds"`
	// Queues is the provisioning set in provisioning order: ingress queues
	// (node-name order), interior queues read by a later hop (stage order),
	// egress queues (node-name order); no name appears twice.
	Queues []Queue `json:"queues"`
	// Nodes are the node entries in ascending name order.
	Nodes []Node `json:"nodes"`
	// Stages are the consumers, in path order, then hop order, then branch
	// order.
	Stages []Stage `json:"stages"`
}

// Queue is one queue of the provisioning set.
type Queue struct {
	// Name is the broker queue name.
	Name string `json:"name"`
	// Kind is one of KindIngress, KindIngressYours, KindInterior, KindEgress.
	Kind string `json:"kind"`
	// OwnedByGate is true for Gate-owned ingress and interior queues: Gate
	// configures them in Namespace. Application queues are never configured.
	OwnedByGate bool `json:"ownedByGate"`
	// Partitions is the announced width; 0 means none announced (null in
	// the response).
	Partitions uint32 `json:"partitions"`
}

// Node is the compiled entry of one node.
type Node struct {
	// Name is the node name.
	Name string `json:"node"`
	// IngressQueue is the entry queue; "" means the node is not an entry.
	IngressQueue string `json:"ingressQueue"`
	// IngressOwnedByGate is true when Gate owns IngressQueue.
	IngressOwnedByGate bool `json:"ingressOwnedByGate"`
	// IngressPartitions is the announced ingress width (Gate-owned:
	// declared or 16; named: the declared hint or 0).
	IngressPartitions uint32 `json:"ingressPartitions"`
	// HTTPPush is true when the push front door is on.
	HTTPPush bool `json:"httpPush"`
	// Shed is true when the front door answers 429 at a full node.
	Shed bool `json:"shed"`
	// InteriorQueue is the queue upstream hops push into (named for every
	// node, provisioned only when a stage reads it).
	InteriorQueue string `json:"interiorQueue"`
	// EgressQueue is where admitted items leave; "" means none.
	EgressQueue string `json:"egressQueue"`
	// EgressGroup is the application's own group on EgressQueue; "" means
	// none declared. Gate never creates it.
	EgressGroup string `json:"egressGroup"`
	// BreakerKey is the kv key of the node's backoff record.
	BreakerKey string `json:"breakerKey"`
	// Cost is the per-item cost rule.
	Cost cost.Rule `json:"cost"`
	// Shares maps each visiting path to its effective share.
	Shares map[string]float64 `json:"shares"`
	// WidestShare is the largest share among the visiting paths (0 when no
	// path visits).
	WidestShare float64 `json:"widestShare"`
	// Budgets are the compiled budgets in declaration order; empty in watch.
	Budgets []Budget `json:"budgets"`
}

// Budget is one compiled budget: a kv counter and its arithmetic.
type Budget struct {
	// ID is the declared id or `b{index}`.
	ID string `json:"id"`
	// Key is the kv key; for a scoped budget it is the prefix to which
	// `:{scopeValue}` is appended at runtime (ScopedKey).
	Key string `json:"key"`
	// ScopeBy is the payload path of the scope value; "" means unscoped.
	ScopeBy string `json:"scopeBy"`
	// SharedKey is the declared application-wide key; "" means node-local.
	SharedKey string `json:"sharedKey"`
	// Shared is true when SharedKey was declared (even as "").
	Shared bool `json:"shared"`
	// WhenOp restricts charging to matching ops; nil means every item.
	WhenOp []string `json:"whenOp"`
	// Confidence is documented, inferred or assumed.
	Confidence string `json:"confidence"`
	// Count and TimeMs are echoed as declared.
	Count  int64 `json:"count"`
	TimeMs int64 `json:"timeMs"`
	// SubWindows is the effective N; SubWindowsDeclared says whether the
	// document gave it.
	SubWindows         int64 `json:"subWindows"`
	SubWindowsDeclared bool  `json:"subWindowsDeclared"`
	// CountSub is the count per sub-window.
	CountSub int64 `json:"countSub"`
	// WindowSubSeconds is the kv TTL in whole seconds (≥ 1).
	WindowSubSeconds int64 `json:"windowSubSeconds"`
	// Ceilings maps each visiting path to round(CountSub × share): the max
	// every kv.incr of that path carries.
	Ceilings map[string]int64 `json:"ceilings"`
	// VendorMeter is the vendor meter the budget mirrors; nil mirrors
	// nothing.
	VendorMeter *VendorMeter `json:"vendorMeter,omitempty"`
	// Keys are the document's per-key counts of a scoped budget: scope
	// value → count per TimeMs, higher or lower than Count. nil declares
	// none. A runtime key limit row (KeyLimitKey) wins over it.
	Keys map[string]int64 `json:"keys,omitempty"`
}

// VendorMeter is a mirrored vendor meter as the plan carries it.
type VendorMeter struct {
	// Headers is the header family: "ratelimit", "x-ratelimit" or "github".
	Headers string `json:"headers"`
	// Name is the IETF policy or GitHub resource; "" is the first or any.
	Name string `json:"name,omitempty"`
	// Key is the kv key of the meter row observe writes and every relay
	// reads (MeterKey of the budget's key).
	Key string `json:"key"`
}

// Ceiling is the path's ceiling on the budget's counter, as the plan
// carries it; 0 when path does not visit the node.
func (b *Budget) Ceiling(path string) int64 { return b.Ceilings[path] }

// KeyCount is the count per TimeMs of scope value: the document's
// per-key count when it declares one (declared true), else Count.
func (b *Budget) KeyCount(value string) (count int64, declared bool) {
	if c, ok := b.Keys[value]; ok {
		return c, true
	}
	return b.Count, false
}

// CountCeiling is a path of share's ceiling on one counter of the budget
// counting count per TimeMs: round(max(1, count ÷ SubWindows) × share),
// the arithmetic of Ceilings with the budget's own sub-windows (the window
// and its TTL stay the budget's). CountCeiling(Count, share) is the path's
// Ceilings entry.
func (b *Budget) CountCeiling(count int64, share float64) int64 {
	return Ceiling(max(1, count/max(b.SubWindows, 1)), share)
}

// KeyCeiling is path's ceiling on the counter of a scope value whose count
// per TimeMs is count (KeyCount, or a runtime key limit): 0 when path does
// not visit the node.
func (n *Node) KeyCeiling(b *Budget, path string, count int64) int64 {
	if _, ok := b.Ceilings[path]; !ok {
		return 0
	}
	if count == b.Count {
		return b.Ceilings[path]
	}
	share, ok := n.Shares[path]
	if !ok && b.CountSub > 0 {
		// A plan built by hand without shares: the ceiling's own ratio.
		share = float64(b.Ceilings[path]) / float64(b.CountSub)
	}
	return b.CountCeiling(count, share)
}

// WidestCeiling is the highest ceiling any visiting path may charge the
// counter to (the widest share's); 0 when no path visits.
func (b *Budget) WidestCeiling() int64 {
	var c int64
	for _, v := range b.Ceilings {
		c = max(c, v)
	}
	return c
}

// Mirrors reports whether some budget of the node mirrors a vendor meter.
func (n *Node) Mirrors() bool {
	for i := range n.Budgets {
		if n.Budgets[i].VendorMeter != nil {
			return true
		}
	}
	return false
}

// Scoped reports whether some budget of the node keeps a counter per
// scope value.
func (n *Node) Scoped() bool {
	for i := range n.Budgets {
		if n.Budgets[i].ScopeBy != "" {
			return true
		}
	}
	return false
}

// Unconditional reports whether the budget charges every item (neither
// scoped nor op-filtered).
func (b *Budget) Unconditional() bool { return b.ScopeBy == "" && b.WhenOp == nil }

// Stage is one consumer: one (path, hop element, node name).
type Stage struct {
	// Path and Node name the stage; Hop is the element index and Branch the
	// index inside a fan-out element (0 otherwise).
	Path   string `json:"path"`
	Node   string `json:"node"`
	Hop    int    `json:"hop"`
	Branch int    `json:"branch"`
	// Priority is the path's priority; Share the node's effective share
	// for the path.
	Priority uint32  `json:"priority"`
	Share    float64 `json:"share"`
	// Source is the queue the stage pops; SourceIsInterior is true when it
	// is the node's interior queue (new groups seed at the graph's start
	// instant instead of the head).
	Source           string `json:"source"`
	SourceIsInterior bool   `json:"sourceIsInterior"`
	// Group is the stage's consumer group on Source.
	Group string `json:"group"`
	// Batch is the claim size; Concurrency the worker count (both ≥ 1).
	Batch       uint32 `json:"batch"`
	Concurrency uint32 `json:"concurrency"`
	// ChecksForeign is true when frames stamped for another path must be
	// skipped (a later hop on a source more than one stage reads).
	ChecksForeign bool `json:"checksForeign"`
	// OwnsUnstamped is true for the first stage in plan order that reads
	// Source; other readers treat unstamped frames as foreign.
	OwnsUnstamped bool `json:"ownsUnstamped"`
	// Destinations are the pushes of one admitted item.
	Destinations []Destination `json:"destinations"`
}

// Destination is one push of a stage's settling transaction.
type Destination struct {
	// Node is the node pushed into (the stage's own node when Terminal).
	Node string `json:"node"`
	// Queue is the destination queue (same-named partition as the source).
	Queue string `json:"queue"`
	// DerivesTransactionID is true when the push gets a derived id
	// (DeriveTransactionID(parent, Label)) instead of reusing the upstream id.
	DerivesTransactionID bool `json:"derivesTransactionId"`
	// Terminal is true for the push to the egress queue.
	Terminal bool `json:"terminal"`
	// Label is the transaction-id label of this push.
	Label string `json:"label"`
}

// Options are the server knobs a plan is compiled with. The zero value is
// the default compile (batch 200, derived workers, lane capacity 1000).
type Options struct {
	// StageBatch is GATE_STAGE_BATCH; 0 means 200. Clamped to 1..1000.
	StageBatch int
	// StageConcurrency is GATE_STAGE_CONCURRENCY; ≤ 0 means derive.
	StageConcurrency int
	// LaneCapacity is GATE_LANE_CAPACITY in items/s; ≤ 0 means 1000.
	LaneCapacity int
	// ObservedPartitions maps an application-owned ingress queue to the
	// partition count the broker reported; absent or 0 means unknown.
	ObservedPartitions map[string]uint32
}

// Node returns the node entry called name, or nil.
func (p *Plan) Node(name string) *Node {
	for i := range p.Nodes {
		if p.Nodes[i].Name == name {
			return &p.Nodes[i]
		}
	}
	return nil
}

// TotalWorkers is the sum of every stage's concurrency.
func (p *Plan) TotalWorkers() int64 {
	var n int64
	for _, s := range p.Stages {
		n += int64(s.Concurrency)
	}
	return n
}

// IngressNodes returns the names of the nodes that have an ingress, in name
// order. A target's push route needs exactly one.
func (p *Plan) IngressNodes() []string {
	var out []string
	for _, n := range p.Nodes {
		if n.IngressQueue != "" {
			out = append(out, n.Name)
		}
	}
	return out
}
