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

// kvDisabled answers the KV routes' kill-switch refusal and reports whether
// it did.
func (s *Server) kvDisabled(w http.ResponseWriter) bool {
	if !s.kvOff.Load() {
		return false
	}
	writeKVError(w, &kvError{status: http.StatusServiceUnavailable, code: "kv_disabled", reason: "kv_disabled", detail: "KV is switched off by the operator (miniqueen SetKVDisabled)"})
	return true
}
