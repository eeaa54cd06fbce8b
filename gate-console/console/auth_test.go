package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/gate-console/internal/token"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/knob"
)

var routeVar = regexp.MustCompile(`\{([a-z]+)(:[^}]*)?\}`)

// concrete fills a gorilla path template with sample values.
func concrete(tmpl string) string {
	return routeVar.ReplaceAllStringFunc(tmpl, func(v string) string {
		switch m := routeVar.FindStringSubmatch(v); m[1] {
		case "app":
			return "demo"
		case "op":
			return "ack"
		default:
			return "x-" + m[1]
		}
	})
}

type route struct{ method, path string }

// planeRoutes are every route of both planes as mounted on the console:
// the application plane's, listed from its router, and the console's own.
// postReads are the routes gate-api marks as reads although their method
// is not GET (the candidate simulation).
func planeRoutes(e *testEnv) (writes, reads []route) {
	writes, reads, _ = planeRoutesAll(e)
	return writes, reads
}

func planeRoutesAll(e *testEnv) (writes, reads, postReads []route) {
	for _, r := range e.s.api.Routes() {
		rt := route{r.Method, concrete(r.Path)}
		switch {
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			reads = append(reads, rt)
		case r.Read:
			postReads = append(postReads, rt)
		default:
			writes = append(writes, rt)
		}
	}
	reads = append(reads, route{http.MethodGet, "/api/me"}, route{http.MethodGet, "/api/live"})
	return writes, reads, postReads
}

func forgedCookie(t *testing.T, email string) *http.Cookie {
	t.Helper()
	other := token.NewSigner([]byte("another-secret-of-at-least-32-bytes!!"), nil)
	tok, err := other.Sign(useSession, SessionTTL, &sessionClaims{SID: "x", Email: email, Actor: "google"})
	if err != nil {
		t.Fatal(err)
	}
	return &http.Cookie{Name: SessionCookie, Value: tok}
}

// TestAuthMatrixWrites: every write route of both planes × every identity
// a request can carry. Only an admin (or the dev bypass listed as admin)
// reaches the application plane; every refusal has its status and words.
func TestAuthMatrixWrites(t *testing.T) {
	signIn := newTestEnv(t, nil, webFS())
	devViewer := newTestEnv(t, devBypass("dev@example.com"), webFS())
	devAdmin := newTestEnv(t, devBypass("admin@example.com"), webFS())
	writes, _ := planeRoutes(signIn)
	if len(writes) < 15 {
		t.Fatalf("only %d write routes listed from gate-api's router: %v", len(writes), writes)
	}
	type column struct {
		name   string
		env    *testEnv
		prep   func(r *http.Request)
		status int
		words  []string
		passes bool
	}
	viewer := signIn.sessionCookie(t, "viewer@example.com")
	admin := signIn.sessionCookie(t, "admin@example.com")
	expiredEnv := newTestEnv(t, nil, webFS())
	expired := expiredEnv.sessionCookie(t, "admin@example.com")
	expiredEnv.clock.Advance(SessionTTL + time.Second)
	cols := []column{
		{name: "no session", env: signIn, prep: func(r *http.Request) {}, status: 401, words: []string{"sign in required", "no session"}},
		{name: "viewer", env: signIn, prep: func(r *http.Request) { r.AddCookie(viewer) }, status: 403, words: []string{"read-only", "viewer@example.com", "GATE_ADMIN_EMAILS"}},
		{name: "admin", env: signIn, prep: func(r *http.Request) { r.AddCookie(admin) }, passes: true},
		{name: "dev bypass (not admin)", env: devViewer, prep: func(r *http.Request) {}, status: 403, words: []string{"read-only", "dev@example.com", "GATE_ADMIN_EMAILS"}},
		{name: "dev bypass (admin)", env: devAdmin, prep: func(r *http.Request) {}, passes: true},
		{name: "cross-site", env: signIn, prep: func(r *http.Request) { r.AddCookie(admin); r.Header.Set("Sec-Fetch-Site", "cross-site") }, status: 403, words: []string{"cross-site request refused"}},
		{name: "cross-origin without fetch metadata", env: signIn, prep: func(r *http.Request) { r.AddCookie(admin); r.Header.Set("Origin", "https://evil.example") }, status: 403, words: []string{"cross-site request refused"}},
		{name: "forged cookie", env: signIn, prep: func(r *http.Request) { r.AddCookie(forgedCookie(t, "admin@example.com")) }, status: 401, words: []string{"sign in required", "not valid", "signature"}},
		{name: "expired cookie", env: expiredEnv, prep: func(r *http.Request) { r.AddCookie(expired) }, status: 401, words: []string{"sign in required", "expired"}},
		{name: "admin, form body", env: signIn, prep: func(r *http.Request) {
			r.AddCookie(admin)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}, status: 415, words: []string{"must be JSON", "Content-Type"}},
	}
	bypasses := 0
	for _, rt := range writes {
		for _, c := range cols {
			r := newReq(rt.method, rt.path, "{}")
			r.Header.Set("Accept", "application/json")
			c.prep(r)
			before := c.env.reached.Load()
			w := c.env.do(r)
			reached := c.env.reached.Load() - before
			b := body(t, w)
			if c.passes {
				if reached != 1 {
					t.Errorf("%s %s as %s: did not reach the application plane (%d %s)", rt.method, rt.path, c.name, w.Code, b)
				}
				continue
			}
			if reached != 0 {
				bypasses++
				t.Errorf("BYPASS: %s %s as %s reached the application plane (%d %s)", rt.method, rt.path, c.name, w.Code, b)
				continue
			}
			if w.Code != c.status {
				t.Errorf("%s %s as %s: status %d, want %d (%s)", rt.method, rt.path, c.name, w.Code, c.status, b)
			}
			for _, word := range c.words {
				if !strings.Contains(b, word) {
					t.Errorf("%s %s as %s: %q does not say %q", rt.method, rt.path, c.name, b, word)
				}
			}
		}
	}
	if bypasses != 0 {
		t.Fatalf("%d bypasses", bypasses)
	}
	t.Logf("%d write routes × %d columns, 0 bypasses", len(writes), len(cols))
}

// A POST that only reads — the candidate simulation, which the docs list
// among the reads — is a viewer's too (the dev bypass's without admin as
// well); it still needs a session, a JSON body and a same-site request,
// and writes stay an administrator's.
func TestViewersMayPostReads(t *testing.T) {
	e := newTestEnv(t, nil, webFS())
	dev := newTestEnv(t, devBypass("dev@example.com"), webFS())
	_, _, postReads := planeRoutesAll(e)
	if len(postReads) != 4 {
		t.Fatalf("gate-api marks %v as reads by POST, want the four simulate routes", postReads)
	}
	viewer := e.sessionCookie(t, "viewer@example.com")
	for _, rt := range postReads {
		if !strings.HasSuffix(rt.path, "/simulate") {
			t.Errorf("%s %s is marked a read: only the candidate simulation is", rt.method, rt.path)
		}
		for _, env := range []*testEnv{e, dev} {
			r := newReq(rt.method, rt.path, "{}")
			r.AddCookie(viewer)
			before := env.reached.Load()
			if w := env.do(r); env.reached.Load() != before+1 {
				t.Errorf("%s %s as a viewer: %d %s, want it to reach the application plane", rt.method, rt.path, w.Code, body(t, w))
			}
		}
		refused := []struct {
			name   string
			prep   func(*http.Request)
			status int
		}{
			{"no session", func(*http.Request) {}, http.StatusUnauthorized},
			{"form body", func(r *http.Request) { r.AddCookie(viewer); r.Header.Set("Content-Type", "text/plain") }, http.StatusUnsupportedMediaType},
			{"cross-site", func(r *http.Request) { r.AddCookie(viewer); r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
		}
		for _, c := range refused {
			r := newReq(rt.method, rt.path, "{}")
			c.prep(r)
			before := e.reached.Load()
			if w := e.do(r); w.Code != c.status || e.reached.Load() != before {
				t.Errorf("%s %s, %s: %d, want %d and nothing reaching the plane", rt.method, rt.path, c.name, w.Code, c.status)
			}
		}
	}
	// The same path with another method is no read: a PUT of the graph
	// stays an administrator's.
	r := newReq(http.MethodPut, "/api/apps/demo/graphs/g/simulate", "{}")
	r.AddCookie(viewer)
	if w := e.do(r); w.Code != http.StatusForbidden {
		t.Errorf("PUT …/simulate as a viewer: %d, want 403", w.Code)
	}
}

// TestAuthMatrixReads: every read route without a session is refused (401
// for an API call, a redirect to sign-in for an HTML navigation) and
// never reaches the application plane; /health is the one open route.
func TestAuthMatrixReads(t *testing.T) {
	e := newTestEnv(t, nil, webFS())
	_, reads := planeRoutes(e)
	for _, rt := range reads {
		before := e.reached.Load()
		if rt.path == "/health" {
			e.do(newReq(rt.method, rt.path, ""))
			if e.reached.Load() != before+1 {
				t.Errorf("/health did not reach the application plane without a session")
			}
			continue
		}
		w := e.get(rt.path, "Accept", "application/json")
		if w.Code != http.StatusUnauthorized || !strings.Contains(body(t, w), "sign in required") {
			t.Errorf("GET %s without a session: %d %s, want 401 sign in required", rt.path, w.Code, body(t, w))
		}
		w = e.get(rt.path+"?a=1", "Accept", "text/html")
		if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != config.LoginPath+"?next="+strings.ReplaceAll(strings.ReplaceAll(rt.path, "/", "%2F"), "?", "%3F")+"%3Fa%3D1" {
			t.Errorf("GET %s (HTML) without a session: %d Location %q, want 303 to sign-in with next", rt.path, w.Code, loc)
		}
		if e.reached.Load() != before {
			t.Errorf("BYPASS: GET %s without a session reached the application plane", rt.path)
		}
	}
	if len(reads) < 20 {
		t.Fatalf("only %d read routes", len(reads))
	}
}

// A viewer reads everything; GATE_ADMIN_EMAILS is read per request.
func TestRightsReadPerRequest(t *testing.T) {
	e := newTestEnv(t, nil, webFS())
	c := e.sessionCookie(t, "Viewer@Example.com")
	me := func() string {
		r := newReq(http.MethodGet, "/api/me", "")
		r.AddCookie(c)
		return body(t, e.do(r))
	}
	mustContain(t, "viewer me", me(), `"role":"viewer"`, `"actor":"google"`, `"email":"viewer@example.com"`, `"expires_at":`)
	e.admins.Store(" someone@example.com , VIEWER@example.com ")
	mustContain(t, "promoted me", me(), `"role":"admin"`)
	r := newReq(http.MethodPut, "/v1/apps/demo/graphs/g", "{}")
	r.AddCookie(c)
	before := e.reached.Load()
	if e.do(r); e.reached.Load() != before+1 {
		t.Error("a promoted viewer's write did not reach the application plane")
	}
}

func TestDevBypassMe(t *testing.T) {
	e := newTestEnv(t, func(c *config.Config) {
		devBypass("dev@example.com")(c)
		c.SessionSecret = ""
	}, webFS())
	mustContain(t, "dev me", body(t, e.get("/api/me")), `"actor":"dev"`, `"dev_bypass":true`, `"expires_at":null`, `"role":"viewer"`)
}

// The dev bypass is refused on https at boot (config.Check), so New
// refuses it too.
func TestDevBypassRefusedOnHTTPS(t *testing.T) {
	cfg := config.Default()
	cfg.DevEmail, cfg.PublicURL = "dev@example.com", "https://gate.example.com"
	if _, err := New(cfg, slog.New(slog.DiscardHandler), Options{}); err == nil || !strings.Contains(err.Error(), "GATE_DEV_EMAIL") {
		t.Fatalf("New accepted the dev bypass on https: %v", err)
	}
}

func TestBootRefusesUnreachableHistory(t *testing.T) {
	cfg := config.Default()
	cfg.DevEmail = "dev@example.com"
	cfg.API.History = knob.History{Host: "127.0.0.1", Port: 1, User: "postgres", Database: "postgres"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Boot(ctx, cfg, slog.New(slog.DiscardHandler), Options{})
	if !errors.Is(err, history.ErrUnreachable) || !strings.Contains(err.Error(), "PG_HOST") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Boot with an unreachable history database: %v; want one line naming PG_HOST", err)
	}
}

func TestSessionCookieAttributes(t *testing.T) {
	for _, https := range []bool{false, true} {
		e := newTestEnv(t, func(c *config.Config) {
			if https {
				c.PublicURL = "https://console.test"
			}
		}, nil)
		c := e.sessionCookie(t, "a@example.com")
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.MaxAge != 28800 || c.Path != "/" || c.Secure != https {
			t.Errorf("https=%v: cookie %+v", https, c)
		}
		if c2 := e.sessionCookie(t, "a@example.com"); c2.Value == c.Value {
			t.Error("two sign-ins minted the same session value (not rotated)")
		}
	}
}

func TestLogoutClearsTheSession(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	r := newReq(http.MethodPost, config.LogoutPath, "")
	r.AddCookie(e.sessionCookie(t, "a@example.com"))
	w := e.do(r)
	var cleared bool
	for _, c := range w.Result().Cookies() {
		cleared = cleared || (c.Name == SessionCookie && c.MaxAge < 0 && c.Value == "")
	}
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" || !cleared {
		t.Fatalf("logout = %d %v", w.Code, w.Header())
	}
	cross := newReq(http.MethodPost, config.LogoutPath, "")
	cross.Header.Set("Sec-Fetch-Site", "cross-site")
	if w := e.do(cross); w.Code != http.StatusForbidden {
		t.Errorf("cross-site logout = %d, want 403", w.Code)
	}
}

// A reachable history database is opened at boot and handed to the mounted
// application plane (its history routes read it).
func TestBootOpensHistory(t *testing.T) {
	pg := gatetest.NewPostgres(t)
	cfg := config.Default()
	cfg.DevEmail = "dev@example.com"
	cfg.API.History = knob.History{URL: pg.URL, Schema: pg.Schema}
	s, err := Boot(t.Context(), cfg, slog.New(slog.DiscardHandler), Options{})
	if err != nil {
		t.Fatalf("Boot: %v", err)
	}
	defer s.Close()
	if s.api.History() == nil || s.api.History() != s.history {
		t.Fatal("the application plane was not given the history database")
	}
}

// /metrics on the console is the mounted gate-api plane's registry, with
// the Go runtime collector (read here through the dev bypass).
func TestConsoleMetricsHaveRuntime(t *testing.T) {
	e := newTestEnv(t, func(c *config.Config) {
		devBypass("dev@example.com")(c)
		c.SessionSecret = ""
	}, webFS())
	mustContain(t, "console /metrics", body(t, e.get("/metrics")), "go_goroutines ", "process_cpu_seconds_total ", "gate_api_")
}
