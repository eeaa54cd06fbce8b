package console

import (
	"net/http"
	"testing"
	"testing/fstest"

	"github.com/queen-mq/gate/gate-console/config"
)

func webFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":               {Data: []byte(`<!doctype html><html><head><meta name="csp-nonce" content="__CSP_NONCE__"><script type="module" src="/assets/index-3f9a1c2b.js"></script></head><body></body></html>`)},
		"assets/index-3f9a1c2b.js": {Data: []byte(`console.log("gate")`)},
		"favicon.ico":              {Data: []byte{0, 0, 1, 0}},
		"robots.txt":               {Data: []byte("User-agent: *\nDisallow: /\n")},
	}
}

func TestStaticServesTheShellWithoutASession(t *testing.T) {
	e := newTestEnv(t, nil, webFS())
	w := e.get("/", "Accept", "text/html")
	if w.Code != http.StatusOK {
		t.Fatalf("GET / = %d %s", w.Code, body(t, w))
	}
	b := body(t, w)
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("index.html with a nonce placeholder: Cache-Control %q, want no-store", got)
	}
	csp := w.Header().Get("Content-Security-Policy")
	mustContain(t, "CSP", csp, "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'")
	// The nonce in the page is the nonce in the header.
	i := len(`<!doctype html><html><head><meta name="csp-nonce" content="`)
	nonce := b[i : i+22]
	mustContain(t, "CSP", csp, "'nonce-"+nonce+"'")
	if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Referrer-Policy") == "" {
		t.Errorf("security headers missing: %v", w.Header())
	}
	if e.get("/", "Accept", "text/html").Header().Get("Content-Security-Policy") == csp {
		t.Error("two responses carried the same CSP nonce")
	}
}

func TestStaticAssetsCachedAndRevalidated(t *testing.T) {
	e := newTestEnv(t, nil, webFS())
	w := e.get("/assets/index-3f9a1c2b.js")
	if w.Code != http.StatusOK || body(t, w) != `console.log("gate")` {
		t.Fatalf("asset = %d", w.Code)
	}
	if got := w.Header().Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
		t.Errorf("hashed asset Cache-Control %q", got)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
		t.Errorf("asset Content-Type %q", ct)
	}
	etag := w.Header().Get("ETag")
	if len(etag) != 18 {
		t.Fatalf("ETag %q is not 8 bytes of SHA-256 in hex, quoted", etag)
	}
	if w := e.get("/assets/index-3f9a1c2b.js", "If-None-Match", etag); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("If-None-Match = %d, %d bytes; want 304 and no body", w.Code, w.Body.Len())
	}
	w = e.get("/robots.txt")
	if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("unhashed file: %d %q", w.Code, w.Header().Get("Cache-Control"))
	}
	if w := e.get("/assets/missing-3f9a1c2b.js", "Accept", "text/html"); w.Code != http.StatusNotFound {
		t.Errorf("unknown asset = %d, want 404", w.Code)
	}
}

func TestStaticFallbackOnlyForHTMLNavigations(t *testing.T) {
	e := newTestEnv(t, nil, webFS())
	if w := e.get("/graphs/demo/demo", "Accept", "text/html,application/xhtml+xml"); w.Code != http.StatusOK || !contains(body(t, w), "<!doctype html>") {
		t.Errorf("app path with Accept text/html = %d, want index.html", w.Code)
	}
	if w := e.get("/graphs/demo/demo", "Accept", "application/json"); w.Code != http.StatusNotFound {
		t.Errorf("app path with Accept application/json = %d, want 404", w.Code)
	}
	// /api/* never falls back, even for a browser: it needs a session and
	// then answers from the API.
	w := e.get("/api/nope", "Accept", "application/json")
	if w.Code != http.StatusUnauthorized {
		t.Errorf("/api/nope without a session = %d, want 401", w.Code)
	}
	c := e.sessionCookie(t, "viewer@example.com")
	r := newReq(http.MethodGet, "/api/nope", "")
	r.Header.Set("Accept", "text/html")
	r.AddCookie(c)
	w = e.do(r)
	if w.Code != http.StatusNotFound || contains(body(t, w), "<!doctype") {
		t.Errorf("/api/nope signed in = %d %s, want the API's 404", w.Code, body(t, w))
	}
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("/api answer Cache-Control %q, want no-store", got)
	}
}

func TestStaticWithoutABuiltWebApp(t *testing.T) {
	e := newTestEnv(t, func(c *config.Config) {}, fstest.MapFS{})
	w := e.get("/", "Accept", "text/html")
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("GET / without index.html = %d", w.Code)
	}
	mustContain(t, "503", body(t, w), "npm run build", "gate-console/webapp/dist")
}
