package declare_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/store"
)

// storedETag is the entity tag of what is stored for graph ("" when
// nothing is).
func storedETag(t *testing.T, h *apitest.Harness, graph string) string {
	t.Helper()
	d, found, err := h.Store.Get(context.Background(), h.App, graph)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return ""
	}
	return d.ETag()
}

// A PUT answers the ETag of the document it stored, in the header and the
// body; a GET answers the same one and is never cached; a change gives a
// new tag; If-None-Match naming the stored document is 304 on a GET and
// If-Match naming another is 412.
func TestETagIsTheStoredDocuments(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	put := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK)
	tag := put.Header.Get("ETag")
	if tag == "" || tag != put.Str("etag") || tag != storedETag(t, h, "g") || !strings.HasPrefix(tag, `"`) {
		t.Fatalf("PUT ETag header %q, body etag %q, stored %q: want the stored document's strong tag in both", tag, put.Str("etag"), storedETag(t, h, "g"))
	}
	get := h.Expect(h.Do(http.MethodGet, h.GraphURL("g"), nil), http.StatusOK)
	if get.Header.Get("ETag") != tag || get.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET ETag %q Cache-Control %q, want %s and no-store", get.Header.Get("ETag"), get.Header.Get("Cache-Control"), tag)
	}
	if tg := h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/targets/g", nil), http.StatusOK); tg.Header.Get("ETag") != tag {
		t.Fatalf("the target route's GET ETag %q, want %s", tg.Header.Get("ETag"), tag)
	}
	nm := h.Do(http.MethodGet, h.GraphURL("g"), nil, "If-None-Match", tag)
	if nm.Status != http.StatusNotModified || len(nm.Raw) != 0 || nm.Header.Get("ETag") != tag {
		t.Fatalf("GET If-None-Match with the stored tag: %d %q, want 304 with no body and the ETag", nm.Status, nm.Raw)
	}
	if r := h.Do(http.MethodGet, h.GraphURL("g"), nil, "If-None-Match", `"other"`); r.Status != http.StatusOK {
		t.Fatalf("GET If-None-Match with another tag: %d, want 200", r.Status)
	}
	r := h.Expect(h.Do(http.MethodGet, h.GraphURL("g"), nil, "If-Match", `"other"`), http.StatusPreconditionFailed)
	if r.Str("code") != "precondition-failed" || r.Str("etag") != tag {
		t.Fatalf("GET If-Match with another tag: %s, want precondition-failed carrying the current etag", r.Raw)
	}
	doc := h.Target("g", 6)
	again := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), doc), http.StatusOK)
	if again.Header.Get("ETag") == tag || again.Header.Get("ETag") != storedETag(t, h, "g") {
		t.Fatalf("a changed document kept the tag %s (stored %s)", again.Header.Get("ETag"), storedETag(t, h, "g"))
	}
	same := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), doc), http.StatusOK)
	if same.Header.Get("ETag") != again.Header.Get("ETag") {
		t.Fatalf("the same document stored again changed its tag: %s → %s", again.Header.Get("ETag"), same.Header.Get("ETag"))
	}
}

// Create means create: If-None-Match: * stores a new graph, and over an
// existing one is 412 naming it, its version and its ETag — whatever
// version the new document carries — and nothing changes. This is the
// wizard that replaced a live target with another rate and queue.
func TestIfNoneMatchStarNeverReplacesAGraph(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	live := h.Target("payments", 5)
	first := h.Expect(h.Do(http.MethodPut, h.GraphURL("payments"), live, "If-None-Match", "*"), http.StatusOK)
	tag := first.Header.Get("ETag")
	for _, v := range []int{1, 2, 99} {
		wizard := h.Target("payments", 100)
		wizard["version"] = v
		wizard["nodes"].(map[string]any)["limit"].(map[string]any)["egress"] = h.App + ".payments.new"
		r := h.Expect(h.Do(http.MethodPut, h.GraphURL("payments"), wizard, "If-None-Match", "*"), http.StatusPreconditionFailed)
		msg := h.ErrorBody(r)
		if r.Str("code") != "precondition-failed" || r.Str("etag") != tag || r.Num("storedVersion") != 1 ||
			!strings.Contains(msg, "creates only") || !strings.Contains(msg, "version 1") || !strings.Contains(msg, tag) {
			t.Fatalf("create over an existing graph at version %d: %s", v, r.Raw)
		}
	}
	if storedETag(t, h, "payments") != tag || h.QueueExists(h.App+".payments.new") {
		t.Fatal("a refused create changed the stored document or provisioned its queue")
	}
	// A target route is the same.
	r := h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/payments", h.Target("payments", 100), "If-None-Match", "*")
	h.Expect(r, http.StatusPreconditionFailed)
	// A flat PUT pins the application "default": its own name space.
	h.Expect(h.Do(http.MethodPut, "/v1/graphs/"+h.App+"-flat", h.Target("flat", 1), "If-None-Match", "*"), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, "/v1/graphs/"+h.App+"-flat", h.Target("flat", 2), "If-None-Match", "*"), http.StatusPreconditionFailed)
}

// If-Match writes over exactly the document it names: the current tag
// stores, a stale one is 412 with the current tag, "*" needs a stored
// document, and a weak tag never matches (the sentence says so).
func TestIfMatchWritesOverTheDocumentItNames(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5), "If-Match", "*"), http.StatusPreconditionFailed)
	if h.Stored(h.App, "g") {
		t.Fatal("If-Match: * on a missing graph stored it")
	}
	r := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5), "If-Match", `"3f2a"`), http.StatusPreconditionFailed)
	if msg := h.ErrorBody(r); !strings.Contains(msg, "nothing is stored") || !strings.Contains(msg, "If-None-Match: *") || r.Str("etag") != "" {
		t.Fatalf("If-Match on a missing graph: %s", r.Raw)
	}
	v1 := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK).Header.Get("ETag")
	v2 := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 6), "If-Match", v1), http.StatusOK).Header.Get("ETag")
	stale := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 7), "If-Match", v1), http.StatusPreconditionFailed)
	if msg := h.ErrorBody(stale); stale.Str("etag") != v2 || !strings.Contains(msg, "changed since it was read") || !strings.Contains(msg, v2) {
		t.Fatalf("a stale If-Match: %s, want 412 naming the current tag %s", stale.Raw, v2)
	}
	if storedETag(t, h, "g") != v2 {
		t.Fatal("a stale If-Match stored its document")
	}
	weak := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 7), "If-Match", "W/"+v2), http.StatusPreconditionFailed)
	if !strings.Contains(h.ErrorBody(weak), "weak tag") {
		t.Fatalf("a weak If-Match: %s, want the sentence to say a weak tag never matches", weak.Raw)
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 7), "If-Match", `"x", `+v2), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 8), "If-Match", "*"), http.StatusOK)
	// The 412 is answered before the body is compiled: a stale edit that
	// is also invalid reads as stale (RFC 9110 §13.2.1).
	bad := h.Target("g", 9)
	bad["version"] = "nine"
	if r := h.Do(http.MethodPut, h.GraphURL("g"), bad, "If-Match", v1); r.Status != http.StatusPreconditionFailed {
		t.Fatalf("a stale If-Match with an invalid body: %d, want 412", r.Status)
	}
}

// DELETE honours If-Match: a stale tag deletes nothing; the current one
// deletes. If-Match on a graph that is gone is 404, as without it.
func TestDeleteHonoursIfMatch(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	v1 := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK).Header.Get("ETag")
	v2 := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 6)), http.StatusOK).Header.Get("ETag")
	r := h.Expect(h.Do(http.MethodDelete, h.GraphURL("g"), nil, "If-Match", v1), http.StatusPreconditionFailed)
	if r.Str("etag") != v2 || !h.Stored(h.App, "g") {
		t.Fatalf("DELETE with a stale If-Match: %s; stored %v", r.Raw, h.Stored(h.App, "g"))
	}
	h.Expect(h.Do(http.MethodDelete, h.GraphURL("g"), nil, "If-None-Match", "*"), http.StatusPreconditionFailed)
	h.Expect(h.Do(http.MethodDelete, h.GraphURL("g"), nil, "If-Match", v2), http.StatusOK)
	if h.Stored(h.App, "g") {
		t.Fatal("DELETE with the current If-Match left the document stored")
	}
	h.Expect(h.Do(http.MethodDelete, h.GraphURL("g"), nil, "If-Match", v2), http.StatusNotFound)
	// A misspelt query never deletes.
	h.Expect(h.Do(http.MethodPut, h.GraphURL("k"), h.Target("k", 5)), http.StatusOK)
	if r := h.Expect(h.Do(http.MethodDelete, h.GraphURL("k")+"?dryRun=true", nil), http.StatusUnprocessableEntity); r.Str("field") != "dryRun" || !h.Stored(h.App, "k") {
		t.Fatalf("DELETE ?dryRun=true: %s, stored %v; want 422 and nothing deleted", r.Raw, h.Stored(h.App, "k"))
	}
}

// A malformed or unknown precondition header is 400 naming it on every
// graph and target route, and nothing changes.
func TestBadPreconditionHeadersAreRefusedByName(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	tag := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK).Header.Get("ETag")
	headers := [][2]string{
		{"If-Match", "3f2a"},
		{"If-Match", `*, "a"`},
		{"If-None-Match", `"a" "b"`},
		{"If-Match", strings.Repeat(`"a",`, 65)},
		{"If-None-Match", `"` + strings.Repeat("x", 5000) + `"`},
		{"If-Unmodified-Since", "Tue, 01 Dec 2026 10:00:00 GMT"},
		{"If-Modified-Since", "Tue, 01 Dec 2026 10:00:00 GMT"},
		{"If-Range", tag},
	}
	routes := []struct{ method, path string }{
		{http.MethodPut, h.GraphURL("g")},
		{http.MethodPut, h.GraphURL("g") + "?dryRun=true"},
		{http.MethodPut, "/v1/apps/" + h.App + "/targets/g"},
		{http.MethodGet, h.GraphURL("g")},
		{http.MethodGet, "/v1/apps/" + h.App + "/targets/g"},
		{http.MethodDelete, h.GraphURL("g")},
		{http.MethodDelete, "/v1/apps/" + h.App + "/targets/g"},
		{http.MethodPut, "/v1/apps/" + h.App + "/targets"},
	}
	for _, rt := range routes {
		for _, hd := range headers {
			var body any
			if rt.method == http.MethodPut {
				body = h.Target("g", 9)
				if strings.HasSuffix(rt.path, "/targets") {
					body = []any{h.Target("g", 9)}
				}
			}
			r := h.Do(rt.method, rt.path, body, hd[0], hd[1])
			if r.Status != http.StatusBadRequest || r.Str("code") != "invalid-precondition" || r.Str("field") != hd[0] || !strings.Contains(h.ErrorBody(r), hd[0]) {
				t.Errorf("%s %s with %s: %d %.200s, want 400 invalid-precondition naming it", rt.method, rt.path, hd[0], r.Status, r.Raw)
			}
		}
	}
	if storedETag(t, h, "g") != tag {
		t.Fatal("a refused precondition changed the stored document")
	}
}

// The store write stays conditional on the row the preconditions were
// held against: twelve PUTs through two gate-api processes, each with
// If-Match naming the same stored document, store exactly one; every other
// is 412 (never a lost update).
func TestConcurrentIfMatchStoresExactlyOne(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h2 := secondAPI(t, h)
	tag := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK).Header.Get("ETag")
	var mu sync.Mutex
	var ok, refused int
	var wg sync.WaitGroup
	for i := range 12 {
		api := h
		if i%2 == 1 {
			api = h2
		}
		wg.Go(func() {
			r := api.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 10+i), "If-Match", tag)
			mu.Lock()
			defer mu.Unlock()
			switch r.Status {
			case http.StatusOK:
				ok++
			case http.StatusPreconditionFailed:
				refused++
			default:
				t.Errorf("status %d: %.300s", r.Status, r.Raw)
			}
		})
	}
	wg.Wait()
	if ok != 1 || refused != 11 {
		t.Fatalf("%d stored and %d refused of 12 PUTs with one If-Match, want 1 and 11", ok, refused)
	}
	if storedETag(t, h, "g") == tag {
		t.Fatal("nothing replaced the document the twelve named")
	}
}

// The entity tag is the store's, derived from the bytes as stored.
func TestETagDerivation(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	r := h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 5)), http.StatusOK)
	d, _, _ := h.Store.Get(context.Background(), h.App, "g")
	if r.Header.Get("ETag") != store.ETag(d.Body) {
		t.Fatalf("ETag %s, want store.ETag of the stored bytes %s", r.Header.Get("ETag"), store.ETag(d.Body))
	}
}
