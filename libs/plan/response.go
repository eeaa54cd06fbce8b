package plan

// Trust is the fixed sentence every 200 declare response carries.
const Trust = "Write access to an interior or egress queue is admission bypass — the same trust model as any queen queue. Gate paces what flows through it; it does not defend a queue from a writer who already has the credentials."

// Response is the 200 body of a declare (PUT), field for field.
type Response struct {
	OK          bool     `json:"ok"`
	Application string   `json:"application"`
	Graph       string   `json:"graph"`
	Version     uint32   `json:"version"`
	Resolved    Resolved `json:"resolved"`
	// Warnings are the warning findings rendered "[rule] detail".
	Warnings []string `json:"warnings"`
	// Trust is the Trust sentence.
	Trust string `json:"trust"`
	// Migrated and Migration are present only for a v1 body.
	Migrated  bool     `json:"migrated,omitempty"`
	Migration []string `json:"migration,omitempty"`
}

// Resolved is the compiled plan as the response shows it.
type Resolved struct {
	Namespace string          `json:"namespace"`
	Queues    []ResolvedQueue `json:"queues"`
	Nodes     []ResolvedNode  `json:"nodes"`
	Stages    []ResolvedStage `json:"stages"`
	Counters  *uint32         `json:"counters"`
}

// ResolvedQueue is one queue of the provisioning set; Partitions is null
// when none is announced.
type ResolvedQueue struct {
	Name        string  `json:"name"`
	Kind        string  `json:"kind"`
	OwnedByGate bool    `json:"ownedByGate"`
	Partitions  *uint32 `json:"partitions"`
}

// ResolvedNode is one node entry; missing optional values are null.
type ResolvedNode struct {
	Node         string             `json:"node"`
	IngressQueue *string            `json:"ingressQueue"`
	HTTPPush     bool               `json:"httpPush"`
	EgressQueue  *string            `json:"egressQueue"`
	EgressGroup  *string            `json:"egressGroup"`
	BreakerKey   string             `json:"breakerKey"`
	Shares       map[string]float64 `json:"shares"`
	Budgets      []ResolvedBudget   `json:"budgets"`
}

// ResolvedBudget is one budget entry; SubWindows is the effective N and Key
// the prefix for a scoped budget.
type ResolvedBudget struct {
	ID               string           `json:"id"`
	Key              string           `json:"key"`
	ScopeBy          *string          `json:"scopeBy"`
	SharedKey        *string          `json:"sharedKey"`
	Count            int64            `json:"count"`
	TimeMs           int64            `json:"timeMs"`
	SubWindows       int64            `json:"subWindows"`
	CountSub         int64            `json:"countSub"`
	WindowSubSeconds int64            `json:"windowSubSeconds"`
	Ceilings         map[string]int64 `json:"ceilings"`
}

// ResolvedStage is one stage entry.
type ResolvedStage struct {
	Path          string                `json:"path"`
	Node          string                `json:"node"`
	Hop           int                   `json:"hop"`
	Priority      uint32                `json:"priority"`
	Share         float64               `json:"share"`
	Source        string                `json:"source"`
	Group         string                `json:"group"`
	Batch         uint32                `json:"batch"`
	Concurrency   uint32                `json:"concurrency"`
	ChecksForeign bool                  `json:"checksForeign"`
	Destinations  []ResolvedDestination `json:"destinations"`
}

// ResolvedDestination is one push of a stage.
type ResolvedDestination struct {
	Node                 string `json:"node"`
	Queue                string `json:"queue"`
	DerivesTransactionID bool   `json:"derivesTransactionId"`
	Terminal             bool   `json:"terminal"`
}

// NewResponse renders p as the 200 body. warnings are "[rule] detail"
// strings; migration is included (with migrated true) only when v1 is true.
func NewResponse(p *Plan, warnings, migration []string, v1 bool) Response {
	if warnings == nil {
		warnings = []string{}
	}
	r := Response{
		OK: true, Application: p.Application, Graph: p.Graph, Version: p.Version,
		Warnings: warnings, Trust: Trust,
		Resolved: Resolved{
			Namespace: p.Namespace,
			Queues:    make([]ResolvedQueue, 0, len(p.Queues)),
			Nodes:     make([]ResolvedNode, 0, len(p.Nodes)),
			Stages:    make([]ResolvedStage, 0, len(p.Stages)),
		},
	}
	if v1 {
		r.Migrated = true
		r.Migration = migration
		if r.Migration == nil {
			r.Migration = []string{}
		}
	}
	if p.CountersWindowSeconds > 0 {
		w := p.CountersWindowSeconds
		r.Resolved.Counters = &w
	}
	for _, q := range p.Queues {
		rq := ResolvedQueue{Name: q.Name, Kind: q.Kind, OwnedByGate: q.OwnedByGate}
		if q.Partitions > 0 {
			n := q.Partitions
			rq.Partitions = &n
		}
		r.Resolved.Queues = append(r.Resolved.Queues, rq)
	}
	for _, n := range p.Nodes {
		rn := ResolvedNode{
			Node: n.Name, IngressQueue: optional(n.IngressQueue), HTTPPush: n.HTTPPush,
			EgressQueue: optional(n.EgressQueue), EgressGroup: optional(n.EgressGroup),
			BreakerKey: n.BreakerKey, Shares: n.Shares,
			Budgets: make([]ResolvedBudget, 0, len(n.Budgets)),
		}
		for _, b := range n.Budgets {
			rb := ResolvedBudget{
				ID: b.ID, Key: b.Key, ScopeBy: optional(b.ScopeBy), Count: b.Count, TimeMs: b.TimeMs,
				SubWindows: b.SubWindows, CountSub: b.CountSub, WindowSubSeconds: b.WindowSubSeconds,
				Ceilings: b.Ceilings,
			}
			if b.Shared {
				k := b.SharedKey
				rb.SharedKey = &k
			}
			rn.Budgets = append(rn.Budgets, rb)
		}
		r.Resolved.Nodes = append(r.Resolved.Nodes, rn)
	}
	for _, s := range p.Stages {
		rs := ResolvedStage{
			Path: s.Path, Node: s.Node, Hop: s.Hop, Priority: s.Priority, Share: s.Share,
			Source: s.Source, Group: s.Group, Batch: s.Batch, Concurrency: s.Concurrency,
			ChecksForeign: s.ChecksForeign,
			Destinations:  make([]ResolvedDestination, 0, len(s.Destinations)),
		}
		for _, d := range s.Destinations {
			rs.Destinations = append(rs.Destinations, ResolvedDestination{
				Node: d.Node, Queue: d.Queue, DerivesTransactionID: d.DerivesTransactionID, Terminal: d.Terminal,
			})
		}
		r.Resolved.Stages = append(r.Resolved.Stages, rs)
	}
	return r
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
