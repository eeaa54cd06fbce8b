package insight

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// explainMaxOp bounds ?op= (an op longer than any the push door stores
// could name no budget anyway).
const explainMaxOp = 256

// explainQuery are the query parameters explain reads; any other is
// refused, so a misspelt one never silently explains something else.
var explainQuery = map[string]bool{"scope": true, "op": true, "path": true, "partition": true, "transactionId": true}

// explainMaxTxn bounds ?transactionId= (the push door's own limit on txn).
const explainMaxTxn = 256

// explain is GET …/graphs/{graph}/nodes/{node}/explain?scope=&op=&path=&partition=:
// every counter an item with that scope value and op would charge at the
// node (unscoped, scoped, shared; each path's share), its value, ceiling
// and window end, any backoff, which one binds, how many items are ahead
// of it in its partition and the earliest admission it can expect — from
// the broker alone (no PostgreSQL).
func (in *Insight) explain(q *httpapi.Request) *httpapi.Refusal {
	e, bad := in.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	n, bad := plane.NodeOf(q, e)
	if bad != nil {
		return bad
	}
	x, bad := readExplainQuery(q.Query(), n)
	if bad != nil {
		return bad
	}
	var rec *store.ItemRecord
	if x.hasTxn {
		if rec, bad = in.itemRecord(q, e, n, &x); bad != nil {
			return bad
		}
	}
	stage, bad := plane.NodeStage(e, n, x.path)
	if bad != nil {
		return bad
	}
	counters, unjudged, err := budget.ItemCounters(n, stage.Path, x.op, x.scope, x.hasScope)
	if err != nil {
		// readExplainQuery checked the key room; a refusal here would be
		// a disagreement between the two.
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeScopeValueTooLong, "%v", err).Field("scope")
	}
	partition, hasPartition := x.partition, x.hasPartition
	ctx, cancel := context.WithTimeout(q.Context(), diagViewTimeout)
	defer cancel()
	if x.hasScope {
		// The value's own limit, as every relay charges it: a runtime
		// row over the document's keys over the budget's count.
		if err := in.p.Limiter().ItemKeyLimits(ctx, n, stage.Path, x.scope, counters); err != nil {
			return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeETAUnavailable, "explaining node '%s' needs the limits per key of '%.60s' from the broker, which did not answer; retry", n.Name, x.scope).RetryAfter(1)
		}
	}
	ans, complete := in.explainItem(ctx, e, n, stage, counters, unjudged, partition, hasPartition)
	if !complete {
		return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeETAUnavailable, "explaining node '%s' needs its counters and backlog from the broker, which did not answer; retry", n.Name).RetryAfter(1)
	}
	if x.hasScope {
		ans.Scope = &x.scope
	}
	if x.hasOp {
		ans.Op = &x.op
	}
	if rec != nil {
		ans.TransactionID, ans.PushedAt, ans.PushedTo = &x.txn, &rec.At, &rec.Node
		forwarded := ans.Ahead != nil && *ans.Ahead == 0
		ans.Forwarded = &forwarded
		ans.Assumes += "; by transaction id: the item's op, scope value and partition are the push door's record of it; it counts as waiting while its partition has items pending at the node (one pushed after it keeps it counted), and as forwarded once none are"
	}
	ans.Sentence = sentence(&ans, time.UnixMilli(ans.At))
	httpapi.WriteJSON(q.W, http.StatusOK, ans)
	return nil
}

// explainQ is explain's query, read.
type explainQ struct {
	scope, op, path, partition, txn       string
	hasScope, hasOp, hasPartition, hasTxn bool
}

// itemRecord reads the push door's record of the item x names by its
// transaction id and fills x's op, scope and partition from it: 404
// item-not-found naming the id when there is none, 503 when the broker
// did not answer.
func (in *Insight) itemRecord(q *httpapi.Request, e *plane.Entry, n *plan.Node, x *explainQ) (*store.ItemRecord, *httpapi.Refusal) {
	ctx, cancel := context.WithTimeout(q.Context(), diagViewTimeout)
	defer cancel()
	rec, found, err := in.p.Store.Item(ctx, e.App, e.Graph, x.txn)
	if err != nil {
		return nil, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeETAUnavailable, "explaining transaction %.80q needs the push door's record of it from the broker, which did not answer; retry", x.txn).RetryAfter(1)
	}
	if !found {
		if in.p.Cfg.ItemRecordSeconds <= 0 {
			return nil, httpapi.Refuse(http.StatusNotFound, wire.CodeItemNotFound, "this gate-api keeps no records of pushed items (GATE_ITEM_RECORD_SECONDS=0), so transactionId %.80q cannot be looked up: explain by scope and op, or turn the records on", x.txn).Field("transactionId")
		}
		return nil, httpapi.Refuse(http.StatusNotFound, wire.CodeItemNotFound, "no item was pushed to graph '%s/%s' with transactionId %.80q in the last %s: check the id (the txn of the push), or explain by scope and op", e.App, e.Graph, x.txn, time.Duration(in.p.Cfg.ItemRecordSeconds)*time.Second).Field("transactionId")
	}
	x.op, x.hasOp = rec.Op, true
	x.scope, x.hasScope = rec.Scope, rec.HasScope
	if x.hasScope {
		// A scope value of a budget of the entry node that node n does not
		// count by is left out, as ?scope= would be refused there.
		scoped := false
		for i := range n.Budgets {
			scoped = scoped || n.Budgets[i].ScopeBy != ""
		}
		x.hasScope = scoped
	}
	x.partition, x.hasPartition = rec.Partition, true
	return &rec, nil
}

// readExplainQuery reads explain's query for node n: only scope, op, path
// and partition, each at most once and valid UTF-8; scope only on a node
// that counts per value, and within every scoped budget's key room; op
// at most explainMaxOp bytes and named by some budget; partition 1 to 256
// bytes. Anything else is a 422 naming the field.
func readExplainQuery(v url.Values, n *plan.Node) (explainQ, *httpapi.Refusal) {
	var x explainQ
	for name, vals := range v {
		if name == "" {
			return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "the query has a parameter with no name (\"=…\" or \"&&\"): explain takes scope, op, path and partition").Field("query")
		}
		if !explainQuery[name] {
			return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "explain takes scope, op, path and partition; %.40q is none of them", name).Field(name)
		}
		if len(vals) > 1 {
			return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s is given %d times: give it once", name, len(vals)).Field(name)
		}
		if !utf8.ValidString(vals[0]) {
			return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s is not valid UTF-8: give the value as the payload carries it", name).Field(name)
		}
	}
	x.path = v.Get("path")
	if len(x.path) > 256 {
		return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "path is %d bytes: give the name of a path through node '%s'", len(x.path), n.Name).Field("path")
	}
	x.scope, x.hasScope = v.Get("scope"), v.Has("scope")
	if x.hasScope {
		scoped := false
		for i := range n.Budgets {
			b := &n.Budgets[i]
			if b.ScopeBy == "" {
				continue
			}
			scoped = true
			if room := plan.ScopeRoom(b.Key); len(x.scope) > room {
				return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeScopeValueTooLong, "scope is %d bytes, and budget '%s' of node '%s' has room for %d: its counter key %s:… would pass the broker's %d-byte limit; give the value the payload carries (an item with this one is refused at the push door)", len(x.scope), b.ID, n.Name, max(room, 0), b.Key, plan.MaxKVKeyBytes).
					Field("scope").Budget(b.ID).Room(int64(max(room, 0))).Bytes(int64(len(x.scope)))
			}
		}
		if !scoped {
			return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "node '%s' has no budget that counts per scope value: leave scope out", n.Name).Field("scope")
		}
	}
	x.op, x.hasOp = v.Get("op"), v.Has("op")
	if len(x.op) > explainMaxOp {
		return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "op is %d bytes; an op is at most %d", len(x.op), explainMaxOp).Field("op")
	}
	if x.hasOp && !opNamed(n, x.op) {
		return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "no budget of node '%s' names op %.60q (%s): give an op one of them names, or leave op out", n.Name, x.op, namedOps(n)).Field("op")
	}
	x.partition, x.hasPartition = v.Get("partition"), v.Has("partition")
	if x.hasPartition && (x.partition == "" || len(x.partition) > 256) {
		return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "partition must be a partition name of 1 to 256 bytes (the one the item was pushed to)").Field("partition")
	}
	x.txn, x.hasTxn = v.Get("transactionId"), v.Has("transactionId")
	if x.hasTxn {
		if x.txn == "" || len(x.txn) > explainMaxTxn {
			return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "transactionId must be 1 to %d bytes: the txn the item was pushed with", explainMaxTxn).Field("transactionId")
		}
		for _, other := range []string{"scope", "op", "partition"} {
			if v.Has(other) {
				return x, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "give transactionId without %s: the item's scope value, op and partition come from the push door's record of it", other).Field(other)
			}
		}
	}
	return x, nil
}

// opNamed reports whether some budget of n names op (a pattern of its
// whenOp matches it).
func opNamed(n *plan.Node, op string) bool {
	for i := range n.Budgets {
		if w := n.Budgets[i].WhenOp; w != nil && cost.MatchOp(w, op) {
			return true
		}
	}
	return false
}

// namedOps lists the ops n's budgets name, for the refusal.
func namedOps(n *plan.Node) string {
	var ops []string
	for i := range n.Budgets {
		ops = append(ops, n.Budgets[i].WhenOp...)
	}
	if len(ops) == 0 {
		return "its budgets apply to every op"
	}
	return "its budgets name " + strings.Join(ops, ", ")
}

// explainItem reads the counters, the backoff record and the backlog and
// judges the item; complete is false when a read failed.
func (in *Insight) explainItem(ctx context.Context, e *plane.Entry, n *plan.Node, st *plan.Stage, counters []budget.ItemCounter, unjudged []string, partition string, hasPartition bool) (wire.Explanation, bool) {
	now := in.p.Clock.Now()
	keys := make([]string, 0, len(counters)+1)
	for _, c := range counters {
		keys = append(keys, c.Key)
	}
	keys = append(keys, n.BreakerKey)
	live, err := in.p.Limiter().ReadKeys(ctx, keys)
	if err != nil {
		return wire.Explanation{}, false
	}
	var backoff *wire.ExplainBackoff
	var until time.Time
	if breakers, err := in.p.Store.Breakers(ctx, e.Plan); err == nil {
		if b, ok := breakers[n.BreakerKey]; ok && b.Until() > now.UnixMilli() {
			backoff = explainBackoff(b)
			until = time.UnixMilli(b.Until())
		}
	} else {
		return wire.Explanation{}, false
	}
	ans := wire.Explanation{At: now.UnixMilli(), Application: e.App, Graph: e.Graph, Node: n.Name, Path: st.Path,
		Cost: max(n.Cost.Default, 1), Unjudged: nonNilStrings(unjudged), Backoff: backoff, Counters: []wire.ExplainCounter{}}
	var ahead int64
	d, err := in.p.Client.Depth(ctx, st.Source, st.Group)
	if err != nil {
		return wire.Explanation{}, false
	}
	if hasPartition {
		ans.Partition = &partition
		var pending int64
		for _, pd := range d.Partitions {
			if pd.Partition == partition {
				pending = pd.Pending
			}
		}
		ahead = pending
		ans.Ahead = &pending
	} else {
		var most int64
		for _, pd := range d.Partitions {
			most = max(most, pd.Pending)
		}
		ans.AheadMax = &most
	}
	j := budget.JudgeItem(counters, ans.Cost, ahead, live, until, now)
	for i, c := range j.Counters {
		wc := wire.ExplainCounter{Budget: c.Budget, Kind: c.Kind, Key: c.Key, Value: c.Value, Ceiling: c.Ceiling, Widest: c.Widest,
			WindowSeconds: c.WindowSeconds, Fits: c.Fits, Binds: i == j.Binding, Shares: []wire.ExplainShare{},
			KeyCount: c.KeyCount, KeySource: c.KeySource}
		for _, p := range c.SortedShares() {
			wc.Shares = append(wc.Shares, wire.ExplainShare{Path: p, Ceiling: c.Shares[p]})
		}
		if !c.FreesAt.IsZero() {
			wc.FreesAt = new(c.FreesAt.UnixMilli())
		}
		if c.Reason != "" {
			wc.Reason = new(c.Reason)
		}
		ans.Counters = append(ans.Counters, wc)
	}
	if j.Binding >= 0 {
		ans.Binding = new(j.Counters[j.Binding].Budget)
	}
	ans.EarliestAdmission = j.Earliest.UnixMilli()
	ans.WaitSeconds = max(0, (ans.EarliestAdmission-ans.At+999)/1000)
	assumes := []string{
		"no earlier than: the counters as read now, the items ahead at the declared cost.default, one ceiling per window",
		fmt.Sprintf("the item costs the node's cost.default (%d)", ans.Cost),
	}
	if !hasPartition {
		assumes = append(assumes, "no partition given: aheadMax is the most items pending in any partition of the node's queue, and the earliest admission counts none ahead")
	}
	if len(unjudged) > 0 {
		assumes = append(assumes, fmt.Sprintf("scoped budgets %s are not judged: give ?scope= the item's value", strings.Join(unjudged, ", ")))
	}
	for _, c := range counters {
		if c.Kind == budget.KindShared {
			assumes = append(assumes, "shared keys are charged by other nodes and graphs too: their value can move before the item's turn")
			break
		}
	}
	ans.Assumes = strings.Join(assumes, "; ")
	return ans, true
}

func explainBackoff(b store.Breaker) *wire.ExplainBackoff {
	return &wire.ExplainBackoff{Until: b.Until(), RetryAfterSeconds: b.RetryAfterSeconds, By: b.By}
}

// sentence is the explanation in one sentence, as the console shows it:
// "waiting for per-listing: 100 of 100 this week, frees Tue 14:02; 3 items ahead".
func sentence(x *wire.Explanation, now time.Time) string {
	if x.Forwarded != nil && *x.Forwarded {
		return fmt.Sprintf("already forwarded: nothing is pending in partition %s at node %s (the item was pushed %s)", *x.Partition, x.Node, clockTime(*x.PushedAt, now))
	}
	var parts []string
	if x.Backoff != nil {
		parts = append(parts, fmt.Sprintf("held by a backoff until %s", clockTime(x.Backoff.Until, now)))
	}
	var binding *wire.ExplainCounter
	for i := range x.Counters {
		if x.Counters[i].Binds {
			binding = &x.Counters[i]
		}
	}
	switch {
	case binding != nil:
		s := fmt.Sprintf("waiting for %s: %d of %d %s", binding.Budget, binding.Value, binding.Ceiling, windowWords(binding.WindowSeconds))
		if x.Scope != nil && (binding.KeySource == "runtime" || binding.KeySource == "document") {
			s = fmt.Sprintf("waiting for %s (%.40s's own limit, %s): %d of %d %s", binding.Budget, *x.Scope, map[string]string{"runtime": "set at runtime", "document": "in the document"}[binding.KeySource], binding.Value, binding.Ceiling, windowWords(binding.WindowSeconds))
		}
		if binding.FreesAt != nil {
			s += ", frees " + clockTime(*binding.FreesAt, now)
		}
		if binding.Reason != nil && *binding.Reason == budget.ReasonShare {
			s += fmt.Sprintf(" (path %s's share; the widest is %d)", x.Path, binding.Widest)
		}
		parts = append(parts, s)
	case x.Backoff == nil:
		parts = append(parts, "every counter has room now")
	}
	switch {
	case x.Ahead != nil:
		parts = append(parts, plural(*x.Ahead, "item")+" ahead")
	case x.AheadMax != nil && *x.AheadMax > 0:
		parts = append(parts, fmt.Sprintf("up to %s ahead in its partition", plural(*x.AheadMax, "item")))
	}
	if x.WaitSeconds > 0 {
		parts = append(parts, "admitted no earlier than "+clockTime(x.EarliestAdmission, now))
	}
	return strings.Join(parts, "; ")
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// windowWords names a window: "this second", "this minute", "this week", or
// "this 90 s window".
func windowWords(secs int64) string {
	switch secs {
	case 1:
		return "this second"
	case 60:
		return "this minute"
	case 3600:
		return "this hour"
	case 86400:
		return "today"
	case 7 * 86400:
		return "this week"
	}
	return fmt.Sprintf("this %d s window", secs)
}

// clockTime is ms as the console says it (UTC): "14:02:05" within a day of
// now, "Tue 14:02" within a week, else a date.
func clockTime(ms int64, now time.Time) string {
	t := time.UnixMilli(ms).UTC()
	switch d := t.Sub(now); {
	case d < 24*time.Hour:
		return t.Format("15:04:05") + " UTC"
	case d < 7*24*time.Hour:
		return t.Format("Mon 15:04") + " UTC"
	}
	return t.Format("2 Jan 15:04") + " UTC"
}
