package agent

// ReplySchema is the structured-output schema both providers are held to:
// message, assumptions and configuration (a complete GraphDoc encoded as a
// JSON string, or null for a clarifying question), all required, nothing
// else. A fresh copy per call: the SDKs may keep a reference.
func ReplySchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"message", "assumptions", "configuration"},
		"properties": map[string]any{
			"message":     map[string]any{"type": "string"},
			"assumptions": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"configuration": map[string]any{
				"type": []any{"string", "null"},
			},
		},
	}
}
