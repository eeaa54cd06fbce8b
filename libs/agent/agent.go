package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// The agent's fixed limits (runtime spec §7.2–7.5).
const (
	DefaultCallTimeout    = 70 * time.Second
	DefaultRequestTimeout = 150 * time.Second
	DefaultMaxConcurrent  = 2
	DefaultReplyLimit     = 256_000
	// MaxCalls is the most provider calls one chat makes (one repair).
	MaxCalls = 2
)

// Config is the agent's configuration: the boot knobs and the limits. Use
// WithDefaults to fill the limits left zero.
type Config struct {
	// AI is the boot configuration (knob.ReadAI).
	AI knob.AI
	// CallTimeout bounds one provider call (70 s).
	CallTimeout time.Duration
	// RequestTimeout bounds one chat request (150 s).
	RequestTimeout time.Duration
	// MaxConcurrent is how many chats this replica runs at once (2).
	MaxConcurrent int
	// ReplyLimit caps a provider's reply body in bytes (256 000).
	ReplyLimit int64
}

// WithDefaults returns c with every zero limit at its default.
func (c Config) WithDefaults() Config {
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.ReplyLimit <= 0 {
		c.ReplyLimit = DefaultReplyLimit
	}
	return c
}

// Agent answers chats. Build it with New; it is safe for concurrent use.
type Agent struct {
	cfg   Config
	p     Provider // nil when the agent is off
	slots chan struct{}
	log   *slog.Logger
}

// New builds the agent for cfg, logging to log (nil: slog.Default()). No
// key leaves the agent off; it never touches the network here.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Agent, error) {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.Default()
	}
	a := &Agent{cfg: cfg, slots: make(chan struct{}, cfg.MaxConcurrent), log: log}
	if !cfg.AI.Enabled() {
		return a, nil
	}
	switch cfg.AI.Provider {
	case knob.AIProviderOpenAI:
		a.p = newOpenAI(cfg.AI.Key, cfg.AI.BaseURL, cfg.AI.Model, cfg.CallTimeout, cfg.ReplyLimit)
	case knob.AIProviderGemini:
		g, err := newGemini(ctx, cfg.AI.Key, cfg.AI.BaseURL, cfg.AI.Model, cfg.CallTimeout, cfg.ReplyLimit)
		if err != nil {
			return nil, err
		}
		a.p = g
	default:
		return nil, fmt.Errorf("GATE_AI_PROVIDER=%q is not a provider; set it to openai or gemini", cfg.AI.Provider)
	}
	return a, nil
}

// Enabled reports whether the agent has a provider key.
func (a *Agent) Enabled() bool { return a.p != nil }

func providerName(p string) string {
	if p == knob.AIProviderGemini {
		return "Gemini"
	}
	return "OpenAI"
}

// Setup is the guidance shown while the agent is off.
func (a *Agent) Setup() string {
	keys := knob.OpenAIKeys
	if a.cfg.AI.Provider == knob.AIProviderGemini {
		keys = knob.GeminiKeys
	}
	return fmt.Sprintf("The AI agent is off: no API key for %s. Set %s (or %v) in Gate's server environment (a deployment secret or an ignored local environment file; Gate does not read .env and the browser never supplies a key), choose the provider with GATE_AI_PROVIDER=openai|gemini, and restart Gate. The new-target wizard works without it.",
		providerName(a.cfg.AI.Provider), keys[0], keys[1:])
}

// Status is GET /api/ai/status.
func (a *Agent) Status() wire.AIStatus {
	s := wire.AIStatus{Enabled: a.Enabled(), Provider: providerName(a.cfg.AI.Provider), Model: a.cfg.AI.Model, WatchAvailable: a.cfg.AI.WatchAvailable}
	if !s.Enabled {
		s.Setup = a.Setup()
	}
	return s
}

// Error is a chat refusal: the HTTP status, its code of the refusal
// catalogue (wire.Codes), the message (naming the bound or the fix) and,
// for a request problem, the field.
type Error struct {
	Status  int
	Code    wire.Code
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Message }

func refuse(status int, code wire.Code, field, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Env is what a chat validates drafts against: the other graphs (for the
// owner and shared-key rules), whether a name is taken, and the server's
// compile knobs.
type Env struct {
	// Stored are every stored or running graph; it must be non-nil (an
	// empty slice when there are none).
	Stored []declare.Stored
	// Taken reports whether app/name is already registered.
	Taken func(app, name string) bool
	// Options are the server's compile knobs.
	Options plan.Options
}

// Chat answers one chat request: the request bounds are checked first,
// then at most two provider calls are made (the second a repair of a draft
// Gate rejected). The error is an *Error.
func (a *Agent) Chat(ctx context.Context, req wire.AIChatRequest, env Env) (wire.AIChatReply, error) {
	if !a.Enabled() {
		return wire.AIChatReply{}, refuse(http.StatusServiceUnavailable, wire.CodeAIOff, "", "%s", a.Setup())
	}
	draft, bad := checkRequest(req)
	if bad != nil {
		return wire.AIChatReply{}, bad
	}
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	default:
		return wire.AIChatReply{}, refuse(http.StatusTooManyRequests, wire.CodeAIBusy, "", "busy: this replica already runs %d AI chats; retry in a moment", a.cfg.MaxConcurrent)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	start := time.Now()
	reply, calls, err := a.converse(ctx, req, draft, env)
	outcome := "ok"
	var e *Error
	if errors.As(err, &e) {
		outcome = string(e.Code)
	} else if err != nil {
		outcome = "error"
	} else if reply.Draft == nil {
		outcome = "clarification"
	}
	a.log.Info("ai chat", "provider", a.p.Name(), "model", a.p.Model(), "app", req.Application, "outcome", outcome, "calls", calls, "durationMs", time.Since(start).Milliseconds())
	return reply, err
}

// converse runs the provider calls and the validation.
func (a *Agent) converse(ctx context.Context, req wire.AIChatRequest, draft []byte, env Env) (wire.AIChatReply, int, error) {
	msgs := make([]Message, 0, len(req.Messages)+3)
	msgs = append(msgs, contextTurn(req.Application, a.cfg.AI.WatchAvailable, draft))
	for _, m := range req.Messages {
		msgs = append(msgs, Message{Role: m.Role, Content: m.Content})
	}
	var problems string
	for call := 1; call <= MaxCalls; call++ {
		r, err := a.p.Generate(ctx, Call{Instructions: SystemPrompt, Messages: msgs, Schema: ReplySchema()})
		if err != nil {
			return wire.AIChatReply{}, call, a.providerFailure(ctx, err)
		}
		if r.Refused {
			return refusalReply(), call, nil
		}
		parsed, bad := parseReply(r.Text)
		if bad != nil {
			a.log.Warn("ai provider reply unreadable", "provider", a.p.Name(), "problem", bad.Message)
			return wire.AIChatReply{}, call, bad
		}
		if parsed.Configuration == nil {
			return wire.AIChatReply{Message: parsed.Message, Assumptions: parsed.Assumptions, Warnings: []string{}}, call, nil
		}
		doc, warnings, why := validateDraft(*parsed.Configuration, req.Application, a.cfg.AI.WatchAvailable, env)
		if why == "" {
			return wire.AIChatReply{Message: parsed.Message, Assumptions: parsed.Assumptions, Draft: doc, Warnings: warnings}, call, nil
		}
		problems = why
		msgs = append(msgs,
			Message{Role: RoleAssistant, Content: r.Text},
			Message{Role: RoleUser, Content: repairTurn(redactOtherGraphs(why, req.Application, draftGraph(*parsed.Configuration)))})
	}
	return wire.AIChatReply{}, MaxCalls, refuse(http.StatusBadGateway, wire.CodeAIDraftInvalid, "",
		"the drafted configuration did not pass Gate validation after one repair; add detail to your request (the queues, each limit as a count per time window, the cost of an item) and ask again. Gate's rejection: %s", problems)
}

// providerFailure maps a failed call to the catalogue, logging the class
// and status only.
func (a *Agent) providerFailure(ctx context.Context, err error) *Error {
	var pe *ProviderError
	if !errors.As(err, &pe) {
		pe = &ProviderError{Provider: a.p.Name(), Class: ClassUnavailable}
	}
	a.log.Warn("ai provider call failed", "provider", pe.Provider, "class", pe.Class.String(), "status", pe.Status)
	name := pe.Provider
	switch pe.Class {
	case ClassAccess:
		return refuse(http.StatusBadGateway, wire.CodeAIAccess, "", "%s refused the API key or its access to the model %s (HTTP %d): check the key and that it may use GATE_AI_MODEL", name, a.p.Model(), pe.Status)
	case ClassQuota:
		return refuse(http.StatusBadGateway, wire.CodeAIQuota, "", "%s's quota or rate limit is exhausted (HTTP 429): wait and retry, or raise the quota of the key", name)
	case ClassConfig:
		return refuse(http.StatusBadGateway, wire.CodeAIConfiguration, "", "%s refused the request configuration or the model %s (HTTP %d): check that GATE_AI_MODEL names a model that supports JSON-schema structured output", name, a.p.Model(), pe.Status)
	case ClassUnfinished:
		return refuse(http.StatusBadGateway, wire.CodeAIUnfinished, "", "%s did not finish the reply (incomplete, cut at the output limit, or stopped early): ask for a smaller graph, or retry", name)
	case ClassTimeout:
		if ctx.Err() != nil {
			return refuse(http.StatusBadGateway, wire.CodeAITimeout, "", "timeout: the AI chat took longer than %s; retry, or ask for a smaller graph", a.cfg.RequestTimeout)
		}
		return refuse(http.StatusBadGateway, wire.CodeAITimeout, "", "timeout: %s did not answer within %s; retry in a moment", name, a.cfg.CallTimeout)
	case ClassTooLarge:
		return refuse(http.StatusBadGateway, wire.CodeAIReply, "", "%s's reply was larger than %d bytes and was dropped: ask for a smaller graph", name, a.cfg.ReplyLimit)
	case ClassMalformed:
		return refuse(http.StatusBadGateway, wire.CodeAIReply, "", "%s's reply could not be read: retry", name)
	}
	return refuse(http.StatusBadGateway, wire.CodeAIUnavailable, "", "%s is temporarily unavailable or unreachable: retry in a moment", name)
}

// refusalReply is the canned answer to a refused request.
func refusalReply() wire.AIChatReply {
	return wire.AIChatReply{
		Message:     "I can only help draft a Gate graph. Tell me which queue your work arrives on, where it should go, and the limits to enforce (a count per time window, and what one item costs).",
		Assumptions: []string{},
		Warnings:    []string{},
	}
}
