package wire

// The console's read routes (gate-runtime.md §4.3), served by gate-api's
// handler package on both planes.

// Overview is GET /api/overview. Queen is read per request (a probe
// cached one second); every other figure is the fleet's, computed off the
// request path and shared by every request until it is FiguresMaxAgeMs
// old or the declared graphs change (FiguresAt says when).
type Overview struct {
	Queen QueenState `json:"queen"`
	// Targets and Graphs are both the number of declared graphs.
	Targets int `json:"targets"`
	Graphs  int `json:"graphs"`
	// AdmittedTotal is Σ admitted at every graph's first hop.
	AdmittedTotal int64 `json:"admitted_total"`
	// DeniedTotal is Σ deferred + released over every stage.
	DeniedTotal int64 `json:"denied_total"`
	// AdmittedPerSec is the fleet's admitted items per second at the
	// graphs' first hops, from the minute roll-ups: the last complete
	// minute's admitted / 60, else the filling minute's admitted /
	// max(5, elapsed seconds), else 0 (summed per first-hop node). Null
	// when it cannot be known; AdmittedPerSecReason then says why.
	AdmittedPerSec *float64 `json:"admitted_per_sec"`
	// AdmittedPerSecReason is why AdmittedPerSec is null (no history, no
	// graph with counters, or history unreadable); null when it is known.
	AdmittedPerSecReason *string `json:"admitted_per_sec_reason"`
	BudgetsAssumed       int     `json:"budgets_assumed"`
	// BudgetsStale counts budgets whose asOf is older than 90 days.
	BudgetsStale int `json:"budgets_stale"`
	// Watching counts graphs in Watch whose Watch period is not over (or
	// not started); ReadyForReview those whose period is over (they still
	// relay in Watch). The Targets list gives each with ?state=watch and
	// ?state=ready.
	Watching       int `json:"watching"`
	ReadyForReview int `json:"ready_for_review"`
	// Held counts graphs a backoff holds (some node's Retry-After has not
	// expired; ?state=held lists them). Null when the backoffs could not
	// be read from the broker.
	Held *int `json:"held"`
	// FiguresAt is when the fleet figures above were computed (epoch ms,
	// gate-api's clock); the counters they sum are the relays' status as
	// last read, itself published every GATE_STATUS_SECONDS.
	FiguresAt int64 `json:"figures_at"`
	// FiguresMaxAgeMs is how old the fleet figures may be when served:
	// they are recomputed once older than this, or at once when a graph
	// is declared or deleted.
	FiguresMaxAgeMs int64 `json:"figures_max_age_ms"`
}

// The console's lists (GET /api/apps, /api/targets, /api/graphs) are
// paged on the server, in (application, name) order: ?limit= (1..200,
// default 50) rows per page, ?q= a case-insensitive substring of
// "application/name" (of the application on /api/apps), ?cursor= the
// Next of the previous page (opaque; it names the last row shown, so rows
// declared or deleted meanwhile neither repeat nor shift the pages).

// AppPage is one page of GET /api/apps.
type AppPage struct {
	Items []AppRow `json:"items"`
	// Next is the cursor of the following page, null on the last one.
	Next *string `json:"next"`
	// Matched is how many applications match q, over every page.
	Matched int `json:"matched"`
	// Total is how many applications declare a graph.
	Total int `json:"total"`
}

// TargetPage is one page of GET /api/targets.
type TargetPage struct {
	Items []TargetRow `json:"items"`
	// Next is the cursor of the following page, null on the last one.
	Next *string `json:"next"`
	// Matched is how many graphs match q, app and state, over every page.
	Matched int `json:"matched"`
	// Total is how many graphs are declared.
	Total int `json:"total"`
}

// GraphPage is one page of GET /api/graphs.
type GraphPage struct {
	Items []GraphRow `json:"items"`
	// Next is the cursor of the following page, null on the last one.
	Next *string `json:"next"`
	// Matched is how many graphs match q and app, over every page.
	Matched int `json:"matched"`
	// Total is how many graphs are declared.
	Total int `json:"total"`
}

// AppRow is one row of GET /api/apps (AppPage).
type AppRow struct {
	Application string `json:"application"`
	// Targets is the application's graph count.
	Targets  int   `json:"targets"`
	Admitted int64 `json:"admitted"`
	// Denied is Σ deferred.
	Denied int64 `json:"denied"`
}

// TargetRow is one row (one graph) of GET /api/targets (TargetPage).
type TargetRow struct {
	Application    string     `json:"application"`
	Name           string     `json:"name"`
	Version        uint32     `json:"version"`
	Graph          string     `json:"graph"`
	Running        bool       `json:"running"`
	Lanes          []NameOnly `json:"lanes"`
	Paths          []NameOnly `json:"paths"`
	BudgetsTotal   int        `json:"budgets_total"`
	AssumedBudgets int        `json:"assumed_budgets"`
	// Worst is the unscoped budget with the highest utilisation against
	// its widest ceiling (null fields when the graph has none).
	WorstBudgetID      *string `json:"worst_budget_id"`
	WorstUsed          *int64  `json:"worst_used"`
	WorstCap           *int64  `json:"worst_cap"`
	WorstPeriodSeconds *int64  `json:"worst_period_seconds"`
	WorstAssumed       bool    `json:"worst_assumed"`
	Admitted           int64   `json:"admitted"`
	Denied             int64   `json:"denied"`
	// State is "pacing" when denied > 0, else "flowing".
	State string `json:"state"`
	// Backlog is Σ first-hop stage group pending.
	Backlog int64 `json:"backlog"`
	At      int64 `json:"at"`
	// Mode is "watch" or "enforce"; WatchEndsAt is when a Watch ends (Unix
	// ms; null when enforcing or not started) and ReadyForReview is true
	// once it has: still relaying in Watch until limits are configured.
	Mode           string `json:"mode"`
	WatchEndsAt    *int64 `json:"watchEndsAt"`
	ReadyForReview bool   `json:"readyForReview"`
	// Held are the nodes a live backoff (breaker record) holds now, in
	// name order; empty when none does or when the broker could not be
	// read (then BrokerRead is false).
	Held []string `json:"held"`
	// BrokerRead is false when this row's live reads from the broker
	// failed: its live numbers (worst budget, backlog, held) are unknown,
	// not zero or none.
	BrokerRead bool `json:"brokerRead"`
}

// NameOnly is {name}.
type NameOnly struct {
	Name string `json:"name"`
}

// GraphRow is one row of GET /api/graphs (GraphPage).
type GraphRow struct {
	Application string         `json:"application"`
	Name        string         `json:"name"`
	Version     uint32         `json:"version"`
	Running     bool           `json:"running"`
	Nodes       []GraphRowNode `json:"nodes"`
	Edges       []Edge         `json:"edges"`
	Paths       []ViewPath     `json:"paths"`
	// Forwarded is Σ forwarded at the graph's last hops.
	Forwarded int64 `json:"forwarded"`
	// Mode is "watch" or "enforce"; WatchEndsAt is when a Watch ends (Unix
	// ms; null when enforcing or not started) and ReadyForReview is true
	// once it has: still relaying in Watch until limits are configured.
	Mode           string `json:"mode"`
	WatchEndsAt    *int64 `json:"watchEndsAt"`
	ReadyForReview bool   `json:"readyForReview"`
	// Held are the nodes a live backoff (breaker record) holds now, in
	// name order; empty when none does or when the broker could not be
	// read (then BrokerRead is false).
	Held []string `json:"held"`
	// BrokerRead is false when this row's live reads from the broker
	// failed: its live numbers (worst budget, backlog, held) are unknown,
	// not zero or none.
	BrokerRead bool `json:"brokerRead"`
}

// GraphRowNode is one node of a GraphRow.
type GraphRowNode struct {
	Name string `json:"name"`
	// Target is "{graph}.{node}".
	Target string `json:"target"`
	// Entry is whether work enters the graph here.
	Entry bool `json:"entry"`
	// Consume is the egress queue applications consume, null when none.
	Consume          *string            `json:"consume"`
	Running          bool               `json:"running"`
	Budgets          int                `json:"budgets"`
	Paths            []string           `json:"paths"`
	Shares           map[string]float64 `json:"shares"`
	WaitingForBudget int64              `json:"waiting_for_budget"`
	Admitted         int64              `json:"admitted"`
	Denied           int64              `json:"denied"`
}

// Edge is one hop from node to node.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Topology is GET /api/apps/{app}/graphs/{name}/topology: the graph's
// shape, read without the broker.
type Topology struct {
	Application string         `json:"application"`
	Graph       string         `json:"graph"`
	Version     uint32         `json:"version"`
	Nodes       []TopologyNode `json:"nodes"`
	Paths       []ViewPath     `json:"paths"`
	Edges       []Edge         `json:"edges"`
}

// TopologyNode is one node of a Topology.
type TopologyNode struct {
	Node    string             `json:"node"`
	Ingress bool               `json:"ingress"`
	Egress  bool               `json:"egress"`
	Paths   []string           `json:"paths"`
	Shares  map[string]float64 `json:"shares"`
}

// Breach is one row of GET /api/breaches/recent: a live breaker record.
type Breach struct {
	At          int64  `json:"at"`
	Application string `json:"application"`
	// Target is "{graph}.{node}".
	Target            string `json:"target"`
	Graph             string `json:"graph"`
	Node              string `json:"node"`
	RetryAfterSeconds int64  `json:"retryAfterSeconds"`
	Until             int64  `json:"until"`
	By                string `json:"by"`
}

// SharedBudget is one row of GET /api/budgets: one shared counter
// (application × sharedKey) and every node that spends it.
type SharedBudget struct {
	ID               string `json:"id"`
	Key              string `json:"key"`
	Application      string `json:"application"`
	Count            int64  `json:"count"`
	TimeMs           int64  `json:"timeMs"`
	SubWindows       int64  `json:"subWindows"`
	CountSub         int64  `json:"countSub"`
	WindowSubSeconds int64  `json:"windowSubSeconds"`
	Confidence       string `json:"confidence"`
	// Used is the live counter, null when the broker could not be read.
	Used      *int64 `json:"used"`
	ExpiresAt *int64 `json:"expiresAt"`
	// Members are "{graph}.{node}".
	Members []string `json:"members"`
	// Conflicts are members that declare the same key with other numbers.
	Conflicts []BudgetConflict `json:"conflicts"`
}

// BudgetConflict is a member declaring a shared key differently.
type BudgetConflict struct {
	Target     string `json:"target"`
	Count      int64  `json:"count"`
	TimeMs     int64  `json:"timeMs"`
	SubWindows int64  `json:"subWindows"`
}
