package wire

import (
	"encoding/json"
	"errors"
)

// GraphView is the live graph view: GET /v1/apps/{app}/graphs/{name} on
// gate-api and /api/apps/{app}/graphs/{name} on both planes (and their
// flat and target twins). Stage counters are summed over the relay
// replicas that publish a status.
type GraphView struct {
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Name repeats Graph (the console's older field).
	Name    string `json:"name"`
	Version uint32 `json:"version"`
	// Running is whether some relay replica runs this version.
	Running   bool   `json:"running"`
	Persisted bool   `json:"persisted"`
	Namespace string `json:"namespace"`
	// Counters is the rollup window in seconds, null when off.
	Counters *uint32 `json:"counters"`
	Watching bool    `json:"watching"`
	// At is when this view was read (epoch ms): the live kv values
	// (budgets[].value, breakers) and the lags are as of At.
	At int64 `json:"at"`
	// CountersAt is the oldest publish time (epoch ms) of the relay
	// statuses whose counters stages[].counters sums: relays publish every
	// GATE_STATUS_SECONDS, so the counters trail At by up to that much.
	// Null when no replica reports the graph.
	CountersAt *int64        `json:"countersAt"`
	Replicas   []ViewReplica `json:"replicas"`
	Nodes      []ViewNode    `json:"nodes"`
	Stages     []ViewStage   `json:"stages"`
	Paths      []ViewPath    `json:"paths"`
	// Spec is the stored document as declared.
	Spec json.RawMessage `json:"spec" ts:"unknown"`
}

// ViewReplica is one relay replica's report of the graph.
type ViewReplica struct {
	Replica string `json:"replica"`
	Version int64  `json:"version"`
	Running bool   `json:"running"`
	At      int64  `json:"at"`
	Error   string `json:"error,omitempty"`
}

// ViewNode is one node of the view.
type ViewNode struct {
	Node               string             `json:"node"`
	IngressQueue       *string            `json:"ingressQueue"`
	IngressOwnedByGate bool               `json:"ingressOwnedByGate"`
	HTTPPush           bool               `json:"httpPush"`
	EgressQueue        *string            `json:"egressQueue"`
	EgressGroup        *string            `json:"egressGroup"`
	Paths              []string           `json:"paths"`
	Shares             map[string]float64 `json:"shares"`
	Budgets            []ViewBudget       `json:"budgets"`
	// Breaker is the node's live breaker record, null when none holds.
	Breaker           *Breaker `json:"breaker"`
	WaitingForBudget  int64    `json:"waiting_for_budget"`
	WaitingForWorkers int64    `json:"waiting_for_workers"`
	// Settle is how good the node's cost estimates are, from the settles
	// reported (POST …/settle); null when none was.
	Settle *SettleStats `json:"settle"`
}

// ViewBudget is one budget with its live counter.
type ViewBudget struct {
	ID        string  `json:"id"`
	Key       string  `json:"key"`
	ScopeBy   *string `json:"scopeBy"`
	SharedKey *string `json:"sharedKey"`
	// WhenOp are the ops the budget applies to (empty: every op).
	WhenOp           []string `json:"whenOp"`
	Count            int64    `json:"count"`
	TimeMs           int64    `json:"timeMs"`
	SubWindows       int64    `json:"subWindows"`
	CountSub         int64    `json:"countSub"`
	WindowSubSeconds int64    `json:"windowSubSeconds"`
	Confidence       string   `json:"confidence"`
	// Value is the live counter (null for a scoped budget or when the
	// broker could not be read).
	Value *int64 `json:"value"`
	// ExpiresAt is when the counter's window ends (ms), null when unknown.
	ExpiresAt *int64 `json:"expiresAt"`
	// Utilisation is value / round(countSub × widest share), null if scoped
	// or the ceiling is 0.
	Utilisation *float64         `json:"utilisation"`
	Ceilings    map[string]int64 `json:"ceilings"`
}

// Breaker is a live breaker record (a backoff in force).
type Breaker struct {
	At                int64  `json:"at"`
	RetryAfterSeconds int64  `json:"retryAfterSeconds"`
	Until             int64  `json:"until"`
	By                string `json:"by"`
}

// ViewStage is one stage (path × hop) of the view.
type ViewStage struct {
	Path        string  `json:"path"`
	Node        string  `json:"node"`
	Hop         int     `json:"hop"`
	Share       float64 `json:"share"`
	Source      string  `json:"source"`
	Group       string  `json:"group"`
	Batch       uint32  `json:"batch"`
	Concurrency uint32  `json:"concurrency"`
	// Lag is the stage group's pending backlog, null when unknown.
	Lag            *int64   `json:"lag"`
	Destinations   []string `json:"destinations"`
	Counters       Counters `json:"counters"`
	ItemsPerCommit *float64 `json:"itemsPerCommit"`
	LastRefusal    *Refusal `json:"lastRefusal"`
}

// ViewPath is one declared path.
type ViewPath struct {
	Name     string `json:"name"`
	Priority uint32 `json:"priority"`
	// Share is the declared share, null when derived.
	Share *float64 `json:"share"`
	Hops  []Hop    `json:"hops"`
}

// Hop is one hop of a path: a node name, or the names of a fan-out (JSON:
// a string or an array of strings).
//
// wire:ts string | string[]
type Hop struct {
	Names  []string
	Fanout bool
}

// MarshalJSON renders a plain hop as its name and a fan-out as an array.
func (h Hop) MarshalJSON() ([]byte, error) {
	if !h.Fanout && len(h.Names) == 1 {
		return json.Marshal(h.Names[0])
	}
	return json.Marshal(h.Names)
}

// UnmarshalJSON reads either form.
func (h *Hop) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*h = Hop{Names: []string{one}}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("a hop is a node name or an array of node names")
	}
	*h = Hop{Names: many, Fanout: true}
	return nil
}

// Stage returns the view's stage of path at node.
func (v *GraphView) Stage(path, node string) (ViewStage, bool) {
	for _, s := range v.Stages {
		if s.Path == path && s.Node == node {
			return s, true
		}
	}
	return ViewStage{}, false
}

// StagesAt returns every stage at node, in view order.
func (v *GraphView) StagesAt(node string) []ViewStage {
	var out []ViewStage
	for _, s := range v.Stages {
		if s.Node == node {
			out = append(out, s)
		}
	}
	return out
}

// Node returns the view's node by name.
func (v *GraphView) Node(name string) (ViewNode, bool) {
	for _, n := range v.Nodes {
		if n.Node == name {
			return n, true
		}
	}
	return ViewNode{}, false
}
