package wire

import "encoding/json"

// AIStatus is GET /api/ai/status: whether the configuration agent is on,
// with which provider and model, and whether drafts may use Watch.
type AIStatus struct {
	// Enabled is true when the selected provider has a key.
	Enabled bool `json:"enabled"`
	// Provider is "OpenAI" or "Gemini".
	Provider string `json:"provider"`
	// Model is the configured model.
	Model string `json:"model"`
	// WatchAvailable is true when history is configured (Watch drafts are
	// allowed only then).
	WatchAvailable bool `json:"watchAvailable"`
	// Setup says how to turn the agent on; "" when it is on.
	Setup string `json:"setup,omitempty"`
}

// AIChatRequest is the body of POST /api/ai/chat (unknown fields are
// refused).
type AIChatRequest struct {
	// Application is the application the draft is for.
	Application string `json:"application"`
	// Messages alternate user/assistant, starting and ending with user.
	Messages []AIMessage `json:"messages"`
	// Draft is the current draft (a graph document), if any.
	Draft json.RawMessage `json:"draft,omitempty"`
}

// AIMessage is one turn of an AI chat.
type AIMessage struct {
	// Role is "user" or "assistant".
	Role string `json:"role"`
	// Content is the turn's text.
	Content string `json:"content"`
}

// AIChatReply is the 200 answer of POST /api/ai/chat: the agent's message,
// its assumptions, a validated draft (null for a clarification) and the
// compiler's warnings. Nothing is ever saved or provisioned.
type AIChatReply struct {
	Message     string          `json:"message"`
	Assumptions []string        `json:"assumptions"`
	Draft       json.RawMessage `json:"draft"`
	Warnings    []string        `json:"warnings"`
}
