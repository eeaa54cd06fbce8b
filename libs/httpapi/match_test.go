package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A remembered match answers as the router would: the same route with
// each path's own (decoded) variables, every time; the first route in
// registration order wins on a cached path too; a method the path does not
// take is still 405 and an unknown path 404; a route registered later is
// found (registering empties the cache); the cache never holds more than
// matchCacheSize paths.
func TestMatchCacheAnswersAsTheRouter(t *testing.T) {
	r := NewRouter(Config{Log: slog.New(slog.DiscardHandler)})
	r.Handle(Route{Name: "first", Method: http.MethodGet, Path: "/v1/graphs/{name}/nodes/{node}"}, func(q *Request) *Refusal {
		fmt.Fprintf(q.W, "first %s %s", q.Vars["name"], q.Vars["node"])
		return nil
	})
	r.Handle(Route{Name: "shadowed", Method: http.MethodGet, Path: "/v1/graphs/{name}/nodes/n"}, func(q *Request) *Refusal {
		fmt.Fprint(q.W, "shadowed")
		return nil
	})
	do := func(method, path string) (int, string) {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w.Code, w.Body.String()
	}
	for range 3 {
		for _, c := range []struct{ path, want string }{
			{"/v1/graphs/a/nodes/n", "first a n"},
			{"/v1/graphs/b/nodes/m", "first b m"},
			{"/v1/graphs/a%2Fb/nodes/n", "first a/b n"},
		} {
			if code, body := do(http.MethodGet, c.path); code != 200 || body != c.want {
				t.Fatalf("GET %s: %d %q, want 200 %q", c.path, code, body, c.want)
			}
		}
		if code, _ := do(http.MethodPost, "/v1/graphs/a/nodes/n"); code != http.StatusMethodNotAllowed {
			t.Fatalf("POST on a GET route: %d, want 405", code)
		}
		if code, _ := do(http.MethodGet, "/v1/other"); code != http.StatusNotFound {
			t.Fatalf("unknown path: %d, want 404", code)
		}
	}
	r.Handle(Route{Name: "post", Method: http.MethodPost, Path: "/v1/graphs/{name}/nodes/{node}"}, func(q *Request) *Refusal {
		fmt.Fprintf(q.W, "post %s", q.Vars["name"])
		return nil
	})
	if code, body := do(http.MethodPost, "/v1/graphs/a/nodes/n"); code != 200 || body != "post a" {
		t.Fatalf("a route registered after the cache filled: %d %q", code, body)
	}
	for i := range matchCacheSize + 10 {
		if code, _ := do(http.MethodGet, fmt.Sprintf("/v1/graphs/g%d/nodes/n", i)); code != 200 {
			t.Fatalf("GET g%d: %d", i, code)
		}
	}
	r.matched.mu.RLock()
	n := len(r.matched.m)
	r.matched.mu.RUnlock()
	if n > matchCacheSize {
		t.Fatalf("the cache holds %d paths, over %d", n, matchCacheSize)
	}
}

// BenchmarkRouterMatch is one request to the last of 150 routes, the
// router's walk against a remembered match.
func BenchmarkRouterMatch(b *testing.B) {
	r := NewRouter(Config{Log: slog.New(slog.DiscardHandler)})
	for i := range 150 {
		r.Handle(Route{Name: fmt.Sprint("r", i), Method: http.MethodPost, Path: fmt.Sprintf("/v1/apps/{app}/graphs/{graph}/nodes/{node}/op%d", i)}, func(q *Request) *Refusal { return nil })
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/apps/a/graphs/g/nodes/n/op149", nil)
	w := httptest.NewRecorder()
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			r.matched.reset()
			r.ServeHTTP(w, req)
		}
	})
	b.Run("remembered", func(b *testing.B) {
		for b.Loop() {
			r.ServeHTTP(w, req)
		}
	})
}
