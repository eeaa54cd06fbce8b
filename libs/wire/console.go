package wire

// Error is every refusal's body on both planes: a sentence naming the
// number, the consequence and the fix, its stable machine code, and where
// it helps the request field at fault and the rule that refused.
type Error struct {
	// Error is the human message.
	Error string `json:"error"`
	// Code is the refusal's stable machine code, always set (Codes lists
	// them): branch on it, not on the message.
	Code Code `json:"code"`
	// Field names the request field at fault, when there is one.
	Field string `json:"field,omitempty"`
	// Rule names the rule that refused, when there is one.
	Rule string `json:"rule,omitempty"`
	// Rules and Problems list every declare rule that refused.
	Rules    []string  `json:"rules,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
	// Applications are the applications a flat name is ambiguous between.
	Applications []string `json:"applications,omitempty"`
	// Paths and Nodes are the valid choices when the request named none or
	// a wrong one.
	Paths []string `json:"paths,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
	// Node, Budget and Queue name the object at fault.
	Node   string `json:"node,omitempty"`
	Budget string `json:"budget,omitempty"`
	Queue  string `json:"queue,omitempty"`
	// Limit is the route's body limit (413).
	Limit *int64 `json:"limit,omitempty"`
	// MaxAttempts is the graph's attempt limit (re-entry refused).
	MaxAttempts *int64 `json:"maxAttempts,omitempty"`
	// RetryAfterSeconds repeats the Retry-After header (429).
	RetryAfterSeconds *int64 `json:"retryAfterSeconds,omitempty"`
	// Room and Bytes are the kv-key room a scope value has left and the
	// bytes it took (a scope value refused at the push door).
	Room  *int64 `json:"room,omitempty"`
	Bytes *int64 `json:"bytes,omitempty"`
	// Broker and TimeoutMs name the broker that did not answer and the
	// deadline it missed (504).
	Broker    string `json:"broker,omitempty"`
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
	// Second is the recorded second (Unix ms) a simulation could not
	// replay as it stands (the node's cost changed there).
	Second *int64 `json:"second,omitempty"`
	// InflightBytes is the push door's bound on bytes buffered across
	// in-flight pushes (503 when a push does not fit).
	InflightBytes *int64 `json:"inflightBytes,omitempty"`
	// Status and Queen describe an unhealthy plane (GET /health, 503).
	Status string      `json:"status,omitempty"`
	Queen  *QueenState `json:"queen,omitempty"`
	// StoredVersion is the version of the graph's document stored after a
	// refused or failed declaration (version-order, provisioning-failed,
	// store-failed): what the graph still is. Absent when nothing is
	// stored or the store could not be read.
	StoredVersion *int64 `json:"storedVersion,omitempty"`
	// RunningReplicas are the gate-relay replicas that report running the
	// stored version (same refusals); absent when none does.
	RunningReplicas []string `json:"runningReplicas,omitempty"`
	// ETag is the entity tag of the graph's stored document as the refused
	// request found it (412 precondition-failed): send it as If-Match to
	// write over that document. Absent when nothing is stored.
	ETag string `json:"etag,omitempty"`
	// ChangedBy and ChangedAt say who stored that document and when (Unix
	// ms), when the history database recorded it: the console identity
	// (an e-mail) or "api" for the application plane. Absent without
	// history, or when history has no record of that document.
	ChangedBy string `json:"changedBy,omitempty"`
	ChangedAt *int64 `json:"changedAt,omitempty"`
}

// Me is GET /api/me: who the request is and what it may do.
type Me struct {
	// Actor is "dev" (GATE_DEV_EMAIL bypass), "google" or "oidc" (a
	// signed-in session) on the console; "internal" on gate-api.
	Actor string `json:"actor"`
	// Email is the identity, lower case; null on the internal plane.
	Email *string `json:"email"`
	// Role is "admin" (may write: listed in GATE_ADMIN_EMAILS) or "viewer".
	Role string `json:"role"`
	// ExpiresAt is when the session ends (Unix ms); null for the dev bypass
	// and the internal plane.
	ExpiresAt *int64 `json:"expires_at"`
	// DevBypass is true when sign-in is bypassed (the web app shows a
	// permanent banner).
	DevBypass bool `json:"dev_bypass"`
}

// Problem is one declare refusal with its location.
type Problem struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// At is the JSON pointer into the document, when known.
	At string `json:"at,omitempty"`
}
