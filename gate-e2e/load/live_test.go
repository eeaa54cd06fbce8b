package load

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
)

// TestLiveLoadRunsEndToEnd starts the embedded stack (miniqueen, gate-api,
// gate-relay built from this tree), runs a small `gate-e2e load` and checks
// the guarantee Gate exists for: the ceiling held, with every judged
// sub-window's books exact. Throughput and reserve are logged, not asserted:
// at a small TOTAL they depend on lease timing more than on admission.
func TestLiveLoadRunsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("live: starts a stack and runs ~15 s of load; skipped under -short")
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := Config{Scenario: ScenarioLoad, Graph: "e2etest", Rate: 20, Total: 400, Seconds: 12, Embedded: true, Out: &out, Log: &out}
	r, err := Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, ErrSetup) && !gatetest.RequireLive() {
			t.Skipf("live: the embedded stack could not start (set GATE_TEST_REQUIRE_LIVE=1 to make this a failure): %v", err)
		}
		t.Fatalf("gate-e2e load: %v\n%s", err, out.String())
	}
	WriteText(&out, cfg, r)
	t.Log("\n" + out.String())
	if len(r.Rows) < 12 || r.AdmittedTotal == 0 || r.PushedTotal != 400 {
		t.Fatalf("incomplete run: %d rows, %d admitted, %d pushed", len(r.Rows), r.AdmittedTotal, r.PushedTotal)
	}
	g := gateByName(t, r, "ceiling held")
	if !g.Pass {
		t.Fatalf("the declared ceiling did not hold: %s", g.Detail)
	}
	if a := r.Accounting; a.Judged < 5 || a.Exact != a.Judged {
		t.Fatalf("sub-window accounting %+v: want at least 5 judged windows, all exact", a)
	}
	for _, name := range []string{"throughput reached", "reserve held"} {
		g := gateByName(t, r, name)
		t.Logf("%s: %s — %s", name, g.Status, g.Detail)
	}
}
