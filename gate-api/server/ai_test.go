package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

const aiTestKey = "sk-gate-api-test-SECRET-41d2"
const aiBodyMarker = "UPSTREAM-BODY-MARKER"

// fakeOpenAI is an httptest Responses API answering each call with the
// next reply text (the last repeats), or with status when set.
type fakeOpenAI struct {
	mu      sync.Mutex
	calls   int
	replies []string
	status  int
	srv     *httptest.Server
}

func newFakeOpenAI(t *testing.T, status int, replies ...string) *fakeOpenAI {
	f := &fakeOpenAI{replies: replies, status: status}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		f.mu.Lock()
		n := f.calls
		f.calls++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if f.status != 0 {
			w.WriteHeader(f.status)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": aiBodyMarker + " " + aiTestKey}})
			return
		}
		text := f.replies[min(n, len(f.replies)-1)]
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
			"output": []any{map[string]any{"type": "message", "id": "m1", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
		})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// newAIHarness is a gate-api whose agent talks to base (no key when base
// is ""), with its log captured.
func newAIHarness(t *testing.T, base string) (*harness, *logBuffer) {
	t.Helper()
	b := gatetest.NewBroker(t)
	t.Cleanup(sharedIdleClose)
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Refresh, cfg.DeclareWait = b.URL, b.Namespace(), 200*time.Millisecond, 0
	if base != "" {
		cfg.AI.AI = knob.AI{Provider: knob.AIProviderOpenAI, Model: "gpt-test", Key: aiTestKey, KeyVar: "GATE_OPENAI_API_KEY", BaseURL: base}
		cfg.AI.CallTimeout, cfg.AI.RequestTimeout = 5*time.Second, 10*time.Second
	}
	logs := &logBuffer{}
	s, err := New(cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
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
	return &harness{t: t, broker: b, mini: b.Mini, srv: s, url: ts.URL, app: "a" + randomHex(5), ns: cfg.KVNamespace, client: c, store: store.New(c, cfg.KVNamespace)}, logs
}

func aiReply(msg string, config *string) string {
	b, _ := json.Marshal(map[string]any{"message": msg, "assumptions": []string{"Gate-owned ingress"}, "configuration": config})
	return string(b)
}

func aiDraft(app, graph string) string {
	return `{"application":"` + app + `","graph":"` + graph + `","version":1,"counters":{"windowSeconds":60},"nodes":{"limit":{"ingress":true,"cost":1,"budgets":[{"id":"global","count":100,"timeMs":1000,"confidence":"assumed"}],"egress":"` + app + `.` + graph + `.out"}},"paths":[{"name":"main","nodes":["limit"]}]}`
}

func chatBody(app string, text string) map[string]any {
	return map[string]any{"application": app, "messages": []any{map[string]any{"role": "user", "content": text}}}
}

// TestAIOff: without a key the status says so and the chat answers 503
// with setup guidance.
func TestAIOff(t *testing.T) {
	t.Parallel()
	h, _ := newAIHarness(t, "")
	st := h.expect(h.do(http.MethodGet, "/api/ai/status", nil), 200)
	if st.body["enabled"] != false || st.str("provider") != "OpenAI" || st.str("model") != "gpt-5.6-luna" || st.body["watchAvailable"] != false || !strings.Contains(st.str("setup"), "GATE_OPENAI_API_KEY") {
		t.Fatalf("status %s", st.raw)
	}
	a := h.expect(h.do(http.MethodPost, "/api/ai/chat", chatBody(h.app, "hi")), 503)
	if !strings.Contains(h.errorBody(a), "GATE_OPENAI_API_KEY") || a.str("rule") != "ai-off" {
		t.Fatalf("%s", a.raw)
	}
}

// TestAIChatRoute: a draft comes back validated and is not stored; the
// draft can then be created through the normal declare route; a name that
// exists is refused after exactly one repair; the bounds answer 422
// before any provider call.
func TestAIChatRoute(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, 0)
	h, logs := newAIHarness(t, f.srv.URL+"/v1")
	f.replies = []string{aiReply("Here is a draft.", ptrTo(aiDraft(h.app, "sms")))}

	st := h.expect(h.do(http.MethodGet, "/api/ai/status", nil), 200)
	if st.body["enabled"] != true || st.str("model") != "gpt-test" || st.str("setup") != "" {
		t.Fatalf("status %s", st.raw)
	}
	a := h.expect(h.do(http.MethodPost, "/api/ai/chat", chatBody(h.app, "Limit SMS to 100 per second.")), 200)
	var reply struct {
		Message     string          `json:"message"`
		Assumptions []string        `json:"assumptions"`
		Draft       json.RawMessage `json:"draft"`
		Warnings    []string        `json:"warnings"`
	}
	if err := json.Unmarshal(a.raw, &reply); err != nil || reply.Message != "Here is a draft." || len(reply.Assumptions) != 1 || reply.Warnings == nil || len(reply.Draft) == 0 {
		t.Fatalf("reply %s", a.raw)
	}
	if l, err := h.store.List(context.Background()); err != nil {
		t.Fatal(err)
	} else if _, ok := l.Find(h.app, "sms"); ok {
		t.Fatalf("the chat stored the draft")
	}
	// Creating is the operator's explicit PUT of the draft.
	h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/graphs/sms", []byte(reply.Draft)), 200)

	// The same name again: refused, repaired once, still refused → 502.
	before := f.count()
	a = h.expect(h.do(http.MethodPost, "/api/ai/chat", chatBody(h.app, "Another one.")), 502)
	if msg := h.errorBody(a); !strings.Contains(msg, "[graph-exists]") || a.str("rule") != "ai-draft-invalid" {
		t.Fatalf("%s", a.raw)
	}
	if n := f.count() - before; n != 2 {
		t.Errorf("%d provider calls, want 2 (one repair)", n)
	}

	// Bounds: answered before any provider call.
	before = f.count()
	msgs := make([]any, 23)
	for i := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs[i] = map[string]any{"role": role, "content": "x"}
	}
	a = h.expect(h.do(http.MethodPost, "/api/ai/chat", map[string]any{"application": h.app, "messages": msgs}), 422)
	if a.str("field") != "messages" || !strings.Contains(h.errorBody(a), "1 to 21") {
		t.Fatalf("%s", a.raw)
	}
	a = h.expect(h.do(http.MethodPost, "/api/ai/chat", map[string]any{"application": h.app, "messages": msgs[:1], "model": "gpt-4"}), 422)
	if a.str("field") != "model" {
		t.Fatalf("an unknown field (the browser choosing a model) was not refused by name: %s", a.raw)
	}
	a = h.expect(h.do(http.MethodPost, "/api/ai/chat", chatBody(h.app, strings.Repeat("z", 16001))), 422)
	if a.str("field") != "messages[0].content" {
		t.Fatalf("%s", a.raw)
	}
	if f.count() != before {
		t.Errorf("a refused request reached the provider")
	}
	noAISecrets(t, "the log", logs.String())
}

// TestAIRedaction: a provider error is a generic 502; neither the
// provider's body nor the key reaches the response or the log.
func TestAIRedaction(t *testing.T) {
	t.Parallel()
	for _, code := range []int{401, 403, 429, 500} {
		f := newFakeOpenAI(t, code)
		h, logs := newAIHarness(t, f.srv.URL+"/v1")
		a := h.expect(h.do(http.MethodPost, "/api/ai/chat", chatBody(h.app, "hi")), 502)
		h.errorBody(a)
		noAISecrets(t, "the response", string(a.raw))
		noAISecrets(t, "the log", logs.String())
		if !strings.Contains(logs.String(), `"class"`) {
			t.Errorf("the provider failure was not logged by class: %s", logs.String())
		}
	}
}

func noAISecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, bad := range []string{aiTestKey, aiBodyMarker} {
		if strings.Contains(s, bad) {
			t.Errorf("%s contains %q", what, bad)
		}
	}
}

func ptrTo(s string) *string { return &s }
