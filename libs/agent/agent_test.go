package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

var providers = []string{knob.AIProviderOpenAI, knob.AIProviderGemini}

// validDraft is a one-node document for application demo.
const validDraft = `{"application":"demo","graph":"sms","version":1,"counters":{"windowSeconds":60},"nodes":{"limit":{"ingress":true,"cost":1,"budgets":[{"id":"global","count":50,"timeMs":1000,"confidence":"assumed"}],"egress":"demo.sms.out"}},"paths":[{"name":"main","nodes":["limit"]}]}`

// rejectedDraft parses as a graph document and is refused by the compiler
// (no egress on the last hop, no budget).
const rejectedDraft = `{"application":"demo","graph":"sms","version":1,"nodes":{"limit":{"ingress":true,"budgets":[]}},"paths":[{"name":"main","nodes":["limit"]}]}`

func chatErr(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *agent.Error", err, err)
	}
	return e
}

// TestOutcomes is every provider outcome of §7.4–7.5 through each adapter
// and a fake provider server.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	type tc struct {
		name    string
		answers func(p string) []answer
		status  int    // 0 = success
		code    string // the Error code on failure
		draft   bool
		calls   int
		message string // a substring of the reply message or the error
	}
	cases := []tc{
		{"valid draft", func(p string) []answer {
			return []answer{textFor(p, replyText("Here is a draft.", []string{"cost 1", "Gate-owned ingress"}, ptr(validDraft)))}
		}, 0, "", true, 1, "Here is a draft."},
		{"clarification", func(p string) []answer {
			return []answer{textFor(p, replyText("Which queue does the work arrive on?", nil, nil))}
		}, 0, "", false, 1, "Which queue"},
		{"refusal", func(p string) []answer {
			if p == knob.AIProviderGemini {
				return []answer{geminiCandidate("SAFETY")}
			}
			return []answer{openaiRefusal()}
		}, 0, "", false, 1, "I can only help draft a Gate graph"},
		{"incomplete", func(p string) []answer {
			if p == knob.AIProviderGemini {
				return []answer{geminiCandidate("MAX_TOKENS", map[string]any{"text": `{"message":"cut`})}
			}
			return []answer{openaiIncomplete()}
		}, 502, "ai-unfinished", false, 1, "did not finish"},
		{"401", func(string) []answer { return []answer{status(401)} }, 502, "ai-access", false, 1, "HTTP 401"},
		{"403", func(string) []answer { return []answer{status(403)} }, 502, "ai-access", false, 1, "HTTP 403"},
		{"429", func(string) []answer { return []answer{status(429)} }, 502, "ai-quota", false, 1, "quota"},
		{"400", func(string) []answer { return []answer{status(400)} }, 502, "ai-configuration", false, 1, "GATE_AI_MODEL"},
		{"404", func(string) []answer { return []answer{status(404)} }, 502, "ai-configuration", false, 1, "HTTP 404"},
		{"500", func(string) []answer { return []answer{status(500)} }, 502, "ai-unavailable", false, 1, "temporarily unavailable"},
		{"redirect not followed", func(string) []answer {
			return []answer{func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
			}}
		}, 502, "ai-unavailable", false, 1, "unavailable"},
		{"invalid JSON", func(p string) []answer { return []answer{textFor(p, `{"message": "unterminated`)} }, 502, "ai-reply", false, 1, "not the agreed JSON"},
		{"missing field", func(p string) []answer { return []answer{textFor(p, `{"message":"hi","assumptions":[]}`)} }, 502, "ai-reply", false, 1, "lacks"},
		{"blank message", func(p string) []answer { return []answer{textFor(p, replyText("  ", nil, nil))} }, 502, "ai-reply", false, 1, "blank"},
		{"too many assumptions", func(p string) []answer {
			return []answer{textFor(p, replyText("ok", make([]string, 21), nil))}
		}, 502, "ai-reply", false, 1, "21 assumptions"},
		{"compiler-invalid twice", func(p string) []answer {
			return []answer{textFor(p, replyText("Draft.", nil, ptr(rejectedDraft)))}
		}, 502, "ai-draft-invalid", false, 2, "did not pass Gate validation"},
		{"repaired once", func(p string) []answer {
			return []answer{textFor(p, replyText("Draft.", nil, ptr(rejectedDraft))), textFor(p, replyText("Fixed.", nil, ptr(validDraft)))}
		}, 0, "", true, 2, "Fixed."},
		{"reply over the cap", func(p string) []answer {
			return []answer{textFor(p, replyText(strings.Repeat("x", 15000), []string{strings.Repeat("y", 1999)}, ptr(strings.Repeat(" ", 47000)+validDraft)))}
		}, 502, "ai-reply", false, 1, "larger than"},
	}
	for _, p := range providers {
		for _, c := range cases {
			t.Run(p+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, c.answers(p)...)
				a := newTestAgent(t, p, f, func(cfg *Config) { cfg.ReplyLimit = 64_000 })
				reply, err := a.Chat(context.Background(), ask("Limit SMS to 50 per second."), emptyEnv())
				if got := len(f.seen()); got != c.calls {
					t.Errorf("%d provider calls, want %d", got, c.calls)
				}
				noSecrets(t, "the logs", a.logs.String())
				if c.status != 0 {
					e := chatErr(t, err)
					if e.Status != c.status || string(e.Code) != c.code || !strings.Contains(e.Message, c.message) {
						t.Fatalf("error %d %s %q, want %d %s containing %q", e.Status, e.Code, e.Message, c.status, c.code, c.message)
					}
					noSecrets(t, "the error", e.Message)
					return
				}
				if err != nil {
					t.Fatalf("chat: %v", err)
				}
				b, _ := json.Marshal(reply)
				noSecrets(t, "the reply", string(b))
				if !strings.Contains(reply.Message, c.message) {
					t.Errorf("message %q, want it to contain %q", reply.Message, c.message)
				}
				if (reply.Draft != nil) != c.draft {
					t.Fatalf("draft %s, want a draft: %v", reply.Draft, c.draft)
				}
				if reply.Assumptions == nil || reply.Warnings == nil {
					t.Errorf("assumptions %v and warnings %v must be arrays", reply.Assumptions, reply.Warnings)
				}
				if c.draft {
					var d struct {
						Application, Graph string
						Version            int
					}
					if err := json.Unmarshal(reply.Draft, &d); err != nil || d.Application != "demo" || d.Graph != "sms" || d.Version != 1 {
						t.Errorf("draft %s", reply.Draft)
					}
				}
				if c.calls == 2 {
					// The repair call carries the rejected reply as an
					// assistant turn and Gate's rejection as a user turn.
					second := string(f.seen()[1].Body)
					if !strings.Contains(second, "Gate rejected that configuration; nothing was saved") || !strings.Contains(second, "[egress-required]") && !strings.Contains(second, "[node-budget]") {
						t.Errorf("the repair call lacks Gate's rejection: %.600s", second)
					}
				}
			})
		}
	}
}

// TestGeminiRefusals is §7.4's Gemini refusal rules: a block reason, and
// each refusing finish reason; an unspecified block reason is not one.
func TestGeminiRefusals(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name string
		ans  answer
	}{
		{"blocked prompt", geminiBlocked("SAFETY")},
		{"blocked other", geminiBlocked("OTHER")},
		{"RECITATION", geminiCandidate("RECITATION")},
		{"BLOCKLIST", geminiCandidate("BLOCKLIST")},
		{"PROHIBITED_CONTENT", geminiCandidate("PROHIBITED_CONTENT")},
		{"SPII", geminiCandidate("SPII")},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			ag := newTestAgent(t, knob.AIProviderGemini, newFake(t, a.ans), nil)
			reply, err := ag.Chat(context.Background(), ask("hello"), emptyEnv())
			if err != nil || reply.Draft != nil || len(reply.Assumptions) != 0 || !strings.Contains(reply.Message, "queue") {
				t.Fatalf("reply %+v, error %v; want the canned refusal", reply, err)
			}
		})
	}
	t.Run("unspecified block reason is not a refusal", func(t *testing.T) {
		t.Parallel()
		ans := func(w http.ResponseWriter, r *http.Request) {
			writeJSONBody(w, 200, map[string]any{"promptFeedback": map[string]any{"blockReason": "BLOCKED_REASON_UNSPECIFIED"},
				"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": replyText("Which queue?", nil, nil)}}}, "finishReason": "STOP"}}})
		}
		ag := newTestAgent(t, knob.AIProviderGemini, newFake(t, ans), nil)
		reply, err := ag.Chat(context.Background(), ask("hello"), emptyEnv())
		if err != nil || reply.Message != "Which queue?" {
			t.Fatalf("reply %+v, error %v", reply, err)
		}
	})
}

// TestTimeouts: a provider slower than the call timeout is a 502 timeout
// naming the call bound; a request past its own bound names that one.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p+"/call", func(t *testing.T) {
			t.Parallel()
			f := newFake(t, slow(5*time.Second, textFor(p, replyText("late", nil, nil))))
			a := newTestAgent(t, p, f, func(c *Config) { c.CallTimeout = 150 * time.Millisecond; c.RequestTimeout = 5 * time.Second })
			_, err := a.Chat(context.Background(), ask("hi"), emptyEnv())
			e := chatErr(t, err)
			if e.Status != 502 || e.Code != "ai-timeout" || !strings.Contains(e.Message, "did not answer within 150ms") {
				t.Fatalf("%d %s %q", e.Status, e.Code, e.Message)
			}
		})
		t.Run(p+"/request", func(t *testing.T) {
			t.Parallel()
			f := newFake(t, slow(5*time.Second, textFor(p, replyText("late", nil, nil))))
			a := newTestAgent(t, p, f, func(c *Config) { c.CallTimeout = 5 * time.Second; c.RequestTimeout = 150 * time.Millisecond })
			_, err := a.Chat(context.Background(), ask("hi"), emptyEnv())
			e := chatErr(t, err)
			if e.Status != 502 || e.Code != "ai-timeout" || !strings.Contains(e.Message, "longer than 150ms") {
				t.Fatalf("%d %s %q", e.Status, e.Code, e.Message)
			}
		})
	}
}

// TestBusy: a third concurrent chat on one replica is refused at once with
// 429 while two are in flight; a slot frees when a chat ends.
func TestBusy(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	arrived := make(chan struct{}, 4)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		openaiText(replyText("Which queue?", nil, nil))(w, r)
	})
	a := newTestAgent(t, knob.AIProviderOpenAI, f, nil)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { _, errs[i] = a.Chat(context.Background(), ask("hi"), emptyEnv()) })
	}
	<-arrived
	<-arrived
	_, err := a.Chat(context.Background(), ask("hi"), emptyEnv())
	if e := chatErr(t, err); e.Status != http.StatusTooManyRequests || !strings.Contains(e.Message, "busy") {
		t.Fatalf("third chat: %d %q, want 429 busy", e.Status, e.Message)
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("chat %d: %v", i, err)
		}
	}
	if _, err := a.Chat(context.Background(), ask("hi"), emptyEnv()); err != nil {
		t.Errorf("a chat after the two ended: %v", err)
	}
	if n := len(f.seen()); n != 3 {
		t.Errorf("%d provider calls, want 3 (the refused chat made none)", n)
	}
}

// TestRequestBounds is §7.2: every bound is checked before any provider
// call, and each 422 names the field and the bound.
func TestRequestBounds(t *testing.T) {
	t.Parallel()
	alt := func(n int) []wire.AIMessage {
		out := make([]wire.AIMessage, n)
		for i := range out {
			out[i] = wire.AIMessage{Role: "user", Content: "x"}
			if i%2 == 1 {
				out[i].Role = "assistant"
			}
		}
		return out
	}
	big := func(n, size int) []wire.AIMessage {
		m := alt(n)
		for i := range m {
			m[i].Content = strings.Repeat("a", size)
		}
		return m
	}
	otherApp := strings.Replace(validDraft, `"demo"`, `"other"`, 1)
	hugeDraft := strings.Replace(validDraft, `"counters"`, `"maxAttempts":3`+strings.Repeat(" ", 10)+`,"counters"`, 1)
	hugeDraft = `{"application":"demo","graph":"x","version":1,"nodes":{` + strings.Repeat(`"n`, 1) + `":{"budgets":[` + strings.TrimSuffix(strings.Repeat(`{"count":1,"timeMs":1000,"source":"`+strings.Repeat("s", 100)+`"},`, 480), ",") + `]}},"paths":[]}`
	cases := []struct {
		name  string
		req   wire.AIChatRequest
		field string
		bound string
	}{
		{"bad application", wire.AIChatRequest{Application: "Demo!", Messages: alt(1)}, "application", "not a valid name"},
		{"no messages", wire.AIChatRequest{Application: "demo"}, "messages", "1 to 21"},
		{"22 messages", wire.AIChatRequest{Application: "demo", Messages: alt(23)}, "messages", "1 to 21"},
		{"starts with assistant", wire.AIChatRequest{Application: "demo", Messages: []wire.AIMessage{{Role: "assistant", Content: "x"}}}, "messages[0].role", "alternate"},
		{"two user turns", wire.AIChatRequest{Application: "demo", Messages: []wire.AIMessage{{Role: "user", Content: "x"}, {Role: "user", Content: "y"}}}, "messages[1].role", "alternate"},
		{"unknown role", wire.AIChatRequest{Application: "demo", Messages: []wire.AIMessage{{Role: "system", Content: "x"}}}, "messages[0].role", "alternate"},
		{"ends with assistant", wire.AIChatRequest{Application: "demo", Messages: alt(2)}, "messages[1].role", "end with the user"},
		{"blank content", wire.AIChatRequest{Application: "demo", Messages: []wire.AIMessage{{Role: "user", Content: " \n\t"}}}, "messages[0].content", "empty"},
		{"message over 16000 bytes", wire.AIChatRequest{Application: "demo", Messages: big(1, 16001)}, "messages[0].content", "at most 16000 bytes"},
		{"conversation over 64000 bytes", wire.AIChatRequest{Application: "demo", Messages: big(5, 13000)}, "messages", "at most 64000 bytes"},
		{"draft not JSON", wire.AIChatRequest{Application: "demo", Messages: alt(1), Draft: json.RawMessage(`{"a":`)}, "draft", "not JSON"},
		{"draft not a GraphDoc", wire.AIChatRequest{Application: "demo", Messages: alt(1), Draft: json.RawMessage(`{"hello":1}`)}, "draft", "not a graph document"},
		{"draft for another application", wire.AIChatRequest{Application: "demo", Messages: alt(1), Draft: json.RawMessage(otherApp)}, "draft", "not the selected"},
		{"draft over 48000 bytes", wire.AIChatRequest{Application: "demo", Messages: alt(1), Draft: json.RawMessage(hugeDraft)}, "draft", "at most 48000 bytes"},
	}
	f := newFake(t, openaiText(replyText("never", nil, nil)))
	a := newTestAgent(t, knob.AIProviderOpenAI, f, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := a.Chat(context.Background(), c.req, emptyEnv())
			e := chatErr(t, err)
			if e.Status != http.StatusUnprocessableEntity || e.Field != c.field || !strings.Contains(e.Message, c.bound) {
				t.Fatalf("%d field %q %q, want 422 field %q naming %q", e.Status, e.Field, e.Message, c.field, c.bound)
			}
		})
	}
	if n := len(f.seen()); n != 0 {
		t.Errorf("%d provider calls for refused requests, want none", n)
	}
	// The bounds themselves pass: 21 messages, 16000-byte messages, 64000
	// bytes in all, a draft of the selected application.
	ok := big(21, 3000)
	ok[0].Content = strings.Repeat("b", 4000)
	if _, err := a.Chat(context.Background(), wire.AIChatRequest{Application: "demo", Messages: ok, Draft: json.RawMessage(validDraft)}, emptyEnv()); err != nil {
		t.Fatalf("a request at the bounds was refused: %v", err)
	}
}

// TestAgentOff: no key → status says so with setup guidance, chat 503,
// no provider call.
func TestAgentOff(t *testing.T) {
	t.Parallel()
	a, err := New(context.Background(), Config{AI: knob.AI{Provider: "gemini", Model: knob.DefaultGeminiModel, BaseURL: trap(t)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Status()
	if s.Enabled || s.Provider != "Gemini" || s.Model != "gemini-3.8-flash" || !strings.Contains(s.Setup, "GATE_GEMINI_API_KEY") {
		t.Fatalf("status %+v", s)
	}
	_, err = a.Chat(context.Background(), ask("hi"), emptyEnv())
	if e := chatErr(t, err); e.Status != http.StatusServiceUnavailable || !strings.Contains(e.Message, "GATE_GEMINI_API_KEY") || !strings.Contains(e.Message, "wizard") {
		t.Fatalf("%d %q", e.Status, e.Message)
	}
}

// TestDraftValidation is §7.5's checks beyond the compiler's own rules.
func TestDraftValidation(t *testing.T) {
	t.Parallel()
	watchDraft := `{"application":"demo","graph":"obs","version":1,"watch":{"durationSeconds":3600,"startedAt":12345},"nodes":{"o":{"ingress":true,"budgets":[],"egress":"demo.obs.out"}},"paths":[{"name":"main","nodes":["o"]}]}`
	owned := `{"application":"demo","graph":"owner","version":4,"nodes":{"n":{"ingress":{"queue":"demo.shared.in"},"budgets":[{"count":5,"timeMs":1000}],"egress":"demo.owner.out"}},"paths":[{"name":"main","nodes":["n"]}]}`
	stealing := `{"application":"demo","graph":"thief","version":1,"nodes":{"n":{"ingress":{"queue":"demo.shared.in","http":false},"budgets":[{"count":5,"timeMs":1000}],"egress":"demo.thief.out"}},"paths":[{"name":"main","nodes":["n"]}]}`
	twenty1 := `{"application":"demo","graph":"wide","version":1,"nodes":{`
	for i := range 21 {
		if i > 0 {
			twenty1 += ","
		}
		twenty1 += `"n` + string(rune('a'+i)) + `":{"ingress":true,"budgets":[{"count":5,"timeMs":1000}],"egress":"demo.wide.out"}`
	}
	twenty1 += `},"paths":[{"name":"main","nodes":["na"]}]}`
	env := Env{Stored: []declare.Stored{{App: "demo", Name: "owner", Body: []byte(owned), Running: true}}, Taken: func(app, name string) bool { return app == "demo" && name == "owner" }}
	cases := []struct {
		name, config string
		watch        bool
		want         string // "" = accepted
	}{
		{"watch with history, startedAt stripped", watchDraft, true, ""},
		{"watch without history", watchDraft, false, "[watch-history]"},
		{"version 2", strings.Replace(validDraft, `"version":1`, `"version":2`, 1), true, "[version]"},
		{"another application", strings.Replace(validDraft, `"demo"`, `"other"`, 1), true, "[application]"},
		{"name taken", strings.Replace(validDraft, `"sms"`, `"owner"`, 1), true, "[graph-exists]"},
		{"queue owned by another graph", stealing, true, "[ingress-owner]"},
		{"21 nodes", twenty1, true, "[draft-size] 21 nodes"},
		{"not a document", `{"nodes":3}`, true, "[document]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			doc, warnings, why := validateDraft(c.config, "demo", c.watch, env)
			if c.want == "" {
				if why != "" {
					t.Fatalf("refused: %s", why)
				}
				if strings.Contains(string(doc), "startedAt") || warnings == nil {
					t.Errorf("doc %s warnings %v", doc, warnings)
				}
				return
			}
			if !strings.Contains(why, c.want) {
				t.Fatalf("problems %q, want %q", why, c.want)
			}
		})
	}
}
