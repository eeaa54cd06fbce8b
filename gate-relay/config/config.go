package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/knob"
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
	// (GATE_LEASE_SECONDS, 10, clamped 1..3600).
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
	// LogLevel is debug, info, warn or error, read case-insensitively and
	// stored lower case (GATE_LOG_LEVEL, info).
	LogLevel string
	// Admission is riders or separate (GATE_ADMISSION, riders).
	Admission string
	// Linger is how long a stage with a thin claim waits for a fuller one
	// (GATE_STAGE_LINGER_MS, 5, 0..100).
	Linger time.Duration
	// ReplicasPerGraph is how many live replicas run each graph
	// (GATE_RELAY_REPLICAS_PER_GRAPH, 2, 0..1000; 0 = every replica).
	ReplicasPerGraph int
	// DozeCheck is how often a dozing stage (a standby's ingress stage, a
	// primary's interior stage) checks its source (GATE_DOZE_CHECK_SECONDS,
	// 120, 1..3600).
	DozeCheck time.Duration
	// MemoryLimit is the soft memory limit in bytes the relay gives the Go
	// runtime (GATE_RELAY_MEMORY_LIMIT_MB in megabytes, 0..1048576; 0 sets
	// none): near it the garbage collector runs sooner and returns freed
	// pages to the OS. Unset, it is MemoryLimitAuto: ContainerShare of the
	// container's limit. Zero when GOMEMLIMIT is set: the runtime reads
	// that itself, and it wins.
	MemoryLimit int64
	// Profiles serves /debug/pprof/ on Bind (GATE_RELAY_PPROF=1; default
	// 0, none).
	Profiles bool
	// ShadowKeysPerSecond caps the distinct scope values and ops a node
	// records a second for a keyed shadow candidate
	// (GATE_SHADOW_KEYS_PER_SECOND, 1000, 1..100000).
	ShadowKeysPerSecond int
}

// Default returns every knob at its default.
func Default() Config {
	return Config{
		QueenURL:            knob.DefaultQueenURL,
		KVNamespace:         knob.KVNamespace.Default,
		StageBatch:          knob.StageBatch.Default,
		LaneCapacity:        knob.LaneCapacity.Default,
		Lease:               knob.DefaultLeaseSeconds * time.Second,
		PollTimeout:         seconds(knob.PollTimeoutSeconds.Default),
		MaxPark:             millis(knob.MaxParkMs.Default),
		InteriorSeedSkew:    seconds(knob.InteriorSeedSkewSeconds.Default),
		RetryLimit:          knob.DefaultRetryLimit,
		Reconcile:           knob.DefaultReconcileSeconds * time.Second,
		SignalPoll:          millis(knob.SignalPollMs.Default),
		StatusPeriod:        seconds(knob.StatusSeconds.Default),
		Bind:                "127.0.0.1:8791",
		LogLevel:            knob.DefaultLogLevel,
		Admission:           knob.Admission.Default,
		Linger:              millis(knob.StageLingerMs.Default),
		ReplicasPerGraph:    knob.ReplicasPerGraph.Default,
		DozeCheck:           seconds(knob.DozeCheckSeconds.Default),
		MemoryLimit:         MemoryLimitAuto,
		ShadowKeysPerSecond: knob.ShadowKeysPerSecond.Default,
	}
}

// maxMemoryLimitMB bounds GATE_RELAY_MEMORY_LIMIT_MB (1 TiB).
const maxMemoryLimitMB = 1 << 20

// MemoryLimitAuto is Config.MemoryLimit when GATE_RELAY_MEMORY_LIMIT_MB is
// unset (and GOMEMLIMIT too): the relay takes ContainerShare of its
// container's memory limit, and sets none when it has none.
const MemoryLimitAuto = -1

// memoryLimit reads GATE_RELAY_MEMORY_LIMIT_MB in bytes: MemoryLimitAuto
// when unset, zero when GOMEMLIMIT is set (the Go runtime honours that
// one), and an error naming the knob and the fix for a value that is not a
// whole number of megabytes in 0..maxMemoryLimitMB. It refuses rather than
// clamps: a limit the relay cannot honour as written would make its
// garbage collector run far more, or far less, than the operator meant.
func memoryLimit(getenv func(string) string) (int64, error) {
	const name = "GATE_RELAY_MEMORY_LIMIT_MB"
	v := strings.TrimSpace(getenv(name))
	if strings.TrimSpace(getenv("GOMEMLIMIT")) != "" {
		return 0, nil
	}
	if v == "" {
		return MemoryLimitAuto, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%s=%q is not a whole number of megabytes; set it to 0 (no limit) up to %d, or unset it for %d%% of the container's memory limit", name, v, maxMemoryLimitMB, containerPercent)
	case n < 0 || strings.HasPrefix(v, "-"):
		return 0, fmt.Errorf("%s=%q is negative; set it to 0 (no limit) up to %d megabytes, or unset it for %d%% of the container's memory limit", name, v, maxMemoryLimitMB, containerPercent)
	case err != nil || n > maxMemoryLimitMB:
		return 0, fmt.Errorf("%s=%q is more than %d megabytes (1 TiB); set it in megabytes, not bytes, at most %d, or 0 for no limit", name, v, maxMemoryLimitMB, maxMemoryLimitMB)
	}
	return n << 20, nil
}

// containerPercent is the share of the container's memory limit the relay
// takes as its soft limit by default: the rest is what the runtime does
// not count (the binary, thread stacks of cgo, the kernel's page cache of
// the process) and headroom for a burst the collector has not caught up
// with.
const containerPercent = 80

// ContainerShare is the default soft memory limit: containerPercent of the
// memory limit of the process's cgroup (v2 memory.max, else v1
// memory.limit_in_bytes), read with read (os.ReadFile in main); 0 when the
// cgroup sets none or cannot be read. A fixed default would be wrong one
// way or the other: below a replica's working set after it takes over a
// dead peer's graphs, the collector runs all the time at the worst moment
// (a fixed 400 MB, measured at 10,000 graphs, left the two survivors of
// three replicas under their working set while they took over the third's
// graphs), and above its container's limit it does nothing.
func ContainerShare(read func(string) ([]byte, error)) int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := read(f)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			// "max" (v2) or the page-rounded maximum (v1): no limit.
			return 0
		}
		return n / 100 * containerPercent
	}
	return 0
}

// SoftMemoryLimit is the soft memory limit in bytes the relay gives the Go
// runtime, and where it came from: MemoryLimit as GATE_RELAY_MEMORY_LIMIT_MB
// set it, or, when that is MemoryLimitAuto, ContainerShare of the
// container's limit read with read (os.ReadFile in main), from
// "container". A limit of 0 sets none, and its from is empty.
func (c Config) SoftMemoryLimit(read func(string) ([]byte, error)) (limit int64, from string) {
	limit, from = c.MemoryLimit, "GATE_RELAY_MEMORY_LIMIT_MB"
	if limit == MemoryLimitAuto {
		limit, from = ContainerShare(read), "container"
	}
	if limit <= 0 {
		return 0, ""
	}
	return limit, from
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

func millis(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// Load reads the knobs through getenv (os.Getenv in main): the knobs every
// binary shares through package knob, then gate-relay's own with the same
// policy. An unset or empty knob keeps its default; a value out of range is
// clamped; a value that does not parse is an error naming the knob and the
// fix.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	durKnob := func(k knob.Int, dst *time.Duration, unit time.Duration) {
		n, err := k.Read(getenv)
		*dst = time.Duration(n) * unit
		errs = append(errs, err)
	}
	shared, err := knob.ReadShared(getenv)
	errs = append(errs, err)
	c.QueenURL, c.KVNamespace, c.LogLevel = shared.QueenURL, shared.KVNamespace, shared.LogLevel
	c.StageBatch, c.StageConcurrency, c.LaneCapacity = shared.StageBatch, shared.StageConcurrency, shared.LaneCapacity
	c.Lease, c.RetryLimit = time.Duration(shared.LeaseSeconds)*time.Second, shared.RetryLimit
	c.Reconcile = time.Duration(shared.ReconcileSeconds) * time.Second
	durKnob(knob.PollTimeoutSeconds, &c.PollTimeout, time.Second)
	durKnob(knob.MaxParkMs, &c.MaxPark, time.Millisecond)
	durKnob(knob.InteriorSeedSkewSeconds, &c.InteriorSeedSkew, time.Second)
	durKnob(knob.SignalPollMs, &c.SignalPoll, time.Millisecond)
	durKnob(knob.StatusSeconds, &c.StatusPeriod, time.Second)
	c.Admission, err = knob.Admission.Read(getenv)
	errs = append(errs, err)
	durKnob(knob.StageLingerMs, &c.Linger, time.Millisecond)
	durKnob(knob.DozeCheckSeconds, &c.DozeCheck, time.Second)
	c.ReplicasPerGraph, err = knob.ReplicasPerGraph.Read(getenv)
	errs = append(errs, err)
	profiles, err := knob.RelayProfiles.Read(getenv)
	c.Profiles = profiles == 1
	errs = append(errs, err)
	c.ShadowKeysPerSecond, err = knob.ShadowKeysPerSecond.Read(getenv)
	errs = append(errs, err)
	c.MemoryLimit, err = memoryLimit(getenv)
	errs = append(errs, err)
	str("GATE_RELAY_BIND", &c.Bind)
	str("GATE_NATS_URL", &c.NATSURL)
	str("GATE_RELAY_ID", &c.Replica)

	if _, _, err := net.SplitHostPort(c.Bind); err != nil {
		errs = append(errs, fmt.Errorf("GATE_RELAY_BIND=%q is not host:port; set e.g. 127.0.0.1:8791", c.Bind))
	}
	return c, errors.Join(errs...)
}
