package scenario

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
)

// TestLiveBenchRunsOnTheEmbeddedStack runs a short pass of the scenarios
// that exercise every moving part — API loops, the prefill-declare-drain
// relay run counted by the relay's own client, the bare loop, both
// admission paths, admission latency and
// idle counting — against the embedded stack, and checks each completes with
// its table. Targets are reported by gate-bench, never asserted here.
func TestLiveBenchRunsOnTheEmbeddedStack(t *testing.T) {
	if testing.Short() {
		t.Skip("live: starts a stack and runs ~30 s of scenarios; skipped under -short")
	}
	var out, log bytes.Buffer
	cfg := Config{
		Scenarios: []string{"health", "push", "throughput", "throttled", "idle", "overhead"},
		GateURL:   "http://127.0.0.1:1", App: "bench", QueenURL: "http://127.0.0.1:1", KVNamespace: "gate", RedisAddr: "127.0.0.1:6379",
		Threads: 2, Seconds: time.Second, Warmup: 0, IdleSeconds: 2 * time.Second, Backlog: 2000, Rounds: 2,
		Conc: []int{1, 4}, Batches: []int{200}, PeerRate: 500, Embedded: true, Out: &out, Log: &log,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o, err := Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, ErrSetup) && !gatetest.RequireLive() {
			t.Skipf("live: the embedded stack could not start (set GATE_TEST_REQUIRE_LIVE=1 to make this a failure): %v", err)
		}
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Log("\n" + out.String())
	if len(o.Incomplete) > 0 {
		t.Fatalf("incomplete: %v\n%s", o.Incomplete, log.String())
	}
	seen := map[string]bool{}
	for _, tb := range o.Tables {
		seen[tb.Scenario] = true
		if len(tb.Rows) == 0 {
			t.Fatalf("scenario %s printed no rows", tb.Scenario)
		}
	}
	for _, s := range cfg.Scenarios {
		if !seen[s] {
			t.Fatalf("scenario %s printed no table", s)
		}
	}
	if !strings.Contains(out.String(), "(b) gate-relay, charge as riders") || !strings.Contains(out.String(), "(c) gate-relay, separate kv call") || !strings.Contains(out.String(), "(a) bare loop") {
		t.Fatalf("overhead table lacks a runner:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "broker alone 50% (") || !strings.Contains(out.String(), "open 50%, no linger") || !strings.Contains(out.String(), "CPU during each row (the machine's busy share of all ") || !strings.Contains(out.String(), "pushes per broker call of the door (GATE_PUSH_BATCH caps it): closed c=1 ") || strings.Contains(out.String(), " unknown (") {
		t.Fatalf("push table lacks the broker-alone row or the door's pushes per broker call:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "as the ratio of the means (bootstrap 95% interval): riders ") {
		t.Fatalf("overhead table lacks the share over all runs with its interval:\n%s", out.String())
	}
}
