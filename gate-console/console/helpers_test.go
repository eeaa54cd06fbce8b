package console

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/wire"
)

const testSecret = "0123456789abcdef0123456789abcdef-test"

// testEnv is a console under test with a counting application plane.
type testEnv struct {
	t       *testing.T
	s       *Server
	h       http.Handler
	reached atomic.Int64
	admins  atomic.Value
	clock   *clock.Virtual
}

// devBypass is a newTestEnv mutation for a console without Google sign-in
// whose development bypass signs every request in as email.
func devBypass(email string) func(*config.Config) {
	return func(c *config.Config) {
		c.ClientID, c.ClientSecret, c.AllowedDomains = "", "", nil
		c.DevEmail = email
	}
}

// newTestEnv builds a console for cfg (defaults: sign-in configured against
// an issuer nobody answers, a test secret) over webapp files fsys.
func newTestEnv(t *testing.T, mutate func(*config.Config), fsys fstest.MapFS) *testEnv {
	t.Helper()
	return newTestEnvOpt(t, mutate, fsys, Options{})
}

func newTestEnvOpt(t *testing.T, mutate func(*config.Config), fsys fstest.MapFS, opt Options) *testEnv {
	t.Helper()
	cfg := config.Default()
	cfg.API.QueenURL = "http://127.0.0.1:1" // never dialled by the auth layer
	cfg.PublicURL = "http://console.test"
	cfg.Issuer = "http://127.0.0.1:1"
	cfg.ClientID, cfg.ClientSecret = "client", "secret"
	cfg.AllowedDomains = []string{"example.com"}
	cfg.SessionSecret = testSecret
	if mutate != nil {
		mutate(&cfg)
	}
	if fsys == nil {
		fsys = fstest.MapFS{}
	}
	e := &testEnv{t: t, clock: clock.NewVirtual(time.Now())}
	e.admins.Store("admin@example.com")
	opt.Getenv = func(k string) string {
		if k == "GATE_ADMIN_EMAILS" {
			return e.admins.Load().(string)
		}
		return ""
	}
	if opt.Clock == nil {
		opt.Clock = e.clock
	}
	opt.WebApp = fsys
	s, err := New(cfg, slog.New(slog.DiscardHandler), opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	app := s.app
	s.app = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.reached.Add(1)
		app.ServeHTTP(w, r)
	})
	e.s, e.h = s, s.Handler()
	return e
}

// do runs one request through the console. A refusal (status 400 and up)
// must be a JSON body with a sentence and a code of the catalogue that is
// answered with that status.
func (e *testEnv) do(r *http.Request) *httptest.ResponseRecorder {
	e.t.Helper()
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code >= 400 {
		var refusal wire.Error
		if w.Header().Get("Content-Type") != "application/json" || json.Unmarshal(w.Body.Bytes(), &refusal) != nil || refusal.Error == "" {
			e.t.Errorf("%s %s: %d without a JSON refusal: %.300s", r.Method, r.URL, w.Code, w.Body)
		} else if !refusal.Code.Known(w.Code) {
			e.t.Errorf("%s %s: %d with code %q, which the catalogue does not answer with %d", r.Method, r.URL, w.Code, refusal.Code, w.Code)
		}
	}
	return w
}

func (e *testEnv) get(path string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://console.test"+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(r)
}

// sessionCookie mints a valid session for email at the env's clock.
func (e *testEnv) sessionCookie(t *testing.T, email string) *http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	if err := e.s.issueSession(w, Identity{Actor: "google", Email: email, Subject: "sub-" + email}); err != nil {
		t.Fatal(err)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == SessionCookie {
			return c
		}
	}
	t.Fatal("issueSession set no cookie")
	return nil
}

func body(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	b, _ := io.ReadAll(w.Result().Body)
	return string(b)
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(got, s) {
			t.Errorf("%s: %q does not contain %q", what, got, s)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func newReq(method, path, payload string) *http.Request {
	var rd io.Reader
	if payload != "" {
		rd = strings.NewReader(payload)
	}
	r := httptest.NewRequest(method, "http://console.test"+path, rd)
	if payload != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}
