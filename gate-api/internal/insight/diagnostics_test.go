package insight_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/internal/insight"
	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

var (
	relayBinOnce sync.Once
	relayBin     string
	relayBinErr  error
)

// relayBinary builds gate-relay once per test process (into the user's
// temp directory, reused across runs).
func relayBinary(t *testing.T) string {
	t.Helper()
	relayBinOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "gate-api-insight-test")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			relayBinErr = err
			return
		}
		relayBin = filepath.Join(dir, "gate-relay")
		out, err := exec.Command("go", "build", "-o", relayBin, "../../../gate-relay").CombinedOutput()
		if err != nil {
			relayBinErr = fmt.Errorf("building gate-relay: %v: %s", err, out)
		}
	})
	if relayBinErr != nil {
		t.Fatal(relayBinErr)
	}
	return relayBin
}

// relayProc is a gate-relay process against the harness's broker.
type relayProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startRelay runs a real gate-relay on the harness's broker and kv
// namespace with short periods; it is stopped (SIGTERM) at cleanup.
func startRelay(h *apitest.Harness, t *testing.T, id string) *relayProc {
	t.Helper()
	cmd := exec.Command(relayBinary(t))
	cmd.Env = append(os.Environ(),
		"QUEEN_URL="+h.Broker.URL, "GATE_KV_NAMESPACE="+h.NS, "GATE_RELAY_BIND=127.0.0.1:0", "GATE_RELAY_ID="+id,
		"GATE_STATUS_SECONDS=1", "GATE_RECONCILE_SECONDS=1", "GATE_SIGNAL_POLL_MS=100", "GATE_POLL_TIMEOUT_SECONDS=1",
		"GATE_LEASE_SECONDS=2", "GATE_MAX_PARK_MS=1500", "GATE_LOG_LEVEL=warn", "GATE_NATS_URL=")
	if os.Getenv("GATE_TEST_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &relayProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// stop ends the relay with SIGTERM (it withdraws its status) and waits.
func (p *relayProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// diagnose reads the diagnostics of graph.
func diagnose(h *apitest.Harness, graph string) wire.Diagnostics {
	h.T.Helper()
	a := h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/"+graph+"/diagnostics", nil), 200)
	var d wire.Diagnostics
	if err := json.Unmarshal(a.Raw, &d); err != nil {
		h.T.Fatal(err)
	}
	return d
}

func findingOf(d wire.Diagnostics, kind string) *wire.Finding {
	for i := range d.Issues {
		if d.Issues[i].Kind == kind {
			return &d.Issues[i]
		}
	}
	return nil
}

func kinds(d wire.Diagnostics) string {
	var out []string
	for _, f := range d.Issues {
		n := ""
		if f.Node != nil {
			n = "@" + *f.Node
		}
		out = append(out, f.Kind+n)
	}
	return strings.Join(out, ",")
}

// waitFinding polls the diagnostics of graph until kind is present (want)
// or absent (!want) and returns the last answer.
func waitFinding(h *apitest.Harness, t *testing.T, graph, kind string, want bool, within time.Duration) wire.Diagnostics {
	t.Helper()
	var d wire.Diagnostics
	deadline := time.Now().Add(within)
	for {
		_ = h.Plane().Cat.SyncStatus(context.Background())
		d = diagnose(h, graph)
		if (findingOf(d, kind) != nil) == want {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("finding %s present=%v not reached within %s; findings: %s\n%+v", kind, want, within, kinds(d), d.Issues)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// Each finding provoked for real on a live stack: a real gate-relay, the
// broker, the front door, a backoff and egress that nobody consumes — and
// each gone when its cause is.
func TestDiagnosticsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("live: runs gate-relay")
	}
	h := apitest.New(t)
	egress := h.App + ".diag.out"
	doc := map[string]any{
		"version": 1,
		"nodes": map[string]any{"limit": map[string]any{
			"ingress": map[string]any{"partitions": 2},
			"budgets": []any{map[string]any{"id": "tight", "count": 20, "timeMs": 1000}},
			"egress":  egress,
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"limit"}}},
	}
	h.Expect(h.Do("PUT", h.GraphURL("diag"), doc), 200)

	// No relay: stopped, and nothing waits yet.
	d := diagnose(h, "diag")
	if f := findingOf(d, wire.FindingStopped); f == nil || f.Severity != wire.SeverityBad || f.Node != nil {
		t.Fatalf("no relay runs the graph: want a graph-wide stopped finding first, got %s", kinds(d))
	}
	if d.DurationScope == "" || d.Issues[0].Kind != wire.FindingStopped {
		t.Fatalf("order: %s", kinds(d))
	}
	stoppedSince := findingOf(d, wire.FindingStopped).Since

	// Items pushed while nothing relays wait for the relay, not a budget.
	// (the front door refuses a graph nobody runs; a producer's SDK does not)
	var items []queen.PushItem
	for i := range 60 {
		items = append(items, queen.PushItem{Queue: h.Ingress("diag", "limit"), Partition: fmt.Sprintf("p%d", i%2), Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if _, err := h.Client.Push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	d = waitFinding(h, t, "diag", wire.FindingRelay, true, 5*time.Second)
	if findingOf(d, wire.FindingBudget) != nil {
		t.Fatalf("nothing refused: no budget finding, got %s", kinds(d))
	}
	if f := findingOf(d, wire.FindingStopped); f.Since != stoppedSince {
		t.Fatalf("since moved while the finding persisted: %d then %d", stoppedSince, f.Since)
	}

	// A relay starts: not stopped; 60 items over 20/s → a budget backlog
	// with a recent refusal naming the budget; admitted items wait on the
	// egress nobody consumes → workers.
	relay := startRelay(h, t, "diag-"+h.App)
	d = waitFinding(h, t, "diag", wire.FindingBudget, true, 15*time.Second)
	// A spent counter is seen first; the refusal arrives with the next
	// relay status (GATE_STATUS_SECONDS=1).
	for i := 0; i < 40 && findingOf(d, wire.FindingBudget) != nil && findingOf(d, wire.FindingBudget).Budget == nil; i++ {
		time.Sleep(150 * time.Millisecond)
		_ = h.Plane().Cat.SyncStatus(context.Background())
		d = diagnose(h, "diag")
	}
	f := findingOf(d, wire.FindingBudget)
	if f == nil {
		t.Fatalf("the budget finding went before its refusal was published: %s", kinds(d))
	}
	if f.Severity != wire.SeverityInfo || f.Node == nil || *f.Node != "limit" || f.Budget == nil || *f.Budget != "tight" {
		t.Fatalf("budget finding %+v: want info at node limit naming budget tight", f)
	}
	if findingOf(d, wire.FindingStopped) != nil || findingOf(d, wire.FindingRelay) != nil {
		t.Fatalf("a running relay pacing by budget: no stopped or relay finding, got %s", kinds(d))
	}
	d = waitFinding(h, t, "diag", wire.FindingWorkers, true, 10*time.Second)
	if w := findingOf(d, wire.FindingWorkers); !strings.Contains(w.Action, egress) || !strings.Contains(w.Action, "does not prove") {
		t.Fatalf("workers finding %+v: must name the egress queue and say backlog alone proves nothing", w)
	}
	// The backlog drains at 20/s: the budget finding goes.
	waitFinding(h, t, "diag", wire.FindingBudget, false, 20*time.Second)

	// Consuming the egress clears the worker backlog.
	ctx := context.Background()
	gatetest.Eventually(t, 20*time.Second, func() bool {
		res, err := h.Client.Pop(ctx, queen.PopRequest{Queue: egress, ConsumerGroup: "workers", Batch: 100, AutoAck: true, SubscriptionMode: queen.SubscribeAll})
		if err != nil {
			t.Logf("pop: %v", err)
		}
		_ = res
		d := diagnose(h, "diag")
		return findingOf(d, wire.FindingWorkers) == nil
	})

	// A backoff holds the node; lifting it clears the finding.
	h.Expect(h.Do("POST", "/v1/apps/"+h.App+"/graphs/diag/nodes/limit/backoff", map[string]any{"retryAfterSeconds": 30, "by": "test"}), 200)
	d = diagnose(h, "diag")
	if b := findingOf(d, wire.FindingBackoff); b == nil || b.Severity != wire.SeverityWarn || !strings.Contains(b.Title, "by test") {
		t.Fatalf("backoff: %s", kinds(d))
	}
	h.Expect(h.Do("DELETE", "/v1/apps/"+h.App+"/graphs/diag/nodes/limit/backoff", nil), 200)
	if d = diagnose(h, "diag"); findingOf(d, wire.FindingBackoff) != nil {
		t.Fatalf("lifted backoff still reported: %s", kinds(d))
	}

	// Stopping the relay: stopped again, with a fresh since.
	relay.stop()
	d = waitFinding(h, t, "diag", wire.FindingStopped, true, 10*time.Second)
	if findingOf(d, wire.FindingStopped).Since <= stoppedSince {
		t.Fatalf("since must reset after the recovery: %d, was %d", findingOf(d, wire.FindingStopped).Since, stoppedSince)
	}
}

// A wedged cursor (escalated by a relay: miniqueen does not refuse acks
// for stale frames, so the status is published as the relay would) is a
// bad cursor finding naming source, group and the seek; it goes when the
// relay's record clears. A broker that cannot be reached is the only
// finding.
func TestDiagnosticsCursorAndBroker(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do("PUT", h.GraphURL("wedge"), h.Target("wedge", 10)), 200)
	src, group := h.Ingress("wedge", "limit"), "gate."+h.App+".wedge.main.limit"
	wedged := store.StageStatus{Path: "main", Node: "limit", Hop: 0, Source: src, Group: group,
		Wedge: &store.Wedge{Queue: src, Group: group, Partition: "p0", Head: "t-1", Attempts: 5, Error: "ack_rejected", Escalated: true}}
	h.Run("r1", "wedge", 1, wedged)
	d := diagnose(h, "wedge")
	f := findingOf(d, wire.FindingCursor)
	if f == nil || f.Severity != wire.SeverityBad || *f.Node != "limit" || *f.Path != "main" {
		t.Fatalf("cursor finding: %s", kinds(d))
	}
	for _, want := range []string{src, group, "/seek", `{"toEnd":true}`, "Inspect"} {
		if !strings.Contains(f.Action, want) {
			t.Fatalf("cursor action %q must contain %q", f.Action, want)
		}
	}
	wedged.Wedge = nil
	h.Run("r1", "wedge", 1, wedged)
	if d := diagnose(h, "wedge"); findingOf(d, wire.FindingCursor) != nil || len(d.Issues) != 0 {
		t.Fatalf("cleared wedge, nothing waiting: %s", kinds(d))
	}

	// The same graph seen through a gate-api whose broker is gone.
	cfg := h.Plane().Cfg
	cfg.QueenURL = "http://127.0.0.1:1"
	other, err := plane.New(cfg, plane.Options{Log: h.Plane().Log})
	if err != nil {
		t.Fatal(err)
	}
	other.Cat.Put(h.Plane().Cat.Lookup(h.App, "wedge"))
	e := other.Cat.Lookup(h.App, "wedge")
	got := insight.New(other).Diagnose(context.Background(), e)
	if len(got.Issues) != 1 || got.Issues[0].Kind != wire.FindingBroker || !strings.Contains(got.Issues[0].Action, "127.0.0.1:1") {
		t.Fatalf("unreachable broker: want exactly one broker finding, got %+v", got.Issues)
	}
}

// Views are read-only and refuse unknown graphs like every graph read.
func TestDiagnosticsUnknownGraph(t *testing.T) {
	t.Parallel()
	h := apitest.New(t, func(c *config.Config) {})
	a := h.Expect(h.Do("GET", "/api/apps/"+h.App+"/graphs/nope/diagnostics", nil), 404)
	h.ErrorBody(a)
	h.Expect(h.Do("GET", "/api/graphs/nope/diagnostics", nil), 404)
}
