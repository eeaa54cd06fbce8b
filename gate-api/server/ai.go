package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/queen-mq/gate/libs/agent"
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/wire"
)

// aiChatBodyBytes is the chat route's body limit: above the request
// bounds (64 000 bytes of conversation, a 48 000-byte draft, JSON
// escaping), so an oversized conversation is answered with the 422 that
// names its bound rather than a bare 413.
const aiChatBodyBytes = 512 << 10

// aiRoutes registers the AI configuration agent (libs/agent): its status
// and the chat. gate-console mounts these routes and makes the POST
// admin-only; the internal plane keeps its cluster-only trust boundary.
func (s *Server) aiRoutes(r *mux.Router, small int64) {
	r.Handle("/api/ai/status", s.wrap("ai-status", true, small, s.aiStatus)).Methods(http.MethodGet)
	r.Handle("/api/ai/chat", s.wrap("ai-chat", true, aiChatBodyBytes, s.aiChat)).Methods(http.MethodPost)
}

// aiStatus is GET /api/ai/status.
func (s *Server) aiStatus(q *req) *apiError {
	writeJSON(q.w, http.StatusOK, s.agent.Status())
	return nil
}

// aiChat is POST /api/ai/chat: a validated draft or a clarification;
// nothing is saved or provisioned.
func (s *Server) aiChat(q *req) *apiError {
	if !s.agent.Enabled() {
		return fail(http.StatusServiceUnavailable, "%s", s.agent.Setup()).with("rule", "ai-off")
	}
	body, bad := readRaw(q.w, q.r, q.limit)
	if bad != nil {
		return bad
	}
	var in wire.AIChatRequest
	if bad := decodeStrict(body, &in, "the chat body"); bad != nil {
		return bad
	}
	// A chat may take the agent's whole request bound (150 s), longer
	// than the listener's default write timeout.
	_ = http.NewResponseController(q.w).SetWriteDeadline(time.Now().Add(s.cfg.AI.RequestTimeout + 10*time.Second))
	ctx := q.r.Context()
	listing, err := s.store.List(ctx)
	if err != nil {
		return fail(http.StatusBadGateway, "the declared graphs could not be read, so a draft cannot be checked against them (%v): retry", err).with("rule", "ai-store")
	}
	stored := make([]declare.Stored, 0, len(listing.Documents))
	for _, d := range listing.Documents {
		stored = append(stored, declare.Stored{App: d.App, Name: d.Graph, Body: d.Body})
	}
	env := agent.Env{
		Stored:  stored,
		Options: s.cfg.PlanOptions(),
		Taken: func(app, name string) bool {
			_, ok := listing.Find(app, name)
			return ok || s.cat.lookup(app, name) != nil
		},
	}
	reply, err := s.agent.Chat(ctx, in, env)
	if err != nil {
		var e *agent.Error
		if !errors.As(err, &e) {
			return fail(http.StatusInternalServerError, "the AI chat failed: %v", err)
		}
		out := fail(e.Status, "%s", e.Message).with("rule", e.Code)
		if e.Field != "" {
			out.field(e.Field)
		}
		if e.Status == http.StatusTooManyRequests {
			out.retryAfter(1)
		}
		return out
	}
	writeJSON(q.w, http.StatusOK, reply)
	return nil
}
