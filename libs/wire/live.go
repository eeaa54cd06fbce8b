package wire

// The events of GET /api/live (server-sent events). Every event's data is
// one JSON value of the type named here; the event name is in the SSE
// "event:" field.

// LiveStatus is the "status" event: always the stream's first event, and
// again whenever NATS goes away or comes back.
type LiveStatus struct {
	// Mode is "stream" (counters and denials arrive as events) or "poll"
	// (NATS is not configured or not reachable, or the stream's graphs went
	// quiet — no relay published their counters within QuietMs: poll the
	// graph view).
	Mode string `json:"mode"`
	// NATS is whether the console holds a NATS connection right now.
	NATS bool `json:"nats"`
	// Reason says why the mode is "poll" ("" when streaming).
	Reason string `json:"reason"`
	// Graphs are the "{app}/{graph}" the stream carries (empty: all).
	Graphs []string `json:"graphs"`
	// HeartbeatMs is the period of the ": heartbeat" comments.
	HeartbeatMs int64 `json:"heartbeat_ms"`
	// PollMs is how often to poll the graph view in "poll" mode.
	PollMs int64 `json:"poll_ms"`
	// QuietMs is how long a graph may go without a counters event before
	// the stream calls it quiet (three relay status periods).
	QuietMs int64 `json:"quiet_ms"`
	// Quiet are the stream's graphs no relay published counters for within
	// QuietMs ("*" for a stream of every graph that heard none): their
	// last numbers are stale, so the mode is "poll".
	Quiet []string `json:"quiet"`
}

// LiveCounters is the "counters" event: one graph's stage counters summed
// over the relay replicas that published recently. Events of one graph
// coalesce: a slow tab gets the newest, never a queue of old ones.
type LiveCounters struct {
	Application string `json:"application"`
	Graph       string `json:"graph"`
	// At is the newest replica snapshot's time (epoch ms).
	At int64 `json:"at"`
	// Replicas are the replicas summed.
	Replicas []string `json:"replicas"`
	// Version is the highest version a replica runs.
	Version int64 `json:"version"`
	// Running is whether some replica runs the graph.
	Running bool        `json:"running"`
	Stages  []LiveStage `json:"stages"`
}

// LiveStage is one stage in a LiveCounters event.
type LiveStage struct {
	Path        string   `json:"path"`
	Node        string   `json:"node"`
	Hop         int      `json:"hop"`
	Counters    Counters `json:"counters"`
	LastRefusal *Refusal `json:"lastRefusal"`
}

// LiveDenials is the "denials" event: denials new since the last event for
// the stream's graphs (newest last). Dropped counts denials a slow tab
// missed because its buffer was full.
type LiveDenials struct {
	Denials []Denial `json:"denials"`
	Dropped int64    `json:"dropped"`
}
