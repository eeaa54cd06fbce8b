package knob

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Int is one integer knob: its environment variable, its default and the
// closed range a set value is clamped to. The zero value is a knob with no
// name whose range is 0..0; define knobs with every field set.
type Int struct {
	// Name is the environment variable, e.g. "GATE_STAGE_BATCH".
	Name string
	// Default is the value when the variable is unset or blank.
	Default int
	// Min and Max bound a set value; outside them it is clamped.
	Min, Max int
}

// Read returns the knob's value from getenv: the default when unset or
// blank, the value clamped to Min..Max when it is a whole number, and an
// error naming the knob and the fix when it is not.
func (k Int) Read(getenv func(string) string) (int, error) {
	v := strings.TrimSpace(getenv(k.Name))
	if v == "" {
		return k.Default, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			// A number too large for int64 is still a number: clamp it.
			if strings.HasPrefix(v, "-") {
				return k.Min, nil
			}
			return k.Max, nil
		}
		return k.Default, fmt.Errorf("%s=%q is not a whole number; set it to an integer in %d..%d, or unset it for the default %d", k.Name, v, k.Min, k.Max, k.Default)
	}
	return int(min(max(n, int64(k.Min)), int64(k.Max))), nil
}

// Text is one string knob: its environment variable, its default and the
// check a set value must pass. The zero value is a knob with no name that
// accepts anything.
type Text struct {
	// Name is the environment variable, e.g. "QUEEN_URL".
	Name string
	// Default is the value when the variable is unset or blank.
	Default string
	// Normalize, when non-nil, rewrites a set value before Check (e.g. lower
	// case for the log level).
	Normalize func(string) string
	// Check, when non-nil, returns the fix for a value it refuses ("" when
	// the value is fine).
	Check func(string) string
}

// Read returns the knob's value from getenv: the default when unset or
// blank, otherwise the trimmed (and normalised) value, or an error naming
// the knob and the fix when Check refuses it.
func (k Text) Read(getenv func(string) string) (string, error) {
	v := strings.TrimSpace(getenv(k.Name))
	if v == "" {
		return k.Default, nil
	}
	if k.Normalize != nil {
		v = k.Normalize(v)
	}
	if err := k.Validate(v); err != nil {
		return k.Default, err
	}
	return v, nil
}

// Validate checks a value already in hand (say, a configuration built in a
// test) the way Read checks a set variable, returning an error naming the
// knob and the fix, or nil.
func (k Text) Validate(v string) error {
	if k.Check == nil {
		return nil
	}
	if fix := k.Check(v); fix != "" {
		return fmt.Errorf("%s=%q %s", k.Name, v, fix)
	}
	return nil
}

// The knobs more than one binary reads, each defined once.
var (
	// QueenURL is the broker's base URL.
	QueenURL = Text{Name: "QUEEN_URL", Default: DefaultQueenURL, Check: checkURL}
	// KVNamespace is the kv namespace of counters, breaker records,
	// documents and statuses.
	KVNamespace = Text{Name: "GATE_KV_NAMESPACE", Default: plan.DefaultKVNamespace, Check: checkNamespace}
	// LogLevel is debug, info, warn or error, in any letter case.
	LogLevel = Text{Name: "GATE_LOG_LEVEL", Default: DefaultLogLevel, Normalize: strings.ToLower, Check: checkLevel}
	// StageBatch is the default per-claim batch.
	StageBatch = Int{Name: "GATE_STAGE_BATCH", Default: plan.DefaultStageBatch, Min: 1, Max: plan.MaxStageBatch}
	// StageConcurrency overrides the derived worker count when > 0; 0 (the
	// default, and where a negative value clamps) means derive.
	StageConcurrency = Int{Name: "GATE_STAGE_CONCURRENCY", Default: 0, Min: 0, Max: MaxStageConcurrency}
	// LaneCapacity is the items/s one worker drains, for the derivation.
	LaneCapacity = Int{Name: "GATE_LANE_CAPACITY", Default: plan.DefaultLaneCapacity, Min: 1, Max: MaxLaneCapacity}
	// LeaseSeconds is the work lease, and the lease Gate-owned queues are
	// configured with.
	LeaseSeconds = Int{Name: "GATE_LEASE_SECONDS", Default: DefaultLeaseSeconds, Min: 1, Max: MaxLeaseSeconds}
	// RetryLimit is the retry limit of Gate-owned queues before the DLQ.
	RetryLimit = Int{Name: "GATE_RETRY_LIMIT", Default: DefaultRetryLimit, Min: 0, Max: MaxRetryLimit}
	// ReconcileSeconds is how often a relay re-reads the store in full.
	ReconcileSeconds = Int{Name: "GATE_RECONCILE_SECONDS", Default: DefaultReconcileSeconds, Min: 1, Max: MaxReconcileSeconds}
)

// Defaults and range ends of the shared knobs.
const (
	// DefaultQueenURL is QUEEN_URL's default.
	DefaultQueenURL = "http://localhost:6632"
	// DefaultLogLevel is GATE_LOG_LEVEL's default.
	DefaultLogLevel = "info"
	// DefaultLeaseSeconds is GATE_LEASE_SECONDS's default.
	DefaultLeaseSeconds = 10
	// DefaultRetryLimit is GATE_RETRY_LIMIT's default.
	DefaultRetryLimit = 3
	// DefaultReconcileSeconds is GATE_RECONCILE_SECONDS's default.
	DefaultReconcileSeconds = 15
	// MaxStageConcurrency bounds the fleet-wide worker override.
	MaxStageConcurrency = 4096
	// MaxLaneCapacity bounds the items/s per worker.
	MaxLaneCapacity = 1 << 30
	// MaxLeaseSeconds bounds the lease: a claim held by a crashed replica
	// comes back within an hour at worst.
	MaxLeaseSeconds = 3600
	// MaxRetryLimit bounds the retries before the DLQ.
	MaxRetryLimit = 1000
	// MaxReconcileSeconds bounds the reconcile period (a day).
	MaxReconcileSeconds = 86400
)

// Shared holds every shared knob's value. The zero value is not meaningful;
// use DefaultShared or ReadShared.
type Shared struct {
	// QueenURL is QUEEN_URL.
	QueenURL string
	// KVNamespace is GATE_KV_NAMESPACE.
	KVNamespace string
	// LogLevel is GATE_LOG_LEVEL, lower case.
	LogLevel string
	// StageBatch is GATE_STAGE_BATCH.
	StageBatch int
	// StageConcurrency is GATE_STAGE_CONCURRENCY (0 = derive).
	StageConcurrency int
	// LaneCapacity is GATE_LANE_CAPACITY.
	LaneCapacity int
	// LeaseSeconds is GATE_LEASE_SECONDS.
	LeaseSeconds int
	// RetryLimit is GATE_RETRY_LIMIT.
	RetryLimit int
	// ReconcileSeconds is GATE_RECONCILE_SECONDS.
	ReconcileSeconds int
}

// DefaultShared returns every shared knob at its default.
func DefaultShared() Shared {
	return Shared{
		QueenURL:         QueenURL.Default,
		KVNamespace:      KVNamespace.Default,
		LogLevel:         LogLevel.Default,
		StageBatch:       StageBatch.Default,
		StageConcurrency: StageConcurrency.Default,
		LaneCapacity:     LaneCapacity.Default,
		LeaseSeconds:     LeaseSeconds.Default,
		RetryLimit:       RetryLimit.Default,
		ReconcileSeconds: ReconcileSeconds.Default,
	}
}

// ReadShared reads every shared knob through getenv (os.Getenv in main).
// Every unreadable knob is reported, joined into one error; each one that
// failed keeps its default in the returned value.
func ReadShared(getenv func(string) string) (Shared, error) {
	var s Shared
	var errs []error
	text := func(k Text, dst *string) {
		v, err := k.Read(getenv)
		*dst = v
		errs = append(errs, err)
	}
	num := func(k Int, dst *int) {
		v, err := k.Read(getenv)
		*dst = v
		errs = append(errs, err)
	}
	text(QueenURL, &s.QueenURL)
	text(KVNamespace, &s.KVNamespace)
	text(LogLevel, &s.LogLevel)
	num(StageBatch, &s.StageBatch)
	num(StageConcurrency, &s.StageConcurrency)
	num(LaneCapacity, &s.LaneCapacity)
	num(LeaseSeconds, &s.LeaseSeconds)
	num(RetryLimit, &s.RetryLimit)
	num(ReconcileSeconds, &s.ReconcileSeconds)
	return s, errors.Join(errs...)
}

// ParseLogLevel turns a GATE_LOG_LEVEL value (debug, info, warn or error, in
// any letter case, surrounding blanks ignored; blank = info) into a slog
// level, or an error naming the knob and the fix.
func ParseLogLevel(v string) (slog.Level, error) {
	v, err := LogLevel.Read(func(string) string { return v })
	if err != nil {
		return slog.LevelInfo, err
	}
	switch v {
	case "debug":
		return slog.LevelDebug, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return slog.LevelInfo, nil
	}
}

func checkURL(v string) string {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "is not an absolute http(s) URL; set it to the broker, e.g. " + DefaultQueenURL
	}
	return ""
}

func checkNamespace(v string) string {
	if !queen.ValidNamespace(v) {
		return "is not a kv namespace (1–64 of [a-z0-9._-], starting with a letter or digit); set it to e.g. " + plan.DefaultKVNamespace
	}
	return ""
}

func checkLevel(v string) string {
	switch v {
	case "debug", "info", "warn", "error":
		return ""
	}
	return "is not a log level; set it to debug, info, warn or error"
}
