package ai_test

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
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/knob"
)

const aiTestKey = "sk-gate-api-test-SECRET-41d2"

const aiBodyMarker = "UPSTREAM-BODY-MARKER"

// fakeOpenAI is an httptest Responses API answering each call with the
// next reply text (the last repeats), or with status when set.
type fakeOpenAI struct {
	mu      sync.Mutex
	calls   int
	bodies  []string
	replies []string
	status  int
	srv     *httptest.Server
}

func newFakeOpenAI(t *testing.T, status int, replies ...string) *fakeOpenAI {
	f := &fakeOpenAI{replies: replies, status: status}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := f.calls
		f.calls++
		f.bodies = append(f.bodies, string(body))
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

// sent is the body of every call the provider received, in order.
func (f *fakeOpenAI) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

func (f *fakeOpenAI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// newAIHarness is a gate-api whose agent talks to base (no key when base
// is ""), with its log captured.
func newAIHarness(t *testing.T, base string) (*apitest.Harness, *apitest.LogBuffer) {
	t.Helper()
	logs := &apitest.LogBuffer{}
	h := apitest.NewWith(t, apitest.Setup{
		Config: func(cfg *config.Config) {
			if base != "" {
				cfg.AI.AI = knob.AI{Provider: knob.AIProviderOpenAI, Model: "gpt-test", Key: aiTestKey, KeyVar: "GATE_OPENAI_API_KEY", BaseURL: base}
				cfg.AI.CallTimeout, cfg.AI.RequestTimeout = 5*time.Second, 10*time.Second
			}
		},
		Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	return h, logs
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
	st := h.Expect(h.Do(http.MethodGet, "/api/ai/status", nil), 200)
	if st.Body["enabled"] != false || st.Str("provider") != "OpenAI" || st.Str("model") != "gpt-5.6-luna" || st.Body["watchAvailable"] != false || !strings.Contains(st.Str("setup"), "GATE_OPENAI_API_KEY") {
		t.Fatalf("status %s", st.Raw)
	}
	a := h.Expect(h.Do(http.MethodPost, "/api/ai/chat", chatBody(h.App, "hi")), 503)
	if !strings.Contains(h.ErrorBody(a), "GATE_OPENAI_API_KEY") || a.Str("rule") != "ai-off" {
		t.Fatalf("%s", a.Raw)
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
	f.replies = []string{aiReply("Here is a draft.", ptrTo(aiDraft(h.App, "sms")))}

	st := h.Expect(h.Do(http.MethodGet, "/api/ai/status", nil), 200)
	if st.Body["enabled"] != true || st.Str("model") != "gpt-test" || st.Str("setup") != "" {
		t.Fatalf("status %s", st.Raw)
	}
	a := h.Expect(h.Do(http.MethodPost, "/api/ai/chat", chatBody(h.App, "Limit SMS to 100 per second.")), 200)
	var reply struct {
		Message     string          `json:"message"`
		Assumptions []string        `json:"assumptions"`
		Draft       json.RawMessage `json:"draft"`
		Warnings    []string        `json:"warnings"`
	}
	if err := json.Unmarshal(a.Raw, &reply); err != nil || reply.Message != "Here is a draft." || len(reply.Assumptions) != 1 || reply.Warnings == nil || len(reply.Draft) == 0 {
		t.Fatalf("reply %s", a.Raw)
	}
	if l, err := h.Store.List(context.Background()); err != nil {
		t.Fatal(err)
	} else if _, ok := l.Find(h.App, "sms"); ok {
		t.Fatalf("the chat stored the draft")
	}
	// Creating is the operator's explicit PUT of the draft.
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/graphs/sms", []byte(reply.Draft)), 200)

	// The same name again: refused, repaired once, still refused → 502.
	before := f.count()
	a = h.Expect(h.Do(http.MethodPost, "/api/ai/chat", chatBody(h.App, "Another one.")), 502)
	if msg := h.ErrorBody(a); !strings.Contains(msg, "[graph-exists]") || a.Str("rule") != "ai-draft-invalid" {
		t.Fatalf("%s", a.Raw)
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
	a = h.Expect(h.Do(http.MethodPost, "/api/ai/chat", map[string]any{"application": h.App, "messages": msgs}), 422)
	if a.Str("field") != "messages" || !strings.Contains(h.ErrorBody(a), "1 to 21") {
		t.Fatalf("%s", a.Raw)
	}
	a = h.Expect(h.Do(http.MethodPost, "/api/ai/chat", map[string]any{"application": h.App, "messages": msgs[:1], "model": "gpt-4"}), 422)
	if a.Str("field") != "model" {
		t.Fatalf("an unknown field (the browser choosing a model) was not refused by name: %s", a.Raw)
	}
	a = h.Expect(h.Do(http.MethodPost, "/api/ai/chat", chatBody(h.App, strings.Repeat("z", 16001))), 422)
	if a.Str("field") != "messages[0].content" {
		t.Fatalf("%s", a.Raw)
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
		a := h.Expect(h.Do(http.MethodPost, "/api/ai/chat", chatBody(h.App, "hi")), 502)
		h.ErrorBody(a)
		noAISecrets(t, "the response", string(a.Raw))
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

// The chat body is strict at every depth: a message with a field the
// route does not know, or a mis-cased one, is refused like an unknown
// field of the body itself, naming the message, before any provider call.
func TestAIChatRefusesUnknownFieldsInsideMessages(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, 0, aiReply("ok", nil))
	h, _ := newAIHarness(t, f.srv.URL+"/v1")
	cases := []struct {
		name  string
		msgs  []any
		field string
		words string
	}{
		{"an extra field", []any{map[string]any{"role": "user", "content": "hi", "name": "system-override"}}, "messages[0].name", "unknown field"},
		{"a mis-cased field", []any{map[string]any{"role": "user", "Content": "hi"}}, "messages[0].Content", `did you mean "content"`},
		{"an extra field in a later message", []any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "assistant", "content": "b"}, map[string]any{"role": "user", "content": "c", "tool_calls": []any{}}}, "messages[2].tool_calls", "unknown field"},
	}
	for _, c := range cases {
		a := h.Expect(h.Do(http.MethodPost, "/api/ai/chat", map[string]any{"application": h.App, "messages": c.msgs}), 422)
		if a.Str("code") != "unknown-field" || a.Str("field") != c.field || !strings.Contains(h.ErrorBody(a), c.words) {
			t.Errorf("%s: %s; want 422 unknown-field naming %s", c.name, a.Raw, c.field)
		}
	}
	if f.count() != 0 {
		t.Errorf("%d refused chats reached the provider", f.count())
	}
	h.Expect(h.Do(http.MethodPost, "/api/ai/chat", chatBody(h.App, "hi")), 200)
}

// The repair turn tells the model why Gate refused its draft without
// naming another application's graph: a draft that reads a queue another
// application's graph already reads is refused by ingress-owner, whose
// sentence names that graph and its node; the provider's second call says
// "another graph" instead. The operator's own 502 may name it (the
// operator can read every graph).
func TestAIRepairTurnSendsNoOtherApplicationsGraphName(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, 0)
	h, _ := newAIHarness(t, f.srv.URL+"/v1")
	other := h.App + "x"
	secret := h.Target("secretproj", 10)
	secret["nodes"].(map[string]any)["limit"].(map[string]any)["ingress"] = map[string]any{"queue": "shared-orders.in"}
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+other+"/graphs/secretproj", secret), 200)
	draft := strings.Replace(aiDraft(h.App, "orders"), `"ingress":true`, `"ingress":{"queue":"shared-orders.in"}`, 1)
	f.replies = []string{aiReply("Here is a draft.", &draft)}

	a := h.Expect(h.Do(http.MethodPost, "/api/ai/chat", chatBody(h.App, "Limit the orders to 100 per second.")), 502)
	if msg := h.ErrorBody(a); !strings.Contains(msg, "[ingress-owner]") {
		t.Fatalf("the draft was not refused by ingress-owner: %s", a.Raw)
	}
	sent := f.sent()
	if len(sent) != 2 {
		t.Fatalf("%d provider calls, want 2 (one repair)", len(sent))
	}
	if !strings.Contains(sent[1], "ingress-owner") || !strings.Contains(sent[1], "another graph") {
		t.Errorf("the repair turn does not say why: %.2000s", sent[1])
	}
	for _, name := range []string{"secretproj", other + "/"} {
		for i, b := range sent {
			if strings.Contains(b, name) {
				t.Errorf("provider call %d carries %q, another application's graph: %.2000s", i+1, name, b)
			}
		}
	}
}
