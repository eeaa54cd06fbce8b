package load

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Scenario names a gate-e2e run.
type Scenario string

// The scenarios. Every one is judged by the same three gates; chaos adds
// exactly-once delivery, backoff adds the stop and the recovery.
const (
	// ScenarioLoad is one relay, the reference run.
	ScenarioLoad Scenario = "load"
	// ScenarioReplicas runs two gate-relay processes on one graph.
	ScenarioReplicas Scenario = "replicas"
	// ScenarioChaos kills and restarts a relay at random moments.
	ScenarioChaos Scenario = "chaos"
	// ScenarioBackoff reports a vendor 429 mid-load.
	ScenarioBackoff Scenario = "backoff"
	// ScenarioVendor follows a fake vendor's rate-limit headers.
	ScenarioVendor Scenario = "vendor"
)

// Scenarios lists every scenario in help order.
var Scenarios = []Scenario{ScenarioLoad, ScenarioReplicas, ScenarioChaos, ScenarioBackoff, ScenarioVendor}

// ErrUsage wraps every command-line error.
var ErrUsage = errors.New("usage")

// Config is one gate-e2e run. Zero fields take the defaults documented on
// each; Parse fills it from the command line and the environment.
type Config struct {
	// Scenario is what to run (default load).
	Scenario Scenario
	// Graph is the graph name; a run suffix "-{runId}" is appended unless
	// ExactName, so reruns on one broker never see each other's items.
	Graph string
	// ExactName declares Graph verbatim.
	ExactName bool
	// Rate is the declared rate per second on the shared node (default 50).
	Rate int
	// Total is how many items are pushed (default 3000).
	Total int
	// Seconds is how long to sample after the pushes finished (default 20;
	// chaos: until every item is delivered, at most chaosSeconds).
	Seconds int
	// WindowS is the declared window in seconds, subdivided into one-second
	// sub-windows (default 10).
	WindowS int
	// Batch is the nodes' declared batch (default 200).
	Batch int
	// App is the application (GATE_APP, default "default").
	App string
	// GateURL is gate-api (GATE_URL, default http://127.0.0.1:8788).
	GateURL string
	// QueenURL is the broker (QUEEN_URL, default http://127.0.0.1:6632).
	QueenURL string
	// KVNamespace is where the counters live (GATE_KV_NAMESPACE, default
	// "gate").
	KVNamespace string
	// Producers, Consumers and Partitions shape the flood (defaults 8, 12,
	// 40).
	Producers, Consumers, Partitions int
	// Direct pushes straight into the ingress queues with the Queen client
	// instead of the front door.
	Direct bool
	// Embedded starts miniqueen, gate-api and gate-relay itself.
	Embedded bool
	// JSON prints a machine-readable summary instead of the text report.
	JSON bool
	// Progress draws a progress bar (default: when stdout is a terminal).
	Progress bool
	// RelayCmd starts extra relays for replicas/chaos (GATE_E2E_RELAY_CMD).
	RelayCmd string
	// RelayURLs are the ops base URLs (GATE_RELAY_BIND) of relays gate-e2e
	// did not start, read for the admission path they run
	// (GATE_E2E_RELAYS, comma-separated).
	RelayURLs []string
	// Kills is how many times chaos kills a relay (GATE_E2E_KILLS, default 2).
	Kills int
	// BackoffSeconds is the Retry-After of the backoff scenario
	// (GATE_E2E_BACKOFF_SECONDS, default 4).
	BackoffSeconds int
	// VendorLimits are the vendor scenario's real limits per second, one
	// per phase of Seconds each (GATE_E2E_VENDOR_LIMITS, default 20,10).
	VendorLimits []int
	// VendorObserve makes the vendor scenario's workers report every
	// answer to observe (GATE_E2E_VENDOR_OBSERVE=0 turns it off: the
	// "before" run).
	VendorObserve bool
	// VendorSettle runs `vendor settle`: items estimated at 4× their cost,
	// settled after the call (SettleReports false: never settled, the
	// figure before).
	VendorSettle  bool
	SettleReports bool
	// Seed seeds chaos timing (GATE_E2E_SEED; 0 = time-based).
	Seed int64
	// Dump, when set, is a file the run's raw observation and params are
	// written to as JSON before judging (GATE_E2E_DUMP), so a failed
	// judgement can be replayed in a unit test.
	Dump string
	// Out receives the report (default os.Stdout); Log receives progress
	// lines and the launcher's log (default os.Stderr).
	Out, Log io.Writer
}

// Usage is gate-e2e's help text.
const Usage = `usage: gate-e2e [--embedded] [--json] [--direct] [--no-progress] [--exact-name]
                [SCENARIO] [GRAPH] [RATE] [TOTAL] [SECONDS] [WINDOW_S] [BATCH]

  SCENARIO  load (default), replicas, chaos, backoff, vendor or vendor settle; a first
            word that is not a scenario is the graph name of a load run
  GRAPH     graph name (default: the scenario name; "-{runId}" is appended unless --exact-name)
  RATE      declared items per second on the shared node (default 50)
  TOTAL     items pushed (default 3000)
  SECONDS   seconds sampled after the pushes finish (default 20)
  WINDOW_S  declared window in seconds, one-second sub-windows (default 10)
  BATCH     declared batch of every node (default 200)

  gate-e2e load 50 3000 20   graph load, 50/s over a 10 s window, 3000 items, 20 s

env: GATE_URL (http://127.0.0.1:8788), QUEEN_URL (http://127.0.0.1:6632),
     GATE_APP (default), GATE_KV_NAMESPACE (gate), GATE_E2E_RELAY_CMD,
     GATE_E2E_RELAYS (ops URLs of relays gate-e2e did not start, comma-separated),
     GATE_E2E_KILLS (2), GATE_E2E_BACKOFF_SECONDS (4), GATE_E2E_SEED,
     GATE_E2E_PRODUCERS (8), GATE_E2E_CONSUMERS (12), GATE_E2E_PARTITIONS (40),
     GATE_E2E_DUMP (a file the raw observation is written to, for replaying a judgement)
     vendor: GATE_E2E_VENDOR_LIMITS (20,10: the vendor's limit per second, one per
     phase of SECONDS, default 30), GATE_E2E_VENDOR_OBSERVE (0: workers do not report)
     vendor settle: GATE_E2E_SETTLE (0: workers do not settle)
exit: 0 every gate passed, 1 a gate failed, 2 usage or setup error
`

// Parse reads the command line (without the program name) and the
// environment (getenv; nil = os.Getenv).
func Parse(args []string, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := Config{Scenario: ScenarioLoad}
	var pos []string
	for _, a := range args {
		switch a {
		case "--embedded":
			cfg.Embedded = true
		case "--json":
			cfg.JSON = true
		case "--direct":
			cfg.Direct = true
		case "--no-progress":
			cfg.Progress = false
		case "--exact-name":
			cfg.ExactName = true
		case "-h", "--help", "help":
			return Config{}, fmt.Errorf("%w: help requested", ErrUsage)
		default:
			if strings.HasPrefix(a, "-") {
				return Config{}, fmt.Errorf("%w: unknown flag %q; flags are --embedded, --json, --direct, --no-progress, --exact-name", ErrUsage, a)
			}
			pos = append(pos, a)
		}
	}
	if len(pos) > 0 {
		for _, s := range Scenarios {
			if pos[0] == string(s) {
				cfg.Scenario = s
				// "load" is both the default scenario and the reference's
				// graph name: `gate-e2e load 50 3000 20` is graph load.
				if s != ScenarioLoad {
					pos = pos[1:]
				}
				if s == ScenarioVendor && len(pos) > 0 && pos[0] == "settle" {
					cfg.VendorSettle = true
					pos = pos[1:]
				}
				break
			}
		}
	}
	if len(pos) > 0 {
		if _, err := strconv.Atoi(pos[0]); err != nil {
			cfg.Graph = pos[0]
			pos = pos[1:]
		}
	}
	if len(pos) > 5 {
		return Config{}, fmt.Errorf("%w: too many arguments %v; expected at most RATE TOTAL SECONDS WINDOW_S BATCH", ErrUsage, pos)
	}
	nums := []*int{&cfg.Rate, &cfg.Total, &cfg.Seconds, &cfg.WindowS, &cfg.Batch}
	names := []string{"RATE", "TOTAL", "SECONDS", "WINDOW_S", "BATCH"}
	for i, a := range pos {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return Config{}, fmt.Errorf("%w: %s must be a whole number ≥ 1, got %q", ErrUsage, names[i], a)
		}
		*nums[i] = n
	}
	cfg.App = getenv("GATE_APP")
	cfg.GateURL = getenv("GATE_URL")
	cfg.QueenURL = getenv("QUEEN_URL")
	cfg.KVNamespace = getenv("GATE_KV_NAMESPACE")
	cfg.RelayCmd = getenv("GATE_E2E_RELAY_CMD")
	cfg.Dump = getenv("GATE_E2E_DUMP")
	for _, u := range strings.Split(getenv("GATE_E2E_RELAYS"), ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return Config{}, fmt.Errorf("%w: GATE_E2E_RELAYS entry %q is not a URL; list the relays' ops base URLs, e.g. http://127.0.0.1:8790", ErrUsage, u)
		}
		cfg.RelayURLs = append(cfg.RelayURLs, u)
	}
	for _, e := range []struct {
		name string
		dst  *int
	}{
		{"GATE_E2E_KILLS", &cfg.Kills}, {"GATE_E2E_BACKOFF_SECONDS", &cfg.BackoffSeconds},
		{"GATE_E2E_PRODUCERS", &cfg.Producers}, {"GATE_E2E_CONSUMERS", &cfg.Consumers},
		{"GATE_E2E_PARTITIONS", &cfg.Partitions},
	} {
		if v := getenv(e.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Config{}, fmt.Errorf("%w: %s must be a whole number ≥ 1, got %q", ErrUsage, e.name, v)
			}
			*e.dst = n
		}
	}
	cfg.VendorObserve = getenv("GATE_E2E_VENDOR_OBSERVE") != "0"
	cfg.SettleReports = getenv("GATE_E2E_SETTLE") != "0"
	if v := getenv("GATE_E2E_VENDOR_LIMITS"); v != "" {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 100000 {
				return Config{}, fmt.Errorf("%w: GATE_E2E_VENDOR_LIMITS must list whole numbers 1..100000 per second, one per phase, e.g. 20,10; got %q", ErrUsage, v)
			}
			cfg.VendorLimits = append(cfg.VendorLimits, n)
		}
	}
	if v := getenv("GATE_E2E_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Config{}, fmt.Errorf("%w: GATE_E2E_SEED must be an integer, got %q", ErrUsage, v)
		}
		cfg.Seed = n
	}
	return cfg.withDefaults(), nil
}

// withDefaults fills every zero field.
func (c Config) withDefaults() Config {
	if c.Scenario == "" {
		c.Scenario = ScenarioLoad
	}
	if c.Graph == "" {
		c.Graph = string(c.Scenario)
	}
	if c.Rate == 0 {
		c.Rate = 50
	}
	if c.Total == 0 {
		c.Total = 3000
	}
	if c.WindowS == 0 {
		c.WindowS = 10
	}
	if c.Seconds == 0 {
		c.Seconds = 20
		if c.Scenario == ScenarioChaos {
			c.Seconds = chaosSeconds(c.Total, c.Rate)
		}
		if c.Scenario == ScenarioVendor {
			c.Seconds = 30
		}
	}
	if c.Batch == 0 {
		c.Batch = 200
	}
	if c.App == "" {
		c.App = "default"
	}
	if c.GateURL == "" {
		c.GateURL = "http://127.0.0.1:8788"
	}
	if c.QueenURL == "" {
		c.QueenURL = "http://127.0.0.1:6632"
	}
	if c.KVNamespace == "" {
		c.KVNamespace = "gate"
	}
	if c.Producers == 0 {
		c.Producers = 8
	}
	if c.Consumers == 0 {
		c.Consumers = 12
	}
	if c.Partitions == 0 {
		c.Partitions = 40
	}
	if c.Kills == 0 {
		c.Kills = 2
	}
	if c.BackoffSeconds == 0 {
		c.BackoffSeconds = 4
	}
	if len(c.VendorLimits) == 0 {
		c.VendorLimits = DefaultVendorLimits
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
	return c
}

// chaosSeconds is chaos's horizon: every item must arrive before it, and
// the slowest path to drain is bulk — four items in five, admitted at its
// share (ShareBulk) of the ceiling once fast has drained — so the horizon
// is the time bulk needs at its ceiling, plus 40 s for the kills and the
// leases they leave. (It was total/rate + 40: 100 s for the default 3000
// at 50/s, against the 96 s bulk needs alone, so a run with two kills
// missed the last few windows' items on an ordinary machine.) A run stops
// as soon as everything arrived.
func chaosSeconds(total, rate int) int {
	bulk := float64(total - total/5)
	return int(math.Ceil(bulk/(float64(rate)*ShareBulk))) + 40
}
