package server

import (
	"net/http"
	"strings"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Breaker bounds, in seconds.
const (
	minBackoffSeconds = 1
	maxBackoffSeconds = 3600
	maxBy             = 256
)

type backoffBody struct {
	RetryAfterSeconds *int64  `json:"retryAfterSeconds"`
	RefundCost        *int64  `json:"refundCost"`
	By                *string `json:"by"`
}

// backoffNode resolves the graph and node of a backoff route (a stopped
// runtime is not refused here: the counters are kv rows either way).
func (s *Server) backoffNode(q *req) (*entry, *plan.Node, *apiError) {
	e, bad := s.resolve(q, "graph")
	if bad != nil {
		return nil, nil, bad
	}
	name := q.vars["node"]
	if bad := checkName("node", name); bad != nil {
		return nil, nil, bad
	}
	n := e.plan.Node(name)
	if n == nil {
		return nil, nil, fail(http.StatusNotFound, "no node '%s' in graph '%s/%s': its nodes are %s", name, e.app, e.graph, strings.Join(nodeNames(e.plan), ", ")).field("node")
	}
	return e, n, nil
}

// backoff is POST …/nodes/{node}/backoff: the vendor said 429, so the
// node's window is spent — every unscoped counter is written to its ceiling
// with a TTL of the Retry-After — and the breaker record is written for the
// whole fleet to see.
func (s *Server) backoff(q *req) *apiError {
	raw, bad := readRaw(q.w, q.r, q.limit)
	if bad != nil {
		return bad
	}
	var b backoffBody
	if bad := decodeStrict(raw, &b, "the backoff body"); bad != nil {
		return bad
	}
	if b.RetryAfterSeconds == nil {
		return fail(http.StatusUnprocessableEntity, "retryAfterSeconds is required: send the vendor's Retry-After in whole seconds (1–3600)").field("retryAfterSeconds")
	}
	if b.RefundCost != nil && *b.RefundCost < 0 {
		return fail(http.StatusUnprocessableEntity, "refundCost is %d: send the cost units the refused calls had spent (≥ 0), or leave it out", *b.RefundCost).field("refundCost")
	}
	by := ""
	if b.By != nil {
		by = *b.By
		if bad := checkText("by", by, maxBy); bad != nil {
			return bad
		}
	}
	e, n, bad := s.backoffNode(q)
	if bad != nil {
		return bad
	}
	seconds := min(max(*b.RetryAfterSeconds, minBackoffSeconds), maxBackoffSeconds)
	counters := budget.Unscoped(n)
	keys := budget.Keys(counters)
	if len(keys) == 0 {
		return fail(http.StatusUnprocessableEntity, "node '%s' has only per-key (scoped) budgets, so it has no window to spend: back off in your worker, or add an unscoped budget to the node", n.Name).field("node")
	}
	ctx := q.r.Context()
	var refund int64
	if b.RefundCost != nil {
		refund = *b.RefundCost
	}
	refundErr, err := s.limiter().Spend(ctx, counters, seconds, refund)
	if refundErr != nil {
		s.log.Warn("backoff: crediting the refund failed", "application", e.app, "graph", e.graph, "node", n.Name, "error", refundErr)
	}
	if err != nil {
		return fail(http.StatusBadGateway, "spending the window of node '%s' failed: %v; the node is not held, retry", n.Name, err)
	}
	at := s.now().UnixMilli()
	rec := store.Breaker{At: at, RetryAfterSeconds: seconds, By: by, Application: e.app, Graph: e.graph, Node: n.Name}
	if err := s.store.PutBreaker(ctx, n.BreakerKey, rec); err != nil {
		return fail(http.StatusBadGateway, "the window of node '%s' is spent, but %v; retry so the fleet can see it", n.Name, err)
	}
	s.log.Warn("backoff: node held", "application", e.app, "graph", e.graph, "node", n.Name, "retryAfterSeconds", seconds, "by", by, "keys", keys)
	writeJSON(q.w, http.StatusOK, wire.Backoff{
		OK: true, Node: n.Name, RetryAfterSeconds: seconds, Until: rec.Until(),
		Keys: nonNil(keys), Refunded: refund,
	})
	return nil
}

// limiter is the counter protocol on the server's broker and namespace.
func (s *Server) limiter() *budget.Limiter {
	return &budget.Limiter{KV: s.client, NS: s.cfg.KVNamespace}
}

// liftBackoff is DELETE …/nodes/{node}/backoff: delete every unscoped
// counter and the breaker record in one batch, so the next admission starts
// a fresh window.
func (s *Server) liftBackoff(q *req) *apiError {
	e, n, bad := s.backoffNode(q)
	if bad != nil {
		return bad
	}
	counters := budget.Unscoped(n)
	cleared := append(budget.Keys(counters), n.BreakerKey)
	if err := s.limiter().Lift(q.r.Context(), counters, n.BreakerKey); err != nil {
		return fail(http.StatusBadGateway, "lifting the backoff of node '%s' failed: %v; the node stays held until its window expires, retry", n.Name, err)
	}
	s.log.Info("backoff lifted", "application", e.app, "graph", e.graph, "node", n.Name)
	writeJSON(q.w, http.StatusOK, wire.BackoffLifted{OK: true, Node: n.Name, Cleared: cleared})
	return nil
}
