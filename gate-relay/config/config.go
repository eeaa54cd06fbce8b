package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Config is every gate-relay knob. Load fills it; the zero value is not
// meaningful (use Default).
type Config struct {
	// QueenURL is the broker (QUEEN_URL, default http://localhost:6632).
	QueenURL string
	// KVNamespace holds counters, breaker records, documents and statuses
	// (GATE_KV_NAMESPACE, default "gate").
	KVNamespace string
	// StageBatch is the default per-claim batch (GATE_STAGE_BATCH, 200,
	// clamped 1..1000).
	StageBatch int
	// StageConcurrency overrides derived workers when > 0
	// (GATE_STAGE_CONCURRENCY, unset or ≤ 0 = derive, at most 4096).
	StageConcurrency int
	// LaneCapacity is items/s one worker drains, for the derivation
	// (GATE_LANE_CAPACITY, 1000, > 0).
	LaneCapacity int
	// Lease is the work lease, renewed while a handler runs
	// (GATE_LEASE_SECONDS, 10, ≥ 1).
	Lease time.Duration
	// PollTimeout is the parked long-poll window and the shutdown bound
	// (GATE_POLL_TIMEOUT_SECONDS, 30, ≥ 1).
	PollTimeout time.Duration
	// MaxPark is how long a handler may hold a claim waiting for a window
	// (GATE_MAX_PARK_MS, 30000, ≥ 0).
	MaxPark time.Duration
	// InteriorSeedSkew is how far before a graph's start a new interior
	// group is seeded (GATE_INTERIOR_SEED_SKEW_SECONDS, 120, 0..600).
	InteriorSeedSkew time.Duration
	// RetryLimit is the retry limit configured on Gate-owned queues
	// (GATE_RETRY_LIMIT, 3, 0..1000).
	RetryLimit int
	// Reconcile is how often the store is re-read in full
	// (GATE_RECONCILE_SECONDS, 15, ≥ 1).
	Reconcile time.Duration
	// SignalPoll is how often the cheap change signal is read
	// (GATE_SIGNAL_POLL_MS, 500, 50..60000).
	SignalPoll time.Duration
	// StatusPeriod is how often the replica's status document is written;
	// its TTL is three periods (GATE_STATUS_SECONDS, 5, 1..300).
	StatusPeriod time.Duration
	// Bind is the address of /health and /metrics (GATE_RELAY_BIND,
	// 127.0.0.1:8791).
	Bind string
	// NATSURL enables the live fan-out when set (GATE_NATS_URL, unset).
	NATSURL string
	// Replica is this replica's id (GATE_RELAY_ID, default host-pid).
	Replica string
	// LogLevel is debug, info, warn or error (GATE_LOG_LEVEL, info).
	LogLevel string
}

// Default returns every knob at its default.
func Default() Config {
	return Config{
		QueenURL:         "http://localhost:6632",
		KVNamespace:      "gate",
		StageBatch:       200,
		LaneCapacity:     1000,
		Lease:            10 * time.Second,
		PollTimeout:      30 * time.Second,
		MaxPark:          30 * time.Second,
		InteriorSeedSkew: 120 * time.Second,
		RetryLimit:       3,
		Reconcile:        15 * time.Second,
		SignalPoll:       500 * time.Millisecond,
		StatusPeriod:     5 * time.Second,
		Bind:             "127.0.0.1:8791",
		LogLevel:         "info",
	}
}

// Load reads the knobs through getenv (os.Getenv in main). An unset or
// empty knob keeps its default; a value out of range is clamped; a value
// that does not parse is an error naming the knob and the fix.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	num := func(name string, lo, hi int64) (int64, bool) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not an integer; set a whole number in %d..%d or unset it for the default", name, v, lo, hi))
			return 0, false
		}
		return min(max(n, lo), hi), true
	}
	intKnob := func(name string, dst *int, lo, hi int64) {
		if n, ok := num(name, lo, hi); ok {
			*dst = int(n)
		}
	}
	durKnob := func(name string, dst *time.Duration, unit time.Duration, lo, hi int64) {
		if n, ok := num(name, lo, hi); ok {
			*dst = time.Duration(n) * unit
		}
	}
	str("QUEEN_URL", &c.QueenURL)
	str("GATE_KV_NAMESPACE", &c.KVNamespace)
	intKnob("GATE_STAGE_BATCH", &c.StageBatch, 1, plan.MaxStageBatch)
	intKnob("GATE_STAGE_CONCURRENCY", &c.StageConcurrency, 0, 4096) // 0 = derive
	intKnob("GATE_LANE_CAPACITY", &c.LaneCapacity, 1, 1<<30)
	durKnob("GATE_LEASE_SECONDS", &c.Lease, time.Second, 1, 3600)
	durKnob("GATE_POLL_TIMEOUT_SECONDS", &c.PollTimeout, time.Second, 1, 300)
	durKnob("GATE_MAX_PARK_MS", &c.MaxPark, time.Millisecond, 0, 3_600_000)
	durKnob("GATE_INTERIOR_SEED_SKEW_SECONDS", &c.InteriorSeedSkew, time.Second, 0, 600)
	intKnob("GATE_RETRY_LIMIT", &c.RetryLimit, 0, 1000)
	durKnob("GATE_RECONCILE_SECONDS", &c.Reconcile, time.Second, 1, 86400)
	durKnob("GATE_SIGNAL_POLL_MS", &c.SignalPoll, time.Millisecond, 50, 60000)
	durKnob("GATE_STATUS_SECONDS", &c.StatusPeriod, time.Second, 1, 300)
	str("GATE_RELAY_BIND", &c.Bind)
	str("GATE_NATS_URL", &c.NATSURL)
	str("GATE_RELAY_ID", &c.Replica)
	str("GATE_LOG_LEVEL", &c.LogLevel)

	if u, err := url.Parse(c.QueenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("QUEEN_URL=%q is not an absolute http(s) URL; set e.g. http://127.0.0.1:6632", c.QueenURL))
	}
	if !queen.ValidNamespace(c.KVNamespace) {
		errs = append(errs, fmt.Errorf("GATE_KV_NAMESPACE=%q is not a kv namespace; use 1-64 of [a-z0-9._-], starting with [a-z0-9]", c.KVNamespace))
	}
	if _, _, err := net.SplitHostPort(c.Bind); err != nil {
		errs = append(errs, fmt.Errorf("GATE_RELAY_BIND=%q is not host:port; set e.g. 127.0.0.1:8791", c.Bind))
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("GATE_LOG_LEVEL=%q is not debug, info, warn or error", c.LogLevel))
	}
	return c, errors.Join(errs...)
}
