package wire

// The shapes of the history routes (gate-runtime §4.3, §5.4, §6.2):
// the Watch summary, minute roll-ups, flow, denial traces, and the queue
// snapshot body gate-recorder stores once a minute.

// WatchSummary is GET /api/apps/{app}/graphs/{graph}/watch.
type WatchSummary struct {
	// StartedAt and EndsAt bound the observation (Unix ms).
	StartedAt int64 `json:"startedAt"`
	EndsAt    int64 `json:"endsAt"`
	// Ready is true once now ≥ endsAt: ready for review, still in Watch.
	Ready bool `json:"ready"`
	// Minutes is how many complete minutes the summary covers.
	Minutes int64 `json:"minutes"`
	// Nodes are every node of the graph, in name order.
	Nodes []WatchNode `json:"nodes"`
	// ResolutionSeconds is 60: the summary is per complete minute.
	ResolutionSeconds int `json:"resolutionSeconds"`
	// EndedAt is set when the graph has left Watch (limits configured):
	// the summary is of its last finished session, read back from the
	// change history, up to when the revision that ended it was stored
	// (Unix ms). Null while the graph is in Watch.
	EndedAt *int64 `json:"endedAt"`
}

// WatchNode is one node of a Watch summary.
type WatchNode struct {
	Node    string       `json:"node"`
	Traffic WatchTraffic `json:"traffic"`
}

// WatchTraffic is a node's relayed traffic over the complete minutes.
type WatchTraffic struct {
	// Admitted and Cost are the items relayed and their cost.
	Admitted int64   `json:"admitted"`
	Cost     float64 `json:"cost"`
	// AverageCostPerSecond is cost / (minutes × 60); null when no complete
	// minute is covered yet.
	AverageCostPerSecond *float64 `json:"averageCostPerSecond"`
	// PeakCostPerMinute is the largest minute's cost; null with no minute.
	PeakCostPerMinute *float64 `json:"peakCostPerMinute"`
	// RecordedMinutes is how many minutes have a roll-up row.
	RecordedMinutes int `json:"recordedMinutes"`
}

// RollupMinute is one minute of GET /api/rollups.
type RollupMinute struct {
	// T is the minute's start (Unix ms).
	T int64 `json:"t"`
	// Total sums the lanes.
	Total RollupCounts `json:"total"`
	// Lanes are per path.
	Lanes map[string]RollupCounts `json:"lanes"`
}

// RollupCounts is one minute of one lane (or the total).
type RollupCounts struct {
	T             int64   `json:"t"`
	Admitted      int64   `json:"admitted"`
	Denied        int64   `json:"denied"`
	Calls         int64   `json:"calls"`
	Throttled     int64   `json:"throttled"`
	CostEstimated float64 `json:"cost_estimated"`
	CostActual    float64 `json:"cost_actual"`
}

// Flow is GET /api/flow.
type Flow struct {
	// Minutes are the minute starts covered, oldest first.
	Minutes []int64 `json:"minutes"`
	// Applications are per application, in name order.
	Applications []FlowApplication `json:"applications"`
	// Durable is true when the figures come from history.
	Durable bool `json:"durable"`
}

// FlowApplication is one application's points.
type FlowApplication struct {
	Application string      `json:"application"`
	Points      []FlowPoint `json:"points"`
}

// FlowPoint is one target's minute.
type FlowPoint struct {
	T      int64  `json:"t"`
	Target string `json:"target"`
	// Admitted is the target's items that minute; TotalAdmitted the
	// application's.
	Admitted      int64 `json:"admitted"`
	TotalAdmitted int64 `json:"total_admitted"`
	// Ceiling is the widest per-minute ceiling of the target's binding
	// unscoped budget (null when it has none or is in Watch); Utilisation
	// is admitted / ceiling (null without a ceiling).
	Ceiling     *float64 `json:"ceiling"`
	Utilisation *float64 `json:"utilisation"`
}

// Trace is one denial of GET /api/traces.
type Trace struct {
	At          int64  `json:"at"`
	Application string `json:"application"`
	Target      string `json:"target"`
	Graph       string `json:"graph"`
	Node        string `json:"node"`
	Path        string `json:"path"`
	Op          string `json:"op"`
	Outcome     string `json:"outcome"`
	BudgetID    string `json:"budgetId"`
	// Source is "ring" (a relay's recent denials) or "history".
	Source string `json:"source"`
}

// Snapshot is the body gate-recorder stores per node and minute
// (gate.snapshots.body). A failed sample is {"available": false}.
type Snapshot struct {
	// Available is false when the broker could not be read in time.
	Available bool `json:"available"`
	// Before is the relay backlog: pending of every stage group at the
	// node on its source.
	Before *int64 `json:"before,omitempty"`
	// Workers is the worker backlog: egress pending for egress.group (else
	// the queue-level figure); null without an egress.
	Workers *int64 `json:"workers,omitempty"`
	// OldestSeconds is the oldest pending age over the stage groups and
	// the egress group; null when unknown while something is pending.
	OldestSeconds *int64 `json:"oldestSeconds"`
	// Positions maps "{source}/{group}/{partition}" to the partition's
	// position (committed offset + lag), only for a node with an ingress
	// and exactly one stage; null otherwise.
	Positions map[string]int64 `json:"positions"`
	// Version is the document version sampled.
	Version uint32 `json:"version"`
}
