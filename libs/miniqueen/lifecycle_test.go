package miniqueen

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type popResult struct {
	status int
	body   string
	took   time.Duration
}

// parkPop starts a long-poll in the background and waits until it is parked.
func parkPop(t *testing.T, w *wire, path string) <-chan popResult {
	t.Helper()
	before := w.s.parked.Load()
	out := make(chan popResult, 1)
	go func() {
		start := time.Now()
		resp, err := w.hc.Get(w.url + path)
		if err != nil {
			out <- popResult{status: -1, body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- popResult{resp.StatusCode, string(b), time.Since(start)}
	}()
	eventually(t, 5*time.Second, func() bool { return w.s.parked.Load() > before }, "pop %s did not park", path)
	return out
}

func TestLongPollWakesOnPushAtOnce(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	ch := parkPop(t, w, "/api/v1/pop/queue/q?batch=10&wait=true&timeout=20000&"+grp)
	w.push(item("q", "p", map[string]any{"n": 1}, ""))
	r := <-ch
	if r.status != http.StatusOK || !strings.Contains(r.body, `"n":1`) {
		t.Fatalf("woken pop: %+v", r)
	}
	if r.took > 5*time.Second {
		t.Fatalf("the pop waited %v for a push that came at once", r.took)
	}
}

func TestLongPollAnswers204OnTimeout(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	start := time.Now()
	status, b, _ := w.do("GET", "/api/v1/pop/queue/q?batch=10&wait=true&timeout=150&"+grp, "")
	if status != http.StatusNoContent || len(b) != 0 {
		t.Fatalf("timeout: %d %q", status, b)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("answered after %v, before the 150 ms timeout", took)
	}
}

func TestLongPollFollowsTheInjectedClock(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.push(item("q", "p", map[string]any{"n": 1}, ""))
	first := w.pop("q", "batch=10&leaseSeconds=10&"+grp)
	// A parked pop picks up the partition whose lease lapses.
	ch := parkPop(t, w, "/api/v1/pop/queue/q?batch=10&wait=true&timeout=20000&"+grp)
	w.s.FastForward(11 * time.Second)
	r := <-ch
	if r.status != http.StatusOK || !strings.Contains(r.body, `"n":1`) || strings.Contains(r.body, first.leaseID) {
		t.Fatalf("re-offer after lease expiry: %+v", r)
	}
	// Moving the clock past a parked pop's deadline ends it with 204.
	ch = parkPop(t, w, "/api/v1/pop/queue/empty?batch=10&wait=true&timeout=20000&"+grp)
	w.s.FastForward(21 * time.Second)
	if r := <-ch; r.status != http.StatusNoContent {
		t.Fatalf("clock deadline: %+v", r)
	}
}

func TestDiscoveryPopByNamespace(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.call("POST", "/api/v1/configure", `{"queue":"orders.in","namespace":"shop","task":"in","options":{}}`, 200)
	ch := parkPop(t, w, "/api/v1/pop?namespace=shop&batch=10&wait=true&timeout=20000&"+grp)
	w.push(item("orders.in", "p", map[string]any{"n": 7}, ""))
	if r := <-ch; r.status != http.StatusOK || !strings.Contains(r.body, `"queue":"orders.in"`) {
		t.Fatalf("discovery: %+v", r)
	}
	w.call("GET", "/api/v1/pop?batch=1", "", http.StatusBadRequest)
}

func TestCloseUnblocksLongPollsAndLeavesNoGoroutine(t *testing.T) {
	t.Parallel()
	s, err := Run()
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	w := &wire{t: t, s: s, url: s.URL(), hc: &http.Client{Transport: tr}}
	ch := parkPop(t, w, "/api/v1/pop/queue/q?batch=10&wait=true&timeout=30000&"+grp)
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	select {
	case r := <-ch:
		if r.status != http.StatusNoContent {
			t.Fatalf("closing pop: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Close left the long-poll parked")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Close did not return")
	}
	s.Close() // idempotent
	if _, err := http.Get(s.URL() + "/health"); err == nil {
		t.Fatalf("server still answers after Close")
	}
}

func TestFaultInjection(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	cases := []struct {
		route, method, path, body string
		status                    int
		retryAfter                bool
	}{
		{RoutePush, "POST", "/api/v1/push", `{"items":[]}`, 503, true},
		{RoutePop, "GET", "/api/v1/pop/queue/q?batch=1", "", 500, false},
		{RouteKV, "POST", "/api/v1/kv", `{"operations":[]}`, 429, true},
		{RouteTransaction, "POST", "/api/v1/transaction", `{"operations":[]}`, 502, false},
		{RouteAck, "POST", "/api/v1/ack", `{}`, 500, false},
		{RouteHealth, "GET", "/health", "", 503, true},
		{RouteDepth, "GET", "/api/v1/resources/queues/q/depth", "", 500, false},
	}
	for _, c := range cases {
		w.s.SetError(c.route, c.status)
		status, b, h := w.do(c.method, c.path, c.body)
		if status != c.status || !strings.Contains(string(b), "injected_fault") || (h.Get("Retry-After") == "1") != c.retryAfter {
			t.Fatalf("%s: %d %s %v", c.route, status, b, h)
		}
		w.s.ClearError(c.route)
		if status, _, _ := w.do(c.method, c.path, c.body); status == c.status {
			t.Fatalf("%s: fault not cleared", c.route)
		}
	}
}

func TestUnknownRouteIs404(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	v := w.call("GET", "/api/v1/nope", "", http.StatusNotFound)
	if at(t, v, "error") != "no_such_route" {
		t.Fatalf("%v", v)
	}
}
