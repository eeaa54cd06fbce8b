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

// Defaults and bounds of the knobs.
const (
	DefaultQueenURL         = "http://localhost:6632"
	DefaultBind             = "0.0.0.0:8788"
	DefaultLeaseSeconds     = 10
	DefaultRetryLimit       = 3
	DefaultMaxPushBodyBytes = 8 << 20
	MinPushBodyBytes        = 2 << 20
	MaxPushBodyBytes        = 64 << 20
	DefaultBodyBytes        = 2 << 20
	DefaultRefreshMillis    = 1000
	DefaultDeclareWaitMs    = 5000
	MaxDeclareWaitMs        = 60000
	DefaultShutdownSeconds  = 10
	DefaultReconcileSeconds = 15
	DefaultLogLevel         = "info"
)

// Config is every knob gate-api reads. The zero value is not meaningful;
// build one with Load (or Default for tests).
type Config struct {
	// QueenURL is the broker (QUEEN_URL).
	QueenURL string
	// Bind is the listen address of the application plane (GATE_BIND).
	Bind string
	// KVNamespace holds counters, breaker records and documents
	// (GATE_KV_NAMESPACE).
	KVNamespace string
	// StageBatch, StageConcurrency and LaneCapacity are the compile options
	// of the plan a PUT answers with (GATE_STAGE_BATCH, clamped 1..1000;
	// GATE_STAGE_CONCURRENCY, 0 = derived; GATE_LANE_CAPACITY).
	StageBatch       int
	StageConcurrency int
	LaneCapacity     int
	// LeaseSeconds and RetryLimit configure Gate-owned queues at
	// provisioning (GATE_LEASE_SECONDS ≥ 1, GATE_RETRY_LIMIT ≥ 0).
	LeaseSeconds int
	RetryLimit   int
	// ReconcileSeconds is the relays' reconcile period; gate-api only
	// quotes it when it says how soon a change reaches the relays
	// (GATE_RECONCILE_SECONDS ≥ 1).
	ReconcileSeconds int
	// MaxPushBodyBytes is the push routes' body limit
	// (GATE_MAX_PUSH_BODY_BYTES, clamped to 2 MiB..64 MiB).
	MaxPushBodyBytes int64
	// BodyBytes is every other route's body limit (2 MiB, fixed).
	BodyBytes int64
	// Refresh is how often the declared graphs and the relays' status are
	// re-read from kv (GATE_API_REFRESH_MS, 100..60000).
	Refresh time.Duration
	// DeclareWait bounds how long a PUT waits, after storing the document,
	// for some relay replica to report running the stored version
	// (GATE_DECLARE_WAIT_MS, clamped 0..60000; 0 = answer at once).
	DeclareWait time.Duration
	// ShutdownTimeout bounds the graceful drain of in-flight requests on
	// SIGTERM (GATE_SHUTDOWN_SECONDS, 1..300).
	ShutdownTimeout time.Duration
	// LogLevel is debug, info, warn or error (GATE_LOG_LEVEL).
	LogLevel string
}

// Default returns the configuration with every knob at its default.
func Default() Config {
	return Config{
		QueenURL:         DefaultQueenURL,
		Bind:             DefaultBind,
		KVNamespace:      plan.DefaultKVNamespace,
		StageBatch:       plan.DefaultStageBatch,
		LaneCapacity:     plan.DefaultLaneCapacity,
		LeaseSeconds:     DefaultLeaseSeconds,
		RetryLimit:       DefaultRetryLimit,
		ReconcileSeconds: DefaultReconcileSeconds,
		MaxPushBodyBytes: DefaultMaxPushBodyBytes,
		BodyBytes:        DefaultBodyBytes,
		Refresh:          DefaultRefreshMillis * time.Millisecond,
		DeclareWait:      DefaultDeclareWaitMs * time.Millisecond,
		ShutdownTimeout:  DefaultShutdownSeconds * time.Second,
		LogLevel:         DefaultLogLevel,
	}
}

// Load reads the knobs through getenv (os.Getenv in main). Every knob that
// is set but unreadable is reported, all at once, each naming the knob, the
// value and the fix; values outside a documented clamp are clamped.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	num := func(name string, dst *int, lo, hi int, clamp bool) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a whole number; set it to an integer in %d..%d, or unset it for the default %d", name, v, lo, hi, *dst))
			return
		}
		if n < lo || n > hi {
			if !clamp {
				errs = append(errs, fmt.Errorf("%s=%d is outside %d..%d; set it inside that range, or unset it for the default %d", name, n, lo, hi, *dst))
				return
			}
			n = min(max(n, lo), hi)
		}
		*dst = n
	}
	str("QUEEN_URL", &c.QueenURL)
	str("GATE_BIND", &c.Bind)
	str("GATE_KV_NAMESPACE", &c.KVNamespace)
	str("GATE_LOG_LEVEL", &c.LogLevel)
	num("GATE_STAGE_BATCH", &c.StageBatch, 1, plan.MaxStageBatch, true)
	num("GATE_STAGE_CONCURRENCY", &c.StageConcurrency, 0, 4096, false)
	num("GATE_LANE_CAPACITY", &c.LaneCapacity, 1, 1<<30, false)
	num("GATE_LEASE_SECONDS", &c.LeaseSeconds, 1, 86400, true)
	num("GATE_RETRY_LIMIT", &c.RetryLimit, 0, 1000, false)
	num("GATE_RECONCILE_SECONDS", &c.ReconcileSeconds, 1, 86400, true)
	push := int(c.MaxPushBodyBytes)
	num("GATE_MAX_PUSH_BODY_BYTES", &push, MinPushBodyBytes, MaxPushBodyBytes, true)
	c.MaxPushBodyBytes = int64(push)
	refresh := int(c.Refresh / time.Millisecond)
	num("GATE_API_REFRESH_MS", &refresh, 100, 60000, true)
	c.Refresh = time.Duration(refresh) * time.Millisecond
	wait := int(c.DeclareWait / time.Millisecond)
	num("GATE_DECLARE_WAIT_MS", &wait, 0, MaxDeclareWaitMs, true)
	c.DeclareWait = time.Duration(wait) * time.Millisecond
	shutdown := int(c.ShutdownTimeout / time.Second)
	num("GATE_SHUTDOWN_SECONDS", &shutdown, 1, 300, true)
	c.ShutdownTimeout = time.Duration(shutdown) * time.Second
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// Validate checks the values that are strings: the broker URL, the bind
// address, the kv namespace and the log level.
func (c Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.QueenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("QUEEN_URL=%q is not an absolute http(s) URL; set it to the broker, e.g. %s", c.QueenURL, DefaultQueenURL))
	}
	if _, port, err := net.SplitHostPort(c.Bind); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("GATE_BIND=%q is not host:port; set it to e.g. %s", c.Bind, DefaultBind))
	}
	if !queen.ValidNamespace(c.KVNamespace) {
		errs = append(errs, fmt.Errorf("GATE_KV_NAMESPACE=%q is not a kv namespace (1–64 of [a-z0-9._-], starting with a letter or digit); set it to e.g. %s", c.KVNamespace, plan.DefaultKVNamespace))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("GATE_LOG_LEVEL=%q is not a level; set it to debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

// PlanOptions are the compile options of the plan a PUT answers with.
func (c Config) PlanOptions() plan.Options {
	return plan.Options{StageBatch: c.StageBatch, StageConcurrency: c.StageConcurrency, LaneCapacity: c.LaneCapacity}
}
