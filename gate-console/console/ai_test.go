package console

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/libs/knob"
)

// The AI agent's routes on the console: anyone signed in reads the status;
// the chat is a write, so a viewer is refused before gate-api (and so the
// provider) sees it; without a key an administrator gets the 503 setup
// guidance.
func TestAIRoutesOnTheConsole(t *testing.T) {
	t.Parallel()
	var providerCalls atomic.Int64
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		providerCalls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(provider.Close)
	on := newTestEnv(t, func(c *config.Config) {
		c.API.AI.AI = knob.AI{Provider: knob.AIProviderOpenAI, Model: "gpt-test", Key: "sk-console-test", KeyVar: "GATE_OPENAI_API_KEY", BaseURL: provider.URL + "/v1"}
	}, nil)
	viewer := on.sessionCookie(t, "viewer@example.com")
	chat := `{"application":"demo","messages":[{"role":"user","content":"Limit SMS to 50 per second"}]}`

	r := newReq(http.MethodGet, "/api/ai/status", "")
	r.AddCookie(viewer)
	w := on.do(r)
	if w.Code != http.StatusOK {
		t.Fatalf("viewer status: %d %s", w.Code, body(t, w))
	}
	mustContain(t, "status", body(t, w), `"enabled":true`, `"provider":"OpenAI"`, `"model":"gpt-test"`)

	before := on.reached.Load()
	r = newReq(http.MethodPost, "/api/ai/chat", chat)
	r.AddCookie(viewer)
	w = on.do(r)
	if w.Code != http.StatusForbidden {
		t.Fatalf("viewer chat: %d %s, want 403", w.Code, body(t, w))
	}
	mustContain(t, "viewer refusal", body(t, w), "read-only", "GATE_ADMIN_EMAILS")
	if on.reached.Load() != before || providerCalls.Load() != 0 {
		t.Fatalf("a viewer's chat reached gate-api or the provider")
	}

	off := newTestEnv(t, nil, nil)
	r = newReq(http.MethodPost, "/api/ai/chat", chat)
	r.AddCookie(off.sessionCookie(t, "admin@example.com"))
	w = off.do(r)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("chat without a key: %d %s, want 503", w.Code, body(t, w))
	}
	mustContain(t, "setup guidance", body(t, w), "GATE_OPENAI_API_KEY", "wizard")
}
