package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// NoncePlaceholder, where index.html holds it, is replaced by the
// response's CSP nonce (e.g. <meta name="csp-nonce" content="__CSP_NONCE__">
// for an editor that injects <style> elements).
const NoncePlaceholder = "__CSP_NONCE__"

// hashedName matches a bundler's content-hashed file name
// (index-3f9a1c2b.js, chunk.DkT_4xQz.css): cached for a year.
var hashedName = regexp.MustCompile(`[.-][A-Za-z0-9_-]{8,}\.[a-z0-9]+$`)

// static serves the embedded web app: files as they are, unknown app paths
// as index.html (HTML navigations only), unknown assets 404, and a 503
// saying how to build the web app while index.html is absent.
type static struct {
	fsys fs.FS

	mu    sync.Mutex
	files map[string]*staticFile
}

type staticFile struct {
	body []byte
	etag string
	ok   bool
}

func newStatic(fsys fs.FS) *static { return &static{fsys: fsys, files: map[string]*staticFile{}} }

func (st *static) file(name string) *staticFile {
	st.mu.Lock()
	defer st.mu.Unlock()
	if f, ok := st.files[name]; ok {
		return f
	}
	f := &staticFile{}
	if b, err := fs.ReadFile(st.fsys, name); err == nil {
		sum := sha256.Sum256(b)
		f.body, f.etag, f.ok = b, `"`+hex.EncodeToString(sum[:8])+`"`, true
	}
	st.files[name] = f // the embedded files never change
	return f
}

func (st *static) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, "%s is not allowed on the console's pages: they are read with GET", r.Method))
		return
	}
	p := r.URL.Path
	if p == "/" || p == "/index.html" {
		st.index(w, r)
		return
	}
	name := strings.TrimPrefix(path.Clean(p), "/")
	if fs.ValidPath(name) && !strings.HasSuffix(p, "/") {
		if f := st.file(name); f.ok {
			if name == "index.html" {
				st.index(w, r)
				return
			}
			cache := "no-cache"
			if strings.HasPrefix(name, "assets/") && hashedName.MatchString(name) {
				cache = "public, max-age=31536000, immutable"
			}
			st.serve(w, r, name, f, cache)
			return
		}
	}
	if strings.HasPrefix(p, "/assets/") || p == "/favicon.ico" || !acceptsHTML(r) {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusNotFound, wire.CodeFileNotFound, "no file %s in the console's web app: app pages are loaded by a browser (Accept: text/html), the API lives under /api and /v1", p))
		return
	}
	st.index(w, r)
}

// index serves index.html: never cached, with the nonce spliced in where it
// asks for one (then without an ETag: the body differs per response).
func (st *static) index(w http.ResponseWriter, r *http.Request) {
	f := st.file("index.html")
	if !f.ok {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeWebAppMissing, "the console's web app is not built into this binary: run `cd gate-console/ui && npm ci && npm run build` (it writes gate-console/webapp/dist), then rebuild gate-console; the API under /api and /v1 works without it"))
		return
	}
	if !bytes.Contains(f.body, []byte(NoncePlaceholder)) {
		st.serve(w, r, "index.html", f, "no-cache")
		return
	}
	body := bytes.ReplaceAll(f.body, []byte(NoncePlaceholder), []byte(nonceFrom(r.Context())))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func (st *static) serve(w http.ResponseWriter, r *http.Request, name string, f *staticFile, cache string) {
	h := w.Header()
	h.Set("Cache-Control", cache)
	h.Set("ETag", f.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = http.DetectContentType(f.body)
	}
	h.Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.body)
	}
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
