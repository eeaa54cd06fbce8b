package live

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// Limits per key at runtime: a scoped budget's values may each get their
// own count through these routes, one kv row per value (libs/budget
// PutKeyLimit), without a re-declare. Every relay applies a change within
// budget.KeyRefresh (a second: one sub-window at most). A runtime limit
// wins over the document's keys for the same value; deleting it brings the
// document's (or the budget's) count back.

// keyPageMax is the largest page of GET …/keys; keyPageDefault the page
// when limit is absent.
const (
	keyPageMax     = 1000
	keyPageDefault = 100
)

type keyLimitBody struct {
	Count *int64 `json:"count"`
}

// keysRoutes registers the per-key limit routes.
func (l *Live) keysRoutes(r *httpapi.Router) {
	small := l.p.Cfg.BodyBytes
	const base = "/graphs/{graph}/nodes/{node}/budgets/{budget}/keys"
	// The reads also on the console's paths, open to viewers (the node
	// page lists a budget's limits per key).
	read := func(name, suffix string, h httpapi.Handler) {
		plane.Both(r, name, http.MethodGet, suffix, small, h)
		r.Handle(httpapi.Route{Name: name, Method: http.MethodGet, Path: "/api/apps/{app}" + suffix, Limit: small, Read: true}, h)
		r.Handle(httpapi.Route{Name: "flat-" + name, Method: http.MethodGet, Path: "/api" + suffix, Limit: small, Flat: true, Read: true}, h)
	}
	read("key-limits", base, l.listKeyLimits)
	read("key-limit-get", base+"/{value}", l.getKeyLimit)
	plane.Both(r, "key-limit-put", http.MethodPut, base+"/{value}", small, l.putKeyLimit)
	plane.Both(r, "key-limit-delete", http.MethodDelete, base+"/{value}", small, l.deleteKeyLimit)
}

// keyBudget resolves the graph, node and scoped budget of a key route.
func (l *Live) keyBudget(q *httpapi.Request) (*plane.Entry, *plan.Node, *plan.Budget, *httpapi.Refusal) {
	e, n, bad := l.backoffNode(q)
	if bad != nil {
		return nil, nil, nil, bad
	}
	id := q.Vars["budget"]
	var b *plan.Budget
	var ids []string
	for i := range n.Budgets {
		ids = append(ids, n.Budgets[i].ID)
		if n.Budgets[i].ID == id {
			b = &n.Budgets[i]
		}
	}
	if b == nil {
		return nil, nil, nil, httpapi.Refuse(http.StatusNotFound, wire.CodeBudgetNotFound, "node '%s' has no budget '%s': its budgets are %v", n.Name, clip(id), ids).Field("budget")
	}
	if b.ScopeBy == "" {
		return nil, nil, nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeUnscopedBudget, "budget '%s' of node '%s' has no scopeBy: it keeps one counter for every item, so no value can have its own count; set limits per key on a scoped budget (one with scopeBy)", b.ID, n.Name).Field("budget")
	}
	return e, n, b, nil
}

// keyTarget resolves what the routes of one value name: the scoped
// budget (keyBudget) and {value} — valid UTF-8, not empty, within the key
// room.
func (l *Live) keyTarget(q *httpapi.Request) (*plan.Node, *plan.Budget, string, *httpapi.Refusal) {
	_, n, b, bad := l.keyBudget(q)
	if bad != nil {
		return nil, nil, "", bad
	}
	v, bad := keyValue(q, n, b)
	return n, b, v, bad
}

// keyValue reads {value}: valid UTF-8, not empty, within the key room.
func keyValue(q *httpapi.Request, n *plan.Node, b *plan.Budget) (string, *httpapi.Refusal) {
	v := q.Vars["value"]
	if !utf8.ValidString(v) {
		return "", httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidKeyLimit, "the scope value is not valid UTF-8: give it as the payload carries it, percent-encoded in the URL").Field("value")
	}
	if field, why := budget.ValidateKeyLimit(n, b, v, b.Count); field == "value" {
		return "", httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidKeyLimit, "%s", why).Field("value")
	}
	return v, nil
}

// keyLimit is the answer for value whose count is count from source.
func keyLimit(n *plan.Node, b *plan.Budget, value string, count int64, source string, at int64) wire.KeyLimit {
	out := wire.KeyLimit{Node: n.Name, Budget: b.ID, Value: value, Count: count, TimeMs: b.TimeMs, Source: source,
		Ceiling: b.CountCeiling(count, n.WidestShare), Default: b.Count, At: at}
	if c, ok := b.Keys[value]; ok {
		out.Document = &c
	}
	return out
}

// effective is value's count as every relay applies it: the runtime row,
// else the document's, else the budget's.
func (l *Live) effective(q *httpapi.Request, n *plan.Node, b *plan.Budget, value string) (wire.KeyLimit, *httpapi.Refusal) {
	lim := l.p.Limiter()
	row, ok, err := budget.GetKeyLimit(q.Context(), lim.KV, lim.NS, b, value)
	if err != nil {
		return wire.KeyLimit{}, httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "reading the limit of '%s' on budget '%s' failed: %v; retry", clip(value), b.ID, err)
	}
	if ok {
		return keyLimit(n, b, value, row.Count, "runtime", row.At), nil
	}
	return declaredLimit(n, b, value), nil
}

// declaredLimit is what value counts without a runtime limit: the
// document's count ("document"), else the budget's ("budget").
func declaredLimit(n *plan.Node, b *plan.Budget, value string) wire.KeyLimit {
	count, declared := b.KeyCount(value)
	if declared {
		return keyLimit(n, b, value, count, "document", 0)
	}
	return keyLimit(n, b, value, count, "budget", 0)
}

// getKeyLimit is GET …/keys/{value}: what the value counts now, and why.
func (l *Live) getKeyLimit(q *httpapi.Request) *httpapi.Refusal {
	n, b, v, bad := l.keyTarget(q)
	if bad != nil {
		return bad
	}
	out, bad := l.effective(q, n, b, v)
	if bad != nil {
		return bad
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// putKeyLimit is PUT …/keys/{value} {"count": N}: the value counts N per
// the budget's timeMs on every relay within a second.
func (l *Live) putKeyLimit(q *httpapi.Request) *httpapi.Refusal {
	n, b, v, bad := l.keyTarget(q)
	if bad != nil {
		return bad
	}
	raw, bad := q.ReadRaw()
	if bad != nil {
		return bad
	}
	var body keyLimitBody
	if bad := httpapi.DecodeStrict(raw, &body, "the key limit body"); bad != nil {
		return bad
	}
	if body.Count == nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "count is required: send the value's count per %dms, e.g. {\"count\": %d}", b.TimeMs, b.Count).Field("count")
	}
	if field, why := budget.ValidateKeyLimit(n, b, v, *body.Count); field != "" {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidKeyLimit, "%s", why).Field(field)
	}
	lim := l.p.Limiter()
	row, err := budget.PutKeyLimit(q.Context(), lim.KV, lim.NS, b, v, *body.Count, l.p.Clock.Now())
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "writing the limit of '%s' on budget '%s' failed: %v; nothing changed, retry", clip(v), b.ID, err)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, keyLimit(n, b, v, row.Count, "runtime", row.At))
	return nil
}

// deleteKeyLimit is DELETE …/keys/{value}: the runtime limit is gone and
// the value counts the document's count (or the budget's) again.
func (l *Live) deleteKeyLimit(q *httpapi.Request) *httpapi.Refusal {
	n, b, v, bad := l.keyTarget(q)
	if bad != nil {
		return bad
	}
	lim := l.p.Limiter()
	found, err := budget.DeleteKeyLimit(q.Context(), lim.KV, lim.NS, b, v)
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "deleting the limit of '%s' on budget '%s' failed: %v; retry", clip(v), b.ID, err)
	}
	if !found {
		return httpapi.Refuse(http.StatusNotFound, wire.CodeKeyLimitNotFound, "'%s' has no runtime limit on budget '%s' of node '%s' (a count the document gives stays until the document changes)", clip(v), b.ID, n.Name).Field("value")
	}
	out := declaredLimit(n, b, v)
	out.Deleted = true
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// listKeyLimits is GET …/keys?after=&limit=: a page of the runtime limits
// in byte order of their values (nextAfter leads to the next), and on the
// first page the document's.
func (l *Live) listKeyLimits(q *httpapi.Request) *httpapi.Refusal {
	_, n, b, bad := l.keyBudget(q)
	if bad != nil {
		return bad
	}
	after, limit := "", keyPageDefault
	for name, vals := range q.Query() {
		switch {
		case name != "after" && name != "limit":
			return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "the key list takes after and limit; %.40q is neither", name).Field(name)
		case len(vals) != 1:
			return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s is given %d times: give it once", name, len(vals)).Field(name)
		case name == "after":
			after = vals[0]
			if len(after) > plan.KeyLimitRoom(b.Key) || !utf8.ValidString(after) {
				return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "after must be the nextAfter of the previous page (a scope value of at most %d bytes)", plan.KeyLimitRoom(b.Key)).Field("after")
			}
		default:
			v, err := strconv.Atoi(vals[0])
			if err != nil || v < 1 || v > keyPageMax {
				return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "limit is %.20q: give a page size from 1 to %d (absent is %d)", vals[0], keyPageMax, keyPageDefault).Field("limit")
			}
			limit = v
		}
	}
	lim := l.p.Limiter()
	rows, next, err := budget.ListKeyLimits(q.Context(), lim.KV, lim.NS, b, after, limit)
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "listing the limits per key of budget '%s' failed: %v; retry", b.ID, err)
	}
	out := wire.KeyLimits{Node: n.Name, Budget: b.ID, ScopeBy: b.ScopeBy, Default: b.Count, TimeMs: b.TimeMs, NextAfter: next, Wins: "runtime",
		Runtime: make([]wire.KeyLimit, 0, len(rows)), Document: []wire.KeyLimit{}}
	for _, r := range rows {
		out.Runtime = append(out.Runtime, keyLimit(n, b, r.Value, r.Row.Count, "runtime", r.Row.At))
	}
	if after == "" {
		for _, v := range slices.Sorted(maps.Keys(b.Keys)) {
			out.Document = append(out.Document, keyLimit(n, b, v, b.Keys[v], "document", 0))
		}
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}
