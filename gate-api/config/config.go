package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/agent"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/plan"
)

// Defaults and bounds of the knobs.
const (
	DefaultQueenURL         = knob.DefaultQueenURL
	DefaultBind             = "0.0.0.0:8788"
	DefaultLeaseSeconds     = knob.DefaultLeaseSeconds
	DefaultRetryLimit       = knob.DefaultRetryLimit
	DefaultMaxPushBodyBytes = 8 << 20
	MinPushBodyBytes        = 2 << 20
	MaxPushBodyBytes        = 64 << 20
	DefaultBodyBytes        = 2 << 20
	DefaultRefreshMillis    = 1000
	DefaultMeterHoldSeconds = 60
	MaxMeterHoldSeconds     = 86400
	DefaultDeclareWaitMs    = 5000
	MaxDeclareWaitMs        = 60000
	DefaultShutdownSeconds  = 10
	DefaultReconcileSeconds = knob.DefaultReconcileSeconds
	DefaultLogLevel         = knob.DefaultLogLevel
	// DefaultPushInflightBytes is GATE_PUSH_INFLIGHT_BYTES's default: eight
	// pushes of the default 8 MiB limit at once.
	DefaultPushInflightBytes = 64 << 20
	MaxPushInflightBytes     = 4 << 30
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
	// GATE_STAGE_CONCURRENCY, 0 = derived, clamped 0..4096;
	// GATE_LANE_CAPACITY, clamped 1..2^30). Package knob defines them.
	StageBatch       int
	StageConcurrency int
	LaneCapacity     int
	// LeaseSeconds and RetryLimit configure Gate-owned queues at
	// provisioning (GATE_LEASE_SECONDS, clamped 1..3600; GATE_RETRY_LIMIT,
	// clamped 0..1000).
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
	// MeterHold is how long a limit a vendor stated (observe) stays in
	// force when its reset is sooner; a restatement extends it once less
	// than half is left (GATE_METER_HOLD_SECONDS, 1..86400).
	MeterHold time.Duration
	// DeclareWait bounds how long a PUT waits, after storing the document,
	// for some relay replica to report running the stored version
	// (GATE_DECLARE_WAIT_MS, clamped 0..60000; 0 = answer at once).
	DeclareWait time.Duration
	// ShutdownTimeout bounds the graceful drain of in-flight requests on
	// SIGTERM (GATE_SHUTDOWN_SECONDS, 1..300).
	ShutdownTimeout time.Duration
	// History is the PostgreSQL history connection (PG_HOST … PG_URL,
	// GATE_HISTORY_SCHEMA); unset = no history (Watch is refused).
	History knob.History
	// LogLevel is debug, info, warn or error, read case-insensitively and
	// stored lower case (GATE_LOG_LEVEL).
	LogLevel string
	// BrokerTimeout bounds every broker call and the broker work of one
	// request (GATE_BROKER_TIMEOUT_MS, default 10000, clamped 100..300000):
	// while the broker hangs, a request is answered 504 naming it.
	BrokerTimeout time.Duration
	// PushInflightBytes bounds the request bytes buffered across the push
	// requests in flight (GATE_PUSH_INFLIGHT_BYTES, default 64 MiB, clamped
	// to at least GATE_MAX_PUSH_BODY_BYTES and at most 4 GiB); a push that
	// does not fit is answered 503 with Retry-After.
	PushInflightBytes int64
	// PushBatch is the most front-door pushes one broker push call carries
	// (GATE_PUSH_BATCH, default 64, clamped 1..1000). Pushes that arrive
	// while the door's broker calls are all in flight leave together in
	// the next one; 1 sends every push in a call of its own.
	PushBatch int
	// ItemRecordSeconds is how long the push door keeps its record of an
	// item pushed with a txn, for explain by transaction id
	// (GATE_ITEM_RECORD_SECONDS, default 86400, 0..604800; 0 = no records).
	ItemRecordSeconds int
	// AI is the configuration agent: GATE_AI_PROVIDER, GATE_AI_MODEL, the
	// provider's key, its base URL knob, whether history is configured,
	// and the agent's fixed limits (see libs/agent's README).
	AI agent.Config
}

// Default returns the configuration with every knob at its default.
func Default() Config {
	return Config{
		QueenURL:          DefaultQueenURL,
		Bind:              DefaultBind,
		KVNamespace:       plan.DefaultKVNamespace,
		StageBatch:        plan.DefaultStageBatch,
		LaneCapacity:      plan.DefaultLaneCapacity,
		LeaseSeconds:      DefaultLeaseSeconds,
		RetryLimit:        DefaultRetryLimit,
		ReconcileSeconds:  DefaultReconcileSeconds,
		MaxPushBodyBytes:  DefaultMaxPushBodyBytes,
		BodyBytes:         DefaultBodyBytes,
		Refresh:           DefaultRefreshMillis * time.Millisecond,
		MeterHold:         DefaultMeterHoldSeconds * time.Second,
		DeclareWait:       DefaultDeclareWaitMs * time.Millisecond,
		ShutdownTimeout:   DefaultShutdownSeconds * time.Second,
		LogLevel:          DefaultLogLevel,
		BrokerTimeout:     time.Duration(knob.BrokerTimeout.Default) * time.Millisecond,
		PushInflightBytes: DefaultPushInflightBytes,
		PushBatch:         knob.PushBatch.Default,
		ItemRecordSeconds: knob.ItemRecordSeconds.Default,
		History: knob.History{Port: knob.DefaultPGPort, User: knob.DefaultPGUser, Database: knob.DefaultPGDatabase,
			Schema: knob.DefaultHistorySchema},
		AI: agent.Config{AI: knob.AI{
			Provider: knob.AIProviderOpenAI, Model: knob.DefaultOpenAIModel, BaseURL: knob.DefaultOpenAIBaseURL,
		}}.WithDefaults(),
	}
}

// Load reads the knobs through getenv (os.Getenv in main): the knobs every
// binary shares through package knob, then gate-api's own with the same
// policy. Every knob that is set but unreadable is reported, all at once,
// each naming the knob, the value and the fix; a number outside its range
// is clamped to it.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	shared, err := knob.ReadShared(getenv)
	errs := []error{err}
	c.QueenURL, c.KVNamespace, c.LogLevel = shared.QueenURL, shared.KVNamespace, shared.LogLevel
	c.StageBatch, c.StageConcurrency, c.LaneCapacity = shared.StageBatch, shared.StageConcurrency, shared.LaneCapacity
	c.LeaseSeconds, c.RetryLimit, c.ReconcileSeconds = shared.LeaseSeconds, shared.RetryLimit, shared.ReconcileSeconds
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	num := func(name string, dst *int, lo, hi int) {
		n, err := knob.Int{Name: name, Default: *dst, Min: lo, Max: hi}.Read(getenv)
		*dst = n
		errs = append(errs, err)
	}
	str("GATE_BIND", &c.Bind)
	push := int(c.MaxPushBodyBytes)
	num("GATE_MAX_PUSH_BODY_BYTES", &push, MinPushBodyBytes, MaxPushBodyBytes)
	c.MaxPushBodyBytes = int64(push)
	refresh := int(c.Refresh / time.Millisecond)
	num("GATE_API_REFRESH_MS", &refresh, 100, 60000)
	c.Refresh = time.Duration(refresh) * time.Millisecond
	hold := int(c.MeterHold / time.Second)
	num("GATE_METER_HOLD_SECONDS", &hold, 1, MaxMeterHoldSeconds)
	c.MeterHold = time.Duration(hold) * time.Second
	wait := int(c.DeclareWait / time.Millisecond)
	num("GATE_DECLARE_WAIT_MS", &wait, 0, MaxDeclareWaitMs)
	c.DeclareWait = time.Duration(wait) * time.Millisecond
	broker, err := knob.BrokerTimeout.Read(getenv)
	errs = append(errs, err)
	c.BrokerTimeout = time.Duration(broker) * time.Millisecond
	inflight := int(c.PushInflightBytes)
	num("GATE_PUSH_INFLIGHT_BYTES", &inflight, int(c.MaxPushBodyBytes), MaxPushInflightBytes)
	c.PushInflightBytes = int64(inflight)
	c.PushBatch, err = knob.PushBatch.Read(getenv)
	errs = append(errs, err)
	c.ItemRecordSeconds, err = knob.ItemRecordSeconds.Read(getenv)
	errs = append(errs, err)
	shutdown := int(c.ShutdownTimeout / time.Second)
	num("GATE_SHUTDOWN_SECONDS", &shutdown, 1, 300)
	c.ShutdownTimeout = time.Duration(shutdown) * time.Second
	hist, err := knob.ReadHistory(getenv)
	c.History = hist
	errs = append(errs, err)
	ai, err := knob.ReadAI(getenv)
	c.AI.AI = ai
	errs = append(errs, err)
	// The shared strings that failed kept their defaults, so this adds
	// only what knob did not check: the bind address.
	errs = append(errs, c.Validate())
	return c, errors.Join(errs...)
}

// Validate checks the values that are strings: the broker URL, the bind
// address, the kv namespace and the log level.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, knob.QueenURL.Validate(c.QueenURL), knob.KVNamespace.Validate(c.KVNamespace))
	if _, port, err := net.SplitHostPort(c.Bind); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("GATE_BIND=%q is not host:port; set it to e.g. %s", c.Bind, DefaultBind))
	}
	if _, err := knob.ParseLogLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PlanOptions are the compile options of the plan a PUT answers with.
func (c Config) PlanOptions() plan.Options {
	return plan.Options{StageBatch: c.StageBatch, StageConcurrency: c.StageConcurrency, LaneCapacity: c.LaneCapacity}
}
