package miniqueen

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/clock"
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

func TestStopUnblocksLongPollsAndLeavesNoGoroutine(t *testing.T) {
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
		s.Stop()
		close(done)
	}()
	select {
	case r := <-ch:
		if r.status != http.StatusNoContent {
			t.Fatalf("closing pop: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Stop left the long-poll parked")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Stop did not return")
	}
	s.Stop() // idempotent
	if _, err := http.Get(s.URL() + "/health"); err == nil {
		t.Fatalf("server still answers after Stop")
	}
}

// A server on a virtual base clock keeps its time on it: a parked
// long-poll times out when the clock passes its timeout (not before), and a
// key's TTL runs out on it, with no wall time spent.
func TestTheBaseClockDrivesLongPollTimeoutsAndTTLs(t *testing.T) {
	t.Parallel()
	v := clock.NewVirtual(t0)
	w := newWire(t, WithClock(v))
	if now := w.s.Now(); !now.Equal(t0) {
		t.Fatalf("the server's time is %v, want the virtual clock's %v", now, t0)
	}
	w.kv(map[string]any{"op": "put", "ns": "gate", "key": "k", "value": 1, "ttlSeconds": 5})
	ch := parkPop(t, w, "/api/v1/pop/queue/q?batch=10&wait=true&timeout=20000&"+grp)
	wctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if !v.WaitForPending(1, wctx.Done()) {
		t.Fatal("the parked pop never waited on the clock")
	}
	v.Advance(19 * time.Second)
	select {
	case r := <-ch:
		t.Fatalf("the pop answered %+v after 19 s of its 20 s timeout", r)
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := w.s.KV("gate", "k"); ok {
		t.Fatal("a key with a 5 s TTL outlived 19 s of the base clock")
	}
	v.Advance(time.Second)
	select {
	case r := <-ch:
		if r.status != http.StatusNoContent {
			t.Fatalf("the timed-out pop answered %+v, want 204", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pop did not time out when the base clock passed its timeout")
	}
}

// A busy address fails Start with an error naming it, and nothing runs; a
// stopped server starts again (on a fresh port) with its state intact.
func TestStartFailsOnABusyAddressAndAStoppedServerStartsAgain(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := New(WithAddr(ln.Addr().String()))
	if err := busy.Start(context.Background()); err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Start on a busy address: %v, want an error naming it", err)
	}
	select {
	case <-busy.Stopped():
	default:
		t.Fatal("a failed Start left the server running")
	}

	s := New()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := &wire{t: t, s: s, url: s.URL(), hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	w.push(item("q", "p", map[string]any{"n": 1}, ""))
	s.Stop()
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("a second Start after Stop: %v", err)
	}
	defer s.Stop()
	w.url = s.URL()
	if got := w.pop("q", "batch=10&"+grp); len(got.messages) != 1 {
		t.Fatalf("after a restart the queue holds %d messages, want the 1 pushed before", len(got.messages))
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
