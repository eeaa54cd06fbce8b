package declare

import "github.com/queen-mq/gate/libs/finding"

// Group is the family a rule belongs to, in reporting order.
type Group string

// Rule groups, in the order findings are reported.
const (
	GroupNaming    Group = "naming"
	GroupShape     Group = "shape"
	GroupBudgets   Group = "budgets"
	GroupShares    Group = "shares"
	GroupOwnership Group = "ownership"
	GroupWatch     Group = "watch"
	GroupPlan      Group = "plan"
	GroupVersion   Group = "version"
	GroupWarnings  Group = "warnings"
)

// Rule is one entry of the declare rule catalogue. Names are API: clients
// match on them, and the docs are generated from this table.
type Rule struct {
	// Name is the rule's API name, e.g. "share-range".
	Name string `json:"name"`
	// Severity is Error (the PUT is refused) or Warning (accepted).
	Severity finding.Severity `json:"severity"`
	// Group is the rule's family.
	Group Group `json:"group"`
	// Status is the HTTP status of a refusal (422, or 409 for conflicts with
	// another graph or the running version); 0 for warnings.
	Status int `json:"status,omitempty"`
	// Broker is true when the rule needs facts from the broker (Facts) or
	// other graphs (Stored) and is listed as unchecked without them.
	Broker bool `json:"broker,omitempty"`
	// Summary says, in one sentence, what the rule protects.
	Summary string `json:"summary"`
}

// Rule names. Each constant is the API name of a catalogue entry.
const (
	RuleApplication        = "application"
	RuleGraphName          = "graph-name"
	RuleNodeName           = "node-name"
	RulePathName           = "path-name"
	RuleNodes              = "nodes"
	RulePaths              = "paths"
	RuleQueueName          = "queue-name"
	RulePathLength         = "path-length"
	RuleFanoutBranch       = "fanout-branch"
	RuleFanoutTerminal     = "fanout-terminal"
	RulePathNode           = "path-node"
	RulePathEntry          = "path-entry"
	RulePathTerminal       = "path-terminal"
	RuleAcyclic            = "acyclic"
	RuleNodeOrphan         = "node-orphan"
	RuleMaxAttemptsRange   = "max-attempts-range"
	RuleCostInteger        = "cost-integer"
	RuleCostPath           = "cost-path"
	RuleCostMax            = "cost-max"
	RuleBatchRange         = "batch-range"
	RuleNodeBudget         = "node-budget"
	RuleNodeUnscopedBudget = "node-unscoped-budget"
	RuleBudgetUnique       = "budget-unique"
	RuleKVKeyLength        = "kv-key-length"
	RuleKVKeySeparator     = "kv-key-separator"
	RuleBudgetCount        = "budget-count"
	RuleBudgetWindow       = "budget-window"
	RuleSubwindowRange     = "subwindow-range"
	RuleSubwindowFits      = "subwindow-fits"
	RuleCostFits           = "cost-fits"
	RuleScopePath          = "scope-path"
	RuleWhenopEmpty        = "whenop-empty"
	RuleProvenance         = "provenance"
	RuleSharedConflict     = "shared-conflict"
	RuleVendorMeter        = "vendor-meter"
	RuleBudgetKeys         = "budget-keys"
	RuleShareRange         = "share-range"
	RuleShareTop           = "share-top"
	RuleShareOrder         = "share-order"
	RuleShareRoundsOut     = "share-rounds-out"
	RuleIngressOwner       = "ingress-owner"
	RuleGateQueue          = "gate-queue"
	RuleWatchDuration      = "watch-duration"
	RuleCountersWindow     = "counters-window"
	RuleWorkerTotal        = "worker-total"
	RuleVersionBump        = "version-bump"
	RuleVersionOrder       = "version-order"

	RuleWindowSubSecond     = "window-sub-second"
	RuleSubwindowRounding   = "subwindow-rounding"
	RuleWindowBoundary      = "window-boundary"
	RuleFanoutMultiplies    = "fanout-multiplies"
	RuleIngressQueue        = "ingress-queue"
	RuleIngressRetention    = "ingress-retention"
	RuleWindowHeadOfLine    = "window-head-of-line"
	RuleSinglePartition     = "single-partition"
	RuleEgressOwner         = "egress-owner"
	RuleQueueCrossGraph     = "queue-cross-graph"
	RuleSharedConflictGraph = "shared-conflict-graph"
)

// Catalogue is every declare rule, in reporting order. Migration warnings
// of v1 documents are named by package migrate and reported separately.
var Catalogue = []Rule{
	{RuleApplication, finding.Error, GroupNaming, 422, false, "the application name becomes part of every queue name and kv key"},
	{RuleGraphName, finding.Error, GroupNaming, 422, false, "the graph name is one segment of queue names; the dot joins graph and node"},
	{RuleNodeName, finding.Error, GroupNaming, 422, false, "a node name becomes a queue name, which must stay within 63 characters"},
	{RulePathName, finding.Error, GroupNaming, 422, false, "a path name names consumer groups; two paths with one name would split one stream"},
	{RuleNodes, finding.Error, GroupNaming, 422, false, "a graph with no nodes limits nothing"},
	{RulePaths, finding.Error, GroupNaming, 422, false, "a graph with no paths moves nothing"},
	{RuleQueueName, finding.Error, GroupNaming, 422, false, "an application-owned queue or group name must be one the broker takes: at most 255 bytes, no whitespace, control characters or '/'"},
	{RulePathLength, finding.Error, GroupShape, 422, false, "an empty path has nothing to consume or deliver"},
	{RuleFanoutBranch, finding.Error, GroupShape, 422, false, "a fan-out is a flat array of at least two node names"},
	{RuleFanoutTerminal, finding.Error, GroupShape, 422, false, "a fan-out must be the last hop of its path"},
	{RulePathNode, finding.Error, GroupShape, 422, false, "a path may only visit declared nodes"},
	{RulePathEntry, finding.Error, GroupShape, 422, false, "a path must start at a node with an ingress"},
	{RulePathTerminal, finding.Error, GroupShape, 422, false, "a path must end at a node with an egress"},
	{RuleAcyclic, finding.Error, GroupShape, 422, false, "paths must not form a cycle, or messages would circle and charge again"},
	{RuleNodeOrphan, finding.Error, GroupShape, 422, false, "every declared node must be visited by a path"},
	{RuleMaxAttemptsRange, finding.Error, GroupBudgets, 422, false, "maxAttempts must be 1..20: 0 refuses all re-entry, unbounded livelocks"},
	{RuleCostInteger, finding.Error, GroupBudgets, 422, false, "an item cost is a whole number of at least 1"},
	{RuleCostPath, finding.Error, GroupBudgets, 422, false, "cost.path must be a payload path outside Gate's _gate stamp"},
	{RuleCostMax, finding.Error, GroupBudgets, 422, false, "cost.max below cost.default makes the default cost inadmissible"},
	{RuleBatchRange, finding.Error, GroupBudgets, 422, false, "a node's batch must be 1..1000"},
	{RuleNodeBudget, finding.Error, GroupBudgets, 422, false, "an enforcing node needs at least one budget"},
	{RuleNodeUnscopedBudget, finding.Error, GroupBudgets, 422, false, "an enforcing node needs one budget with neither scopeBy nor whenOp"},
	{RuleBudgetUnique, finding.Error, GroupBudgets, 422, false, "budget ids are kv keys and must be unique per node"},
	{RuleKVKeyLength, finding.Error, GroupBudgets, 422, false, "a budget's kv key must fit the broker's 512 bytes, less 65 for the scope value of a scoped budget"},
	{RuleKVKeySeparator, finding.Error, GroupBudgets, 422, false, "a budget id or sharedKey must not contain ':', the kv key separator, or two budgets could spend one counter"},
	{RuleBudgetCount, finding.Error, GroupBudgets, 422, false, "a budget's count must be at least 1"},
	{RuleBudgetWindow, finding.Error, GroupBudgets, 422, false, "a budget's timeMs must be at least 100"},
	{RuleSubwindowRange, finding.Error, GroupBudgets, 422, false, "subWindows must be 1..3600"},
	{RuleSubwindowFits, finding.Error, GroupBudgets, 422, false, "subWindows must not exceed count, or each sub-window gets less than one unit"},
	{RuleCostFits, finding.Error, GroupBudgets, 422, false, "the node's largest item must fit one sub-window of every budget"},
	{RuleScopePath, finding.Error, GroupBudgets, 422, false, "scopeBy must be a payload path outside Gate's _gate stamp"},
	{RuleWhenopEmpty, finding.Error, GroupBudgets, 422, false, "whenOp [] would charge nothing"},
	{RuleProvenance, finding.Error, GroupBudgets, 422, false, "a documented budget names its source and asOf"},
	{RuleSharedConflict, finding.Error, GroupBudgets, 422, false, "one sharedKey is one counter and must be declared alike everywhere in a document"},
	{RuleVendorMeter, finding.Error, GroupBudgets, 422, false, "a budget mirrors one vendor meter, named by a known header family, and only an unscoped budget can"},
	{RuleBudgetKeys, finding.Error, GroupBudgets, 422, false, "per-key counts belong to a scoped budget: at most 1,000 in the document, each value within the key room, each count in 1..10^12 and fitting the node's largest item"},
	{RuleShareRange, finding.Error, GroupShares, 422, false, "a share is a fraction of the counter in (0, 1]"},
	{RuleShareTop, finding.Error, GroupShares, 422, false, "a top-priority path at a node must have share 1, or headroom belongs to nobody"},
	{RuleShareOrder, finding.Error, GroupShares, 422, false, "a less important path must not have a larger share than a more important one"},
	{RuleShareRoundsOut, finding.Error, GroupShares, 422, false, "every path's ceiling must admit the node's largest item"},
	{RuleIngressOwner, finding.Error, GroupOwnership, 422, true, "one ingress queue has one owning node, or what leaves doubles"},
	{RuleGateQueue, finding.Error, GroupOwnership, 422, false, "a Gate-owned ingress or interior queue (gate.{app}.{graph}.{node}.ingress or .in) belongs to the graph that mints it; naming it skips that graph's budgets or copies its items"},
	{RuleWatchDuration, finding.Error, GroupWatch, 422, false, "a watch lasts 120 s to 30 days"},
	{RuleCountersWindow, finding.Error, GroupWatch, 422, false, "roll-ups are per minute: counters.windowSeconds must be 60"},
	{RuleWatchHistory, finding.Error, GroupWatch, 422, true, "Watch records to PostgreSQL history, so the server must have PG_HOST set"},
	{RuleWorkerTotal, finding.Error, GroupPlan, 422, false, "a compiled graph runs at most 4096 workers"},
	{RuleVersionBump, finding.Error, GroupVersion, 409, true, "a change that re-founds a counter or strands a queue needs a higher version"},
	{RuleVersionOrder, finding.Error, GroupVersion, 409, true, "a declaration never replaces a higher stored version: an older document arriving late is refused"},
	{RuleWindowSubSecond, finding.Warning, GroupWarnings, 0, false, "a window that is not whole seconds per sub-window is enforced tighter than declared"},
	{RuleSubwindowRounding, finding.Warning, GroupWarnings, 0, false, "sub-windows that do not divide count lose more than 2% of it"},
	{RuleWindowBoundary, finding.Warning, GroupWarnings, 0, false, "a long defaulted sub-window lets a sliding observer see twice count_sub"},
	{RuleFanoutMultiplies, finding.Warning, GroupWarnings, 0, false, "a fan-out turns one message into one per branch"},
	{RuleIngressQueue, finding.Warning, GroupWarnings, 0, true, "an application-owned ingress queue does not exist yet"},
	{RuleIngressRetention, finding.Warning, GroupWarnings, 0, true, "an ingress queue's retention can delete paced work"},
	{RuleWindowHeadOfLine, finding.Warning, GroupWarnings, 0, false, "a full scoped key over a long window blocks its partition's head"},
	{RuleSinglePartition, finding.Warning, GroupWarnings, 0, true, "a one-partition ingress is strict global FIFO with one claim in flight"},
	{RuleEgressOwner, finding.Warning, GroupWarnings, 0, true, "an egress queue shared with another graph mixes their worker backlogs"},
	{RuleQueueCrossGraph, finding.Warning, GroupWarnings, 0, true, "an ingress on another graph's egress copies its items past that graph's workers; an egress onto another graph's ingress feeds its budgets"},
	{RuleSharedConflictGraph, finding.Warning, GroupWarnings, 0, true, "another graph declares the same sharedKey differently"},
}

var catalogue = func() map[string]Rule {
	m := make(map[string]Rule, len(Catalogue))
	for _, r := range Catalogue {
		m[r.Name] = r
	}
	return m
}()

// Lookup returns the catalogue entry of a rule name.
func Lookup(name string) (Rule, bool) {
	r, ok := catalogue[name]
	return r, ok
}
