package agent

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

	"github.com/queen-mq/gate/libs/gatetest/logsink"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

// testKey is the key every test agent uses; no log line, error or
// response may contain it.
const testKey = "sk-gate-test-SECRET-9f3a7c"

// bodyMarker is in every fake provider error body; it must never be
// forwarded or logged.
const bodyMarker = "PROVIDER-BODY-MARKER-do-not-forward"

// seen is one request a fake provider received.
type seen struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

// answer is what a fake provider does with one call.
type answer func(w http.ResponseWriter, r *http.Request)

// fake is an httptest provider (OpenAI or Gemini) answering calls in turn
// (the last answer repeats) and recording them.
type fake struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	calls   []seen
	answers []answer
}

func newFake(t *testing.T, answers ...answer) *fake {
	f := &fake{t: t, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.calls)
		f.calls = append(f.calls, seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		a := f.answers[min(n, len(f.answers)-1)]
		f.mu.Unlock()
		a(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) seen() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.calls...)
}

// trap is a server that fails the test when anything reaches it.
func trap(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached the trap server: %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// status answers a provider error with a body the agent must not forward.
func status(code int) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, code, map[string]any{"error": map[string]any{"message": bodyMarker + " key " + testKey, "code": code}})
	}
}

// replyText is a structured-output reply.
func replyText(msg string, assumptions []string, config *string) string {
	if assumptions == nil {
		assumptions = []string{}
	}
	b, _ := json.Marshal(map[string]any{"message": msg, "assumptions": assumptions, "configuration": config})
	return string(b)
}

func ptr(s string) *string { return &s }

// --- OpenAI answers ---

func openaiText(text string) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, 200, map[string]any{
			"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
			"output": []any{map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
		})
	}
}

func openaiRefusal() answer {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, 200, map[string]any{
			"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
			"output": []any{map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "refusal", "refusal": "I can't help with that."}}}},
		})
	}
}

func openaiIncomplete() answer {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, 200, map[string]any{
			"id": "resp_1", "object": "response", "created_at": 1, "status": "incomplete", "model": "m",
			"incomplete_details": map[string]any{"reason": "max_output_tokens"},
			"output":             []any{map[string]any{"type": "message", "id": "msg_1", "status": "incomplete", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": `{"message":"cut`, "annotations": []any{}}}}},
		})
	}
}

// --- Gemini answers ---

func geminiCandidate(finish string, parts ...map[string]any) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, 200, map[string]any{
			"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": finish}},
		})
	}
}

func geminiText(text string) answer {
	return geminiCandidate("STOP", map[string]any{"text": "thinking about queues", "thought": true}, map[string]any{"text": text})
}

func geminiBlocked(reason string) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSONBody(w, 200, map[string]any{"promptFeedback": map[string]any{"blockReason": reason}})
	}
}

// slow answers after d, or when the caller gives up.
func slow(d time.Duration, then answer) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
			then(w, r)
		case <-r.Context().Done():
		}
	}
}

// textFor is the success answer of provider p.
func textFor(p string, text string) answer {
	if p == knob.AIProviderGemini {
		return geminiText(text)
	}
	return openaiText(text)
}

type testAgent struct {
	*Agent
	logs *logsink.Sink
	fake *fake
}

// baseURL is the fake's base URL as an operator would set the knob.
func baseURL(p string, f *fake) string {
	if p == knob.AIProviderGemini {
		return f.srv.URL
	}
	return f.srv.URL + "/v1"
}

func newTestAgent(t *testing.T, p string, f *fake, mutate func(*Config)) *testAgent {
	t.Helper()
	logs := &logsink.Sink{}
	model := knob.DefaultOpenAIModel
	if p == knob.AIProviderGemini {
		model = knob.DefaultGeminiModel
	}
	cfg := Config{
		AI:          knob.AI{Provider: p, Model: model, Key: testKey, KeyVar: "GATE_TEST_KEY", BaseURL: baseURL(p, f), WatchAvailable: true},
		CallTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return &testAgent{Agent: a, logs: logs, fake: f}
}

// oneRequest has an agent of provider p (adjusted by mutate, which may be
// nil) chat req once against a fake that answers "Which queue?", and
// returns the one request the fake saw; any other count fails t.
func oneRequest(t *testing.T, p string, req wire.AIChatRequest, mutate func(*Config)) seen {
	t.Helper()
	f := newFake(t, textFor(p, replyText("Which queue?", nil, nil)))
	a := newTestAgent(t, p, f, mutate)
	if _, err := a.Chat(context.Background(), req, emptyEnv()); err != nil {
		t.Fatalf("chat: %v", err)
	}
	calls := f.seen()
	if len(calls) != 1 {
		t.Fatalf("%d calls reached the configured server, want 1", len(calls))
	}
	return calls[0]
}

func ask(text string) wire.AIChatRequest {
	return wire.AIChatRequest{Application: "demo", Messages: []wire.AIMessage{{Role: "user", Content: text}}}
}

func emptyEnv() Env {
	return Env{Stored: []declare.Stored{}, Taken: func(string, string) bool { return false }}
}

// noSecrets fails when the key or a provider body reached s.
func noSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, bad := range []string{testKey, bodyMarker} {
		if strings.Contains(s, bad) {
			t.Errorf("%s contains %q: %s", what, bad, s)
		}
	}
}
