package wire

import "encoding/json"

// Safe changes: the diff of a declaration against the stored document, the
// dry run that answers it, and a graph's change history (gate-api's
// declare routes; libs/diff computes the diff).

// Diff is what storing a declaration changes against the graph's stored
// document: the answer of a dry run (PUT …?dryRun=true), of a PUT that
// stored, and of each history revision against the one before it. It is
// computed by libs/diff from the two compiled plans and documents, so its
// numbers are the enforced ones (sub-window counts, ceilings, effective
// shares). Every list is empty, never null, and sorted by name.
type Diff struct {
	// Created is true when nothing was stored: every node, path, queue,
	// group and counter is added. Deleted is true for a history revision
	// that records a deletion: everything is removed.
	Created bool `json:"created"`
	Deleted bool `json:"deleted"`
	// Changed is false when the document would be stored byte for byte as
	// it is stored now: a PUT of it changes nothing.
	Changed bool `json:"changed"`
	// FromVersion is the stored document's version (null when nothing is
	// stored); ToVersion the new one (null for a deletion).
	FromVersion *uint32 `json:"fromVersion"`
	ToVersion   *uint32 `json:"toVersion"`
	// Mode is the change between Watch and enforcing ("watch" ↔
	// "enforce"); null when the mode stays (or for a created or deleted
	// graph).
	Mode *ModeChange `json:"mode"`
	// Nodes are the nodes added, removed or changed (their settings or
	// budgets).
	Nodes []NodeChange `json:"nodes"`
	// Paths are the paths added, removed or changed (their hops, priority
	// or shares).
	Paths []PathChange `json:"paths"`
	// Queues are the queues a PUT would provision (added: a Gate-owned
	// queue configured, an egress the broker does not know created bare),
	// leave unused (removed: no stage reads or writes it any more; the
	// broker keeps it and its messages) or whose kind or partitions change.
	Queues []QueueChange `json:"queues"`
	// Groups are the consumer groups the relays would create (added) or
	// stop reading with (removed: the group and its cursor stay on the
	// queue).
	Groups []GroupChange `json:"groups"`
	// Counters are the kv counters whose sub-window changes: the key stays
	// and the live counter keeps the TTL it was created with until its
	// current sub-window ends (the TTL is create-only); the next one opens
	// with the new window.
	Counters []CounterChange `json:"counters"`
	// Settings are the graph's own settings that change: maxAttempts,
	// counters.windowSeconds (roll-ups), watch.durationSeconds.
	Settings []FieldChange `json:"settings"`
}

// The Change of a NodeChange, BudgetChange, PathChange, QueueChange,
// GroupChange and CounterChange.
const (
	ChangeAdded   = "added"
	ChangeRemoved = "removed"
	ChangeChanged = "changed"
)

// The modes of a ModeChange.
const (
	ModeWatch   = "watch"
	ModeEnforce = "enforce"
)

// ModeChange is a graph moving between Watch and enforcing.
type ModeChange struct {
	// From and To are "watch" or "enforce".
	From string `json:"from"`
	To   string `json:"to"`
}

// NodeChange is one node of a Diff.
type NodeChange struct {
	Node string `json:"node"`
	// Change is "added", "removed" or "changed".
	Change string `json:"change"`
	// Fields are the node's settings that change (ingress, egress,
	// egress group, http push, shed, ingress partitions, cost, batch,
	// concurrency), rendered as text; empty for an added or removed node.
	Fields []FieldChange `json:"fields"`
	// Budgets are the node's enforced budgets added, removed or changed
	// (none are enforced in Watch).
	Budgets []BudgetChange `json:"budgets"`
}

// FieldChange is one setting's old and new value, rendered as text; null
// when the setting is absent on that side.
type FieldChange struct {
	Field string  `json:"field"`
	From  *string `json:"from"`
	To    *string `json:"to"`
}

// BudgetChange is one budget of a node: its old and new numbers.
type BudgetChange struct {
	// Budget is the budget's id.
	Budget string `json:"budget"`
	// Change is "added", "removed" or "changed".
	Change string `json:"change"`
	// From is the stored budget (null when added); To the new one (null
	// when removed).
	From *BudgetShape `json:"from"`
	To   *BudgetShape `json:"to"`
}

// BudgetShape is a budget's enforced numbers.
type BudgetShape struct {
	// Key is its kv counter (for a scoped budget, the prefix of one
	// counter per value).
	Key string `json:"key"`
	// Count per TimeMs, subdivided into SubWindows sub-windows of CountSub
	// each, WindowSubSeconds long (the counter's TTL).
	Count            int64 `json:"count"`
	TimeMs           int64 `json:"timeMs"`
	SubWindows       int64 `json:"subWindows"`
	CountSub         int64 `json:"countSub"`
	WindowSubSeconds int64 `json:"windowSubSeconds"`
	// ScopeBy, SharedKey and WhenOp are as declared (null / empty when
	// not).
	ScopeBy   *string  `json:"scopeBy"`
	SharedKey *string  `json:"sharedKey"`
	WhenOp    []string `json:"whenOp"`
	// Ceilings are each visiting path's ceiling round(CountSub × share).
	Ceilings []PathCeiling `json:"ceilings"`
}

// PathCeiling is one path's ceiling on a counter.
type PathCeiling struct {
	Path    string `json:"path"`
	Ceiling int64  `json:"ceiling"`
}

// PathChange is one path of a Diff.
type PathChange struct {
	Path string `json:"path"`
	// Change is "added", "removed" or "changed".
	Change string     `json:"change"`
	From   *PathShape `json:"from"`
	To     *PathShape `json:"to"`
}

// PathShape is a path as declared and compiled.
type PathShape struct {
	// Hops are the path's nodes in order (a fan-out hop names several).
	Hops []Hop `json:"hops"`
	// Priority is the declared priority.
	Priority uint32 `json:"priority"`
	// Share is the declared share (null: not declared).
	Share *float64 `json:"share"`
	// Shares are the effective share at each node the path visits, in hop
	// order: its ceiling on that node's counters is round(countSub × share).
	Shares []NodeShare `json:"shares"`
}

// NodeShare is a path's effective share at one node.
type NodeShare struct {
	Node  string  `json:"node"`
	Share float64 `json:"share"`
}

// QueueChange is one queue of a Diff.
type QueueChange struct {
	Queue string `json:"queue"`
	// Change is "added" (provisioned by the PUT), "removed" (left unused,
	// kept by the broker with its messages) or "changed".
	Change string      `json:"change"`
	From   *QueueShape `json:"from"`
	To     *QueueShape `json:"to"`
}

// QueueShape is a queue of a plan's provisioning set.
type QueueShape struct {
	// Kind is "ingress", "ingress (yours)", "interior" or "egress".
	Kind        string `json:"kind"`
	OwnedByGate bool   `json:"ownedByGate"`
	// Partitions is the announced width (null: none announced).
	Partitions *uint32 `json:"partitions"`
}

// GroupChange is one consumer group of a Diff: a stage's group on its
// source queue.
type GroupChange struct {
	Queue string `json:"queue"`
	Group string `json:"group"`
	// Change is "added" (the relays create it on their first pop) or
	// "removed" (no stage reads with it any more; it stays on the queue).
	Change string `json:"change"`
	// Path and Node name the stage that reads (or read) with it.
	Path string `json:"path"`
	Node string `json:"node"`
	// SeedsAt says where an added group starts: "head" on an ingress
	// queue (every retained message is work for it) or "tail" on an
	// interior queue (from the graph's start); "" for a removed group.
	SeedsAt string `json:"seedsAt"`
}

// The SeedsAt of an added GroupChange.
const (
	SeedsAtHead = "head"
	SeedsAtTail = "tail"
)

// CounterChange is one kv counter whose sub-window changes.
type CounterChange struct {
	Key string `json:"key"`
	// Node and Budget name the budget it counts for (on the new side).
	Node   string `json:"node"`
	Budget string `json:"budget"`
	// Shared is true for an application-wide counter (sharedKey): other
	// graphs that charge it see the new window too.
	Shared bool `json:"shared"`
	// FromWindowSeconds / ToWindowSeconds are the sub-window (the
	// counter's TTL), FromCountSub / ToCountSub what one sub-window admits.
	FromWindowSeconds int64 `json:"fromWindowSeconds"`
	ToWindowSeconds   int64 `json:"toWindowSeconds"`
	FromCountSub      int64 `json:"fromCountSub"`
	ToCountSub        int64 `json:"toCountSub"`
}

// DryRun is the 200 answer of PUT …/graphs/{name}?dryRun=true (and of a
// restore's dry run): everything a PUT would answer, and the diff against
// the stored document. Nothing was provisioned, stored or annotated.
type DryRun struct {
	PlanResponse
	// DryRun is always true.
	DryRun bool `json:"dryRun"`
	// ETag is the entity tag the document would be stored with.
	ETag string `json:"etag"`
	// StoredETag is the stored document's entity tag the diff was made
	// against (null when nothing is stored): send it as If-Match (or
	// If-None-Match: * when null) to store exactly this change and nothing
	// else.
	StoredETag *string `json:"storedEtag"`
	// Diff is the change against the stored document.
	Diff Diff `json:"diff"`
}

// GraphVersion is one revision of a graph's change history: a document
// stored (or a deletion), by whom, when.
type GraphVersion struct {
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// Revision numbers the graph's history: 1, 2, … in store order.
	Revision int64 `json:"revision"`
	// At is when it was stored (Unix ms).
	At int64 `json:"at"`
	// ChangedBy is the console identity (an e-mail) or "api" for the
	// application plane; Via is "console" or "api".
	ChangedBy string `json:"changedBy"`
	Via       string `json:"via"`
	// Action is "declare" (a PUT), "sync" (a target of PUT …/targets),
	// "restore" or "delete" (a DELETE, or a target the sync removed).
	Action string `json:"action"`
	// Version is the document's version, ETag its entity tag (both null
	// for a deletion).
	Version *uint32 `json:"version"`
	ETag    *string `json:"etag"`
	// RestoredFrom is the revision a restore copied (null otherwise).
	RestoredFrom *int64 `json:"restoredFrom"`
	// Summary is the diff against the previous revision in one line.
	Summary string `json:"summary"`
	// Current is true for the revision whose document is stored now.
	Current bool `json:"current"`
}

// The Via of a GraphVersion, and the ChangedBy of the application plane.
const (
	ViaConsole = "console"
	ViaAPI     = "api"
)

// The Action of a GraphVersion.
const (
	ActionDeclare = "declare"
	ActionSync    = "sync"
	ActionRestore = "restore"
	ActionDelete  = "delete"
)

// GraphVersionPage is one page of GET …/graphs/{name}/versions, newest
// first.
type GraphVersionPage struct {
	Items []GraphVersion `json:"items"`
	// Next is the cursor of the following (older) page; null on the last.
	Next *string `json:"next"`
	// Total is how many revisions the graph's history holds.
	Total int64 `json:"total"`
}

// GraphRevision is GET …/graphs/{name}/versions/{revision}: one revision,
// its document and its diff against the revision before it.
type GraphRevision struct {
	GraphVersion
	// Document is the stored document exactly as stored (null for a
	// deletion).
	Document json.RawMessage `json:"document" ts:"unknown"`
	// Diff is the change against the previous revision (against nothing
	// for the first).
	Diff Diff `json:"diff"`
}
