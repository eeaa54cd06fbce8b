package wire

import "encoding/json"

// The application plane's answers (gate-api, mounted on the console too).

// Declared is the 200 answer of a declare (PUT): the compiled plan and
// whether a relay runs it yet.
type Declared struct {
	PlanResponse
	// Running is true when a relay replica reported running the stored
	// version within GATE_DECLARE_WAIT_MS.
	Running bool `json:"running"`
	// RunningNote says, when Running is false, why and what follows.
	RunningNote string `json:"runningNote,omitempty"`
	// ETag is the stored document's entity tag (the ETag header says the
	// same): send it as If-Match with the next PUT or DELETE of the graph.
	ETag string `json:"etag"`
	// Diff is what this PUT changed against the document stored before it
	// (Changed false: it was stored byte for byte already).
	Diff Diff `json:"diff"`
	// Revision is the change-history revision that records this PUT; null
	// without history (PG_HOST unset) or when writing it failed (logged).
	Revision *int64 `json:"revision"`
}

// Deleted is the 200 answer of a DELETE of a graph or target.
type Deleted struct {
	OK          bool   `json:"ok"`
	Application string `json:"application"`
	Graph       string `json:"graph"`
	Deleted     bool   `json:"deleted"`
	// Registered is whether some relay still ran the graph (it stops on
	// its next reconcile).
	Registered bool     `json:"registered"`
	Stopping   []string `json:"stopping"`
	Message    string   `json:"message"`
	Stages     []string `json:"stages"`
	KeptQueues []string `json:"keptQueues"`
	// Revision is the change-history revision that records the deletion;
	// null without history, when it failed (logged), or when nothing was
	// stored.
	Revision *int64 `json:"revision"`
}

// Synced is the 200 answer of PUT /v1/apps/{app}/targets.
type Synced struct {
	OK           bool              `json:"ok"`
	Application  string            `json:"application"`
	Applied      []string          `json:"applied"`
	Removed      []string          `json:"removed"`
	Refused      []SyncRefusal     `json:"refused"`
	Running      map[string]bool   `json:"running"`
	RunningNotes map[string]string `json:"runningNotes,omitempty"`
}

// SyncRefusal is one document a sync refused.
type SyncRefusal struct {
	Target string `json:"target"`
	Error  string `json:"error"`
}

// PushBody is the push front door's request body; zero fields are not
// sent.
type PushBody struct {
	Op        string `json:"op,omitempty"`
	Partition string `json:"partition,omitempty"`
	Txn       string `json:"txn,omitempty"`
	Cost      int64  `json:"cost,omitempty"`
	// Payload is the item, any JSON value.
	Payload json.RawMessage `json:"payload,omitempty" ts:"unknown"`
}

// RelayHeader is the response header of every 200 push and re-entry:
// RelayRunning when some gate-relay replica ran the graph at gate-api's
// last read of the relays' status, RelayNone when none did (the item is
// queued all the same and waits in the ingress queue).
const RelayHeader = "Gate-Relay"

// The values of RelayHeader.
const (
	RelayRunning = "running"
	RelayNone    = "none"
)

// NoRelayNote is what a push, a re-entry, the diagnostics and the console
// say of a graph no gate-relay replica runs: the ingress queue is a
// durable buffer, so work is accepted and waits there, never refused.
const NoRelayNote = "queued; no relay runs this graph right now: items wait in the ingress queue"

// Pushed is the push front door's 200 answer.
type Pushed struct {
	OK bool `json:"ok"`
	// Pushed is 1 when the broker stored the item, 0 when it was a
	// duplicate.
	Pushed    int     `json:"pushed"`
	Duplicate bool    `json:"duplicate"`
	Queue     string  `json:"queue"`
	Partition *string `json:"partition"`
	Cost      int64   `json:"cost"`
	// Running is true when some gate-relay replica ran the graph at
	// gate-api's last read of the relays' status (at most
	// GATE_API_REFRESH_MS old); false means the item is queued and waits
	// in the ingress queue until a relay runs the graph. The Gate-Relay
	// header says the same.
	Running bool `json:"running"`
	// RunningNote is NoRelayNote when Running is false, else absent.
	RunningNote string `json:"runningNote,omitempty"`
}

// ObserveBody is POST …/nodes/{node}/observe's request body: one vendor
// answer as the worker saw it.
type ObserveBody struct {
	// Status is the answer's HTTP status.
	Status int `json:"status"`
	// Headers are its response headers, name to value (a value may be an
	// array of strings for a header sent on several lines).
	Headers map[string]string `json:"headers"`
	// Budget names one mirrored budget of the node; absent observes every
	// budget of the node that mirrors a vendor meter.
	Budget string `json:"budget,omitempty"`
}

// Observed is the 200 answer of POST …/nodes/{node}/observe: what the
// vendor's answer did to each mirrored budget, and the backoff a 429 or
// 503 with Retry-After started.
type Observed struct {
	OK   bool   `json:"ok"`
	Node string `json:"node"`
	// Status is the observed answer's status.
	Status  int              `json:"status"`
	Budgets []ObservedBudget `json:"budgets"`
	// Backoff is the backoff a refusal with Retry-After started (null
	// otherwise).
	Backoff *Backoff `json:"backoff"`
}

// SettleBody is the body of POST …/nodes/{node}/settle: the egress message
// as the worker popped it (its transactionId and data, the `_gate` stamp
// in it; other members are allowed and ignored) and the call's actual
// cost in the node's units.
type SettleBody struct {
	Message    json.RawMessage `json:"message"`
	ActualCost int64           `json:"actualCost"`
}

// Settled is the 200 answer of POST …/nodes/{node}/settle: what the
// reported actual cost did to each counter the message was charged to.
type Settled struct {
	OK            bool   `json:"ok"`
	Node          string `json:"node"`
	TransactionID string `json:"transactionId"`
	// Estimated is what the message was charged at the node; Actual what
	// was reported.
	Estimated int64 `json:"estimated"`
	Actual    int64 `json:"actual"`
	// Duplicate says the message was settled before: nothing changed.
	Duplicate bool `json:"duplicate"`
	// Refunded and Charged are the cost units given back and charged as a
	// debt, summed over the counters.
	Refunded int64           `json:"refunded"`
	Charged  int64           `json:"charged"`
	Budgets  []SettledBudget `json:"budgets"`
	// Note says what happened in a sentence.
	Note string `json:"note"`
}

// SettledBudget is one counter of a settle.
type SettledBudget struct {
	Budget string `json:"budget"`
	Key    string `json:"key"`
	// Outcome is refunded, charged, even, window-ended, window-unknown or
	// guarded.
	Outcome string `json:"outcome"`
	// Delta is what was added (negative: refunded); Counter the counter
	// after it and WindowEnd the end of the window written (epoch ms), both
	// 0 when nothing was written.
	Delta     int64 `json:"delta"`
	Counter   int64 `json:"counter"`
	WindowEnd int64 `json:"windowEnd"`
}

// SettleStats is how good a node's cost estimates are: its settles since
// the statistics started (they last a day from the first settle).
type SettleStats struct {
	Settles   int64 `json:"settles"`
	Estimated int64 `json:"estimated"`
	Actual    int64 `json:"actual"`
	// Ratio is Actual / Estimated (1: exact; 0.25: a fourth of the
	// estimate was used); 0 when nothing was estimated.
	Ratio float64 `json:"ratio"`
	// Until is when the statistics start over (epoch ms).
	Until int64 `json:"until"`
}

// ObservedBudget is one mirrored budget after an observation.
type ObservedBudget struct {
	// Budget is the budget's id and Headers the family it mirrors.
	Budget  string `json:"budget"`
	Headers string `json:"headers"`
	// Policy is the IETF policy or GitHub resource the answer spoke for.
	Policy string `json:"policy,omitempty"`
	// Applied is false when the answer spoke for another policy or
	// resource than the one mirrored (Note says which).
	Applied bool `json:"applied"`
	// Declared is the plan's widest ceiling; Ceiling the effective one
	// (at most Declared); Lowered says Ceiling < Declared.
	Declared int64 `json:"declared"`
	Ceiling  int64 `json:"ceiling"`
	Lowered  bool  `json:"lowered"`
	// VendorLimit is the vendor's stated limit per the budget's window
	// (0 when unstated); Since and Until bound the lowering (epoch ms, 0
	// when not lowered).
	VendorLimit int64 `json:"vendorLimit"`
	Since       int64 `json:"since"`
	Until       int64 `json:"until"`
	// Counter is the counter before; RaisedTo after a raise (0: none).
	Counter  int64 `json:"counter"`
	RaisedTo int64 `json:"raisedTo"`
	// ResetRule says how X-RateLimit-Reset was read: seconds,
	// epoch-seconds, epoch-ms, or delta (IETF t=).
	ResetRule string `json:"resetRule,omitempty"`
	// Note says, in a sentence, what the answer did.
	Note string `json:"note"`
}

// BackoffBody is POST …/nodes/{node}/backoff's request body.
type BackoffBody struct {
	RetryAfterSeconds int64  `json:"retryAfterSeconds"`
	By                string `json:"by,omitempty"`
	// Reason is why the node is held (optional, at most 512 bytes): it is
	// recorded with By in the graph's annotations (Traffic over time).
	Reason string `json:"reason,omitempty"`
}

// BackoffLiftBody is DELETE …/nodes/{node}/backoff's optional body: who
// lifts the hold and why, recorded in the graph's annotations.
type BackoffLiftBody struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Backoff is the 200 answer of POST …/nodes/{node}/backoff.
type Backoff struct {
	OK                bool     `json:"ok"`
	Node              string   `json:"node"`
	RetryAfterSeconds int64    `json:"retryAfterSeconds"`
	Until             int64    `json:"until"`
	Keys              []string `json:"keys"`
	Refunded          int64    `json:"refunded"`
}

// BackoffLifted is the 200 answer of DELETE …/nodes/{node}/backoff.
type BackoffLifted struct {
	OK      bool     `json:"ok"`
	Node    string   `json:"node"`
	Cleared []string `json:"cleared"`
}

// Reentered is the 200 answer of POST …/reenter.
type Reentered struct {
	OK            bool   `json:"ok"`
	Queue         string `json:"queue"`
	Path          string `json:"path"`
	Node          string `json:"node"`
	Attempt       int    `json:"attempt"`
	MaxAttempts   int    `json:"maxAttempts"`
	TransactionID string `json:"transactionId"`
	Pushed        int    `json:"pushed"`
	// Running and RunningNote are Pushed's: whether a relay ran the graph
	// at the last status read, and NoRelayNote when none did.
	Running     bool   `json:"running"`
	RunningNote string `json:"runningNote,omitempty"`
}

// ETA is GET …/nodes/{node}/eta?path=: how long the work waiting at a
// stage takes to pass.
type ETA struct {
	At          int64  `json:"at"`
	Application string `json:"application"`
	Graph       string `json:"graph"`
	Node        string `json:"node"`
	Path        string `json:"path"`
	Target      string `json:"target"`
	// State is "waiting-budget" or "waiting-workers".
	State     string `json:"state"`
	AheadCost int64  `json:"aheadCost"`
	// EtaSeconds is null when unknown (a scoped budget binds).
	EtaSeconds *int64 `json:"etaSeconds"`
	// BoundBy is the budget that binds, null when none does.
	BoundBy           *string `json:"boundBy"`
	WindowResetsAt    *int64  `json:"windowResetsAt"`
	WaitingForBudget  int64   `json:"waitingForBudget"`
	WaitingForWorkers int64   `json:"waitingForWorkers"`
	Assumes           string  `json:"assumes"`
}

// QueenState is the broker as a plane sees it.
type QueenState struct {
	URL       string `json:"url"`
	Reachable bool   `json:"reachable"`
	Version   string `json:"version"`
	// Needs is what gate-api's capability probe found of what Gate needs of
	// the broker (absent before the first probe answered).
	Needs []BrokerNeed `json:"needs,omitempty"`
}

// Health is GET /health's 200 answer (503 adds error and status
// "unhealthy").
type Health struct {
	Status string     `json:"status"`
	Queen  QueenState `json:"queen"`
}

// Version is GET /version and /api/version.
type Version struct {
	Gate  string     `json:"gate"`
	Queen QueenState `json:"queen"`
}

// ProductMetrics is GET /v1/apps/{app}/metrics.
type ProductMetrics struct {
	Application string `json:"application"`
	At          int64  `json:"at"`
	// AdmittedPerSecReason is why the targets' admitted_per_sec is null
	// (no history, or the history database — named, with its knob — did
	// not answer); null when the rates are known or no graph of the
	// application records roll-ups.
	AdmittedPerSecReason *string         `json:"admitted_per_sec_reason"`
	Targets              []MetricsTarget `json:"targets"`
}

// MetricsTarget is one node of ProductMetrics.
type MetricsTarget struct {
	// Name is "{graph}.{node}".
	Name  string `json:"name"`
	Graph string `json:"graph"`
	Node  string `json:"node"`
	// State is "breached", "pacing" or "flowing".
	State             string         `json:"state"`
	BindingBudget     *BindingBudget `json:"binding_budget"`
	AdmittedPerSec    *float64       `json:"admitted_per_sec"`
	WaitingForBudget  int64          `json:"waiting_for_budget"`
	WaitingForWorkers int64          `json:"waiting_for_workers"`
	DrainETASeconds   *int64         `json:"drain_eta_seconds"`
	LastBreachAt      *int64         `json:"last_breach_at"`
	Paths             []MetricsPath  `json:"paths"`
	// Lanes repeats Paths (the older name).
	Lanes []MetricsPath `json:"lanes"`
}

// BindingBudget is the unscoped budget with the highest utilisation.
type BindingBudget struct {
	ID               string  `json:"id"`
	Count            int64   `json:"count"`
	TimeMs           int64   `json:"time_ms"`
	CountSub         int64   `json:"count_sub"`
	WindowSubSeconds int64   `json:"window_sub_seconds"`
	Value            int64   `json:"value"`
	Ceiling          int64   `json:"ceiling"`
	Utilisation      float64 `json:"utilisation"`
	Confidence       string  `json:"confidence"`
	Cap              int64   `json:"cap"`
	PeriodSeconds    float64 `json:"period_seconds"`
}

// MetricsPath is one path of a MetricsTarget.
type MetricsPath struct {
	Name             string   `json:"name"`
	Share            float64  `json:"share"`
	WaitingForBudget int64    `json:"waiting_for_budget"`
	AdmittedPerSec   *float64 `json:"admitted_per_sec"`
	DrainETASeconds  *int64   `json:"drain_eta_seconds"`
}

// Explanation is GET …/nodes/{node}/explain?scope=&op=&path=&partition=:
// why an item with that scope value and op waits at the node, and when it
// can go. It reads the broker only (no PostgreSQL).
type Explanation struct {
	At          int64  `json:"at"`
	Application string `json:"application"`
	Graph       string `json:"graph"`
	Node        string `json:"node"`
	// Path is the path the item is judged on (its ceilings are the path's
	// share of each budget).
	Path string `json:"path"`
	// Scope and Op are the item asked about (null when not given).
	Scope *string `json:"scope"`
	Op    *string `json:"op"`
	// Cost is the cost the item is judged at: the node's cost.default.
	Cost int64 `json:"cost"`
	// Counters are every counter the item would charge, in the node's
	// budget order.
	Counters []ExplainCounter `json:"counters"`
	// Unjudged are the scoped budgets not judged because no scope value
	// was given.
	Unjudged []string `json:"unjudged"`
	// Backoff is a backoff holding the node (null when none).
	Backoff *ExplainBackoff `json:"backoff"`
	// Binding is the budget whose counter holds the item longest (null
	// when every counter has room).
	Binding *string `json:"binding"`
	// Partition is the partition asked about (null: none given). Ahead is
	// the items pending before the item in it, AheadMax (without a
	// partition) the most pending in any partition of the node's queue:
	// the item is behind at most that many. Null when unreadable.
	Partition *string `json:"partition"`
	Ahead     *int64  `json:"ahead"`
	AheadMax  *int64  `json:"aheadMax"`
	// EarliestAdmission is a bound (no earlier than, epoch ms): every
	// refusing counter's window over, any backoff over, and the items
	// ahead through the unscoped counters at one ceiling per window.
	EarliestAdmission int64 `json:"earliestAdmission"`
	WaitSeconds       int64 `json:"waitSeconds"`
	// TransactionID is the item asked about by its transaction id (null:
	// asked by scope and op); PushedAt is when the push door queued it
	// and PushedTo the node it was pushed to (null without a transaction
	// id).
	TransactionID *string `json:"transactionId"`
	PushedAt      *int64  `json:"pushedAt"`
	PushedTo      *string `json:"pushedTo"`
	// Forwarded is true when the item asked about by its transaction id
	// no longer waits at the node: nothing is pending in its partition
	// (null without a transaction id).
	Forwarded *bool `json:"forwarded"`
	// Sentence is the answer in one sentence (the console shows it).
	Sentence string `json:"sentence"`
	Assumes  string `json:"assumes"`
}

// ExplainCounter is one counter an item would charge.
type ExplainCounter struct {
	Budget string `json:"budget"`
	// Kind is "unscoped", "scoped" or "shared".
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Value int64  `json:"value"`
	// Ceiling is the item's path's ceiling; Widest the widest path's;
	// Shares every path's ceiling.
	Ceiling       int64          `json:"ceiling"`
	Widest        int64          `json:"widest"`
	Shares        []ExplainShare `json:"shares"`
	WindowSeconds int64          `json:"windowSeconds"`
	// FreesAt is the end of the live window (epoch ms; null: none live).
	FreesAt *int64 `json:"freesAt"`
	// Fits says an item of Cost would be charged now; Reason why not
	// ("ceiling", "share" or "backoff"; null when it fits).
	Fits   bool    `json:"fits"`
	Reason *string `json:"reason"`
	// Binds marks the binding counter.
	Binds bool `json:"binds"`
	// KeyCount is, on a scoped counter, what its scope value counts per
	// the budget's window, and KeySource where that comes from: "runtime"
	// (a limit per key set through the API), "document" (the budget's
	// keys) or "budget" (the budget's own count). Absent on other kinds.
	KeyCount  int64  `json:"keyCount,omitempty"`
	KeySource string `json:"keySource,omitempty"`
}

// ExplainShare is one path's ceiling on a counter.
type ExplainShare struct {
	Path    string `json:"path"`
	Ceiling int64  `json:"ceiling"`
}

// ExplainBackoff is a backoff record holding a node.
type ExplainBackoff struct {
	// Until is when it lifts by itself (epoch ms).
	Until             int64  `json:"until"`
	RetryAfterSeconds int64  `json:"retryAfterSeconds"`
	By                string `json:"by,omitempty"`
}

// KeyLimit is one scope value's count on a scoped budget: the 200 answer
// of GET, PUT and DELETE …/budgets/{budget}/keys/{value}, and an entry of
// KeyLimits. For one value a runtime limit wins over the document's.
type KeyLimit struct {
	Node   string `json:"node"`
	Budget string `json:"budget"`
	Value  string `json:"value"`
	// Count is what the value counts per TimeMs now, and Source where it
	// comes from: "runtime" (set through the API), "document" (the
	// budget's keys) or "budget" (neither: the budget's own count).
	Count  int64  `json:"count"`
	TimeMs int64  `json:"timeMs"`
	Source string `json:"source"`
	// Ceiling is the value's counter's ceiling per sub-window for the
	// widest path (what one sub-window admits).
	Ceiling int64 `json:"ceiling"`
	// Default is the budget's own count; Document the document's count for
	// the value (null: none), still in force when the runtime one is gone.
	Default  int64  `json:"default"`
	Document *int64 `json:"document"`
	// At is when the runtime limit was written (epoch ms; 0 when none).
	At int64 `json:"at"`
	// Deleted is true on a DELETE's answer: the runtime limit is gone and
	// Count is what the value counts from the next sub-window.
	Deleted bool `json:"deleted,omitempty"`
}

// KeyLimits is the 200 answer of GET …/budgets/{budget}/keys: one page of
// the budget's runtime limits per key (in byte order of their values) and,
// on the first page, every count the document gives.
type KeyLimits struct {
	Node    string `json:"node"`
	Budget  string `json:"budget"`
	ScopeBy string `json:"scopeBy"`
	// Default is the budget's own count per TimeMs, for every other value.
	Default int64 `json:"default"`
	TimeMs  int64 `json:"timeMs"`
	// Runtime is the page of limits set through the API.
	Runtime []KeyLimit `json:"runtime"`
	// Document is the document's per-key counts (first page only, else
	// empty), each with the runtime limit that overrides it, if on this
	// page, left to the caller to match.
	Document []KeyLimit `json:"document"`
	// NextAfter is the after of the next page; "" on the last.
	NextAfter string `json:"nextAfter"`
	// Wins says which of two limits for one value applies: "runtime".
	Wins string `json:"wins"`
}
