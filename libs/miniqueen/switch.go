package miniqueen

import "net/http"

// SetKVDisabled turns the operator's KV kill switch on or off (queen-wire
// §7.4, §8.7): while on, the KV routes answer 503 kv_disabled with
// Retry-After: 1 and a transaction carrying kv riders answers 403
// kv_disabled with nothing applied; transactions without riders still
// commit.
func (s *Server) SetKVDisabled(on bool) { s.kvOff.Store(on) }

// SetRidersIgnored makes the transaction route behave like a broker older
// than the riders: the top-level kv array is not read, so a bundle commits
// its pushes and acks without applying (or answering slots for) its riders,
// and a riders-only bundle is refused for having no operations. Tests use it
// to prove that a relay never forwards uncharged on such a broker.
func (s *Server) SetRidersIgnored(on bool) { s.ridersOff.Store(on) }

// SetKVAbsent makes the broker one without a kv store, as Queen 0.15.1 is
// and Queen 1.0.4 without QUEEN_KV_ENABLED=true was: every KV route answers
// 404 no_such_route, and a transaction's kv array is not read (its pushes
// and acks commit, no rider applies or answers a slot, a riders-only
// bundle has no operations). Gate's capability probe must see it missing.
func (s *Server) SetKVAbsent(on bool) { s.kvAbsent.Store(on) }

// SetDepthAbsent makes the broker one without the depth route (older than
// 1.0.4): GET /api/v1/resources/queues/:queue/depth answers 404
// no_such_route.
func (s *Server) SetDepthAbsent(on bool) { s.depthAbsent.Store(on) }

// SetLeaseReleasedByAckCount makes acks behave as Queen 0.15.1's did: the
// cursor still moves to the highest completed ack, but a claim's lease is
// released only once as many messages of it were acked as it holds, so a
// settle that acks a claim's last message alone (Gate's one cumulative
// ack) leaves the partition leased until the lease expires. Gate's
// capability probe must see the ack semantics its settle relies on
// missing.
func (s *Server) SetLeaseReleasedByAckCount(on bool) { s.ackCount.Store(on) }

// WithoutKV starts the server with SetKVAbsent on.
func WithoutKV() Option { return func(s *Server) { s.kvAbsent.Store(true) } }

// WithoutDepth starts the server with SetDepthAbsent on.
func WithoutDepth() Option { return func(s *Server) { s.depthAbsent.Store(true) } }

// WithLeaseReleasedByAckCount starts the server with
// SetLeaseReleasedByAckCount on.
func WithLeaseReleasedByAckCount() Option { return func(s *Server) { s.ackCount.Store(true) } }

// noSuchRoute answers 404 no_such_route, as a broker without the route does.
func noSuchRoute(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no_such_route", "detail": r.Method + " " + r.URL.Path + " is not a route of this broker"})
}

// kvDisabled answers the KV routes' kill-switch refusal and reports whether
// it did.
func (s *Server) kvDisabled(w http.ResponseWriter) bool {
	if !s.kvOff.Load() {
		return false
	}
	writeKVError(w, &kvError{status: http.StatusServiceUnavailable, code: "kv_disabled", reason: "kv_disabled", detail: "KV is switched off by the operator (miniqueen SetKVDisabled)"})
	return true
}
