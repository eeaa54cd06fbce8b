package console

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-console/config"
)

// httpsSpellings are ways an operator may write an https GATE_PUBLIC_URL:
// every one is https, and each is read as the origin a browser sends.
var httpsSpellings = []struct{ raw, canonical string }{
	{"https://gate.example.test", "https://gate.example.test"},
	{"HTTPS://gate.example.test", "https://gate.example.test"},
	{"Https://gate.example.test", "https://gate.example.test"},
	{"hTtPs://Gate.Example.TEST", "https://gate.example.test"},
	{"HTTPS://gate.example.test/", "https://gate.example.test"},
	{"https://gate.example.test//", "https://gate.example.test"},
	{"HTTPS://gate.example.test:443", "https://gate.example.test"},
	{"hTTps://GATE.example.test:443/", "https://gate.example.test"},
	{"HTTPS://gate.example.test:8443", "https://gate.example.test:8443"},
	{"Https://Gate.Example.Test:8443/", "https://gate.example.test:8443"},
}

// C1: the dev bypass is refused on every spelling of an https public URL,
// at boot through the knobs and in New for a configuration built by hand.
func TestDevBypassRefusedOnEverySpellingOfHTTPS(t *testing.T) {
	for _, sp := range httpsSpellings {
		t.Run(sp.raw, func(t *testing.T) {
			_, err := config.Load(func(k string) string {
				return map[string]string{"GATE_DEV_EMAIL": "dev@example.com", "GATE_PUBLIC_URL": sp.raw}[k]
			})
			if err == nil || !strings.Contains(err.Error(), "GATE_DEV_EMAIL is set and GATE_PUBLIC_URL="+sp.canonical+" is https") {
				t.Errorf("Load with GATE_PUBLIC_URL=%s and the dev bypass: %v; want the https refusal", sp.raw, err)
			}
			cfg := config.Default()
			cfg.DevEmail, cfg.PublicURL = "dev@example.com", sp.raw
			if _, err := New(cfg, slog.New(slog.DiscardHandler), Options{}); err == nil || !strings.Contains(err.Error(), "GATE_DEV_EMAIL") {
				t.Errorf("New accepted the dev bypass on %s: %v", sp.raw, err)
			}
		})
	}
	for _, plain := range []string{"http://localhost:8790", "HTTP://127.0.0.1:8790/", "Http://gate.local"} {
		if _, err := config.Load(func(k string) string {
			return map[string]string{"GATE_DEV_EMAIL": "dev@example.com", "GATE_PUBLIC_URL": plain}[k]
		}); err != nil {
			t.Errorf("the dev bypass on the http URL %s was refused: %v", plain, err)
		}
	}
}

// C1: with sign-in (OIDC) on every spelling of https, every answer carries
// Strict-Transport-Security, the session, login and cleared cookies are
// Secure, the redirect URI is the canonical origin's, and a write the
// browser sends from that origin through a proxy that rewrote Host is
// trusted.
func TestEverySpellingOfHTTPSIsHTTPS(t *testing.T) {
	for _, sp := range httpsSpellings {
		t.Run(sp.raw, func(t *testing.T) {
			c, err := config.Load(func(k string) string {
				return map[string]string{
					"GATE_PUBLIC_URL": sp.raw, "GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "s",
					"GOOGLE_ALLOWED_DOMAINS": "example.com", "GATE_SESSION_SECRET": testSecret,
				}[k]
			})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.PublicURL != sp.canonical || !c.HTTPS() || c.RedirectURL() != sp.canonical+config.CallbackPath {
				t.Fatalf("GATE_PUBLIC_URL=%s read as %q (https %v, redirect %s), want %s", sp.raw, c.PublicURL, c.HTTPS(), c.RedirectURL(), sp.canonical)
			}

			o := newOIDCEnvWith(t, func(cfg *config.Config) { cfg.PublicURL = sp.raw })
			if got := o.s.cfg.PublicURL; got != sp.canonical {
				t.Errorf("New kept GATE_PUBLIC_URL as %q, want %q", got, sp.canonical)
			}
			for _, path := range []string{"/api/me", "/health", config.LoginPath} {
				if w := o.get(path); w.Header().Get("Strict-Transport-Security") == "" {
					t.Errorf("%s on %s: no Strict-Transport-Security (status %d)", path, sp.raw, w.Code)
				}
			}
			if c := o.sessionCookie(t, "a@example.com"); !c.Secure {
				t.Errorf("session cookie on %s is not Secure: %+v", sp.raw, c)
			}
			u, login := o.login(t, "/")
			if !login.Secure {
				t.Errorf("login cookie on %s is not Secure: %+v", sp.raw, login)
			}
			if got := u.Query().Get("redirect_uri"); got != sp.canonical+config.CallbackPath {
				t.Errorf("redirect_uri %q on %s, want %s", got, sp.raw, sp.canonical+config.CallbackPath)
			}
			_, _, res := o.callback(t, o.authorize(t, u, nil), login)
			sess := sessionFrom(res)
			if sess == nil || !sess.Secure {
				t.Errorf("the OIDC sign-in's session cookie on %s is not Secure: %+v", sp.raw, sess)
			}
			for _, ck := range res.Cookies() {
				if ck.Name == LoginCookie && !ck.Secure {
					t.Errorf("the cleared login cookie on %s is not Secure: %+v", sp.raw, ck)
				}
			}
			// A browser on the public origin, behind a proxy that sends its
			// own Host: trusted by origin, so not refused as cross-site.
			r := httptest.NewRequest(http.MethodPost, "http://backend.internal:8790/api/auth/logout", nil)
			r.Header.Set("Origin", sp.canonical)
			if w := o.do(r); w.Code == http.StatusForbidden {
				t.Errorf("a write from the public origin %s was refused as cross-site: %s", sp.canonical, body(t, w))
			}
		})
	}
}

// Every answer carries the security headers, refusals included: the
// cross-site 403 (written before any route runs), a 401, a 403 read-only,
// a 404 and a success, on http and on https.
func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	for _, public := range []string{"http://console.test", "https://console.test"} {
		e := newTestEnv(t, func(c *config.Config) { c.PublicURL = public }, nil)
		viewer := e.sessionCookie(t, "viewer@example.com")
		crossSite := newReq(http.MethodPost, "/v1/apps/shop/graphs/g/nodes/n/backoff", `{"retryAfterSeconds":5}`)
		crossSite.Header.Set("Sec-Fetch-Site", "cross-site")
		crossSite.AddCookie(e.sessionCookie(t, "admin@example.com"))
		readOnly := newReq(http.MethodPost, "/v1/apps/shop/graphs/g/nodes/n/backoff", `{"retryAfterSeconds":5}`)
		readOnly.AddCookie(viewer)
		me := newReq(http.MethodGet, "/api/me", "")
		me.AddCookie(viewer)
		cases := []struct {
			name   string
			r      *http.Request
			status int
		}{
			{"cross-site write", crossSite, http.StatusForbidden},
			{"no session", newReq(http.MethodGet, "/api/me", ""), http.StatusUnauthorized},
			{"read-only", readOnly, http.StatusForbidden},
			{"no sign-in route", newReq(http.MethodGet, "/api/auth/nope", ""), http.StatusNotFound},
			{"me", me, http.StatusOK},
		}
		for _, c := range cases {
			w := e.do(c.r)
			if w.Code != c.status {
				t.Fatalf("%s on %s: %d, want %d: %s", c.name, public, w.Code, c.status, body(t, w))
			}
			h := w.Header()
			want := map[string]string{
				"X-Content-Type-Options":     "nosniff",
				"Referrer-Policy":            "same-origin",
				"X-Frame-Options":            "DENY",
				"Cross-Origin-Opener-Policy": "same-origin",
				"Cache-Control":              "no-store",
			}
			for k, v := range want {
				if h.Get(k) != v {
					t.Errorf("%s on %s: %s is %q, want %q", c.name, public, k, h.Get(k), v)
				}
			}
			if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("%s on %s: Content-Security-Policy %q", c.name, public, h.Get("Content-Security-Policy"))
			}
			if hsts := h.Get("Strict-Transport-Security"); (hsts != "") != strings.HasPrefix(public, "https") {
				t.Errorf("%s on %s: Strict-Transport-Security %q", c.name, public, hsts)
			}
		}
	}
}
