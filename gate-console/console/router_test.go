package console

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-console/config"
)

// serveMux is the console's routing as net/http's ServeMux did it before
// the console moved to libs/httpapi's router, with the same handlers.
func serveMux(s *Server) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+config.LoginPath, s.signin.login)
	mux.HandleFunc("GET "+config.CallbackPath, s.signin.callback)
	mux.HandleFunc("POST "+config.LogoutPath, s.logout)
	mux.HandleFunc("/api/auth/", noSignInRoute)
	mux.Handle("GET /api/me", s.guard(http.HandlerFunc(s.me)))
	mux.Handle("GET /api/live", s.guard(http.HandlerFunc(s.live.serve)))
	app := s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.app.ServeHTTP(w, r) }))
	mux.Handle("/api/", app)
	mux.Handle("/v1/", app)
	mux.Handle("/version", app)
	mux.Handle("/metrics", app)
	mux.Handle("/health", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.app.ServeHTTP(w, r) }))
	mux.Handle("/", s.static)
	return s.crossOrigin(s.secure(mux))
}

var nonce = regexp.MustCompile(`'nonce-([^']+)'`)

// answerOf is what a comparison of two routers looks at: status, the
// headers that route (Location, Allow, Content-Type) and the body with the
// response's CSP nonce taken out.
func answerOf(w *httptest.ResponseRecorder) string {
	body := w.Body.String()
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain; version=") {
		body = "(Prometheus text: its counters move between two scrapes)"
	}
	if m := nonce.FindStringSubmatch(w.Header().Get("Content-Security-Policy")); m != nil {
		body = strings.ReplaceAll(body, m[1], "NONCE")
	}
	return strings.Join([]string{http.StatusText(w.Code), w.Header().Get("Location"), w.Header().Get("Allow"), w.Header().Get("Content-Type"), body}, " | ")
}

// The console's router answers every request as the ServeMux it replaced:
// the same handler (the application plane reached or not), the same
// redirects of unclean paths and of subtree roots, GET routes answering
// HEAD, a method one route does not take falling through to the subtree
// that does — for a visitor without a session and for the dev bypass.
func TestRouterAnswersAsTheServeMuxDid(t *testing.T) {
	signIn := newTestEnv(t, nil, webFS())
	dev := newTestEnv(t, devBypass("admin@example.com"), webFS())
	requests := []struct{ method, target, accept string }{
		{"GET", "/", "text/html"}, {"HEAD", "/", "text/html"}, {"GET", "/index.html", ""}, {"GET", "/assets/index-3f9a1c2b.js", ""},
		{"GET", "/assets/missing.js", "text/html"}, {"GET", "/graphs/demo", "text/html"}, {"GET", "/graphs/demo", "application/json"},
		{"DELETE", "/", ""}, {"GET", "/robots.txt", ""}, {"GET", "/favicon.ico", ""},
		{"GET", "/api", ""}, {"POST", "/api", ""}, {"GET", "/api/", ""}, {"GET", "/v1", ""}, {"GET", "/api/auth", ""},
		{"GET", "/api/me", "application/json"}, {"HEAD", "/api/me", ""}, {"POST", "/api/me", "application/json"}, {"GET", "/api/me", "text/html"},
		{"GET", "/api/me/", ""}, {"GET", "/api%2Fme", ""}, {"GET", "/api//me", ""}, {"GET", "/api/./me", ""},
		{"GET", "/api/live?graphs=Bad/Name", ""}, {"POST", "/api/live", ""},
		{"GET", "/api/auth/nope", ""}, {"POST", "/api/auth/google/login", ""}, {"GET", "/api/auth/logout", ""},
		{"GET", "/api/auth/google/login?next=%2Fx", ""}, {"GET", "/api/auth/google/callback", ""},
		{"GET", "/api/overview", "application/json"}, {"GET", "/v1/apps/demo/graphs/g", "application/json"},
		{"GET", "/v1/apps/a%2Fb/graphs/g", "application/json"}, {"GET", "/v1/apps/demo/../x", ""},
		{"PUT", "/v1/apps/demo/graphs/g", "application/json"}, {"PATCH", "/version", ""}, {"GET", "/version/", "application/json"},
		{"GET", "/metrics", "application/json"}, {"GET", "/health?probe=1", ""}, {"GET", "/api/../health", ""},
	}
	for _, env := range []struct {
		name string
		e    *testEnv
	}{{"no session", signIn}, {"dev bypass", dev}} {
		old := serveMux(env.e.s)
		for _, r := range requests {
			do := func(h http.Handler) (string, int64) {
				req := httptest.NewRequest(r.method, "http://console.test"+r.target, nil)
				if r.accept != "" {
					req.Header.Set("Accept", r.accept)
				}
				before := env.e.reached.Load()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				return answerOf(w), env.e.reached.Load() - before
			}
			want, wantReached := do(old)
			got, gotReached := do(env.e.h)
			if got != want || gotReached != wantReached {
				t.Errorf("%s, %s %s (Accept %q):\n got  %.300s (application plane reached %d)\n want %.300s (reached %d)", env.name, r.method, r.target, r.accept, got, gotReached, want, wantReached)
			}
		}
	}
}
