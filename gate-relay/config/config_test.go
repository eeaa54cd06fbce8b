package config

import (
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
