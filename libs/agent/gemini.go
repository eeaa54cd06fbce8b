package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genai"
)

// gemini is the Gemini generateContent adapter.
type gemini struct {
	client  *genai.Client
	model   string
	timeout time.Duration
}

// newGemini builds the adapter with every client setting explicit: the
// Gemini API backend (GOOGLE_GENAI_USE_VERTEXAI and
// GOOGLE_GENAI_USE_ENTERPRISE cannot switch it to Vertex), the key (the
// SDK's own GOOGLE_API_KEY/GEMINI_API_KEY precedence is never consulted),
// the base URL (GOOGLE_GEMINI_BASE_URL is ignored) and no retries. The key
// travels in the x-goog-api-key header, never in the URL.
func newGemini(ctx context.Context, key, baseURL, model string, timeout time.Duration, limit int64) (*gemini, error) {
	if !strings.HasSuffix(baseURL, "/") {
		baseURL += "/"
	}
	c, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: newHTTPClient(timeout+time.Second, limit),
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    baseURL,
			APIVersion: "v1beta",
		},
	})
	if err != nil {
		// The SDK's message may print its configuration (with the key).
		return nil, fmt.Errorf("building the Gemini client failed; check GATE_AI_GEMINI_BASE_URL")
	}
	return &gemini{client: c, model: model, timeout: timeout}, nil
}

func (g *gemini) Name() string  { return "Gemini" }
func (g *gemini) Model() string { return g.model }

// contents maps the turns to Gemini roles, merging consecutive turns of one
// role into one turn's parts (the context turn and the first user turn).
func contents(msgs []Message) []*genai.Content {
	var out []*genai.Content
	for _, m := range msgs {
		role := genai.RoleUser
		if m.Role == RoleAssistant {
			role = genai.RoleModel
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, &genai.Part{Text: m.Content})
			continue
		}
		out = append(out, &genai.Content{Role: role, Parts: []*genai.Part{{Text: m.Content}}})
	}
	return out
}

func (g *gemini) config(c Call) *genai.GenerateContentConfig {
	off := false
	return &genai.GenerateContentConfig{
		SystemInstruction:     &genai.Content{Parts: []*genai.Part{{Text: c.Instructions}}},
		MaxOutputTokens:       MaxOutputTokens,
		CandidateCount:        1,
		ResponseMIMEType:      "application/json",
		ResponseJsonSchema:    c.Schema,
		AutomaticContinuation: &off,
	}
}

// refusalFinish are the finish reasons answered with the canned refusal.
var refusalFinish = map[genai.FinishReason]bool{
	genai.FinishReasonSafety:            true,
	genai.FinishReasonRecitation:        true,
	genai.FinishReasonBlocklist:         true,
	genai.FinishReasonProhibitedContent: true,
	genai.FinishReasonSPII:              true,
}

func (g *gemini) Generate(ctx context.Context, c Call) (Reply, error) {
	callCtx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	callCtx, st := withState(callCtx)
	resp, err := g.client.Models.GenerateContent(callCtx, g.model, contents(c.Messages), g.config(c))
	if err != nil {
		return Reply{}, failure(g.Name(), callCtx, st)
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" && pf.BlockReason != genai.BlockedReasonUnspecified && pf.BlockReason != "BLOCK_REASON_UNSPECIFIED" {
		return Reply{Refused: true}, nil
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		return Reply{}, &ProviderError{Provider: g.Name(), Class: ClassUnfinished, Status: 200}
	}
	cand := resp.Candidates[0]
	switch {
	case refusalFinish[cand.FinishReason]:
		return Reply{Refused: true}, nil
	case cand.FinishReason != genai.FinishReasonStop:
		return Reply{}, &ProviderError{Provider: g.Name(), Class: ClassUnfinished, Status: 200}
	}
	var text strings.Builder
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p == nil || p.Thought {
				continue
			}
			text.WriteString(p.Text)
		}
	}
	return Reply{Text: text.String()}, nil
}
