// Package apitest is the harness gate-api's route families test through:
// one whole gate-api (package server, every family on one router) served
// over HTTP against its own broker, with an application name no other
// test uses, and the documents and helpers the tests share. Every answer
// it reads that refuses is checked against the refusal catalogue: a JSON
// body with a sentence and a code of wire.Codes for its status.
package apitest

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/gate-api/server"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Harness is one gate-api under test against its own broker.
type Harness struct {
	T      testing.TB
	Broker *gatetest.Broker
	Mini   *miniqueen.Server
	Srv    *server.Server
	// URL is the gate-api's base URL.
	URL string
	// App is this test's application name; NS the kv namespace.
	App    string
	NS     string
	Client *queen.Client
	Store  *store.Store
}

// Setup is how NewWith builds its gate-api. The zero value is New's.
type Setup struct {
	// Config changes the configuration after the harness's defaults.
	Config func(*config.Config)
	// Log is the server's logger; nil discards (GATE_TEST_LOG=1 writes
	// JSON to stderr).
	Log *slog.Logger
	// Clock is the server's clock; nil is the wall clock.
	Clock clock.Clock
}

// New starts a gate-api (started, served, stopped at cleanup) with the
// configuration tweaks applied in order.
func New(t testing.TB, tweak ...func(*config.Config)) *Harness {
	t.Helper()
	return NewWith(t, Setup{Config: func(c *config.Config) {
		for _, f := range tweak {
			f(c)
		}
	}})
}

// NewWith is New for a setup.
func NewWith(t testing.TB, s Setup) *Harness {
	t.Helper()
	b := gatetest.NewBroker(t)
	// Runs just before the broker closes: a dialled-but-unused keep-alive
	// connection would otherwise hold its shutdown for 5 s.
	t.Cleanup(SharedIdleClose)
	cfg := config.Default()
	cfg.QueenURL = b.URL
	cfg.KVNamespace = b.Namespace()
	cfg.Refresh = 200 * time.Millisecond
	// Most tests declare without a relay: answer at once. The tests of the
	// wait itself set it back with a tweak.
	cfg.DeclareWait = 0
	// Parallel tests on a loaded two-core machine (the race detector, a
	// 3 MiB push through miniqueen's scanner) can pass the 10 s default
	// without anything being wrong; the tests of the deadline itself set
	// their own.
	cfg.BrokerTimeout = 30 * time.Second
	if s.Config != nil {
		s.Config(&cfg)
	}
	log := s.Log
	if log == nil {
		log = TestLogger()
	}
	var opts []server.Option
	if s.Clock != nil {
		opts = append(opts, server.WithClock(s.Clock))
	}
	srv, err := server.New(cfg, log, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(srv.Stop)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &Harness{T: t, Broker: b, Mini: b.Mini, Srv: srv, URL: ts.URL, App: "a" + RandomHex(5), NS: cfg.KVNamespace, Client: c, Store: store.New(c, cfg.KVNamespace)}
}

// TestLogger discards, unless GATE_TEST_LOG is set: then it writes JSON to
// stderr.
func TestLogger() *slog.Logger {
	if os.Getenv("GATE_TEST_LOG") != "" {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewJSONHandler(io.Discard, nil))
}

// Plane is the server's shared state (the catalogue, the clock, the store).
func (h *Harness) Plane() *plane.Plane { return h.Srv.Plane() }

// SharedIdleClose closes the idle connections of the broker client's
// shared transport.
func SharedIdleClose() {
	if c, err := queen.New("http://127.0.0.1:1"); err == nil {
		c.HTTPClient().CloseIdleConnections()
	}
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Answer is one HTTP answer.
type Answer struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// Str is the string at key of the body ("" when absent).
func (a Answer) Str(key string) string {
	s, _ := a.Body[key].(string)
	return s
}

// Num is the number at key of the body (0 when absent).
func (a Answer) Num(key string) float64 {
	f, _ := a.Body[key].(float64)
	return f
}

// Do sends a request; body is sent verbatim when it is a string or []byte,
// JSON-encoded otherwise; a nil body sends nothing. JSON content type
// unless headers override it. A refusal (status 400 and up) must carry the
// catalogue's shape: CheckRefusal.
func (h *Harness) Do(method, path string, body any, headers ...string) Answer {
	h.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			h.T.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, h.URL+path, rd)
	if err != nil {
		h.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &a.Body)
	CheckRefusal(h.T, method+" "+path, a.Status, a.Header, a.Raw)
	return a
}

// CheckRefusal fails t unless an answer of status 400 and up is a JSON
// refusal: a sentence in "error" and a code of the catalogue that is
// answered with that status (wire.Codes). Answers below 400 pass.
func CheckRefusal(t testing.TB, what string, status int, header http.Header, raw []byte) {
	t.Helper()
	if status < 400 {
		return
	}
	var e wire.Error
	if header.Get("Content-Type") != "application/json" || json.Unmarshal(raw, &e) != nil || e.Error == "" {
		t.Errorf("%s: %d without a JSON refusal: %.300s", what, status, raw)
		return
	}
	if !e.Code.Known(status) {
		t.Errorf("%s: %d with code %q, which the catalogue does not answer with %d: %.300s", what, status, e.Code, status, raw)
	}
}

// Expect fails unless the answer has status want; it returns the answer.
func (h *Harness) Expect(a Answer, want int) Answer {
	h.T.Helper()
	if a.Status != want {
		h.T.Fatalf("status %d, want %d; body: %.600s", a.Status, want, a.Raw)
	}
	return a
}

// ErrorBody checks the refusal shape: a JSON object with a non-empty
// error; it returns the sentence.
func (h *Harness) ErrorBody(a Answer) string {
	h.T.Helper()
	msg := a.Str("error")
	if msg == "" {
		h.T.Fatalf("status %d without an {\"error\": …} body: %.400s", a.Status, a.Raw)
	}
	return msg
}

// Run publishes a relay status saying replica runs app/graph at version
// (the "stopped runtime" checks read it).
func (h *Harness) Run(replica, graph string, version int64, stages ...store.StageStatus) {
	h.T.Helper()
	st := store.RelayStatus{Replica: replica, At: time.Now().UnixMilli(), Graphs: []store.GraphStatus{{App: h.App, Graph: graph, Version: version, Running: true, Stages: stages}}}
	if err := h.Store.PutStatus(context.Background(), st, time.Minute); err != nil {
		h.T.Fatal(err)
	}
	// What the refresh timer would do within GATE_API_REFRESH_MS.
	if err := h.Plane().Cat.SyncStatus(context.Background()); err != nil {
		h.T.Fatal(err)
	}
}

// Stored reports whether a document is stored for app/graph.
func (h *Harness) Stored(app, graph string) bool {
	h.T.Helper()
	_, found, err := h.Store.Get(context.Background(), app, graph)
	if err != nil {
		h.T.Fatal(err)
	}
	return found
}

// QueueExists asks the broker whether it knows queue.
func (h *Harness) QueueExists(queue string) bool {
	h.T.Helper()
	_, err := h.Client.Queue(context.Background(), queue)
	if err != nil && !queen.IsNotFound(err) {
		h.T.Fatal(err)
	}
	return err == nil
}

// Messages is the messages on every partition of queue.
func (h *Harness) Messages(queue string) []miniqueen.Message {
	h.T.Helper()
	h.Broker.RequireMini(h.T, "reading queued messages directly")
	var out []miniqueen.Message
	for _, p := range h.Mini.Partitions(queue) {
		out = append(out, h.Mini.Messages(queue, p)...)
	}
	return out
}

// Partition is the messages of one partition of queue.
func (h *Harness) Partition(queue, partition string) []miniqueen.Message {
	h.T.Helper()
	return h.Broker.RequireMini(h.T, "reading queued messages directly").Messages(queue, partition)
}

//go:embed testdata/airbnb.json
var airbnbDoc string

// Airbnb is the product description's example, its application-owned
// queues renamed under this test's application.
func (h *Harness) Airbnb(version int) map[string]any {
	h.T.Helper()
	s := strings.ReplaceAll(airbnbDoc, "channel.airbnb", h.App+".airbnb")
	var doc map[string]any
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		h.T.Fatal(err)
	}
	doc["version"] = version
	return doc
}

// Target is a one-node graph: Gate-owned ingress, one budget, an egress.
func (h *Harness) Target(name string, count int) map[string]any {
	return map[string]any{
		"version": 1,
		"nodes": map[string]any{"limit": map[string]any{
			"ingress": true,
			"budgets": []any{map[string]any{"id": "global", "count": count, "timeMs": 1000}},
			"egress":  h.App + "." + name + ".out",
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"limit"}}},
	}
}

// Shop is a one-node graph whose entry sheds, costs by payload.units (max
// 5) and counts charges per account.
func (h *Harness) Shop() map[string]any {
	return map[string]any{
		"version": 1,
		"nodes": map[string]any{"entry": map[string]any{
			"ingress": map[string]any{"partitions": 4, "shed": true},
			"cost":    map[string]any{"path": "payload.units", "default": 1, "max": 5},
			"budgets": []any{
				map[string]any{"id": "global", "count": 10, "timeMs": 1000},
				map[string]any{"id": "per-acct", "count": 5, "timeMs": 1000, "scopeBy": "payload.account", "whenOp": []any{"charge.*"}},
			},
			"egress": h.App + ".shop.out",
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"entry"}}},
	}
}

// GraphURL is the application route of graph.
func (h *Harness) GraphURL(graph string) string { return "/v1/apps/" + h.App + "/graphs/" + graph }

// Ingress is the Gate-owned ingress queue of graph's node.
func (h *Harness) Ingress(graph, node string) string { return plan.IngressQueue(h.App, graph, node) }

// QueenList is an empty queue listing request.
func QueenList() queen.ListQueuesRequest { return queen.ListQueuesRequest{} }

// WithHistory gives the harness's server a migrated history database in a
// schema of the test's own.
func (h *Harness) WithHistory(t testing.TB) *history.DB {
	t.Helper()
	pg := gatetest.NewPostgres(t)
	db, err := history.OpenURL(t.Context(), pg.URL, pg.Schema, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	h.Srv.UseHistory(db)
	return db
}

// DecodeAs decodes an answer's body as T.
func DecodeAs[T any](t *testing.T, a Answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.Raw, &v); err != nil {
		t.Fatalf("decoding %T: %v in %.300s", v, err, a.Raw)
	}
	return v
}

// Deref is *p, or nil for a nil p (for printing optional fields).
func Deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// LogBuffer is a log sink the server's goroutines may write while a test
// reads it.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ZeroShare declares "trickle", a one-node graph with budgets "trickle"
// (10 per second) and "global" (100 per second) on its one path, then gives
// the served plan a ceiling of 0 on trickle: a counter no path has a share
// of. Declare refuses such a share (share-rounds-out), so the plan is
// edited in place to reach the views' rule for it. It returns the two
// counter keys.
func (h *Harness) ZeroShare(t *testing.T) (trickle, global string) {
	t.Helper()
	doc := map[string]any{
		"version": 1,
		"nodes": map[string]any{"limit": map[string]any{
			"ingress": true,
			"budgets": []any{
				map[string]any{"id": "trickle", "count": 10, "timeMs": 1000},
				map[string]any{"id": "global", "count": 100, "timeMs": 1000},
			},
			"egress": h.App + ".trickle.out",
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"limit"}}},
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("trickle"), doc), http.StatusOK)
	e := h.Plane().Cat.Get(t.Context(), h.App, "trickle")
	if e == nil || e.Plan == nil || len(e.Plan.Nodes) != 1 || len(e.Plan.Nodes[0].Budgets) != 2 {
		t.Fatalf("the declared trickle graph is not served as one node with two budgets: %+v", e)
	}
	bs := e.Plan.Nodes[0].Budgets
	if bs[0].ID != "trickle" || bs[0].Ceilings["main"] != 10 || bs[1].Ceilings["main"] != 100 {
		t.Fatalf("budgets %+v, want trickle at 10 and global at 100", bs)
	}
	bs[0].Ceilings = map[string]int64{"main": 0}
	return bs[0].Key, bs[1].Key
}

// StartedAt reads watch.startedAt out of a stored document's JSON.
func StartedAt(t *testing.T, body []byte) int64 {
	t.Helper()
	s := string(body)
	i := strings.Index(s, `"startedAt":`)
	if i < 0 {
		t.Fatalf("no startedAt in %s", s)
	}
	var n int64
	for _, c := range s[i+len(`"startedAt":`):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// VerifyTestMain runs a package's tests and then fails when a goroutine is
// left behind, ignoring only what no package of gate-api controls.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http's keep-alive loops of a client (http.DefaultClient, the
		// broker client's shared transport) whose idle connections the
		// closing servers have not reaped yet.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
