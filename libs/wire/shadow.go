package wire

import "encoding/json"

// Shadow is GET (and PUT) …/graphs/{graph}/shadow: a candidate set of
// budgets that runs beside the enforced document on the graph's live
// traffic, never refusing anything, and what it would have done per
// minute (issue 27).
type Shadow struct {
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Set is false when the graph has no candidate: then every other
	// field is empty (GET answers 200, so a page that asks is never an
	// error, and needs no PostgreSQL to learn that nothing is set).
	Set bool `json:"set"`
	// Since is when the candidate was set (ms): its results start there.
	Since int64 `json:"since"`
	// SetBy is who set it (the console identity, or "api").
	SetBy string `json:"setBy"`
	// BasedOn is the entity tag of the stored document the candidate was
	// set against; Current says the stored document is still that one.
	BasedOn string `json:"basedOn"`
	Current bool   `json:"current"`
	// Recording says what the candidate is judged on: "watch" (the Watch
	// session's recorded arrivals) or "forwarded" (the items each node
	// forwards under the enforced limits, recorded per second while a
	// candidate is set).
	Recording string `json:"recording"`
	// Minutes is the range answered (?minutes=, 1..1440, default 60);
	// EvaluatedThrough is the end (ms) of the last minute evaluated, null
	// before the first (gate-recorder evaluates once a minute, about a
	// minute behind).
	Minutes          int    `json:"minutes"`
	EvaluatedThrough *int64 `json:"evaluatedThrough"`
	// Nodes are the candidate's nodes in name order.
	Nodes []ShadowNode `json:"nodes"`
	// Unsupported are candidate budgets the recording cannot judge: none
	// since the relays record the scope values and ops a scoped or
	// op-filtered candidate needs (kept for the answer's shape).
	Unsupported []SimUnsupported `json:"unsupported"`
	// Assumes says what the evaluation assumes.
	Assumes []string `json:"assumes"`
}

// ShadowNode is one node of a shadow candidate: its candidate budgets (in
// the document's syntax), what it would have done over the range and per
// minute.
type ShadowNode struct {
	Node string `json:"node"`
	// Budgets is the candidate's budget list for the node, as the
	// document declares budgets.
	Budgets json.RawMessage `json:"budgets" ts:"unknown[]"`
	// IfEnforced sums the range; Sentence says it in one line ("if
	// enforced: 95 of 100 items delayed, up to 19 s; no backlog").
	IfEnforced ShadowTotals `json:"ifEnforced"`
	Sentence   string       `json:"sentence"`
	// Notes say what the evaluation could not judge exactly over the
	// range: items judged without their scope value or op (the relays'
	// cap on distinct values a second, GATE_SHADOW_KEYS_PER_SECOND), and
	// a scoped budget whose field the items did not carry.
	Notes []string `json:"notes"`
	// PerMinute is every evaluated minute of the range, oldest first.
	PerMinute []ShadowMinute `json:"perMinute"`
}

// ShadowTotals is a shadow node's figures over a range of minutes.
type ShadowTotals struct {
	// Arrived and Delayed are summed; PeakBacklog, DelayMaxMs and
	// OldestWaitingMs are the range's largest; Backlog is the last
	// minute's.
	Arrived         int64 `json:"arrived"`
	Delayed         int64 `json:"delayed"`
	Backlog         int64 `json:"backlog"`
	PeakBacklog     int64 `json:"peakBacklog"`
	DelayMaxMs      int64 `json:"delayMaxMs"`
	OldestWaitingMs int64 `json:"oldestWaitingMs"`
	// Approximate are the items (summed) a scoped or op-filtered
	// candidate judged without their scope value or op: past the relays'
	// cap on distinct values a second, they charged only the budgets
	// that charge every item. The figures are exact when it is 0.
	Approximate int64 `json:"approximate"`
}

// ShadowMinute is one node's shadow result for one minute.
type ShadowMinute struct {
	// T is the minute's start (ms).
	T int64 `json:"t"`
	// Arrived are the items recorded at the node; Admitted those the
	// candidate would have let through in the minute; Delayed those of
	// them that waited at least a second; Backlog the items still waiting
	// at the minute's end.
	Arrived  int64 `json:"arrived"`
	Admitted int64 `json:"admitted"`
	Delayed  int64 `json:"delayed"`
	Backlog  int64 `json:"backlog"`
	// DelayP50Ms and DelayMaxMs are the delay the candidate would have
	// added to the items admitted in the minute; OldestWaitingMs how long
	// the oldest waiting item had waited at its end.
	DelayP50Ms      int64 `json:"delayP50Ms"`
	DelayMaxMs      int64 `json:"delayMaxMs"`
	OldestWaitingMs int64 `json:"oldestWaitingMs"`
	// Approximate are the minute's items judged without their scope
	// value or op (ShadowTotals.Approximate).
	Approximate int64 `json:"approximate"`
}

// ShadowDeleted is DELETE …/shadow.
type ShadowDeleted struct {
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Deleted says a candidate was set and is now gone.
	Deleted bool `json:"deleted"`
}
