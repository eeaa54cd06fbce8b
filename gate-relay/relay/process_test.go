package relay_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest/logsink"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

// proc is one gate-relay process.
type proc struct {
	cmd *exec.Cmd
	out *logsink.Sink
	// done is closed when the process exited; err is its exit status.
	done chan struct{}
	err  error
}

// spawn starts the relay binary against the test's broker.
func (e *env) spawn(id string, extra ...string) *proc {
	e.t.Helper()
	cmd := exec.Command(relayBinary)
	cmd.Env = append(os.Environ(),
		"QUEEN_URL="+e.b.URL, "GATE_KV_NAMESPACE="+e.b.Namespace(), "GATE_RELAY_BIND=127.0.0.1:0",
		"GATE_RELAY_ID="+id, "GATE_LEASE_SECONDS=2", "GATE_POLL_TIMEOUT_SECONDS=2", "GATE_RECONCILE_SECONDS=2",
		"GATE_SIGNAL_POLL_MS=100", "GATE_STATUS_SECONDS=1", "GATE_INTERIOR_SEED_SKEW_SECONDS=0", "GATE_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, extra...)
	p := &proc{cmd: cmd, out: &logsink.Sink{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("starting gate-relay: %v", err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if e.t.Failed() {
			e.t.Logf("gate-relay %s output:\n%s", id, p.out.String())
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to go.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Two relay processes on one graph spend one budget: together they never
// exceed the ceiling (100 per 5 s in five 1 s windows: at most 120 in any
// sliding 5 s), both take part, and each item leaves once, in order.
func TestTwoReplicasSpendOneBudget(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "replicas"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"limit":{"ingress":true,"concurrency":2,
		"budgets":[{"count":100,"timeMs":5000,"subWindows":5}],"egress":%q}},
		"paths":[{"name":"main","nodes":["limit"]}]}`, e.egressQueue()))
	want := map[string][]int{}
	var items []item
	for s := 0; s < 50; s++ {
		for p := 0; p < 4; p++ {
			part := fmt.Sprintf("p%d", p)
			items = append(items, item{Seq: s, Part: part})
			want[part] = append(want[part], s)
		}
	}
	e.push(plan.IngressQueue(e.app, graph, "limit"), items...)
	r1 := e.spawn("r1")
	r2 := e.spawn("r2")
	gatetest.Eventually(t, 40*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= len(items) })
	got := e.egress(e.egressQueue())
	checkOnceInOrder(t, got, want)
	var commits []time.Time
	for _, o := range got {
		commits = append(commits, o.Created)
	}
	worst1, worst5 := worstSpan(commits, time.Second), worstSpan(commits, 5*time.Second)
	t.Logf("two replicas: worst 1 s = %d (window 20), worst sliding 5 s = %d (bound 120)", worst1, worst5)
	if worst5 > 120 {
		t.Fatalf("two replicas let %d items out in a sliding 5 s, above the (N+1)/N bound 120", worst5)
	}
	forwarded := map[string]int64{}
	gatetest.Eventually(t, 10*time.Second, func() bool {
		all, err := e.store.Statuses(context.Background())
		if err != nil {
			return false
		}
		var sum int64
		for _, st := range all {
			for _, g := range st.Graphs {
				for _, s := range g.Stages {
					forwarded[st.Replica] = s.Counters.Forwarded
					sum += s.Counters.Forwarded
				}
			}
		}
		return sum == int64(len(items))
	})
	if forwarded["r1"] == 0 || forwarded["r2"] == 0 {
		t.Fatalf("both replicas must take part: forwarded %v", forwarded)
	}
	for _, p := range []*proc{r1, r2} {
		start := time.Now()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			if p.err != nil {
				t.Fatalf("gate-relay exited with %v on SIGTERM", p.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("gate-relay did not exit within the poll timeout after SIGTERM")
		}
		t.Logf("SIGTERM → exit in %v", time.Since(start).Round(time.Millisecond))
	}
}

// A relay killed with SIGKILL at random points while moving 2,000 items
// through two hops, and restarted each time, delivers every item to the
// egress exactly once and in partition order.
func TestKillMinusNineLosesAndDuplicatesNothing(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graph = "kill"
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{
		"a":{"ingress":true,"batch":50,"budgets":[{"count":400,"timeMs":1000}]},
		"b":{"batch":50,"budgets":[{"count":100000,"timeMs":1000}],"egress":%q}},
		"paths":[{"name":"main","nodes":["a","b"]}]}`, e.egressQueue()))
	want := map[string][]int{}
	var items []item
	for s := 0; s < 250; s++ {
		for p := 0; p < 8; p++ {
			part := fmt.Sprintf("p%d", p)
			items = append(items, item{Seq: s, Part: part})
			want[part] = append(want[part], s)
		}
	}
	e.push(plan.IngressQueue(e.app, graph, "a"), items...)
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	p := e.spawn("k0")
	kills := 0
	for i := 1; i <= 4 && e.egressCount(e.egressQueue()) < len(items); i++ {
		time.Sleep(time.Duration(300+rnd.IntN(900)) * time.Millisecond)
		p.kill(t)
		kills++
		t.Logf("kill -9 #%d with %d items on the egress", i, e.egressCount(e.egressQueue()))
		p = e.spawn(fmt.Sprintf("k%d", i))
	}
	gatetest.Eventually(t, 60*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= len(items) })
	consistently(t, time.Second, func() bool { return e.egressCount(e.egressQueue()) == len(items) })
	checkOnceInOrder(t, e.egress(e.egressQueue()), want)
	if kills == 0 {
		t.Fatal("the relay finished before it could be killed; the test proved nothing")
	}
}
