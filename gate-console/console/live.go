package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// The relays' NATS subjects (gate-relay/README.md): counters and denials
// per {app}.{graph}.
const (
	countersSubject = "gate.relay.counters"
	denialsSubject  = "gate.relay.denials"
)

// LiveOptions tune GET /api/live. The zero value is the defaults; a field
// zero or negative takes its default.
type LiveOptions struct {
	// Heartbeat is the period of the ": heartbeat" comment that keeps
	// proxies and the browser from calling an idle stream dead (15 s).
	Heartbeat time.Duration
	// WriteTimeout bounds one event's write; a client that cannot take it
	// in that time is cut (10 s). Between writes there is no deadline, so
	// an idle healthy stream stays open.
	WriteTimeout time.Duration
	// MaxDenials bounds the denials buffered for one client; beyond it the
	// oldest are dropped and counted (500, the relay's ring size).
	MaxDenials int
	// MaxClients bounds concurrent streams (1000); beyond it 503.
	MaxClients int
	// MaxPerIdentity bounds the concurrent streams of one identity (20:
	// a graph page per tab); beyond it 429, so one viewer cannot hold
	// every slot of MaxClients.
	MaxPerIdentity int
	// MaxGraphs bounds the graphs one stream asks for (100).
	MaxGraphs int
	// StaleAfter drops a replica's snapshot from the sums when it is older
	// (30 s: six relay status periods).
	StaleAfter time.Duration
	// PollInterval is what the "poll" status tells the web app (2 s).
	PollInterval time.Duration
	// QuietAfter is how long a stream's graph may go without a counters
	// message before the stream says it is quiet and tells the web app to
	// poll (15 s: three relay status periods). A relay that stopped
	// publishing (it died, or lost NATS) must not leave a page showing its
	// last numbers as live.
	QuietAfter time.Duration
}

// WithDefaults fills the fields left unset with their defaults.
func (o LiveOptions) WithDefaults() LiveOptions {
	o.Heartbeat = positive(o.Heartbeat, 15*time.Second)
	o.WriteTimeout = positive(o.WriteTimeout, 10*time.Second)
	o.StaleAfter = positive(o.StaleAfter, 30*time.Second)
	o.PollInterval = positive(o.PollInterval, 2*time.Second)
	o.QuietAfter = positive(o.QuietAfter, 15*time.Second)
	o.MaxDenials = positive(o.MaxDenials, 500)
	o.MaxClients = positive(o.MaxClients, 1000)
	o.MaxPerIdentity = positive(o.MaxPerIdentity, 20)
	o.MaxGraphs = positive(o.MaxGraphs, 100)
	return o
}

// liveHub fans the relays' NATS messages out to the browser streams: one
// NATS subscription per subject however many tabs watch it, a bounded
// coalescing buffer per client, and a status event whenever NATS comes or
// goes. It is a service: Start connects to NATS, Stop ends every stream and
// the connection and waits; it serves once (a stopped hub stays closed).
type liveHub struct {
	service.Base
	url   string
	log   *slog.Logger
	opt   LiveOptions
	clock clock.Clock

	mu      sync.Mutex
	nc      *nats.Conn
	up      bool
	reason  string
	subs    map[string]*subjectSub
	clients map[*liveClient]struct{}
	// perIdentity counts the open streams of each identity (its e-mail).
	perIdentity map[string]int
	replicas    map[string]map[string]liveSnapshot // app/graph → replica → latest
	// heard is when a counters message last arrived, per app/graph, and
	// heardAny for any graph.
	heard    map[string]time.Time
	heardAny time.Time
	closed   bool
	done     chan struct{}
}

type subjectSub struct {
	sub     *nats.Subscription
	clients map[*liveClient]struct{}
}

type liveSnapshot struct {
	At    int64             `json:"at"`
	Graph store.GraphStatus `json:"graph"`
	seen  time.Time
}

func newLiveHub(url string, log *slog.Logger, clk clock.Clock, opt LiveOptions) *liveHub {
	h := &liveHub{
		url: url, log: log, opt: opt.WithDefaults(), clock: clock.Or(clk),
		subs: map[string]*subjectSub{}, clients: map[*liveClient]struct{}{}, perIdentity: map[string]int{},
		replicas: map[string]map[string]liveSnapshot{}, heard: map[string]time.Time{}, done: make(chan struct{}),
	}
	if url == "" {
		h.reason = "GATE_NATS_URL is not set on gate-console: live counters are not streamed; poll the graph view"
	} else {
		h.reason = "connecting to NATS at " + url
	}
	return h
}

// Start connects to NATS (retrying in the background until it answers)
// and closes the hub when ctx ends or Stop is called. Without
// GATE_NATS_URL it only waits for that end: /api/live tells the web app to
// poll.
func (h *liveHub) Start(ctx context.Context) error {
	ctx, ok := h.StartInit(ctx)
	if !ok {
		return nil
	}
	h.Go(func() {
		<-ctx.Done()
		h.close()
	})
	defer h.Ready()
	if h.url == "" {
		h.log.Info("GATE_NATS_URL is not set: /api/live tells the web app to poll")
		return nil
	}
	nc, err := nats.Connect(h.url,
		nats.Name("gate-console"),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.ConnectHandler(func(*nats.Conn) { h.setUp(true, "") }),
		nats.ReconnectHandler(func(*nats.Conn) { h.setUp(true, "") }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			h.setUp(false, fmt.Sprintf("NATS at %s is not reachable (%v): poll the graph view until it is back", h.url, err))
		}),
	)
	if err != nil {
		h.log.Warn("NATS connection failed; /api/live tells the web app to poll", "url", h.url, "error", err)
		h.setUp(false, fmt.Sprintf("NATS at %s is not usable (%v): poll the graph view", h.url, err))
		return nil
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		nc.Close()
		return nil
	}
	h.nc = nc
	up := nc.IsConnected()
	h.mu.Unlock()
	if up {
		h.setUp(true, "")
	}
	return nil
}

// close ends every stream and the NATS connection (Stop, or the end of
// Start's context).
func (h *liveHub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.done)
	nc := h.nc
	h.mu.Unlock()
	if nc != nil {
		nc.Close()
	}
}

func (h *liveHub) setUp(up bool, reason string) {
	h.mu.Lock()
	changed := h.up != up
	h.up, h.reason = up, reason
	var cs []*liveClient
	if changed {
		for c := range h.clients {
			cs = append(cs, c)
		}
	}
	h.mu.Unlock()
	if changed {
		h.log.Info("live stream NATS state", "up", up, "reason", reason)
	}
	for _, c := range cs {
		c.offerStatus(h.status(c))
	}
}

// status is what a stream is told: stream, or poll because NATS is not
// there or because the stream's graphs went quiet (c.quiet).
func (h *liveHub) status(c *liveClient) wire.LiveStatus {
	quiet := c.quietGraphs()
	h.mu.Lock()
	defer h.mu.Unlock()
	st := wire.LiveStatus{Mode: "poll", NATS: h.up, Reason: h.reason, Graphs: c.graphs,
		HeartbeatMs: h.opt.Heartbeat.Milliseconds(), PollMs: h.opt.PollInterval.Milliseconds(),
		QuietMs: h.opt.QuietAfter.Milliseconds(), Quiet: quiet}
	switch {
	case !h.up:
	case len(quiet) > 0:
		what := "any graph"
		if quiet[0] != "*" {
			what = strings.Join(quiet, ", ")
		}
		st.Reason = fmt.Sprintf("no relay has published counters for %s in the last %s (a relay stopped, or cannot reach NATS): its last numbers are stale, so poll the graph view until counters arrive again", what, h.opt.QuietAfter)
	default:
		st.Mode, st.Reason = "stream", ""
	}
	return st
}

// checkQuiet updates a stream's quiet graphs as of now: a graph is quiet
// when no counters message for it arrived within QuietAfter, counted from
// when the stream opened at the earliest. It reports whether that changed.
func (h *liveHub) checkQuiet(c *liveClient, now time.Time) bool {
	h.mu.Lock()
	var quiet []string
	if len(c.graphs) == 0 {
		if now.Sub(later(h.heardAny, c.opened)) >= h.opt.QuietAfter {
			quiet = []string{"*"}
		}
	} else {
		for _, g := range c.graphs {
			if now.Sub(later(h.heard[g], c.opened)) >= h.opt.QuietAfter {
				quiet = append(quiet, g)
			}
		}
	}
	h.mu.Unlock()
	return c.setQuiet(quiet)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// subjects are the NATS subjects a stream for graphs needs (all graphs:
// the two wildcards).
func subjects(graphs []string) []string {
	if len(graphs) == 0 {
		return []string{countersSubject + ".*.*", denialsSubject + ".*.*"}
	}
	out := make([]string, 0, 2*len(graphs))
	for _, g := range graphs {
		app, name, _ := strings.Cut(g, "/")
		out = append(out, countersSubject+"."+app+"."+name, denialsSubject+"."+app+"."+name)
	}
	return out
}

// register adds a stream, or refuses it: 503 when the console is
// shutting down or serves MaxClients streams, 429 when the stream's
// identity already holds MaxPerIdentity.
func (h *liveHub) register(c *liveClient) *httpapi.Refusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeLiveUnavailable, "gate-console is shutting down: reconnect in a moment").RetryAfter(5)
	}
	if n := h.perIdentity[c.identity]; n >= h.opt.MaxPerIdentity {
		return httpapi.Refuse(http.StatusTooManyRequests, wire.CodeLiveTooMany, "this account (%s) already has %d live streams open on this console, the most one identity may hold: close a tab (each graph page holds one), or poll the graph view", c.identity, n).RetryAfter(5)
	}
	if len(h.clients) >= h.opt.MaxClients {
		return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeLiveUnavailable, "%d live streams are open, the most one gate-console serves: close a tab or poll the graph view", h.opt.MaxClients).RetryAfter(5)
	}
	h.clients[c] = struct{}{}
	h.perIdentity[c.identity]++
	if h.nc == nil {
		return nil
	}
	fresh := false
	for _, subj := range c.subjects {
		ss := h.subs[subj]
		if ss == nil {
			sub, err := h.nc.Subscribe(subj, h.onMsg)
			if err != nil {
				h.log.Warn("NATS subscribe failed", "subject", subj, "error", err)
				continue
			}
			ss = &subjectSub{sub: sub, clients: map[*liveClient]struct{}{}}
			h.subs[subj] = ss
			fresh = true
		}
		ss.clients[c] = struct{}{}
	}
	if fresh && h.up {
		// The server has the interest before the stream says "stream", so
		// nothing published after that is missed.
		_ = h.nc.FlushTimeout(2 * time.Second)
	}
	return nil
}

// clientCount is the number of open streams.
func (h *liveHub) clientCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

func (h *liveHub) unregister(c *liveClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	if h.perIdentity[c.identity]--; h.perIdentity[c.identity] <= 0 {
		delete(h.perIdentity, c.identity)
	}
	for _, subj := range c.subjects {
		ss := h.subs[subj]
		if ss == nil {
			continue
		}
		delete(ss.clients, c)
		if len(ss.clients) == 0 {
			_ = ss.sub.Unsubscribe()
			delete(h.subs, subj)
		}
	}
}

// subscriptions is the number of NATS subscriptions the hub holds.
func (h *liveHub) subscriptions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *liveHub) listeners(subject string) []*liveClient {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := h.subs[subject]
	if ss == nil {
		return nil
	}
	out := make([]*liveClient, 0, len(ss.clients))
	for c := range ss.clients {
		out = append(out, c)
	}
	return out
}

// onMsg handles one relay message; it never blocks on a client.
func (h *liveHub) onMsg(m *nats.Msg) {
	switch {
	case strings.HasPrefix(m.Subject, countersSubject+"."):
		var snap struct {
			Replica string `json:"replica"`
			liveSnapshot
		}
		if err := json.Unmarshal(m.Data, &snap); err != nil || snap.Replica == "" {
			h.log.Debug("ignoring a counters message that does not parse", "subject", m.Subject, "error", err)
			return
		}
		ev := h.sum(snap.Replica, snap.liveSnapshot)
		for _, c := range h.listeners(m.Sub.Subject) {
			c.offerCounters(ev)
		}
	case strings.HasPrefix(m.Subject, denialsSubject+"."):
		var ds []wire.Denial
		if err := json.Unmarshal(m.Data, &ds); err != nil {
			h.log.Debug("ignoring a denials message that does not parse", "subject", m.Subject, "error", err)
			return
		}
		for _, c := range h.listeners(m.Sub.Subject) {
			c.offerDenials(ds)
		}
	}
}

// sum records one replica's snapshot and returns the graph's counters
// summed over the replicas that published within StaleAfter.
func (h *liveHub) sum(replica string, snap liveSnapshot) *wire.LiveCounters {
	now := h.clock.Now()
	snap.seen = now
	key := snap.Graph.App + "/" + snap.Graph.Graph
	h.mu.Lock()
	h.heard[key], h.heardAny = now, now
	reps := h.replicas[key]
	if reps == nil {
		reps = map[string]liveSnapshot{}
		h.replicas[key] = reps
	}
	reps[replica] = snap
	names := make([]string, 0, len(reps))
	for r, s := range reps {
		if now.Sub(s.seen) > h.opt.StaleAfter {
			delete(reps, r)
			continue
		}
		names = append(names, r)
	}
	sort.Strings(names)
	ev := &wire.LiveCounters{Application: snap.Graph.App, Graph: snap.Graph.Graph, Replicas: names, Stages: []wire.LiveStage{}}
	type stageKey struct {
		path, node string
		hop        int
	}
	idx := map[stageKey]int{}
	for _, r := range names {
		s := reps[r]
		ev.At = max(ev.At, s.At)
		ev.Version = max(ev.Version, s.Graph.Version)
		ev.Running = ev.Running || s.Graph.Running
		for _, st := range s.Graph.Stages {
			k := stageKey{st.Path, st.Node, st.Hop}
			i, ok := idx[k]
			if !ok {
				i = len(ev.Stages)
				idx[k] = i
				ev.Stages = append(ev.Stages, wire.LiveStage{Path: st.Path, Node: st.Node, Hop: st.Hop})
			}
			ev.Stages[i].Counters.Add(st.Counters)
			if lr := st.LastRefusal; lr != nil && (ev.Stages[i].LastRefusal == nil || lr.At > ev.Stages[i].LastRefusal.At) {
				cp := *lr
				ev.Stages[i].LastRefusal = &cp
			}
		}
	}
	h.mu.Unlock()
	return ev
}

// liveClient is one browser stream's buffer: the newest counters per graph
// (coalesced), a bounded list of denials, and a pending status.
type liveClient struct {
	// identity is whose stream it is (the e-mail; "" for none).
	identity string
	// opened is when the stream opened (on the hub's clock).
	opened   time.Time
	graphs   []string
	subjects []string
	max      int

	mu       sync.Mutex
	counters map[string]*wire.LiveCounters
	order    []string
	denials  []wire.Denial
	dropped  int64
	status   *wire.LiveStatus
	// quiet are the graphs the stream last called quiet.
	quiet []string
	wake  chan struct{}
}

func newLiveClient(identity string, opened time.Time, graphs []string, maxDenials int) *liveClient {
	return &liveClient{identity: identity, opened: opened, graphs: graphs, subjects: subjects(graphs), max: maxDenials,
		counters: map[string]*wire.LiveCounters{}, wake: make(chan struct{}, 1)}
}

func (c *liveClient) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *liveClient) offerCounters(ev *wire.LiveCounters) {
	k := ev.Application + "/" + ev.Graph
	c.mu.Lock()
	if _, ok := c.counters[k]; !ok {
		c.order = append(c.order, k)
	}
	c.counters[k] = ev
	c.mu.Unlock()
	c.signal()
}

func (c *liveClient) offerDenials(ds []wire.Denial) {
	c.mu.Lock()
	c.denials = append(c.denials, ds...)
	if over := len(c.denials) - c.max; over > 0 {
		c.dropped += int64(over)
		c.denials = slices.Delete(c.denials, 0, over)
	}
	c.mu.Unlock()
	c.signal()
}

// quietGraphs are the graphs the stream last called quiet.
func (c *liveClient) quietGraphs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.quiet)
}

// setQuiet records the stream's quiet graphs and reports a change.
func (c *liveClient) setQuiet(quiet []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Equal(c.quiet, quiet) {
		return false
	}
	c.quiet = quiet
	return true
}

func (c *liveClient) offerStatus(st wire.LiveStatus) {
	c.mu.Lock()
	c.status = &st
	c.mu.Unlock()
	c.signal()
}

// take empties the buffer into SSE frames.
func (c *liveClient) take(buf *bytes.Buffer) {
	c.mu.Lock()
	st, counters, order, denials, dropped := c.status, c.counters, c.order, c.denials, c.dropped
	c.status, c.order, c.denials, c.dropped = nil, nil, nil, 0
	if len(counters) > 0 {
		c.counters = map[string]*wire.LiveCounters{}
	}
	c.mu.Unlock()
	if st != nil {
		frame(buf, "status", st)
	}
	for _, k := range order {
		frame(buf, "counters", counters[k])
	}
	if len(denials) > 0 || dropped > 0 {
		frame(buf, "denials", wire.LiveDenials{Denials: nonNilDenials(denials), Dropped: dropped})
	}
}

// buffered is the number of items waiting (for the bounded-memory test).
func (c *liveClient) buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.counters) + len(c.denials)
}

func nonNilDenials(d []wire.Denial) []wire.Denial {
	if d == nil {
		return []wire.Denial{}
	}
	return d
}

func frame(buf *bytes.Buffer, event string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	buf.WriteString("event: ")
	buf.WriteString(event)
	buf.WriteString("\ndata: ")
	buf.Write(b)
	buf.WriteString("\n\n")
}

// parseGraphs reads ?graphs=app/graph,… (absent or empty: every graph).
func parseGraphs(raw string, maxGraphs int) ([]string, string) {
	out := []string{}
	for _, g := range strings.Split(raw, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		app, name, ok := strings.Cut(g, "/")
		if !ok || !liveName(app) || !liveName(name) {
			return nil, fmt.Sprintf("graphs entry %q is not {app}/{graph} (names of a-z, 0-9 and inner dashes, at most 63 bytes): pass e.g. graphs=demo/demo,billing/invoices", g)
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if len(out) > maxGraphs {
		return nil, fmt.Sprintf("graphs names %d graphs, more than %d: open one stream for all graphs (omit graphs) instead", len(out), maxGraphs)
	}
	return out, ""
}

func liveName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0) {
			return false
		}
	}
	return true
}

// serve is GET /api/live?graphs=app/graph,…: server-sent events. The
// first event is "status" (stream or poll, and why); then "counters" and
// "denials" as the relays publish, and a heartbeat comment every
// Heartbeat.
func (h *liveHub) serve(w http.ResponseWriter, r *http.Request) {
	graphs, bad := parseGraphs(r.URL.Query().Get("graphs"), h.opt.MaxGraphs)
	if bad != "" {
		httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusBadRequest, wire.CodeInvalidQuery, "%s", bad).Field("graphs"))
		return
	}
	id, _ := identityFrom(r.Context())
	c := newLiveClient(id.Email, h.clock.Now(), graphs, h.opt.MaxDenials)
	if bad := h.register(c); bad != nil {
		httpapi.WriteRefusal(w, bad)
		return
	}
	defer h.unregister(c)
	rc := http.NewResponseController(w)
	// The server's read deadline would end a long stream; the request has
	// no body, so clear it (a closed connection still ends the context).
	_ = rc.SetReadDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	c.offerStatus(h.status(c))

	var buf bytes.Buffer
	write := func() bool {
		// A socket's deadline is the operating system's wall clock, never
		// the injected one.
		if err := rc.SetWriteDeadline(time.Now().Add(h.opt.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		_, err := w.Write(buf.Bytes())
		if err == nil {
			err = rc.Flush()
		}
		buf.Reset()
		_ = rc.SetWriteDeadline(time.Time{})
		return err == nil
	}
	beat := h.clock.NewTicker(h.opt.Heartbeat)
	defer beat.Stop()
	// Silence is checked a few times per QuietAfter; counters arriving
	// end it at once (the wake below).
	hush := h.clock.NewTicker(max(h.opt.QuietAfter/3, 10*time.Millisecond))
	defer hush.Stop()
	// A stream ends with its session (the browser reconnects and is asked
	// to sign in again); the dev bypass has no expiry.
	var expired <-chan time.Time
	if id, ok := identityFrom(r.Context()); ok && !id.Expires.IsZero() {
		t := h.clock.NewTimer(max(id.Expires.Sub(h.clock.Now()), 0))
		defer t.Stop()
		expired = t.C()
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-expired:
			return
		case <-h.done:
			return
		case <-beat.C():
			buf.WriteString(": heartbeat\n\n")
		case <-hush.C():
			if h.checkQuiet(c, h.clock.Now()) {
				c.offerStatus(h.status(c))
				c.take(&buf)
			}
		case <-c.wake:
			if h.checkQuiet(c, h.clock.Now()) {
				c.offerStatus(h.status(c))
			}
			c.take(&buf)
		}
		if buf.Len() > 0 && !write() {
			return
		}
	}
}
