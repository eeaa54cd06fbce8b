package console

import (
	"context"
	"net/http"
	"strings"

	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

type nonceKey struct{}

// nonceFrom is the response's CSP nonce (for inline styles the editor
// injects; see README).
func nonceFrom(ctx context.Context) string {
	n, _ := ctx.Value(nonceKey{}).(string)
	return n
}

// csp is the Content-Security-Policy: scripts only from the console's own
// origin (no inline script), styles from it plus the per-response nonce,
// data: images, connections to itself (the API and the live stream), no
// plugins, no framing, forms and base URI pinned.
func csp(nonce string) string {
	return "default-src 'self'; script-src 'self'; style-src 'self' 'nonce-" + nonce + "'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// secure sets the headers every console response carries and marks API
// answers uncacheable.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce, err := randomString(16)
		if err != nil {
			httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "no randomness for the CSP nonce: %v", err))
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp(nonce))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if s.cfg.HTTPS() {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if p := r.URL.Path; strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/v1/") || p == "/health" || p == "/version" || p == "/metrics" {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), nonceKey{}, nonce)))
	})
}

// crossOrigin refuses cross-site writes around the whole public mux.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	if err := cop.AddTrustedOrigin(s.cfg.PublicURL); err != nil {
		s.log.Warn("GATE_PUBLIC_URL is not usable as a trusted origin; same-host requests still pass", "url", s.cfg.PublicURL, "error", err)
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.DrainBody(w, r)
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusForbidden, wire.CodeCrossSite, "cross-site request refused: a %s from another origin cannot change Gate (http.CrossOriginProtection); use the console at %s, or gate-api on GATE_BIND from your own network", r.Method, s.cfg.PublicURL))
	}))
	return cop.Handler(next)
}
