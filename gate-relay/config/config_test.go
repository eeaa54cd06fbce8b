package config

import (
	"io/fs"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsClampsAndErrors(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil || c != Default() {
		t.Fatalf("empty environment: %+v %v", c, err)
	}
	if c.Bind != "127.0.0.1:8791" || c.Lease != 10*time.Second || c.PollTimeout != 30*time.Second || c.MaxPark != 30*time.Second ||
		c.InteriorSeedSkew != 120*time.Second || c.Reconcile != 15*time.Second || c.StageBatch != 200 || c.LaneCapacity != 1000 || c.RetryLimit != 3 ||
		c.Linger != 5*time.Millisecond {
		t.Fatalf("defaults = %+v", c)
	}
	c, err = Load(env(map[string]string{
		"GATE_STAGE_BATCH": "5000", "GATE_INTERIOR_SEED_SKEW_SECONDS": "9999", "GATE_RECONCILE_SECONDS": "0",
		"GATE_LEASE_SECONDS": "0", "GATE_MAX_PARK_MS": "250", "GATE_STAGE_CONCURRENCY": "4",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.StageBatch != 1000 || c.InteriorSeedSkew != 600*time.Second || c.Reconcile != time.Second || c.Lease != time.Second ||
		c.MaxPark != 250*time.Millisecond || c.StageConcurrency != 4 {
		t.Fatalf("clamped = %+v", c)
	}
	if c, _ := Load(env(map[string]string{"GATE_STAGE_LINGER_MS": "0"})); c.Linger != 0 {
		t.Fatalf("GATE_STAGE_LINGER_MS=0 must turn the linger off, got %s", c.Linger)
	}
	if c.Profiles {
		t.Fatalf("profiles must be off by default")
	}
	if c, _ := Load(env(map[string]string{"GATE_RELAY_PPROF": "1"})); !c.Profiles {
		t.Fatalf("GATE_RELAY_PPROF=1 must serve profiles")
	}
	if _, err := Load(env(map[string]string{"GATE_RELAY_PPROF": "yes"})); err == nil || !strings.Contains(err.Error(), "GATE_RELAY_PPROF") {
		t.Fatalf("GATE_RELAY_PPROF=yes: error %v must name the knob", err)
	}
	if c, _ := Load(env(map[string]string{"GATE_STAGE_CONCURRENCY": "-3"})); c.StageConcurrency != 0 {
		t.Fatalf("a non-positive concurrency must mean derive, got %d", c.StageConcurrency)
	}
	_, err = Load(env(map[string]string{"GATE_LEASE_SECONDS": "ten", "QUEEN_URL": "localhost:6632", "GATE_RELAY_BIND": "8791"}))
	for _, knob := range []string{"GATE_LEASE_SECONDS", "QUEEN_URL", "GATE_RELAY_BIND"} {
		if err == nil || !strings.Contains(err.Error(), knob) {
			t.Fatalf("error %v must name %s", err, knob)
		}
	}
}

// GATE_RELAY_MEMORY_LIMIT_MB is the soft memory limit the relay gives the
// Go runtime: unset, a share of the container's (MemoryLimitAuto); 0 for
// none; and a value that is not a whole
// number of megabytes in 0..1048576 is refused with a sentence that names
// the knob and the fix (never clamped: a limit read as something else
// would make the collector run far more or far less than meant). When
// GOMEMLIMIT is set the relay sets none: the runtime honours that one.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want int64
		fix  string
	}{
		{env: nil, want: MemoryLimitAuto},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": " 256 "}, want: 256 << 20},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "0"}, want: 0},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "1048576"}, want: 1 << 40},
		{env: map[string]string{"GOMEMLIMIT": "1GiB"}, want: 0},
		{env: map[string]string{"GOMEMLIMIT": "1GiB", "GATE_RELAY_MEMORY_LIMIT_MB": "300"}, want: 0},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "400MB"}, fix: "is not a whole number of megabytes; set it to 0 (no limit) up to 1048576"},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "1.5"}, fix: "is not a whole number of megabytes"},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "-1"}, fix: "is negative; set it to 0 (no limit)"},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "-99999999999999999999"}, fix: "is negative"},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "1048577"}, fix: "set it in megabytes, not bytes"},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "419430400"}, fix: "set it in megabytes, not bytes"},
		{env: map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "99999999999999999999"}, fix: "more than 1048576 megabytes"},
	} {
		c, err := Load(env(tc.env))
		if tc.fix != "" {
			if err == nil || !strings.Contains(err.Error(), "GATE_RELAY_MEMORY_LIMIT_MB") || !strings.Contains(err.Error(), tc.fix) {
				t.Errorf("%v: error %v, want one naming GATE_RELAY_MEMORY_LIMIT_MB and saying %q", tc.env, err, tc.fix)
			}
			continue
		}
		if err != nil || c.MemoryLimit != tc.want {
			t.Errorf("%v: limit %d, error %v; want %d", tc.env, c.MemoryLimit, err, tc.want)
		}
	}
}

// GATE_DOZE_CHECK_SECONDS is how often a dozing standby's ingress stage
// checks its source: 120 s unset, clamped to 1..3600, refused with its
// name when it is not a number.
func TestDozeCheck(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 120 * time.Second, "30": 30 * time.Second, "0": time.Second, "99999": time.Hour} {
		c, err := Load(env(map[string]string{"GATE_DOZE_CHECK_SECONDS": v}))
		if err != nil || c.DozeCheck != want {
			t.Errorf("GATE_DOZE_CHECK_SECONDS=%q: %s, %v; want %s", v, c.DozeCheck, err, want)
		}
	}
	if _, err := Load(env(map[string]string{"GATE_DOZE_CHECK_SECONDS": "2m"})); err == nil || !strings.Contains(err.Error(), "GATE_DOZE_CHECK_SECONDS") {
		t.Fatalf("GATE_DOZE_CHECK_SECONDS=2m: error %v must name the knob", err)
	}
}

// Unset, the soft memory limit is 80% of the cgroup's memory limit (v2,
// else v1), and none when the cgroup sets none ("max", v1's page-rounded
// maximum) or cannot be read.
func TestContainerShare(t *testing.T) {
	t.Parallel()
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 limit", map[string]string{v2: "1073741824\n"}, 1073741824 / 100 * 80},
		{"v2 none", map[string]string{v2: "max\n", v1: "536870912"}, 0},
		{"v1 limit", map[string]string{v1: "536870912\n"}, 536870912 / 100 * 80},
		{"v1 none", map[string]string{v1: "9223372036854771712"}, 0},
		{"no cgroup", nil, 0},
		{"unreadable value", map[string]string{v2: "lots"}, 0},
	} {
		if got := ContainerShare(files(tc.files)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The soft memory limit the relay sets is GATE_RELAY_MEMORY_LIMIT_MB's
// when it is set (0: none), else the container's share (v2, else v1), and
// none when the cgroup sets none or cannot be read; it says which.
func TestSoftMemoryLimit(t *testing.T) {
	t.Parallel()
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrPermission
		}
	}
	cgroup := map[string]string{v2: "1073741824\n"}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		limit int64
		from  string
	}{
		{"knob set", map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "256"}, cgroup, 256 << 20, "GATE_RELAY_MEMORY_LIMIT_MB"},
		{"knob 0", map[string]string{"GATE_RELAY_MEMORY_LIMIT_MB": "0"}, cgroup, 0, ""},
		{"GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "1GiB"}, cgroup, 0, ""},
		{"auto, cgroup v2", nil, cgroup, 1073741824 / 100 * 80, "container"},
		{"auto, cgroup v1", nil, map[string]string{v1: "536870912\n"}, 536870912 / 100 * 80, "container"},
		{"auto, max", nil, map[string]string{v2: "max\n"}, 0, ""},
		{"auto, unreadable files", nil, nil, 0, ""},
	} {
		c, err := Load(env(tc.env))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if limit, from := c.SoftMemoryLimit(files(tc.files)); limit != tc.limit || from != tc.from {
			t.Errorf("%s: %d from %q, want %d from %q", tc.name, limit, from, tc.limit, tc.from)
		}
	}
}
