package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// harness is one gate-api under test against its own broker, with an
// application name no other test uses.
type harness struct {
	t      testing.TB
	broker *gatetest.Broker
	mini   *miniqueen.Server
	srv    *Server
	url    string
	app    string
	ns     string
	client *queen.Client
	store  *store.Store
}

func newHarness(t testing.TB, tweak ...func(*config.Config)) *harness {
	t.Helper()
	b := gatetest.NewBroker(t)
	// Runs just before the broker closes: a dialled-but-unused keep-alive
	// connection would otherwise hold its shutdown for 5 s.
	t.Cleanup(sharedIdleClose)
	cfg := config.Default()
	cfg.QueenURL = b.URL
	cfg.KVNamespace = b.Namespace()
	cfg.Refresh = 200 * time.Millisecond
	// Most tests declare without a relay: answer at once. The tests of the
	// wait itself set it back with a tweak.
	cfg.DeclareWait = 0
	for _, f := range tweak {
		f(&cfg)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if os.Getenv("GATE_TEST_LOG") != "" {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	s, err := New(cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.Start(ctx)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, broker: b, mini: b.Mini, srv: s, url: ts.URL, app: "a" + randomHex(5), ns: cfg.KVNamespace, client: c, store: store.New(c, cfg.KVNamespace)}
}

// sharedIdleClose closes the idle connections of the broker client's
// shared transport.
func sharedIdleClose() {
	if c, err := queen.New("http://127.0.0.1:1"); err == nil {
		c.HTTPClient().CloseIdleConnections()
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (a answer) str(key string) string {
	s, _ := a.body[key].(string)
	return s
}

func (a answer) num(key string) float64 {
	f, _ := a.body[key].(float64)
	return f
}

// do sends a request; body is sent verbatim when it is a string or []byte,
// JSON-encoded otherwise; a nil body sends nothing. JSON content type
// unless headers override it.
func (h *harness) do(method, path string, body any, headers ...string) answer {
	h.t.Helper()
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
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
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
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

// expect fails unless the answer has status want; it returns the answer.
func (h *harness) expect(a answer, want int) answer {
	h.t.Helper()
	if a.status != want {
		h.t.Fatalf("status %d, want %d; body: %.600s", a.status, want, a.raw)
	}
	return a
}

// errorBody checks the refusal shape: a JSON object with a non-empty error.
func (h *harness) errorBody(a answer) string {
	h.t.Helper()
	msg := a.str("error")
	if msg == "" {
		h.t.Fatalf("status %d without an {\"error\": …} body: %.400s", a.status, a.raw)
	}
	return msg
}

// run publishes a relay status saying replica runs app/graph at version
// (the "stopped runtime" checks read it).
func (h *harness) run(replica, graph string, version int64, stages ...store.StageStatus) {
	h.t.Helper()
	st := store.RelayStatus{Replica: replica, At: time.Now().UnixMilli(), Graphs: []store.GraphStatus{{App: h.app, Graph: graph, Version: version, Running: true, Stages: stages}}}
	if err := h.store.PutStatus(context.Background(), st, time.Minute); err != nil {
		h.t.Fatal(err)
	}
	// What the refresh timer would do within GATE_API_REFRESH_MS.
	if err := h.srv.cat.syncStatus(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// stored reports whether a document is stored for app/graph.
func (h *harness) stored(app, graph string) bool {
	h.t.Helper()
	_, found, err := h.store.Get(context.Background(), app, graph)
	if err != nil {
		h.t.Fatal(err)
	}
	return found
}

// queueExists asks the broker whether it knows queue.
func (h *harness) queueExists(queue string) bool {
	h.t.Helper()
	_, err := h.client.Queue(context.Background(), queue)
	if err != nil && !queen.IsNotFound(err) {
		h.t.Fatal(err)
	}
	return err == nil
}

// messages counts the messages on every partition of queue.
func (h *harness) messages(queue string) []miniqueen.Message {
	h.t.Helper()
	h.broker.RequireMini(h.t, "reading queued messages directly")
	var out []miniqueen.Message
	for _, p := range h.mini.Partitions(queue) {
		out = append(out, h.mini.Messages(queue, p)...)
	}
	return out
}

// airbnb is the product description's example, its application-owned
// queues renamed under this test's application.
func (h *harness) airbnb(version int) map[string]any {
	h.t.Helper()
	raw, err := os.ReadFile("testdata/airbnb.json")
	if err != nil {
		h.t.Fatal(err)
	}
	s := strings.ReplaceAll(string(raw), "channel.airbnb", h.app+".airbnb")
	var doc map[string]any
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		h.t.Fatal(err)
	}
	doc["version"] = version
	return doc
}

// target is a one-node graph: Gate-owned ingress, one budget, an egress.
func (h *harness) target(name string, count int) map[string]any {
	return map[string]any{
		"version": 1,
		"nodes": map[string]any{"limit": map[string]any{
			"ingress": true,
			"budgets": []any{map[string]any{"id": "global", "count": count, "timeMs": 1000}},
			"egress":  h.app + "." + name + ".out",
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"limit"}}},
	}
}

func (h *harness) graphURL(graph string) string { return "/v1/apps/" + h.app + "/graphs/" + graph }

func (h *harness) ingress(graph, node string) string { return plan.IngressQueue(h.app, graph, node) }

func queenList() queen.ListQueuesRequest { return queen.ListQueuesRequest{} }

// partition returns the messages of one partition of queue.
func (h *harness) partition(queue, partition string) []miniqueen.Message {
	h.t.Helper()
	return h.broker.RequireMini(h.t, "reading queued messages directly").Messages(queue, partition)
}
