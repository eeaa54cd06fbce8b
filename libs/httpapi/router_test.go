package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest/logsink"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http's keep-alive loops of a client whose idle connections
		// the test server's Close has not reaped yet.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

func decodeRefusal(t *testing.T, w *httptest.ResponseRecorder) wire.Error {
	t.Helper()
	var e wire.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("not a refusal: %s (%v)", w.Body, err)
	}
	if e.Error == "" || !e.Code.Known(w.Code) {
		t.Fatalf("refusal %d %+v: no sentence, or a code that is not the catalogue's for its status", w.Code, e)
	}
	return e
}

func newCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_requests_total", Help: "h"}, []string{"route", "method", "status"})
}

// Routes answer in registration order with their decoded variables; an
// unknown path and a wrong method are the fallbacks' refusals; every
// answer is counted by route name, and Routes lists what has a method.
func TestRouterRoutesCountsAndFallsBack(t *testing.T) {
	reqs := newCounter()
	r := NewRouter(Config{Requests: reqs, Log: slog.New(slog.DiscardHandler)})
	r.Handle(Route{Name: "get", Method: http.MethodGet, Path: "/v1/graphs/{name}"}, func(q *Request) *Refusal {
		WriteJSON(q.W, http.StatusOK, map[string]string{"name": q.Vars["name"]})
		return nil
	})
	r.Handle(Route{Name: "put", Method: http.MethodPut, Path: "/v1/graphs/{name}"}, func(q *Request) *Refusal {
		return Refuse(http.StatusConflict, wire.CodeAmbiguousGraph, "no").Applications([]string{"a"})
	})
	r.HandleHTTP("/metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }), http.MethodGet)
	r.NotFound(Route{Name: "unknown"}, func(q *Request) *Refusal {
		return Refuse(http.StatusNotFound, wire.CodeRouteNotFound, "no route %s", q.R.URL.EscapedPath())
	})
	r.MethodNotAllowed(Route{Name: "unknown"}, func(q *Request) *Refusal {
		return Refuse(http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, "not %s", q.R.Method)
	})
	do := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	if w := do(http.MethodGet, "/v1/graphs/a%2Fb"); w.Code != 200 || !strings.Contains(w.Body.String(), `"name":"a/b"`) {
		t.Errorf("GET with an encoded slash: %d %s, want the decoded name a/b", w.Code, w.Body)
	}
	if w := do(http.MethodGet, "/v1/graphs/.."); w.Code != 200 || !strings.Contains(w.Body.String(), `"name":".."`) {
		t.Errorf("GET ..: %d %s, want the name .. as sent", w.Code, w.Body)
	}
	if w := do(http.MethodPut, "/v1/graphs/g"); w.Code != 409 || decodeRefusal(t, w).Applications[0] != "a" {
		t.Errorf("PUT: %d %s", w.Code, w.Body)
	}
	if w := do(http.MethodGet, "/v2/x"); w.Code != 404 || decodeRefusal(t, w).Code != wire.CodeRouteNotFound {
		t.Errorf("unknown path: %d %s", w.Code, w.Body)
	}
	if w := do(http.MethodPatch, "/v1/graphs/g"); w.Code != 405 || decodeRefusal(t, w).Code != wire.CodeMethodNotAllowed {
		t.Errorf("wrong method: %d %s", w.Code, w.Body)
	}
	if w := do(http.MethodHead, "/v1/graphs/g"); w.Code != 405 {
		t.Errorf("HEAD on a GET route: %d, want 405 (a Route has one method)", w.Code)
	}
	for _, c := range []struct {
		route, method, status string
		n                     float64
	}{{"get", "GET", "200", 2}, {"put", "PUT", "409", 1}, {"unknown", "GET", "404", 1}, {"unknown", "PATCH", "405", 1}} {
		if got := testutil.ToFloat64(reqs.WithLabelValues(c.route, c.method, c.status)); got != c.n {
			t.Errorf("requests{%s,%s,%s} = %v, want %v", c.route, c.method, c.status, got, c.n)
		}
	}
	got := r.Routes()
	want := []RouteInfo{{"GET", "/metrics", false}, {"GET", "/v1/graphs/{name}", false}, {"PUT", "/v1/graphs/{name}", false}}
	if len(got) != len(want) {
		t.Fatalf("Routes = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Routes = %v, want %v", got, want)
		}
	}
}

// A panicking handler is a 500 refusal naming the server, logged with its
// stack and counted; a server error other than 503 is logged at WARN.
func TestRouterRecoversAPanicAndLogsServerErrors(t *testing.T) {
	reqs := newCounter()
	log := &logsink.Sink{}
	r := NewRouter(Config{Name: "gate-api", Requests: reqs, Log: slog.New(slog.NewJSONHandler(log, nil))})
	r.Handle(Route{Name: "boom", Method: http.MethodGet, Path: "/boom"}, func(*Request) *Refusal { panic("boom") })
	r.Handle(Route{Name: "bad", Method: http.MethodGet, Path: "/bad"}, func(*Request) *Refusal {
		return Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "the broker failed")
	})
	r.Handle(Route{Name: "busy", Method: http.MethodGet, Path: "/busy"}, func(*Request) *Refusal {
		return Refuse(http.StatusServiceUnavailable, wire.CodeNotRunning, "nothing runs it")
	})
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boom", nil))
	if e := decodeRefusal(t, w); w.Code != 500 || e.Code != wire.CodeInternalError || !strings.Contains(e.Error, "gate-api failed on this request") {
		t.Fatalf("panic: %d %+v", w.Code, e)
	}
	for _, p := range []string{"/bad", "/busy"} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	out := log.String()
	if !strings.Contains(out, `"msg":"handler panicked"`) || !strings.Contains(out, `"stack":`) {
		t.Errorf("the panic is not logged with its stack: %s", out)
	}
	if !strings.Contains(out, `"route":"bad"`) || strings.Contains(out, `"route":"busy"`) {
		t.Errorf("want a WARN line for the 502 and none for the 503: %s", out)
	}
	if got := testutil.ToFloat64(reqs.WithLabelValues("boom", "GET", "500")); got != 1 {
		t.Errorf("the panic was counted %v times", got)
	}
}

// The broker work of a request has BrokerTimeout on the Router's clock,
// counted again from the moment the body was read: past it the answer is
// the broker's 504, naming the broker and keeping what the handler said.
func TestBrokerDeadlineRestartsAfterTheBodyAndAnswers504(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	const d = 10 * time.Second
	r := NewRouter(Config{Clock: clk, Broker: "http://broker", BrokerTimeout: d, Log: slog.New(slog.DiscardHandler)})
	arrived, read := make(chan struct{}), make(chan struct{})
	r.Handle(Route{Name: "push", Method: http.MethodPost, Path: "/push", Limit: 1 << 10}, func(q *Request) *Refusal {
		close(arrived)
		<-read
		if _, bad := q.ReadRaw(); bad != nil {
			return bad
		}
		<-q.Context().Done()
		return Refuse(http.StatusBadGateway, wire.CodePushFailed, "pushing failed").Node("entry")
	})
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/push", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() { r.ServeHTTP(w, req); close(done) }()
	<-arrived
	clk.Advance(d - time.Second) // reading the body took long
	close(read)
	clk.WaitForPending(1, done)
	// The handler has read the body (the deadline restarted) when it waits
	// on its context; d−1 s more is not yet the deadline.
	time.Sleep(20 * time.Millisecond)
	clk.Advance(d - time.Second)
	select {
	case <-done:
		t.Fatalf("the deadline fired %v after the body was read, before %v: %d %s", d-time.Second, d, w.Code, w.Body)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Advance(time.Second)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline never ended the request")
	}
	e := decodeRefusal(t, w)
	if w.Code != http.StatusGatewayTimeout || e.Code != wire.CodeBrokerTimeout || e.Broker != "http://broker" || e.TimeoutMs == nil || *e.TimeoutMs != d.Milliseconds() ||
		e.Node != "entry" || !strings.Contains(e.Error, "pushing failed") || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("%d %v %+v", w.Code, w.Header(), e)
	}
}

// The clean mode redirects exactly as net/http's ServeMux did for the same
// registrations: an unclean path to its clean form, a subtree's root
// without its slash to the root, the query kept; everything else routes.
func TestCleanModeRedirectsAsServeMux(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	r := NewRouter(Config{Clean: true})
	sm := http.NewServeMux()
	r.HandleHTTP("/api/me", ok, http.MethodGet, http.MethodHead)
	sm.Handle("GET /api/me", ok)
	r.HandlePrefix("/api/auth/", ok)
	sm.Handle("/api/auth/", ok)
	r.HandlePrefix("/api/", ok)
	sm.Handle("/api/", ok)
	r.HandleHTTP("/health", ok)
	sm.Handle("/health", ok)
	r.HandlePrefix("/", ok)
	sm.Handle("/", ok)
	for _, c := range []struct{ method, target string }{
		{"GET", "/api"}, {"POST", "/api"}, {"GET", "/api/auth?next=%2Fx"}, {"GET", "/api/me"}, {"HEAD", "/api/me"}, {"POST", "/api/me"},
		{"GET", "/api/../health"}, {"GET", "/api//me"}, {"GET", "/a/./b/?q=1"}, {"GET", "/health"}, {"GET", "/health/"},
		{"GET", "/"}, {"GET", "/assets/x.js"}, {"GET", "/v1/apps/a%2F..%2Fb/graphs/g"}, {"GET", "/v1/apps/a/../b"},
		{"GET", "/api%2Fme"}, {"GET", "/v1/a%20b/../c?x=%2F"}, {"DELETE", "/api/auth"}, {"GET", "/api/auth/"},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		sm.ServeHTTP(want, httptest.NewRequest(c.method, c.target, nil))
		r.ServeHTTP(got, httptest.NewRequest(c.method, c.target, nil))
		if got.Code != want.Code || got.Header().Get("Location") != want.Header().Get("Location") || got.Body.String() != want.Body.String() {
			t.Errorf("%s %s: %d %q %q, ServeMux %d %q %q", c.method, c.target, got.Code, got.Header().Get("Location"), got.Body, want.Code, want.Header().Get("Location"), want.Body)
		}
	}
}

// A route registered as a read is one for IsRead whatever its method (and
// Routes says so); the same path with another method, or no route at all,
// is not; GET and HEAD always are.
func TestIsReadFollowsTheRoute(t *testing.T) {
	r := NewRouter(Config{})
	ok := func(q *Request) *Refusal { q.W.WriteHeader(http.StatusNoContent); return nil }
	r.Handle(Route{Name: "sim", Method: http.MethodPost, Path: "/v1/graphs/{g}/simulate", Read: true}, ok)
	r.Handle(Route{Name: "put", Method: http.MethodPut, Path: "/v1/graphs/{g}/simulate"}, ok)
	r.Handle(Route{Name: "push", Method: http.MethodPost, Path: "/v1/graphs/{g}/push"}, ok)
	for _, c := range []struct {
		method, path string
		read         bool
	}{
		{http.MethodPost, "/v1/graphs/a/simulate", true},
		{http.MethodPut, "/v1/graphs/a/simulate", false},
		{http.MethodPost, "/v1/graphs/a/push", false},
		{http.MethodPost, "/v1/graphs/a%2Fb/simulate", true},
		{http.MethodPost, "/nowhere", false},
		{http.MethodGet, "/nowhere", true},
		{http.MethodHead, "/v1/graphs/a/push", true},
	} {
		if got := r.IsRead(httptest.NewRequest(c.method, c.path, nil)); got != c.read {
			t.Errorf("IsRead(%s %s) = %v, want %v", c.method, c.path, got, c.read)
		}
	}
	for _, info := range r.Routes() {
		if info.Read != (info.Method == http.MethodPost && strings.HasSuffix(info.Path, "/simulate")) {
			t.Errorf("Routes lists %+v", info)
		}
	}
}
