package console

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// liveEnv is a console with the dev bypass serving over real HTTP (the
// production http.Server settings) with its hub on a test NATS.
type liveEnv struct {
	*testEnv
	url  string
	nats *gatetest.NATS
	app  string
}

func newLiveEnv(t *testing.T, live LiveOptions, readTimeout time.Duration) *liveEnv {
	t.Helper()
	n := gatetest.NewNATS(t)
	cfg := func(c *config.Config) {
		devBypass("dev@example.com")(c)
		c.NATSURL = n.URL
	}
	// The streams' heartbeats and write deadlines run on the wall clock:
	// the test measures them against the server's real read timeout.
	e := newTestEnvOpt(t, cfg, nil, Options{Live: live, ReadTimeout: readTimeout, Clock: clock.Real()})
	if err := e.s.live.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := e.s.httpServer()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { e.s.live.Stop(); _ = srv.Close() })
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &liveEnv{testEnv: e, url: "http://" + ln.Addr().String(), nats: n, app: "t" + hex.EncodeToString(b)}
}

// sse is one open stream.
type sse struct {
	t    *testing.T
	res  *http.Response
	rd   *bufio.Reader
	conn chan sseEvent
	// done ends the pump when the test ends, however full conn is.
	done   chan struct{}
	pumped chan struct{}
}

type sseEvent struct {
	name, data string
	comment    bool
	at         time.Time
	err        error
}

func (l *liveEnv) open(t *testing.T, graphs string) *sse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, l.url+"/api/live?graphs="+graphs, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("/api/live = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &sse{t: t, res: res, rd: bufio.NewReader(res.Body), conn: make(chan sseEvent, 1024), done: make(chan struct{}), pumped: make(chan struct{})}
	t.Cleanup(func() { close(s.done); res.Body.Close(); <-s.pumped })
	go s.pump()
	return s
}

// pump hands the stream's events to conn until the stream or the test
// ends.
func (s *sse) pump() {
	defer close(s.pumped)
	send := func(ev sseEvent) bool {
		select {
		case s.conn <- ev:
			return true
		case <-s.done:
			return false
		}
	}
	var ev sseEvent
	for {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			if send(sseEvent{err: err, at: time.Now()}) {
				close(s.conn)
			}
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.name != "" || ev.comment {
				ev.at = time.Now()
				if !send(ev) {
					return
				}
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = true
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// next returns the next named event (skipping heartbeats) within wait.
func (s *sse) next(wait time.Duration) sseEvent {
	s.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-s.conn:
			if !ok || ev.err != nil {
				s.t.Fatalf("stream ended: %v", ev.err)
			}
			if ev.comment {
				continue
			}
			return ev
		case <-deadline:
			s.t.Fatalf("no event within %v", wait)
		}
	}
}

// streaming waits for the status that says the stream carries events.
func (s *sse) streaming() wire.LiveStatus {
	s.t.Helper()
	for {
		ev := s.next(10 * time.Second)
		if ev.name != "status" {
			continue
		}
		var st wire.LiveStatus
		if err := json.Unmarshal([]byte(ev.data), &st); err != nil {
			s.t.Fatal(err)
		}
		if st.Mode == "stream" {
			return st
		}
	}
}

func (l *liveEnv) publishCounters(t *testing.T, replica, graph string, forwarded int64, stages int) {
	t.Helper()
	g := store.GraphStatus{App: l.app, Graph: graph, Version: 3, Running: true}
	for i := range stages {
		g.Stages = append(g.Stages, store.StageStatus{Path: fmt.Sprintf("p%d", i), Node: "n", Counters: store.Counters{Forwarded: forwarded, Admitted: forwarded}})
	}
	b, _ := json.Marshal(map[string]any{"replica": replica, "at": time.Now().UnixMilli(), "graph": g})
	if err := l.nats.Conn.Publish("gate.relay.counters."+l.app+"."+graph, b); err != nil {
		t.Fatal(err)
	}
	_ = l.nats.Conn.Flush()
}

// A relay's counter update reaches an SSE client in under one second, the
// replicas' counters summed; denials follow on their own subject.
func TestLiveCounterReachesClient(t *testing.T) {
	l := newLiveEnv(t, LiveOptions{}, 0)
	s := l.open(t, l.app+"/g1")
	st := s.streaming()
	if !st.NATS || len(st.Graphs) != 1 || st.Graphs[0] != l.app+"/g1" {
		t.Fatalf("status %+v", st)
	}
	sent := time.Now()
	l.publishCounters(t, "relay-a", "g1", 7, 1)
	ev := s.next(time.Second)
	latency := ev.at.Sub(sent)
	var c wire.LiveCounters
	if ev.name != "counters" || json.Unmarshal([]byte(ev.data), &c) != nil || c.Graph != "g1" || c.Stages[0].Counters.Forwarded != 7 {
		t.Fatalf("first event %s %s", ev.name, ev.data)
	}
	t.Logf("relay → NATS → console → SSE client: %v", latency)
	l.publishCounters(t, "relay-b", "g1", 5, 1)
	ev = s.next(time.Second)
	if json.Unmarshal([]byte(ev.data), &c) != nil || c.Stages[0].Counters.Forwarded != 12 || len(c.Replicas) != 2 || !c.Running || c.Version != 3 {
		t.Fatalf("summed event %s", ev.data)
	}
	// Another graph's traffic is not this tab's.
	l.publishCounters(t, "relay-a", "other", 1, 1)
	ds, _ := json.Marshal([]wire.Denial{{At: 1, Application: l.app, Graph: "g1", Node: "n", Path: "p0", Outcome: "denied", BudgetID: "b"}})
	if err := l.nats.Conn.Publish("gate.relay.denials."+l.app+".g1", ds); err != nil {
		t.Fatal(err)
	}
	ev = s.next(time.Second)
	var d wire.LiveDenials
	if ev.name != "denials" || json.Unmarshal([]byte(ev.data), &d) != nil || len(d.Denials) != 1 || d.Denials[0].BudgetID != "b" {
		t.Fatalf("denials event %s %s (another graph's counters must not arrive)", ev.name, ev.data)
	}
	if n := l.s.live.subscriptions(); n != 2 {
		t.Errorf("%d NATS subscriptions for one graph, want 2 (counters, denials)", n)
	}
	// A second tab on the same graph shares the subscriptions.
	s2 := l.open(t, l.app+"/g1")
	s2.streaming()
	if n := l.s.live.subscriptions(); n != 2 {
		t.Errorf("%d NATS subscriptions for two tabs on one graph, want 2", n)
	}
}

// A stream with no traffic outlives the server's read and idle timeouts
// many times over (the production settings, scaled: 200 ms for 1 min),
// carries heartbeats at its period, and still delivers afterwards.
func TestLiveIdleStreamStaysOpen(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	l := newLiveEnv(t, LiveOptions{Heartbeat: 50 * time.Millisecond}, readTimeout)
	s := l.open(t, l.app+"/idle")
	s.streaming()
	idle := 12 * readTimeout // 2 min of idleness against a 10 s timeout
	deadline := time.After(idle)
	beats := 0
wait:
	for {
		select {
		case ev, ok := <-s.conn:
			if !ok || ev.err != nil {
				t.Fatalf("the idle stream ended after %d heartbeats: %v", beats, ev.err)
			}
			if ev.comment {
				beats++
			}
		case <-deadline:
			break wait
		}
	}
	if want := int(idle/(50*time.Millisecond)) / 2; beats < want {
		t.Errorf("%d heartbeats in %v, want at least %d", beats, idle, want)
	}
	l.publishCounters(t, "relay-a", "idle", 1, 1)
	if ev := s.next(time.Second); ev.name != "counters" {
		t.Fatalf("after the idle period: %s", ev.name)
	}
}

// A client that never reads neither slows the others nor buffers without
// bound: its buffer coalesces to one snapshot per graph plus at most
// MaxDenials denials, and the write deadline cuts it.
func TestLiveSlowClientIsolated(t *testing.T) {
	const maxDenials = 50
	l := newLiveEnv(t, LiveOptions{WriteTimeout: 10 * time.Second, MaxDenials: maxDenials}, 0)
	// Both streams ask for this test's graphs only: the NATS server is
	// shared (other suites' relays publish counters on it at the same
	// time), and a stream of every graph would count their messages too.
	const graphs, rounds = 10, 20
	names := []string{l.app + "/last"}
	for g := range graphs {
		names = append(names, fmt.Sprintf("%s/g%d", l.app, g))
	}
	query := strings.Join(names, ",")
	fast := l.open(t, query)
	fast.streaming()

	// The slow client: a raw connection that sends its request and never
	// reads a byte.
	// A 4 KiB receive window, set before the handshake, so the server's
	// writes back up after a few hundred KiB instead of megabytes.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	l.s.live.mu.Lock()
	before := map[*liveClient]bool{}
	for c := range l.s.live.clients {
		before[c] = true
	}
	l.s.live.mu.Unlock()
	conn, err := d.Dial("tcp", strings.TrimPrefix(l.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/live?graphs=%s HTTP/1.1\r\nHost: x\r\n\r\n", query)
	var slow *liveClient
	for deadline := time.Now().Add(5 * time.Second); slow == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow client never registered")
		}
		l.s.live.mu.Lock()
		for c := range l.s.live.clients {
			if !before[c] {
				slow = c
			}
		}
		l.s.live.mu.Unlock()
	}

	maxBuffered := 0
	go func() {
		for ds := 0; ds < 200; ds++ {
			b, _ := json.Marshal([]wire.Denial{{At: int64(ds), Application: l.app, Graph: "g0", Outcome: "denied"}})
			_ = l.nats.Conn.Publish("gate.relay.denials."+l.app+".g0", b)
		}
	}()
	for r := 1; r <= rounds; r++ {
		for g := range graphs {
			l.publishCounters(t, "relay-a", fmt.Sprintf("g%d", g), int64(r), 40) // ~4 KiB each
		}
		if b := slow.buffered(); b > maxBuffered {
			maxBuffered = b
		}
	}
	// Let the fast client catch up with everything sent so far (the hub's
	// own pace), then time one update while the slow client is stuck.
	final := map[string]bool{}
	for len(final) < graphs {
		ev := fast.next(time.Minute)
		var c wire.LiveCounters
		if ev.name == "counters" && json.Unmarshal([]byte(ev.data), &c) == nil && c.Stages[0].Counters.Forwarded == rounds {
			final[c.Graph] = true
		}
	}
	if l.s.live.clientCount() != 2 {
		t.Fatalf("the slow client was cut before the measurement (%d streams): raise WriteTimeout", l.s.live.clientCount())
	}
	sent := time.Now()
	l.publishCounters(t, "relay-a", "last", 99, 1)
	for {
		ev := fast.next(2 * time.Second)
		var c wire.LiveCounters
		if ev.name == "counters" && strings.Contains(ev.data, `"graph":"last"`) && json.Unmarshal([]byte(ev.data), &c) == nil && c.Graph == "last" {
			t.Logf("the fast client got the last update %v after it was sent, with a slow client attached", ev.at.Sub(sent))
			if ev.at.Sub(sent) > time.Second {
				t.Errorf("the fast client waited %v", ev.at.Sub(sent))
			}
			break
		}
	}
	if bound := graphs + 1 + maxDenials; maxBuffered > bound {
		t.Errorf("a client's buffer held %d items, bound %d", maxBuffered, bound)
	}
	// The write deadline cuts the client that does not read: keep the
	// relays talking until its socket is full and a write times out.
	for r, deadline := rounds+1, time.Now().Add(60*time.Second); l.s.live.clientCount() > 1; r++ {
		if time.Now().After(deadline) {
			t.Fatalf("the slow client is still attached (%d streams)", l.s.live.clientCount())
		}
		for g := range graphs {
			l.publishCounters(t, "relay-a", fmt.Sprintf("g%d", g), int64(r), 40)
		}
		if b := slow.buffered(); b > maxBuffered {
			maxBuffered = b
		}
		time.Sleep(5 * time.Millisecond)
	}
	if bound := graphs + 1 + maxDenials; maxBuffered > bound {
		t.Errorf("a client's buffer held %d items, bound %d", maxBuffered, bound)
	}
	t.Logf("slow client buffered at most %d items and was cut by the write deadline", maxBuffered)
}

func TestLiveWithoutNATSSaysPoll(t *testing.T) {
	e := newTestEnv(t, devBypass("dev@example.com"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	r := newReq(http.MethodGet, "/api/live", "").WithContext(ctx)
	done := make(chan struct{})
	w := &flushRecorder{ch: make(chan string, 8)}
	go func() { e.h.ServeHTTP(w, r); close(done) }()
	first := <-w.ch
	cancel()
	<-done
	if !strings.HasPrefix(first, "event: status\ndata: ") || !strings.Contains(first, `"mode":"poll"`) || !strings.Contains(first, "GATE_NATS_URL is not set") {
		t.Fatalf("first event %q", first)
	}
	if w := e.get("/api/live?graphs=Bad/Name"); w.Code != http.StatusBadRequest || !strings.Contains(body(t, w), "graphs") {
		t.Errorf("bad graphs = %d %s", w.Code, body(t, w))
	}
}

// flushRecorder is a ResponseWriter that hands each flushed write over.
type flushRecorder struct {
	h  http.Header
	ch chan string
	b  strings.Builder
}

func (f *flushRecorder) Header() http.Header {
	if f.h == nil {
		f.h = http.Header{}
	}
	return f.h
}
func (f *flushRecorder) WriteHeader(int)             {}
func (f *flushRecorder) Write(p []byte) (int, error) { f.b.Write(p); return len(p), nil }
func (f *flushRecorder) Flush() {
	select {
	case f.ch <- f.b.String():
	default:
	}
	f.b.Reset()
}

// A stream ends when its session does.
func TestLiveStreamEndsWithTheSession(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	// A session's expiry is whole seconds: minted on a whole second, it
	// is still valid 50 ms before its end.
	e.clock.Set(e.clock.Now().Truncate(time.Second))
	c := e.sessionCookie(t, "viewer@example.com")
	e.clock.Advance(SessionTTL - 50*time.Millisecond)
	r := newReq(http.MethodGet, "/api/live", "")
	r.AddCookie(c)
	done := make(chan struct{})
	w := &flushRecorder{ch: make(chan string, 8)}
	go func() { e.h.ServeHTTP(w, r); close(done) }()
	// The stream waits on its heartbeat, its quiet check and its
	// session's end (three timers: waiting for fewer could advance the
	// clock before the session's timer exists); 50 ms of the console's
	// clock later the session is over.
	if !e.clock.WaitForPending(3, done) {
		t.Fatal("the stream ended before its session did")
	}
	e.clock.Advance(50 * time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived its session")
	}
}

// codeRecorder is a ResponseWriter that reports the status it is written
// with (a stream then runs until its request's context ends).
type codeRecorder struct {
	h    http.Header
	code chan int
	body strings.Builder
}

func (c *codeRecorder) Header() http.Header {
	if c.h == nil {
		c.h = http.Header{}
	}
	return c.h
}
func (c *codeRecorder) WriteHeader(code int)        { c.code <- code }
func (c *codeRecorder) Write(p []byte) (int, error) { return c.body.Write(p) }
func (c *codeRecorder) Flush()                      {}

// One identity holds at most MaxPerIdentity streams (429 naming the
// account beyond it), so a viewer with many tabs cannot take the slots of
// everyone else; other identities still open theirs up to MaxClients
// (503), and a closed stream frees its identity's slot.
func TestLiveStreamsPerIdentityAreCapped(t *testing.T) {
	e := newTestEnvOpt(t, nil, nil, Options{Live: LiveOptions{MaxPerIdentity: 3, MaxClients: 5}})
	open := func(email string) (int, *codeRecorder, func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		r := newReq(http.MethodGet, "/api/live", "").WithContext(ctx)
		r.AddCookie(e.sessionCookie(t, email))
		w := &codeRecorder{code: make(chan int, 1)}
		done := make(chan struct{})
		go func() { e.h.ServeHTTP(w, r); close(done) }()
		var code int
		select {
		case code = <-w.code:
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer to %s's stream", email)
		}
		return code, w, func() { cancel(); <-done }
	}
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range 3 {
		code, _, stop := open("greedy@example.com")
		closers = append(closers, stop)
		if code != http.StatusOK {
			t.Fatalf("greedy's stream %d: %d", i+1, code)
		}
	}
	code, w, stop := open("greedy@example.com")
	stop()
	if code != http.StatusTooManyRequests || !strings.Contains(w.body.String(), `"code":"live-too-many"`) || !strings.Contains(w.body.String(), "greedy@example.com") || w.h.Get("Retry-After") == "" {
		t.Fatalf("greedy's fourth stream = %d %s %v, want 429 live-too-many naming the account with Retry-After", code, w.body.String(), w.h)
	}
	for i := range 2 {
		code, _, stop := open("other@example.com")
		closers = append(closers, stop)
		if code != http.StatusOK {
			t.Fatalf("another viewer's stream %d beside greedy's three: %d", i+1, code)
		}
	}
	code, w, stop = open("third@example.com")
	stop()
	if code != http.StatusServiceUnavailable || !strings.Contains(w.body.String(), "live-unavailable") {
		t.Fatalf("a stream past MaxClients = %d %s, want 503", code, w.body.String())
	}
	closers[0]()
	closers = closers[1:]
	code, _, stop = open("greedy@example.com")
	closers = append(closers, stop)
	if code != http.StatusOK {
		t.Fatalf("greedy's stream after closing one: %d, want 200", code)
	}
	if n := e.s.live.clientCount(); n != 5 {
		t.Errorf("%d streams open, want 5", n)
	}
}

// A stream whose graph goes quiet — the relay stopped publishing (it died,
// or lost NATS), so the last counters would stay on the page as if live —
// says so: a "poll" status naming the graph once no counters arrived
// within QuietAfter, and "stream" again with the next counters. A graph
// that never publishes goes quiet too.
func TestLiveStreamSaysWhenItsGraphGoesQuiet(t *testing.T) {
	const quiet = 400 * time.Millisecond
	l := newLiveEnv(t, LiveOptions{QuietAfter: quiet, Heartbeat: time.Hour}, 0)
	s := l.open(t, l.app+"/g1")
	st := s.streaming()
	if st.QuietMs != quiet.Milliseconds() || len(st.Quiet) != 0 {
		t.Fatalf("first status %+v", st)
	}
	status := func(ev sseEvent) wire.LiveStatus {
		t.Helper()
		var st wire.LiveStatus
		if ev.name != "status" || json.Unmarshal([]byte(ev.data), &st) != nil {
			t.Fatalf("event %s %s, want a status", ev.name, ev.data)
		}
		return st
	}
	l.publishCounters(t, "relay-a", "g1", 7, 1)
	if ev := s.next(time.Second); ev.name != "counters" {
		t.Fatalf("event %s %s, want counters", ev.name, ev.data)
	}
	last := time.Now()
	st = status(s.next(5 * time.Second))
	if waited := time.Since(last); st.Mode != "poll" || !st.NATS || len(st.Quiet) != 1 || st.Quiet[0] != l.app+"/g1" ||
		!strings.Contains(st.Reason, "no relay has published counters for "+l.app+"/g1") || waited < quiet-50*time.Millisecond {
		t.Fatalf("after %v of silence: %+v; want poll naming the quiet graph, not before %v", waited, st, quiet)
	}
	// The relay publishes again: stream, then its counters.
	l.publishCounters(t, "relay-b", "g1", 3, 1)
	if st := status(s.next(time.Second)); st.Mode != "stream" || len(st.Quiet) != 0 {
		t.Fatalf("counters after the silence: status %+v, want stream", st)
	}
	if ev := s.next(time.Second); ev.name != "counters" {
		t.Fatalf("event %s %s, want the counters", ev.name, ev.data)
	}

	// A graph nothing publishes for goes quiet within QuietAfter of opening.
	s2 := l.open(t, l.app+"/never")
	s2.streaming()
	if st := status(s2.next(5 * time.Second)); st.Mode != "poll" || len(st.Quiet) != 1 || st.Quiet[0] != l.app+"/never" {
		t.Fatalf("a graph nothing publishes for: %+v", st)
	}
}
