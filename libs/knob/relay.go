package knob

// The data plane's admission knobs (gate-relay; gate-bench and gate-e2e set
// them on the relays they start).
var (
	// Admission picks how a relay charges a claim: "riders" (the default)
	// carries the charge inside the settle transaction once a probe proved
	// the broker applies riders, falling back by itself to the separate kv
	// call; "separate" always charges with a kv call before the settle.
	Admission = Text{Name: "GATE_ADMISSION", Default: AdmissionRiders, Check: checkAdmission}
	// StageLingerMs is how long a stage whose claims are under a quarter of
	// its batch waits between pops (its workers take turns, one pop per
	// linger for the stage), so trickle load gathers into fuller claims
	// (0 = never): the bound on the latency it adds, paid only under
	// trickle load. 5 ms, as a producer's linger usually is:
	// under a steady few thousand items/s it cuts the relay's broker calls
	// per item several-fold, and no ceiling's window is that short.
	StageLingerMs = Int{Name: "GATE_STAGE_LINGER_MS", Default: 5, Min: 0, Max: 100}
	// ShadowKeysPerSecond caps the distinct (scope values, op) one node
	// records per second while a scoped or op-filtered shadow candidate
	// is set; the items of further ones are counted in the second's
	// overflow and judged as approximate. Memory and PostgreSQL rows grow
	// with it (docs/benchmarks.md, 2026-12-03).
	ShadowKeysPerSecond = Int{Name: "GATE_SHADOW_KEYS_PER_SECOND", Default: 1000, Min: 1, Max: 100000}
)

// gate-relay's own timing knobs, defined here so that the loader
// (gate-relay/config) and the defaults of the relay's and a stage's Config
// read one number.
var (
	// PollTimeoutSeconds is the parked long-poll window of a stage's pop,
	// and the bound of a graceful stop (it plus two seconds).
	PollTimeoutSeconds = Int{Name: "GATE_POLL_TIMEOUT_SECONDS", Default: 30, Min: 1, Max: 300}
	// MaxParkMs is how long a handler may hold its claim waiting for a
	// window (0 = never park: release at once).
	MaxParkMs = Int{Name: "GATE_MAX_PARK_MS", Default: 30_000, Min: 0, Max: 3_600_000}
	// InteriorSeedSkewSeconds is how far before a graph's start a new
	// interior consumer group is seeded.
	InteriorSeedSkewSeconds = Int{Name: "GATE_INTERIOR_SEED_SKEW_SECONDS", Default: 120, Min: 0, Max: 600}
	// SignalPollMs is how often a relay reads the store's change signal.
	SignalPollMs = Int{Name: "GATE_SIGNAL_POLL_MS", Default: 500, Min: 50, Max: 60_000}
	// StatusSeconds is how often a relay writes its status document (whose
	// TTL is three periods).
	StatusSeconds = Int{Name: "GATE_STATUS_SECONDS", Default: 5, Min: 1, Max: 300}
	// ReplicasPerGraph is how many live relay replicas run each graph,
	// chosen by rendezvous hashing over the replicas' status headers (0 =
	// every replica runs every graph). 2 keeps every graph running through
	// the loss of one replica.
	ReplicasPerGraph = Int{Name: "GATE_RELAY_REPLICAS_PER_GRAPH", Default: 2, Min: 0, Max: 1000}
	// DozeCheckSeconds is how often a dozing stage checks its source with
	// one pop without wait: a standby's ingress stage (its primary's
	// parked poll claims what is pushed, and a dead primary's graphs are
	// taken over when its status header expires, three
	// GATE_STATUS_SECONDS) and a primary's interior stage (its upstream in
	// the same process wakes it after every settle). The check only bounds
	// the wait of items no wake announced; at 10,000 graphs each kind
	// checking every 30 s was 333 pops a second on the broker.
	DozeCheckSeconds = Int{Name: "GATE_DOZE_CHECK_SECONDS", Default: 120, Min: 1, Max: 3600}
	// RelayProfiles, set to 1, serves Go's runtime profiles under
	// /debug/pprof/ on the relay's ops listener (GATE_RELAY_BIND), so an
	// operator can see where an idle or busy relay spends CPU and memory.
	// 0 (the default) serves none.
	RelayProfiles = Int{Name: "GATE_RELAY_PPROF", Default: 0, Min: 0, Max: 1}
)

// The values of GATE_ADMISSION.
const (
	AdmissionRiders   = "riders"
	AdmissionSeparate = "separate"
)

func checkAdmission(v string) string {
	if v == AdmissionRiders || v == AdmissionSeparate {
		return ""
	}
	return "is not an admission path; set riders (the charge rides the settle transaction) or separate (a kv call before it)"
}
