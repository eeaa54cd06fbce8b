package wire

// Error is every refusal's body on both planes: a sentence naming the
// number, the consequence and the fix, and where it helps the request field
// at fault and the rule that refused.
type Error struct {
	// Error is the human message.
	Error string `json:"error"`
	// Field names the request field at fault, when there is one.
	Field string `json:"field,omitempty"`
	// Rule names the rule that refused, when there is one.
	Rule string `json:"rule,omitempty"`
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
