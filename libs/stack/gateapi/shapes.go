package gateapi

import (
	"encoding/json"

	"github.com/queen-mq/gate/libs/store"
)

// Declared is the declare route's 200 answer (the fields the tools read).
type Declared struct {
	OK          bool     `json:"ok"`
	Application string   `json:"application"`
	Graph       string   `json:"graph"`
	Version     int64    `json:"version"`
	Resolved    Resolved `json:"resolved"`
	Warnings    []string `json:"warnings"`
	// Raw is the whole answer.
	Raw json.RawMessage `json:"-"`
}

// Resolved is the compiled plan in a declare answer.
type Resolved struct {
	Namespace string          `json:"namespace"`
	Queues    []ResolvedQueue `json:"queues"`
	Nodes     []ResolvedNode  `json:"nodes"`
	Stages    []ResolvedStage `json:"stages"`
}

// ResolvedQueue is one queue of the plan.
type ResolvedQueue struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	OwnedByGate bool   `json:"ownedByGate"`
	Partitions  int    `json:"partitions"`
}

// ResolvedNode is one node of the plan.
type ResolvedNode struct {
	Node         string             `json:"node"`
	IngressQueue string             `json:"ingressQueue"`
	HTTPPush     bool               `json:"httpPush"`
	EgressQueue  string             `json:"egressQueue"`
	EgressGroup  string             `json:"egressGroup"`
	Shares       map[string]float64 `json:"shares"`
	Budgets      []Budget           `json:"budgets"`
}

// ResolvedStage is one stage of the plan.
type ResolvedStage struct {
	Path        string  `json:"path"`
	Node        string  `json:"node"`
	Hop         int     `json:"hop"`
	Share       float64 `json:"share"`
	Source      string  `json:"source"`
	Group       string  `json:"group"`
	Batch       int     `json:"batch"`
	Concurrency int     `json:"concurrency"`
}

// Budget is one compiled budget, in the plan or in the live view (where
// Value and ExpiresAt are filled from the broker).
type Budget struct {
	ID               string           `json:"id"`
	Key              string           `json:"key"`
	ScopeBy          string           `json:"scopeBy"`
	SharedKey        string           `json:"sharedKey"`
	Count            int64            `json:"count"`
	TimeMs           int64            `json:"timeMs"`
	SubWindows       int64            `json:"subWindows"`
	CountSub         int64            `json:"countSub"`
	WindowSubSeconds int64            `json:"windowSubSeconds"`
	Ceilings         map[string]int64 `json:"ceilings"`
	Value            *int64           `json:"value"`
	ExpiresAt        *int64           `json:"expiresAt"`
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
func (n *ResolvedNode) Budget(id string) (Budget, bool) {
	for _, b := range n.Budgets {
		if b.ID == id {
			return b, true
		}
	}
	return Budget{}, false
}

// View is the live graph view (the fields the tools read).
type View struct {
	Application string      `json:"application"`
	Graph       string      `json:"graph"`
	Version     int64       `json:"version"`
	Running     bool        `json:"running"`
	Nodes       []ViewNode  `json:"nodes"`
	Stages      []ViewStage `json:"stages"`
	// Raw is the whole answer.
	Raw json.RawMessage `json:"-"`
}

// ViewNode is one node of the view.
type ViewNode struct {
	Node    string   `json:"node"`
	Budgets []Budget `json:"budgets"`
}

// ViewStage is one stage of the view, its counters summed across relay
// replicas.
type ViewStage struct {
	Path     string   `json:"path"`
	Node     string   `json:"node"`
	Hop      int      `json:"hop"`
	Lag      int64    `json:"lag"`
	Counters Counters `json:"counters"`
}

// Counters are a stage's lifetime counters (§2.11 of the runtime spec),
// summed across relay replicas: the shape gate-relay publishes in kv.
type Counters struct {
	store.Counters
}

// Refusals is how many times the stage was refused: deferred (a prefix
// cut) + parked (a wait for a window) + released (a claim given back).
func (c Counters) Refusals() int64 { return c.Deferred + c.Parked + c.Released }

// Stage returns the view's stage of path at node.
func (v *View) Stage(path, node string) (ViewStage, bool) {
	for _, s := range v.Stages {
		if s.Path == path && s.Node == node {
			return s, true
		}
	}
	return ViewStage{}, false
}

// StagesAt returns every stage at node, in view order.
func (v *View) StagesAt(node string) []ViewStage {
	var out []ViewStage
	for _, s := range v.Stages {
		if s.Node == node {
			out = append(out, s)
		}
	}
	return out
}
