package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/queen-mq/gate/gate-console/config"
)

// oidcEnv is a console signing in against a mockoidc provider.
type oidcEnv struct {
	*testEnv
	m *mockoidc.MockOIDC
}

func newOIDCEnv(t *testing.T) *oidcEnv {
	t.Helper()
	return newOIDCEnvWith(t, nil)
}

// newOIDCEnvWith is newOIDCEnv with the configuration changed by mutate
// (after the provider's settings are filled in).
func newOIDCEnvWith(t *testing.T, mutate func(*config.Config)) *oidcEnv {
	t.Helper()
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	e := newTestEnv(t, func(c *config.Config) {
		c.Issuer, c.ClientID, c.ClientSecret = m.Issuer(), m.ClientID, m.ClientSecret
		c.AllowedDomains = []string{"example.com"}
		if mutate != nil {
			mutate(c)
		}
	}, webFS())
	return &oidcEnv{testEnv: e, m: m}
}

// login starts sign-in and returns the provider URL and the login cookie.
func (o *oidcEnv) login(t *testing.T, next string) (*url.URL, *http.Cookie) {
	t.Helper()
	w := o.get(config.LoginPath + "?next=" + url.QueryEscape(next))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login = %d %s", w.Code, body(t, w))
	}
	u, err := url.Parse(w.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" ||
		q.Get("redirect_uri") != o.s.cfg.RedirectURL() || q.Get("prompt") != "select_account" || q.Get("hd") != "example.com" ||
		!strings.Contains(q.Get("scope"), "openid") || !strings.Contains(q.Get("scope"), "email") {
		t.Fatalf("authorization URL lacks PKCE, nonce, state, redirect, prompt, hd or scope: %s", u)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == LoginCookie {
			if !c.HttpOnly || c.MaxAge != 300 || c.SameSite != http.SameSiteLaxMode {
				t.Fatalf("login cookie %+v", c)
			}
			return u, c
		}
	}
	t.Fatal("login set no gate_login cookie")
	return nil, nil
}

// authorize plays the browser at the provider and returns the callback
// path and query the provider redirects to.
func (o *oidcEnv) authorize(t *testing.T, u *url.URL, user mockoidc.User) string {
	t.Helper()
	if user != nil {
		o.m.QueueUser(user)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cb, err := url.Parse(res.Header.Get("Location"))
	if err != nil || res.StatusCode != http.StatusFound || cb.Path != config.CallbackPath {
		t.Fatalf("provider answered %d Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	return cb.RequestURI()
}

func (o *oidcEnv) callback(t *testing.T, uri string, login *http.Cookie) (int, string, *http.Response) {
	t.Helper()
	r := newReq(http.MethodGet, uri, "")
	if login != nil {
		r.AddCookie(login)
	}
	w := o.do(r)
	return w.Code, body(t, w), w.Result()
}

func sessionFrom(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == SessionCookie && c.Value != "" {
			return c
		}
	}
	return nil
}

func TestSignInSuccessAndLogout(t *testing.T) {
	o := newOIDCEnv(t)
	o.admins.Store("jane.doe@example.com")
	u, login := o.login(t, "/graphs/demo/demo?tab=live")
	code, b, res := o.callback(t, o.authorize(t, u, nil), login)
	if code != http.StatusSeeOther || res.Header.Get("Location") != "/graphs/demo/demo?tab=live" {
		t.Fatalf("callback = %d %s Location %q", code, b, res.Header.Get("Location"))
	}
	sess := sessionFrom(res)
	if sess == nil || !sess.HttpOnly || sess.MaxAge != 28800 || sess.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie %+v", sess)
	}
	r := newReq(http.MethodGet, "/api/me", "")
	r.AddCookie(sess)
	me := body(t, o.do(r))
	mustContain(t, "me after sign-in", me, `"email":"jane.doe@example.com"`, `"role":"admin"`, `"actor":"oidc"`)

	// The same login cookie and state cannot be replayed: the cookie was
	// cleared and the provider's code is spent.
	// Logout clears the session.
	lo := newReq(http.MethodPost, config.LogoutPath, "")
	lo.AddCookie(sess)
	w := o.do(lo)
	var cleared *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == SessionCookie {
			cleared = c
		}
	}
	if w.Code != http.StatusSeeOther || cleared == nil || cleared.MaxAge >= 0 || cleared.Value != "" {
		t.Fatalf("logout = %d, cookie %+v", w.Code, cleared)
	}
	// A browser drops the cookie; without it the API says sign in.
	if w := o.get("/api/me", "Accept", "application/json"); w.Code != http.StatusUnauthorized {
		t.Errorf("/api/me after logout = %d", w.Code)
	}
}

func TestSignInRefusals(t *testing.T) {
	o := newOIDCEnv(t)

	t.Run("tampered state", func(t *testing.T) {
		u, login := o.login(t, "/")
		cb := o.authorize(t, u, nil)
		p, _ := url.Parse(cb)
		q := p.Query()
		st := q.Get("state")
		parts := strings.Split(st, ".")
		parts[1] = strings.Replace(parts[1], parts[1][:4], "AAAA", 1)
		q.Set("state", strings.Join(parts, "."))
		code, b, _ := o.callback(t, p.Path+"?"+q.Encode(), login)
		if code != http.StatusBadRequest || !strings.Contains(b, "state is not valid") {
			t.Errorf("tampered state = %d %s", code, b)
		}
	})
	t.Run("wrong nonce", func(t *testing.T) {
		u, login := o.login(t, "/")
		q := u.Query()
		q.Set("nonce", "a-nonce-this-sign-in-never-issued")
		u.RawQuery = q.Encode()
		code, b, res := o.callback(t, o.authorize(t, u, nil), login)
		if code != http.StatusUnauthorized || !strings.Contains(b, "nonce") || sessionFrom(res) != nil {
			t.Errorf("wrong nonce = %d %s", code, b)
		}
	})
	t.Run("unverified e-mail", func(t *testing.T) {
		u, login := o.login(t, "/")
		user := mockoidc.DefaultUser()
		user.EmailVerified = false
		code, b, res := o.callback(t, o.authorize(t, u, user), login)
		if code != http.StatusForbidden || !strings.Contains(b, "not verified") || sessionFrom(res) != nil {
			t.Errorf("unverified = %d %s", code, b)
		}
	})
	t.Run("foreign domain", func(t *testing.T) {
		u, login := o.login(t, "/")
		user := mockoidc.DefaultUser()
		user.Email = "mallory@elsewhere.org"
		code, b, res := o.callback(t, o.authorize(t, u, user), login)
		if code != http.StatusForbidden || !strings.Contains(b, "GOOGLE_ALLOWED_DOMAINS=example.com") || sessionFrom(res) != nil {
			t.Errorf("foreign domain = %d %s", code, b)
		}
	})
	t.Run("expired state", func(t *testing.T) {
		u, login := o.login(t, "/")
		cb := o.authorize(t, u, nil)
		o.clock.Advance(StateTTL + time.Second)
		defer o.clock.Advance(-(StateTTL + time.Second))
		code, b, _ := o.callback(t, cb, login)
		if code != http.StatusBadRequest || !strings.Contains(b, "expired") {
			t.Errorf("expired state = %d %s", code, b)
		}
	})
	t.Run("another browser", func(t *testing.T) {
		u, _ := o.login(t, "/")
		code, b, _ := o.callback(t, o.authorize(t, u, nil), nil)
		if code != http.StatusBadRequest || !strings.Contains(b, "not started in this browser") {
			t.Errorf("no login cookie = %d %s", code, b)
		}
	})
	t.Run("a code the provider never issued", func(t *testing.T) {
		u, login := o.login(t, "/")
		p, _ := url.Parse(o.authorize(t, u, nil))
		q := p.Query()
		q.Set("code", "a-code-the-provider-never-issued")
		code, b, _ := o.callback(t, p.Path+"?"+q.Encode(), login)
		if code != http.StatusBadRequest || !strings.Contains(b, "invalid_grant") || !strings.Contains(b, `"code":"sign-in-refused"`) {
			t.Errorf("bad code = %d %s, want 400 sign-in-refused", code, b)
		}
	})
	t.Run("a replayed code", func(t *testing.T) {
		u, login := o.login(t, "/")
		cb := o.authorize(t, u, nil)
		if code, b, _ := o.callback(t, cb, login); code != http.StatusSeeOther {
			t.Fatalf("first callback = %d %s", code, b)
		}
		// The same callback again (a reload, a replay with the cookie
		// copied): the provider refuses the spent code; the client's fault.
		code, b, res := o.callback(t, cb, login)
		if code != http.StatusBadRequest || !strings.Contains(b, "already used") || sessionFrom(res) != nil {
			t.Errorf("replayed code = %d %s, want 400 naming the spent code", code, b)
		}
	})
	t.Run("exchange failure", func(t *testing.T) {
		u, login := o.login(t, "/")
		cb := o.authorize(t, u, nil)
		// Two: golang.org/x/oauth2 tries the client credentials in the
		// header, then in the body.
		for range 2 {
			o.m.QueueError(&mockoidc.ServerError{Code: http.StatusInternalServerError, Error: "server_error", Description: "the token endpoint is down"})
		}
		code, b, _ := o.callback(t, cb, login)
		if code != http.StatusBadGateway || !strings.Contains(b, "code exchange") {
			t.Errorf("provider failure at the exchange = %d %s, want 502", code, b)
		}
	})
	t.Run("missing code", func(t *testing.T) {
		code, _, _ := o.callback(t, config.CallbackPath+"?state=x", nil)
		if code != http.StatusBadRequest {
			t.Errorf("missing code = %d", code)
		}
	})
	t.Run("open redirect", func(t *testing.T) {
		// The whole flow: a hostile next survives login and callback only
		// as a same-origin path.
		u, login := o.login(t, "/./\\evil.example")
		code, b, res := o.callback(t, o.authorize(t, u, nil), login)
		if loc := res.Header.Get("Location"); code != http.StatusSeeOther || loc != "/" {
			t.Errorf("callback after next=/./\\evil.example = %d Location %q %s, want 303 to /", code, loc, b)
		}
	})
}

// The classic open-redirect vectors, each as the next of a sign-in: what
// safeNext keeps is "/" or a cleaned path that a browser — which reads a
// backslash as a slash and drops tabs and newlines — resolves on this
// origin; the paths a user really comes from are kept.
func TestSafeNextKeepsEveryDestinationOnThisOrigin(t *testing.T) {
	vectors := []string{
		"//evil.example",
		"///evil.example",
		"/\\evil.example",
		"\\/evil.example",
		"\\\\evil.example",
		"/./\\evil.example",
		"/a/../\\evil.example",
		"/.//evil.example",
		"/a/..//evil.example",
		"/%2F%2Fevil.example",
		"/%2f/evil.example",
		"/%5Cevil.example",
		"/%5c%5cevil.example",
		"https://evil.example",
		"https:/evil.example",
		"//evil.example@console.test",
		"/\t/evil.example",
		"/\n/evil.example",
		"/%09/evil.example",
		"/%0d%0aLocation:%20https://evil.example",
		"javascript:alert(1)",
		" //evil.example",
		"/%2e%2e/%2e%2e//evil.example",
	}
	base, _ := url.Parse("https://console.test/graphs/")
	browser := func(loc string) *url.URL {
		// What a browser does to a Location before resolving it.
		loc = strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(loc)
		ref, err := url.Parse(loc)
		if err != nil {
			return nil
		}
		return base.ResolveReference(ref)
	}
	for _, v := range vectors {
		got := safeNext(v)
		// The callback answers with http.Redirect, which cleans a path
		// again: the Location it writes is what the browser follows.
		w := httptest.NewRecorder()
		http.Redirect(w, httptest.NewRequest(http.MethodGet, "https://console.test"+config.CallbackPath, nil), got, http.StatusSeeOther)
		loc := w.Header().Get("Location")
		to := browser(loc)
		if to == nil || to.Host != "console.test" || to.Scheme != "https" || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.ContainsAny(loc, "\\\t\r\n") {
			t.Errorf("next=%q is kept as %q, answered as Location %q, which a browser follows to %v: want / or a path on this origin", v, got, loc, to)
		}
	}
	kept := map[string]string{
		"/":                                   "/",
		"/graphs/demo/demo?tab=live":          "/graphs/demo/demo?tab=live",
		"/graphs/demo/demo/edit/":             "/graphs/demo/demo/edit/",
		"/graphs/demo/./demo":                 "/graphs/demo/demo",
		"/targets?app=shop&q=a%2Fb":           "/targets?app=shop&q=a%2Fb",
		"/graphs/demo/demo?next=//x":          "/graphs/demo/demo?next=//x",
		"/" + strings.Repeat("a", maxNextLen): "/",
	}
	for in, want := range kept {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSignInNotConfigured(t *testing.T) {
	e := newTestEnv(t, devBypass("dev@example.com"), nil)
	if w := e.get(config.LoginPath); w.Code != http.StatusServiceUnavailable || !strings.Contains(body(t, w), "sign-in is not configured") {
		t.Errorf("login without sign-in = %d", w.Code)
	}
}

func TestSignInProviderDown(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	if w := e.get(config.LoginPath); w.Code != http.StatusBadGateway || !strings.Contains(body(t, w), "GATE_OIDC_ISSUER") {
		t.Errorf("login with the provider down = %d %s", w.Code, body(t, w))
	}
}
