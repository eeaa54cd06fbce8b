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
