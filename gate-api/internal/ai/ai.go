// Package ai is gate-api's route to the AI configuration agent
// (libs/agent): its status and the chat that drafts a graph document,
// validated against the declared graphs and never saved.
package ai

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/agent"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// chatBodyBytes is the chat route's body limit: above the request bounds
// (64 000 bytes of conversation, a 48 000-byte draft, JSON escaping), so
// an oversized conversation is answered with the 422 that names its bound
// rather than a bare 413.
const chatBodyBytes = 512 << 10

// chatWriteSlack is how long past the agent's whole request bound a chat's
// answer may take to be written.
const chatWriteSlack = 10 * time.Second

// AI is the AI family. Build it with New; it is safe for concurrent use.
type AI struct {
	p     *plane.Plane
	agent *agent.Agent
}

// New builds the AI family on p, with the agent of p's configuration (off
// without a key).
func New(ctx context.Context, p *plane.Plane) (*AI, error) {
	ag, err := agent.New(ctx, p.Cfg.AI, p.Log)
	if err != nil {
		return nil, err
	}
	p.Log.Info("ai agent", "enabled", ag.Enabled(), "config", p.Cfg.AI.AI)
	return &AI{p: p, agent: ag}, nil
}

// Routes registers the agent's status and the chat. gate-console mounts
// these routes and makes the POST admin-only; the internal plane keeps its
// cluster-only trust boundary.
func (a *AI) Routes(r *httpapi.Router) {
	r.Handle(httpapi.Route{Name: "ai-status", Method: http.MethodGet, Path: "/api/ai/status", Limit: a.p.Cfg.BodyBytes, Flat: true}, a.status)
	r.Handle(httpapi.Route{Name: "ai-chat", Method: http.MethodPost, Path: "/api/ai/chat", Limit: chatBodyBytes, Flat: true}, a.chat)
}

// status is GET /api/ai/status.
func (a *AI) status(q *httpapi.Request) *httpapi.Refusal {
	httpapi.WriteJSON(q.W, http.StatusOK, a.agent.Status())
	return nil
}

// chat is POST /api/ai/chat: a validated draft or a clarification;
// nothing is saved or provisioned.
func (a *AI) chat(q *httpapi.Request) *httpapi.Refusal {
	if !a.agent.Enabled() {
		return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeAIOff, "%s", a.agent.Setup()).Rule("ai-off")
	}
	body, bad := q.ReadRaw()
	if bad != nil {
		return bad
	}
	var in wire.AIChatRequest
	if bad := httpapi.DecodeStrict(body, &in, "the chat body"); bad != nil {
		return bad
	}
	// A chat may take the agent's whole request bound (150 s), longer than
	// the listener's default write timeout. A socket's deadline is the
	// operating system's wall clock, never the injected one.
	_ = http.NewResponseController(q.W).SetWriteDeadline(time.Now().Add(a.p.Cfg.AI.RequestTimeout + chatWriteSlack))
	ctx := q.Context()
	listing, err := a.p.Store.List(ctx)
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeAIStore, "the declared graphs could not be read, so a draft cannot be checked against them (%v): retry", err).Rule("ai-store")
	}
	env := agent.Env{
		Stored:  plane.StoredOf(listing.Documents),
		Options: a.p.Cfg.PlanOptions(),
		Taken: func(app, name string) bool {
			_, ok := listing.Find(app, name)
			return ok || a.p.Cat.Lookup(app, name) != nil
		},
	}
	reply, err := a.agent.Chat(ctx, in, env)
	if err != nil {
		var e *agent.Error
		if !errors.As(err, &e) {
			return httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "the AI chat failed: %v", err)
		}
		out := httpapi.Refuse(e.Status, e.Code, "%s", e.Message).Rule(string(e.Code))
		if e.Field != "" {
			out.Field(e.Field)
		}
		if e.Status == http.StatusTooManyRequests {
			out.RetryAfter(1)
		}
		return out
	}
	httpapi.WriteJSON(q.W, http.StatusOK, reply)
	return nil
}
