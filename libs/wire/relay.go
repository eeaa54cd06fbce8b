package wire

// RelayHealth is a gate-relay's GET /health (on GATE_RELAY_BIND): 200 with
// Status "ok", 200 with Status "degraded" while its status rows are not
// stored (StatusWrite says why; its graphs still run and limit), or 503
// with Status "unavailable" when the broker does not answer; the body is
// the same report either way.
type RelayHealth struct {
	Status  string `json:"status"`
	Replica string `json:"replica"`
	// Broker is the broker check (absent when the relay has none).
	Broker *RelayBroker `json:"broker,omitempty"`
	// Admission is the path claims charge by now.
	Admission *RelayAdmission `json:"admission,omitempty"`
	// StatusWrite is present while the relay's status rows are not being
	// stored (Status is then "degraded"): gate-api cannot see what this
	// replica runs.
	StatusWrite *RelayStatusWrite `json:"statusWrite,omitempty"`
	Graphs      []RelayGraph      `json:"graphs"`
}

// RelayStatusWrite is RelayHealth's failing status write.
type RelayStatusWrite struct {
	// Error is the last failed write's cause (the broker's answer).
	Error string `json:"error"`
	// Since is epoch milliseconds of the first failure in a row.
	Since int64 `json:"since"`
	// Failures is how many writes failed since the relay started.
	Failures int64 `json:"failures"`
}

// RelayBroker is RelayHealth's broker check.
type RelayBroker struct {
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Needs is what the relay's capability probe found of what Gate needs
	// of the broker (absent before the first probe answered).
	Needs []BrokerNeed `json:"needs,omitempty"`
}

// BrokerNeed is one thing Gate needs of its broker as the capability probe
// (libs/capability) found it, at start and after every reconnect.
type BrokerNeed struct {
	// Need is kv, riders, depth or ack.
	Need string `json:"need"`
	// What says it in words.
	What string `json:"what"`
	// Present says the broker has it.
	Present bool `json:"present"`
	// Required is false for what Gate can do without (riders: admission
	// then charges with a kv call before the settle).
	Required bool `json:"required"`
	// Problem is what the broker answered when it lacks it; Fix says how
	// to get it (the version, the knob).
	Problem string `json:"problem,omitempty"`
	Fix     string `json:"fix,omitempty"`
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
