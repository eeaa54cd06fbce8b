package scenario

import (
	"errors"
	"fmt"
	"github.com/queen-mq/gate/libs/stack"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrUsage wraps every command-line and environment error.
var ErrUsage = errors.New("usage")

// Names are the scenarios in the order `all` runs them.
var Names = []string{"health", "push", "drain", "throughput", "contention", "throttled", "idle", "overhead", "peers", "watch", "observe", "mirrored", "settle"}

// Extra are the scenarios run only when named (not by all): scale and
// scale-fleet declare up to thousands of graphs.
var Extra = []string{"scale", "scale-fleet"}

// Config is one gate-bench invocation. Parse fills it; zero fields take
// the defaults named on each.
type Config struct {
	// Scenarios to run, in order.
	Scenarios []string
	// GateURL (GATE_URL, http://127.0.0.1:8788), App (GATE_APP, bench),
	// QueenURL (QUEEN_URL, http://127.0.0.1:6632), KVNamespace
	// (GATE_KV_NAMESPACE, gate), RedisAddr (BENCH_REDIS, 127.0.0.1:6379).
	GateURL, App, QueenURL, KVNamespace, RedisAddr string
	// Threads is BENCH_THREADS (4): workers of the peer limiters.
	Threads int
	// Seconds, Warmup, IdleSeconds: BENCH_SECONDS (10), BENCH_WARMUP (3),
	// BENCH_IDLE_SECONDS (60).
	Seconds, Warmup, IdleSeconds time.Duration
	// StatusPeriod is BENCH_STATUS_SECONDS (1): GATE_STATUS_SECONDS of the
	// embedded stack's relays. 1 s makes placement and handover quick to
	// measure; the relays' default (5 s) rewrites a fifth as many status
	// rows, which is what an idle fleet at thousands of graphs pays.
	StatusPeriod time.Duration
	// IdleSettle is BENCH_IDLE_SETTLE_SECONDS (5): how long the idle
	// measurements (the idle scenario, scale-fleet's idle row) wait before
	// their window opens. A relay spreads each stage's first long-poll and
	// first doze check over the second half of the poll timeout (30 s), so
	// a fleet that just started is not yet at its steady idle: 30 measures
	// that steady state.
	IdleSettle time.Duration
	// ReconcilePeriod is BENCH_RECONCILE_SECONDS (2): GATE_RECONCILE_SECONDS
	// of the embedded stack's processes. 2 (the embedded stack's own
	// default) makes a change made behind the change log quick to see; 15
	// (the relays' default) is what a production fleet's safety-net
	// re-read costs.
	ReconcilePeriod time.Duration
	// Backlog is BENCH_BACKLOG (30000).
	Backlog int
	// Rounds is BENCH_ROUNDS (3): how many times the overhead job runs per
	// runner; medians are reported.
	Rounds int
	// PayloadBytes is BENCH_PAYLOAD_BYTES (0): the overhead job's payload
	// size; 0 is the minimal {"i":N}, a larger value pads it to about that
	// many bytes (at most MaxPayloadBytes), so the share of the _gate stamp
	// in what broker and consumers handle can be seen at real sizes.
	PayloadBytes int
	// Conc is BENCH_CONC (1,8,32,128); Batches is BENCH_BATCHES
	// (1,25,200,500).
	Conc, Batches []int
	// PeerRate is BENCH_PEER_RATE (2000): the ceiling, items per second,
	// every peer paces the same backlog through.
	PeerRate int
	// ScaleGraphs is BENCH_SCALE_GRAPHS (100,1000): the cumulative graph
	// counts the scale scenario steps through.
	ScaleGraphs []int
	// ScaleReplicas is BENCH_SCALE_REPLICAS (1,3): the relay fleets
	// scale-fleet starts at each graph count.
	ScaleReplicas []int
	// Embedded starts miniqueen, gate-api and gate-relay itself.
	Embedded bool
	// JSONFile receives the tables as JSON ("" = none).
	JSONFile string
	// Out receives the tables; Log receives progress (defaults stdout,
	// stderr).
	Out, Log io.Writer
}

// MaxPayloadBytes bounds BENCH_PAYLOAD_BYTES.
const MaxPayloadBytes = 65536

// Usage is gate-bench's help text.
const Usage = `usage: gate-bench [--embedded] [--json FILE] all | NAME[,NAME...]

scenarios: health, push, drain, throughput, contention, throttled, idle, overhead, peers, watch, observe, mirrored, settle
           scale (only when named: N two-node graphs, BENCH_SCALE_GRAPHS)

env: GATE_URL (http://127.0.0.1:8788)  GATE_APP (bench)  QUEEN_URL (http://127.0.0.1:6632)
     GATE_KV_NAMESPACE (gate)  BENCH_REDIS (127.0.0.1:6379)  BENCH_THREADS (4)
     BENCH_SECONDS (10)  BENCH_WARMUP (3)  BENCH_BACKLOG (30000)  BENCH_IDLE_SECONDS (60)  BENCH_STATUS_SECONDS (1)
     BENCH_RECONCILE_SECONDS (2)  BENCH_IDLE_SETTLE_SECONDS (5)
     BENCH_CONC (1,8,32,128)  BENCH_BATCHES (1,25,200,500)  BENCH_PEER_RATE (2000)
     BENCH_ROUNDS (3)  BENCH_PAYLOAD_BYTES (0: the overhead job's minimal {"i":N}; up to 65536)
     BENCH_SCALE_GRAPHS (100,1000: the scale scenario's cumulative graph counts, each > 20)
exit: 0 every scenario completed, 1 one failed (listed under "== incomplete"), 2 usage
`

// Parse reads the command line (without the program name) and the
// environment (getenv; nil = os.Getenv).
func Parse(args []string, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var cfg Config
	var list string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--embedded":
			cfg.Embedded = true
		case a == "--json":
			if i+1 >= len(args) {
				return Config{}, fmt.Errorf("%w: --json needs a FILE", ErrUsage)
			}
			i++
			cfg.JSONFile = args[i]
		case strings.HasPrefix(a, "--json="):
			cfg.JSONFile = strings.TrimPrefix(a, "--json=")
		case strings.HasPrefix(a, "-"):
			return Config{}, fmt.Errorf("%w: unknown flag %q; flags are --embedded and --json FILE", ErrUsage, a)
		default:
			if list != "" {
				return Config{}, fmt.Errorf("%w: one scenario list expected, got %q and %q (join them with commas)", ErrUsage, list, a)
			}
			list = a
		}
	}
	if list == "" {
		return Config{}, fmt.Errorf("%w: name the scenarios: all, or a comma list of %s", ErrUsage, strings.Join(Names, ", "))
	}
	if list == "all" {
		cfg.Scenarios = append([]string(nil), Names...)
	} else {
		for _, n := range strings.Split(list, ",") {
			n = strings.TrimSpace(n)
			if !known(n) {
				return Config{}, fmt.Errorf("%w: unknown scenario %q; valid: all, %s", ErrUsage, n, strings.Join(Names, ", "))
			}
			cfg.Scenarios = append(cfg.Scenarios, n)
		}
	}
	str := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	cfg.GateURL = str("GATE_URL", "http://127.0.0.1:8788")
	cfg.App = str("GATE_APP", "bench")
	cfg.QueenURL = str("QUEEN_URL", "http://127.0.0.1:6632")
	cfg.KVNamespace = str("GATE_KV_NAMESPACE", "gate")
	cfg.RedisAddr = str("BENCH_REDIS", "127.0.0.1:6379")
	var err error
	ints := []struct {
		k   string
		def int
		dst *int
	}{
		{"BENCH_THREADS", 4, &cfg.Threads}, {"BENCH_ROUNDS", 3, &cfg.Rounds}, {"BENCH_BACKLOG", 30000, &cfg.Backlog}, {"BENCH_PEER_RATE", 2000, &cfg.PeerRate},
	}
	for _, e := range ints {
		if *e.dst, err = positive(e.k, getenv(e.k), e.def); err != nil {
			return Config{}, err
		}
	}
	if v := getenv("BENCH_PAYLOAD_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxPayloadBytes {
			return Config{}, fmt.Errorf("%w: BENCH_PAYLOAD_BYTES must be a whole number from 0 (the minimal {\"i\":N} payload) to %d, got %q", ErrUsage, MaxPayloadBytes, v)
		}
		cfg.PayloadBytes = n
	}
	secs := []struct {
		k   string
		def int
		dst *time.Duration
	}{
		{"BENCH_SECONDS", 10, &cfg.Seconds}, {"BENCH_WARMUP", 3, &cfg.Warmup}, {"BENCH_IDLE_SECONDS", 60, &cfg.IdleSeconds},
		{"BENCH_STATUS_SECONDS", 1, &cfg.StatusPeriod}, {"BENCH_RECONCILE_SECONDS", stack.DefaultReconcileSeconds, &cfg.ReconcilePeriod},
		{"BENCH_IDLE_SETTLE_SECONDS", 5, &cfg.IdleSettle},
	}
	for _, e := range secs {
		n, err := positive(e.k, getenv(e.k), e.def)
		if err != nil {
			return Config{}, err
		}
		*e.dst = time.Duration(n) * time.Second
	}
	if cfg.Conc, err = intList("BENCH_CONC", getenv("BENCH_CONC"), []int{1, 8, 32, 128}); err != nil {
		return Config{}, err
	}
	if cfg.Batches, err = intList("BENCH_BATCHES", getenv("BENCH_BATCHES"), []int{1, 25, 200, 500}); err != nil {
		return Config{}, err
	}
	if cfg.ScaleGraphs, err = intList("BENCH_SCALE_GRAPHS", getenv("BENCH_SCALE_GRAPHS"), []int{100, 1000}); err != nil {
		return Config{}, err
	}
	for i, n := range cfg.ScaleGraphs {
		if n <= scaleSample || (i > 0 && n <= cfg.ScaleGraphs[i-1]) {
			return Config{}, fmt.Errorf("%w: BENCH_SCALE_GRAPHS must be increasing counts each over %d, got %q", ErrUsage, scaleSample, getenv("BENCH_SCALE_GRAPHS"))
		}
	}
	if cfg.ScaleReplicas, err = intList("BENCH_SCALE_REPLICAS", getenv("BENCH_SCALE_REPLICAS"), []int{1, 3}); err != nil {
		return Config{}, err
	}
	cfg.Out, cfg.Log = os.Stdout, os.Stderr
	return cfg, nil
}

func known(n string) bool {
	for _, k := range append(append([]string(nil), Names...), Extra...) {
		if k == n {
			return true
		}
	}
	return false
}

func positive(k, v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s must be a whole number ≥ 1, got %q", ErrUsage, k, v)
	}
	return n, nil
}

func intList(k, v string, def []int) ([]int, error) {
	if v == "" {
		return def, nil
	}
	var out []int
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: %s must be a comma list of whole numbers ≥ 1, got %q", ErrUsage, k, v)
		}
		out = append(out, n)
	}
	return out, nil
}
