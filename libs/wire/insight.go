package wire

import "encoding/json"

// Diagnostics is GET …/graphs/{graph}/diagnostics: "why is traffic
// waiting?", the findings in the order they are checked.
type Diagnostics struct {
	At     int64     `json:"at"`
	Issues []Finding `json:"issues"`
	// DurationScope says what Since means.
	DurationScope string `json:"durationScope"`
}

// Finding kinds, in evaluation order.
const (
	FindingBroker  = "broker"
	FindingStopped = "stopped"
	FindingRead    = "read"
	FindingCursor  = "cursor"
	FindingBackoff = "backoff"
	// FindingVendor is a mirrored budget whose vendor stated a lower limit
	// than the declared one (observe): Gate paces at the vendor's.
	FindingVendor  = "vendor"
	FindingBudget  = "budget"
	FindingRelay   = "relay"
	FindingWorkers = "workers"
)

// Finding severities.
const (
	SeverityBad  = "bad"
	SeverityWarn = "warn"
	SeverityInfo = "info"
)

// Finding is one reason traffic waits.
type Finding struct {
	Kind string `json:"kind"`
	// Node and Path are null when the finding is about the whole graph.
	Node *string `json:"node"`
	Path *string `json:"path"`
	// Title says what is wrong; Action is the next check.
	Title    string `json:"title"`
	Action   string `json:"action"`
	Severity string `json:"severity"`
	// Since is when this replica first saw the finding (ms); it resets
	// after a recovery or a restart.
	Since int64 `json:"since"`
	// Budget is the budget of a budget finding (the recent refusal's id,
	// null when only a spent budget explains it); null on other kinds.
	Budget *string `json:"budget"`
}

// Timeline is GET …/graphs/{graph}/timeline?minutes=: queue snapshots per
// node per minute, the relayed items per minute, the incoming estimates
// and the configuration annotations.
type Timeline struct {
	// Since and Until bound the minutes shown (ms, Until exclusive).
	Since   int64 `json:"since"`
	Until   int64 `json:"until"`
	Minutes int   `json:"minutes"`
	// Samples are the snapshots, oldest first; a minute with no snapshot
	// has no entry (a gap, never a zero).
	Samples []TimelineSample `json:"samples"`
	// Events are the configuration annotations, newest first (≤ 200).
	Events []TimelineEvent `json:"events"`
	// Relayed maps each node to its minute roll-ups, oldest first (the
	// shape of GET /api/rollups).
	Relayed map[string][]RollupMinute `json:"relayed"`
	// Incoming maps each node to its incoming estimate per sampled minute.
	Incoming map[string]IncomingSeries `json:"incoming"`
	// Enabled says queue sampling (counters) is on for the graph.
	Enabled           bool `json:"enabled"`
	ResolutionSeconds int  `json:"resolutionSeconds"`
	// Vendor is every limit a vendor stated below what is declared (a
	// budget that mirrors its meter) that held in the range, oldest
	// first, as gate-recorder sampled it.
	Vendor []VendorSpan `json:"vendor"`
}

// VendorSpan is one limit a vendor stated for a budget that mirrors its
// meter, from when it was first stated to when it lapsed or went.
type VendorSpan struct {
	Node   string `json:"node"`
	Budget string `json:"budget"`
	// Since is when the vendor first stated it (ms); Until when it stopped
	// holding (ms): it lapsed, another limit replaced it, or the vendor
	// allowed the declared count again (Ended). An Until after now is when
	// it lapses unless the vendor restates it.
	Since int64 `json:"since"`
	Until int64 `json:"until"`
	Ended bool  `json:"ended"`
	// Limit is the vendor's limit where Declared is declared, both per
	// TimeMs (the budget's window).
	Limit    int64 `json:"limit"`
	Declared int64 `json:"declared"`
	TimeMs   int64 `json:"timeMs"`
	// Headers names the header family that spoke.
	Headers string `json:"headers"`
	// Sentence says it in words: "the vendor enforced 10 where 50 is
	// declared, from … to …", or for one still holding "the vendor
	// enforces 10 where 50 is declared, since … (until … unless it says so
	// again)".
	Sentence string `json:"sentence"`
}

// VendorComparison is "Try a limit" checked against what the vendor
// really allowed while the Watch recorded (a node with a budget that
// mirrors the vendor's meter).
type VendorComparison struct {
	// Budgets are the node's budgets that mirror a vendor meter.
	Budgets []string `json:"budgets"`
	// Seconds is the replayed seconds in which the vendor enforced less
	// than declared.
	Seconds int64 `json:"seconds"`
	// ExceededSeconds is, of those, the seconds in which the candidate
	// limit allows more than the vendor did (compared as rates).
	ExceededSeconds int64 `json:"exceededSeconds"`
	// OverSeconds is, of those, the seconds in which the recorded traffic
	// replayed under the candidate is sent faster than the vendor's limit
	// (spread evenly over the vendor's window), and OverItems the items
	// above it: calls the vendor would likely have refused.
	OverSeconds int64 `json:"overSeconds"`
	OverItems   int64 `json:"overItems"`
	// LowestLimit and LowestTimeMs are the lowest limit the vendor stated
	// in the range (null when it stated none).
	LowestLimit  *int64 `json:"lowestLimit"`
	LowestTimeMs *int64 `json:"lowestTimeMs"`
	// Spans are the vendor's limits that held in the range.
	Spans []VendorSpan `json:"spans"`
	// Sentence says the comparison in words.
	Sentence string `json:"sentence"`
}

// TimelineSample is one node's snapshot of one minute.
type TimelineSample struct {
	Node string `json:"node"`
	// T is the minute (ms); At when the snapshot was taken.
	T  int64 `json:"t"`
	At int64 `json:"at"`
	// Value is the snapshot body as the sampler stored it ({"available":
	// false} when the broker could not be read).
	Value json.RawMessage `json:"value"`
}

// TimelineEvent is one configuration annotation.
type TimelineEvent struct {
	At     int64        `json:"at"`
	Change ConfigChange `json:"change"`
}

// ConfigChange is what an annotation says.
type ConfigChange struct {
	Label   string `json:"label"`
	Version int64  `json:"version"`
	Mode    string `json:"mode"`
	// Node, By, Reason and Seconds are set on a backoff annotation
	// ("Backoff applied" / "Backoff lifted"): the node, who held or lifted
	// it, the reason they gave (optional) and the hold in seconds.
	Node    string `json:"node,omitempty"`
	By      string `json:"by,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Seconds int64  `json:"seconds,omitempty"`
}

// IncomingSeries is a node's incoming estimate.
type IncomingSeries struct {
	// Attributable is false for a node whose positions cannot be told
	// apart (no ingress, or several stages reading one queue): every
	// point is then unknown.
	Attributable bool `json:"attributable"`
	// Reason says why the estimate is unknown ("" when attributable).
	Reason string          `json:"reason"`
	Points []IncomingPoint `json:"points"`
}

// IncomingPoint is the items that arrived in one minute, estimated from
// the change of the summed consumer positions since the previous
// snapshot; Items is null when unknown (a gap, a missing position, or a
// position that moved backwards).
type IncomingPoint struct {
	T     int64  `json:"t"`
	Items *int64 `json:"items"`
}

// Simulation is GET …/simulate: one global allowance replayed over the
// recorded traffic of one node.
type Simulation struct {
	Node             string   `json:"node"`
	Items            int64    `json:"items"`
	DelayedItems     int64    `json:"delayedItems"`
	DelayedPercent   *float64 `json:"delayedPercent"`
	PeakBacklog      int64    `json:"peakBacklog"`
	RemainingBacklog int64    `json:"remainingBacklog"`
	// DrainSeconds is how long the backlog left at the end of the range
	// (RemainingBacklog) takes to clear if nothing more arrives: 0 when
	// none is left, however many items were delayed on the way.
	DrainSeconds int64 `json:"drainSeconds"`
	// LongestWaitSeconds is the longest any item waited for the allowance
	// (from the second it arrived to the second it was admitted; an item
	// still waiting at the end counts the wait it had reached).
	LongestWaitSeconds int64          `json:"longestWaitSeconds"`
	Series             []BacklogPoint `json:"series"`
	Coverage           Coverage       `json:"coverage"`
	Effective          Effective      `json:"effective"`
	HasKnownGaps       bool           `json:"hasKnownGaps"`
	// Vendor compares the candidate with the limits the vendor stated in
	// the range; null when no budget of the node mirrors a vendor meter.
	Vendor *VendorComparison `json:"vendor"`
}

// BacklogPoint is the backlog at the last second of a minute and the
// peak within it.
type BacklogPoint struct {
	T       int64 `json:"t"`
	Backlog int64 `json:"backlog"`
	Peak    int64 `json:"peak"`
}

// Coverage is the part of the asked range the recording covers.
type Coverage struct {
	Since             int64 `json:"since"`
	Until             int64 `json:"until"`
	GapSeconds        int64 `json:"gapSeconds"`
	LostItems         int64 `json:"lostItems"`
	ResolutionSeconds int   `json:"resolutionSeconds"`
}

// Effective is the allowance as the limiter would enforce it.
type Effective struct {
	Count       int64 `json:"count"`
	Seconds     int64 `json:"seconds"`
	SubWindows  int64 `json:"subWindows"`
	CostPerItem int64 `json:"costPerItem"`
}

// GraphSimulation is POST …/simulate: the recorded per-path arrivals of
// a Watch session replayed through a candidate document's compiled plan
// with the relay's admission arithmetic.
type GraphSimulation struct {
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Version is the candidate's version.
	Version uint32 `json:"version"`
	// Session is the Watch session replayed (watch.startedAt).
	Session  int64    `json:"session"`
	Coverage Coverage `json:"coverage"`
	// PathCoverage is the coverage of each path's entry recording.
	PathCoverage map[string]Coverage `json:"pathCoverage"`
	HasKnownGaps bool                `json:"hasKnownGaps"`
	// Items is the recorded arrivals over every path; Delivered the
	// items that reached an egress (fan-out copies count each).
	Items     int64 `json:"items"`
	Delivered int64 `json:"delivered"`
	// DelayedItems counts deliveries later than the second their item
	// arrived.
	DelayedItems int64 `json:"delayedItems"`
	// DrainSeconds is how long after the range the last backlog clears;
	// null when it does not within DrainLimitSeconds.
	DrainSeconds      *int64           `json:"drainSeconds"`
	DrainLimitSeconds int64            `json:"drainLimitSeconds"`
	Nodes             []SimNode        `json:"nodes"`
	Paths             []SimPath        `json:"paths"`
	Unsupported       []SimUnsupported `json:"unsupported"`
	// Assumes lists what the replay takes for granted.
	Assumes []string `json:"assumes"`
	// Warnings are the candidate's compile warnings ("[rule] detail").
	Warnings []string `json:"warnings"`
}

// SimNode is one node of a graph simulation.
type SimNode struct {
	Node string `json:"node"`
	// Arrived counts items reaching the node; Admitted those it let
	// through; TooExpensive those whose cost exceeds the node's max.
	Arrived      int64 `json:"arrived"`
	Admitted     int64 `json:"admitted"`
	TooExpensive int64 `json:"tooExpensive"`
	// DelayedItems counts items admitted later than the second they
	// arrived at the node (or never).
	DelayedItems int64 `json:"delayedItems"`
	PeakBacklog  int64 `json:"peakBacklog"`
	FinalBacklog int64 `json:"finalBacklog"`
	// DrainSeconds is when, after the range, the node's backlog clears;
	// null when it does not within the drain limit.
	DrainSeconds *int64 `json:"drainSeconds"`
	// BoundBy is the budget that refused most often; null when none did.
	BoundBy  *string       `json:"boundBy"`
	Refusals []SimRefusal  `json:"refusals"`
	Budgets  []SimBudget   `json:"budgets"`
	Paths    []SimNodePath `json:"paths"`
}

// SimRefusal counts the windows a budget refused.
type SimRefusal struct {
	Budget string `json:"budget"`
	Count  int64  `json:"count"`
}

// SimBudget is one simulated budget of a node.
type SimBudget struct {
	ID  string `json:"id"`
	Key string `json:"key"`
	// Shared is true for a shared key (other nodes spend it too).
	Shared bool `json:"shared"`
	// Ceiling is the widest path ceiling on the counter; WindowSeconds
	// the sub-window.
	Ceiling       int64 `json:"ceiling"`
	WindowSeconds int64 `json:"windowSeconds"`
	// Windows counts the sub-windows opened; FullWindows those that
	// reached Ceiling.
	Windows     int64 `json:"windows"`
	FullWindows int64 `json:"fullWindows"`
	// PeakUtilisation is the fullest window over Ceiling;
	// MeanUtilisation the mean over opened windows. Null without windows.
	PeakUtilisation *float64 `json:"peakUtilisation"`
	MeanUtilisation *float64 `json:"meanUtilisation"`
}

// SimNodePath is one path at one node.
type SimNodePath struct {
	Path         string `json:"path"`
	Arrived      int64  `json:"arrived"`
	Admitted     int64  `json:"admitted"`
	DelayedItems int64  `json:"delayedItems"`
	PeakBacklog  int64  `json:"peakBacklog"`
	FinalBacklog int64  `json:"finalBacklog"`
	// BoundBy is the budget that refused this path most often.
	BoundBy *string `json:"boundBy"`
	// Ceilings is the path's use of each budget's per-path ceiling.
	Ceilings []SimPathCeiling `json:"ceilings"`
}

// SimPathCeiling is a path's use of its ceiling on one budget.
type SimPathCeiling struct {
	Budget  string `json:"budget"`
	Ceiling int64  `json:"ceiling"`
	// PeakUtilisation is the path's fullest window over its ceiling.
	PeakUtilisation *float64 `json:"peakUtilisation"`
}

// SimPath is one path end to end.
type SimPath struct {
	Path         string `json:"path"`
	Items        int64  `json:"items"`
	Delivered    int64  `json:"delivered"`
	DelayedItems int64  `json:"delayedItems"`
	PeakBacklog  int64  `json:"peakBacklog"`
	FinalBacklog int64  `json:"finalBacklog"`
	DrainSeconds *int64 `json:"drainSeconds"`
}

// SimUnsupported is a budget the recording cannot judge.
type SimUnsupported struct {
	Node   string `json:"node"`
	Budget string `json:"budget"`
	Reason string `json:"reason"`
}
