package wire

// The declare routes' 200 answer: the compiled plan (PUT
// /v1/apps/{app}/graphs/{name} and its twins). libs/plan renders it.

// Trust is the fixed sentence every 200 declare response carries.
const Trust = "Write access to an interior or egress queue is admission bypass — the same trust model as any queen queue. Gate paces what flows through it; it does not defend a queue from a writer who already has the credentials."

// PlanResponse is the 200 body of a declare (PUT), field for field.
type PlanResponse struct {
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
	// Keys are the document's limits per key: scope value → its own count
	// per TimeMs (absent when none; runtime ones are read from …/keys).
	Keys map[string]int64 `json:"keys,omitempty"`
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

// Node returns the plan's node by name.
func (r *Resolved) Node(name string) (ResolvedNode, bool) {
	for _, n := range r.Nodes {
		if n.Node == name {
			return n, true
		}
	}
	return ResolvedNode{}, false
}

// Budget returns the node's budget by id.
func (n *ResolvedNode) Budget(id string) (ResolvedBudget, bool) {
	for _, b := range n.Budgets {
		if b.ID == id {
			return b, true
		}
	}
	return ResolvedBudget{}, false
}

// Str is *p, or "" for a null field.
func Str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
