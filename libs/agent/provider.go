package agent

import (
	"context"
	"errors"
	"fmt"
)

// Roles of a conversation message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of the conversation.
type Message struct {
	// Role is RoleUser or RoleAssistant.
	Role string `json:"role"`
	// Content is the turn's text.
	Content string `json:"content"`
}

// Call is one provider call: the system prompt, the turns (the context turn
// first) and the structured-output schema of the reply.
type Call struct {
	Instructions string
	Messages     []Message
	Schema       map[string]any
}

// Reply is what a provider answered: the reply text (JSON in the output
// schema) or a refusal.
type Reply struct {
	Text    string
	Refused bool
}

// Provider is one model API. Generate makes exactly one HTTP call (no SDK
// retries); its error is a *ProviderError.
type Provider interface {
	// Name is the provider as the status route shows it: "OpenAI" or "Gemini".
	Name() string
	// Model is the configured model.
	Model() string
	// Generate sends one call and returns the reply.
	Generate(ctx context.Context, c Call) (Reply, error)
}

// Class is a provider failure's kind; the chat route answers each with its
// own generic message (a provider's body is never forwarded or logged).
type Class int

// The failure classes.
const (
	// ClassUnavailable: a 5xx, another unexpected status, or unreachable.
	ClassUnavailable Class = iota
	// ClassAccess: 401 or 403, the key or its access to the model.
	ClassAccess
	// ClassQuota: 429.
	ClassQuota
	// ClassConfig: 400 or 404, the model name or the request configuration.
	ClassConfig
	// ClassUnfinished: the reply did not complete (incomplete, max tokens,
	// an unexpected finish reason).
	ClassUnfinished
	// ClassTimeout: the call did not answer in time.
	ClassTimeout
	// ClassTooLarge: the reply was larger than the reply cap.
	ClassTooLarge
	// ClassMalformed: the reply could not be read.
	ClassMalformed
)

func (c Class) String() string {
	switch c {
	case ClassAccess:
		return "access"
	case ClassQuota:
		return "quota"
	case ClassConfig:
		return "configuration"
	case ClassUnfinished:
		return "unfinished"
	case ClassTimeout:
		return "timeout"
	case ClassTooLarge:
		return "too-large"
	case ClassMalformed:
		return "malformed"
	}
	return "unavailable"
}

// ProviderError is a failed provider call. It carries the class and the
// HTTP status only: never the provider's body or the SDK's message (which
// may quote it).
type ProviderError struct {
	Provider string
	Class    Class
	// Status is the provider's HTTP status (0 when there was no answer).
	Status int
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s call failed (%s, HTTP %d)", e.Provider, e.Class, e.Status)
	}
	return fmt.Sprintf("%s call failed (%s)", e.Provider, e.Class)
}

// classOf maps a provider's HTTP status to its class.
func classOf(status int) Class {
	switch {
	case status == 401 || status == 403:
		return ClassAccess
	case status == 429:
		return ClassQuota
	case status == 400 || status == 404:
		return ClassConfig
	}
	return ClassUnavailable
}

// errTooLarge is the body reader's error past the reply cap.
var errTooLarge = errors.New("provider reply larger than the cap")
