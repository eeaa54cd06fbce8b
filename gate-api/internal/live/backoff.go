package live

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Breaker bounds, in seconds.
const (
	minBackoffSeconds = 1
	maxBackoffSeconds = 3600
	maxBy             = 256
	maxReason         = 512
	// annotateTimeout bounds recording a backoff annotation: the hold or
	// the lift never waits long on (or fails because of) history.
	annotateTimeout = 2 * time.Second
)

type backoffBody struct {
	RetryAfterSeconds *int64  `json:"retryAfterSeconds"`
	RefundCost        *int64  `json:"refundCost"`
	By                *string `json:"by"`
	Reason            *string `json:"reason"`
}

type liftBody struct {
	By     *string `json:"by"`
	Reason *string `json:"reason"`
}

// text reads an optional bounded text field of a backoff body.
func text(field string, v *string, limit int) (string, *httpapi.Refusal) {
	if v == nil {
		return "", nil
	}
	if bad := plane.CheckText(field, *v, limit); bad != nil {
		return "", bad
	}
	return strings.TrimSpace(*v), nil
}

// annotate records a backoff annotation (who held or lifted the node and
// why) in the graph's history, when there is one; a failure is logged as
// skipped, never returned: the hold itself is in kv already.
func (l *Live) annotate(ctx context.Context, e *plane.Entry, ch history.Change) {
	db := l.p.History()
	if db == nil {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), annotateTimeout)
	defer cancel()
	if err := db.AddConfigEvent(actx, history.ConfigEvent{App: e.App, Graph: e.Graph, At: l.p.Clock.Now().UnixMilli(), Change: ch}); err != nil {
		l.p.Log.Warn("backoff annotation skipped: history is unavailable", "app", e.App, "graph", e.Graph, "node", ch.Node, "label", ch.Label, "error", err)
	}
}

// backoffNode resolves the graph and node of a backoff route (a stopped
// runtime is not refused here: the counters are kv rows either way).
func (l *Live) backoffNode(q *httpapi.Request) (*plane.Entry, *plan.Node, *httpapi.Refusal) {
	e, bad := l.p.Resolve(q, "graph")
	if bad != nil {
		return nil, nil, bad
	}
	n, bad := plane.NodeOf(q, e)
	if bad != nil {
		return nil, nil, bad
	}
	return e, n, nil
}

// backoff is POST …/nodes/{node}/backoff: the vendor said 429, so the
// node's window is spent — every unscoped counter is written to its ceiling
// with a TTL of the Retry-After — and the breaker record is written for the
// whole fleet to see.
func (l *Live) backoff(q *httpapi.Request) *httpapi.Refusal {
	raw, bad := q.ReadRaw()
	if bad != nil {
		return bad
	}
	var b backoffBody
	if bad := httpapi.DecodeStrict(raw, &b, "the backoff body"); bad != nil {
		return bad
	}
	if b.RetryAfterSeconds == nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "retryAfterSeconds is required: send the vendor's Retry-After in whole seconds (1–3600)").Field("retryAfterSeconds")
	}
	if b.RefundCost != nil && *b.RefundCost < 0 {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "refundCost is %d: send the cost units the refused calls had spent (≥ 0), or leave it out", *b.RefundCost).Field("refundCost")
	}
	by, bad := text("by", b.By, maxBy)
	if bad != nil {
		return bad
	}
	reason, bad := text("reason", b.Reason, maxReason)
	if bad != nil {
		return bad
	}
	e, n, bad := l.backoffNode(q)
	if bad != nil {
		return bad
	}
	seconds := min(max(*b.RetryAfterSeconds, minBackoffSeconds), maxBackoffSeconds)
	var refund int64
	if b.RefundCost != nil {
		refund = *b.RefundCost
	}
	rec, keys, bad := l.hold(q, e, n, seconds, refund, by)
	if bad != nil {
		return bad
	}
	l.p.Log.Warn("backoff: node held", "app", e.App, "graph", e.Graph, "node", n.Name, "retryAfterSeconds", seconds, "by", by, "reason", reason, "keys", keys)
	l.annotate(q.Context(), e, history.Change{Label: history.LabelBackoffApplied, Version: e.Plan.Version, Mode: mode(e), Node: n.Name, By: by, Reason: reason, Seconds: seconds})
	httpapi.WriteJSON(q.W, http.StatusOK, wire.Backoff{
		OK: true, Node: n.Name, RetryAfterSeconds: seconds, Until: rec.Until(),
		Keys: plane.NonNil(keys), Refunded: refund,
	})
	return nil
}

// hold spends the unscoped counters of node n for seconds (crediting
// refund first) and writes the breaker record: the backoff, whoever asked
// for it (the backoff route, or an observed 429 or 503 with Retry-After).
func (l *Live) hold(q *httpapi.Request, e *plane.Entry, n *plan.Node, seconds, refund int64, by string) (store.Breaker, []string, *httpapi.Refusal) {
	counters := budget.Unscoped(n)
	keys := budget.Keys(counters)
	if len(keys) == 0 {
		return store.Breaker{}, nil, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeNoUnscopedBudget, "node '%s' has only per-key (scoped) budgets, so it has no window to spend: back off in your worker, or add an unscoped budget to the node", n.Name).Field("node")
	}
	ctx := q.Context()
	refundErr, err := l.p.Limiter().Spend(ctx, counters, seconds, refund)
	if refundErr != nil {
		l.p.Log.Warn("backoff: crediting the refund failed", "app", e.App, "graph", e.Graph, "node", n.Name, "error", refundErr)
	}
	if err != nil {
		return store.Breaker{}, nil, httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "spending the window of node '%s' failed: %v; the node is not held, retry", n.Name, err)
	}
	at := l.p.Clock.Now().UnixMilli()
	rec := store.Breaker{At: at, RetryAfterSeconds: seconds, By: by, Application: e.App, Graph: e.Graph, Node: n.Name}
	if err := l.p.Store.PutBreaker(ctx, n.BreakerKey, rec); err != nil {
		return store.Breaker{}, nil, httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "the window of node '%s' is spent, but %v; retry so the fleet can see it", n.Name, err)
	}
	return rec, keys, nil
}

// liftBackoff is DELETE …/nodes/{node}/backoff: delete every unscoped
// counter and the breaker record in one batch, so the next admission starts
// a fresh window.
func (l *Live) liftBackoff(q *httpapi.Request) *httpapi.Refusal {
	// The body is optional: a DELETE without one (no Content-Type, no
	// length) lifts as before; one with a body must be JSON.
	var b liftBody
	if q.R.ContentLength != 0 || q.R.Header.Get("Content-Type") != "" {
		raw, bad := q.ReadRaw()
		if bad != nil {
			return bad
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			if bad := httpapi.DecodeStrict(raw, &b, "the lift body"); bad != nil {
				return bad
			}
		}
	}
	by, bad := text("by", b.By, maxBy)
	if bad != nil {
		return bad
	}
	reason, bad := text("reason", b.Reason, maxReason)
	if bad != nil {
		return bad
	}
	e, n, bad := l.backoffNode(q)
	if bad != nil {
		return bad
	}
	counters := budget.Unscoped(n)
	cleared := append(budget.Keys(counters), n.BreakerKey)
	if err := l.p.Limiter().Lift(q.Context(), counters, n.BreakerKey); err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "lifting the backoff of node '%s' failed: %v; the node stays held until its window expires, retry", n.Name, err)
	}
	l.p.Log.Info("backoff lifted", "app", e.App, "graph", e.Graph, "node", n.Name, "by", by, "reason", reason)
	l.annotate(q.Context(), e, history.Change{Label: history.LabelBackoffLifted, Version: e.Plan.Version, Mode: mode(e), Node: n.Name, By: by, Reason: reason})
	httpapi.WriteJSON(q.W, http.StatusOK, wire.BackoffLifted{OK: true, Node: n.Name, Cleared: cleared})
	return nil
}

// mode is the graph's mode as an annotation names it.
func mode(e *plane.Entry) string {
	if e.Plan.Watching {
		return history.ModeWatch
	}
	return history.ModeEnforce
}
