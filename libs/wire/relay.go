package wire

// RelayHealth is a gate-relay's GET /health (on GATE_RELAY_BIND): 200 with
// Status "ok", or 503 with Status "unavailable" when the broker does not
// answer; the body is the same report either way.
type RelayHealth struct {
	Status  string `json:"status"`
	Replica string `json:"replica"`
	// Broker is the broker check (absent when the relay has none).
	Broker *RelayBroker `json:"broker,omitempty"`
	// Admission is the path claims charge by now.
	Admission *RelayAdmission `json:"admission,omitempty"`
	Graphs    []RelayGraph    `json:"graphs"`
}

// RelayBroker is RelayHealth's broker check.
type RelayBroker struct {
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
}

// RelayAdmission is the relay's admission path: "riders" or "separate",
// with the reason it is not on riders ("" when it is, or when separate was
// configured).
type RelayAdmission struct {
	Path string `json:"path"`
	Why  string `json:"why,omitempty"`
}

// RelayGraph is one graph a relay knows of, and whether it runs it.
type RelayGraph struct {
	App     string `json:"application"`
	Graph   string `json:"graph"`
	Version int64  `json:"version"`
	Running bool   `json:"running"`
	Error   string `json:"error,omitempty"`
}

// RecorderHealth is gate-recorder's GET /health (on GATE_RECORDER_BIND):
// 200 with Status "healthy" while the history database answers, 503 with
// Status "degraded" and Error naming the failure when it does not.
type RecorderHealth struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}
