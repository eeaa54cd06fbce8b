package stage

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Virtual-time tests of one claim's admission against the in-process
// broker: the stage's clock is the broker's frozen clock, and every park
// moves both at once, so a test that parks for a window takes no wall time.

// brokerClock is the stage's clock on miniqueen's frozen clock: a timer
// moves the broker forward by its duration and fires at once. onSleep,
// when set, runs after each move (a test's "meanwhile"). Its timers are
// a virtual clock's, moved in step.
type brokerClock struct {
	*clock.Virtual
	mini    *miniqueen.Server
	mu      sync.Mutex
	slept   time.Duration
	onSleep func(total time.Duration)
}

func newBrokerClock(mini *miniqueen.Server) *brokerClock {
	return &brokerClock{Virtual: clock.NewVirtual(mini.Now()), mini: mini}
}

func (c *brokerClock) Now() time.Time { return c.mini.Now() }

func (c *brokerClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *brokerClock) NewTimer(d time.Duration) clock.Timer {
	t := c.Virtual.NewTimer(d)
	c.mini.FastForward(d)
	c.mu.Lock()
	c.slept += d
	total, hook := c.slept, c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook(total)
	}
	c.Virtual.Advance(d)
	return t
}

func (c *brokerClock) total() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}

// countKV counts the limiter's separate kv calls and records every op.
type countKV struct {
	next  budget.KV
	calls atomic.Int64
	mu    sync.Mutex
	ops   []queen.KVOp
}

func (k *countKV) KV(ctx context.Context, ops ...queen.KVOp) (queen.KVResponse, error) {
	k.calls.Add(1)
	k.mu.Lock()
	k.ops = append(k.ops, ops...)
	k.mu.Unlock()
	return k.next.KV(ctx, ops...)
}

// refunds counts the negative incrs sent (a refund is the only one).
func (k *countKV) refunds() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, op := range k.ops {
		if op.Op == queen.OpIncr && op.Delta < 0 {
			n++
		}
	}
	return n
}

type rig struct {
	t        *testing.T
	mini     *miniqueen.Server
	c        *queen.Client
	clock    *brokerClock
	kv       *countKV
	lim      *budget.Limiter
	admit    *Admission
	s        *Stage
	src, out string
	group    string
	ns       string
	key      string
}

type rigOpts struct {
	ceiling int64
	ttl     int64
	scopeBy string
	riders  bool
	maxPark time.Duration
	// mirror declares the budget's vendorMeter and gives the limiter its
	// meter copy.
	mirror bool
	// keys are the budget's per-key counts in the document; runtimeKeys
	// gives the limiter its key limit cache (the relay's).
	keys        map[string]int64
	runtimeKeys bool
	// url, when set, is where the stage's client talks (a proxy in front
	// of the broker).
	url func(brokerURL string) string
	// signer signs charge records (charges.go).
	signer *cost.Signer
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	mini := miniqueen.RunT(t)
	mini.SetTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	u := mini.URL()
	if o.url != nil {
		u = o.url(u)
	}
	c, err := queen.New(u)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, mini: mini, c: c, clock: newBrokerClock(mini), src: "t.src", out: "t.out", group: "t.src.g", ns: "gate"}
	if o.ttl == 0 {
		o.ttl = 1
	}
	r.key = plan.BudgetKey("a", "g", "n", "b0")
	st := plan.Stage{Path: "main", Node: "n", Source: r.src, Group: r.group, Batch: 200, Concurrency: 1, Share: 1,
		Destinations: []plan.Destination{{Node: "n", Queue: r.out, DerivesTransactionID: true, Terminal: true, Label: plan.TerminalLabel("a", "g", "main", "n")}}}
	node := &plan.Node{Name: "n", Cost: cost.Fixed(1), Shares: map[string]float64{"main": 1}, WidestShare: 1, Budgets: []plan.Budget{{ID: "b0", Key: r.key, ScopeBy: o.scopeBy,
		CountSub: o.ceiling, WindowSubSeconds: o.ttl, SubWindows: 1, Count: o.ceiling, TimeMs: o.ttl * 1000, Ceilings: map[string]int64{"main": o.ceiling}}}}
	node.Budgets[0].Keys = o.keys
	if o.signer != nil {
		// an estimated cost (the payload's tokens, 1 when absent): only
		// such a node records its charges
		node.Cost = cost.Rule{Path: "payload.tokens", Default: 1, Max: 1}
	}
	if o.mirror {
		node.Budgets[0].VendorMeter = &plan.VendorMeter{Headers: "x-ratelimit", Key: plan.MeterKey(r.key)}
	}
	r.kv = &countKV{next: c}
	r.lim = &budget.Limiter{KV: r.kv, NS: r.ns}
	if o.mirror {
		r.lim.Meters = budget.NewMeters(c, r.ns, r.clock, 0)
	}
	if o.runtimeKeys {
		r.lim.Keys = budget.NewKeyLimits(c, r.ns, r.clock, 0, 0)
	}
	r.admit = NewAdmission(o.riders, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if o.riders {
		if err := r.admit.Probe(t.Context(), r.lim, c, plan.RiderProbeKey("test")); err != nil || !r.admit.Riders() {
			t.Fatalf("the probe on miniqueen: %v, want riders proven", err)
		}
	}
	r.kv.calls.Store(0)
	s, err := New(Config{App: "a", Graph: "g", Stage: st, Node: node, Client: c, Limiter: r.lim, Lease: 10 * time.Second,
		PollTimeout: time.Second, MaxPark: o.maxPark, Clock: r.clock, Admission: r.admit, Signer: o.signer,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	return r
}

// fill pushes payloads to partition p of the source, in order.
func (r *rig) fill(p string, payloads ...string) {
	r.t.Helper()
	items := make([]queen.PushItem, len(payloads))
	for i, pl := range payloads {
		items[i] = queen.PushItem{Queue: r.src, Partition: p, Payload: json.RawMessage(pl), TransactionID: p + "-" + strconv.Itoa(i)}
	}
	if _, err := r.c.Push(r.t.Context(), items); err != nil {
		r.t.Fatal(err)
	}
}

func seqs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = `{"i":` + strconv.Itoa(i) + `}`
	}
	return out
}

// claim pops one claim without waiting and runs its handler; false when
// nothing was claimable.
func (r *rig) claim() bool {
	r.t.Helper()
	cl, err := r.c.Pop(r.t.Context(), r.noWait())
	if err != nil {
		r.t.Fatal(err)
	}
	if cl.Empty() {
		return false
	}
	h := &handler{s: r.s, ctx: r.t.Context(), msgs: cl.Messages}
	h.run()
	r.driveHold()
	return true
}

// driveHold runs the stage's hold on the rig's clock, as its goroutine
// would, until it holds nothing (every held claim settled or released).
func (r *rig) driveHold() {
	r.t.Helper()
	for n := 0; r.s.hold.len() > 0; n++ {
		if n > 10_000 {
			r.t.Fatalf("the hold still keeps %d claims after %d rechecks", r.s.hold.len(), n)
		}
		if err := clock.Sleep(r.t.Context(), r.clock, r.s.hold.next(r.clock.Now())); err != nil {
			r.t.Fatal(err)
		}
		r.s.hold.check(r.t.Context())
	}
}

// noWait is the stage's pop without the long-poll.
func (r *rig) noWait() queen.PopRequest {
	req := r.s.popRequest()
	req.Wait = false
	return req
}

// forwarded is the egress's items in order (their "i").
func (r *rig) forwarded(p string) []int {
	var out []int
	for _, m := range r.mini.Messages(r.out, p) {
		var v struct{ I int }
		_ = json.Unmarshal(m.Data, &v)
		out = append(out, v.I)
	}
	return out
}

func (r *rig) counter(key string) int64 {
	e, ok := r.mini.KV(r.ns, key)
	if !ok {
		return 0
	}
	return e.Int
}

func TestRidersAdmitAClaimInOneTransactionWithNoKVCall(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, riders: true})
	r.fill("p", seqs(10)...)
	r.claim()
	if got := r.forwarded("p"); len(got) != 10 {
		t.Fatalf("forwarded %v, want 10 items", got)
	}
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d, want 10 = forwarded", v)
	}
	if n := r.kv.calls.Load(); n != 0 {
		t.Errorf("%d separate kv calls, want 0: the charge rides the settle", n)
	}
	if c := r.s.Counters(); c.Commits != 1 || c.Forwarded != 10 {
		t.Errorf("counters %+v, want one commit of 10", c)
	}
}

func TestARiderRefusalSettlesThePrefixFromTheRefusalWithoutARefund(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, ttl: 60, riders: true})
	if _, err := r.c.KV(t.Context(), queen.KVIncr(r.ns, r.key, 95, queen.IncrOpts{TTLSeconds: 60})); err != nil {
		t.Fatal(err)
	}
	r.fill("p", seqs(10)...)
	r.claim()
	if got := r.forwarded("p"); len(got) != 5 {
		t.Fatalf("forwarded %v, want the 5 that fit", got)
	}
	if v := r.counter(r.key); v != 100 {
		t.Errorf("counter %d, want 100 (95 + the 5 forwarded)", v)
	}
	if n := r.kv.calls.Load(); n != 0 {
		t.Errorf("%d separate kv calls, want 0: the refusal's value decides the prefix of a one-counter claim, and nothing is refunded", n)
	}
	if c := r.s.Counters(); c.Deferred != 1 || c.Commits != 1 {
		t.Errorf("counters %+v, want one deferral and one commit", c)
	}
	// The tail was handed back at once: it is claimable now and waits for
	// the next window.
	cl, err := r.c.Pop(t.Context(), r.noWait())
	if err != nil || len(cl.Messages) != 5 {
		t.Fatalf("the handed-back tail: %d messages (%v), want 5", len(cl.Messages), err)
	}
}

func TestAFullWindowParksAndResumesInVirtualTime(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 10, ttl: 1, riders: true, maxPark: 30 * time.Second})
	if _, err := r.c.KV(t.Context(), queen.KVIncr(r.ns, r.key, 10, queen.IncrOpts{TTLSeconds: 1})); err != nil {
		t.Fatal(err)
	}
	r.fill("p", seqs(10)...)
	start := time.Now()
	r.claim()
	if got := r.forwarded("p"); len(got) != 10 {
		t.Fatalf("forwarded %v, want all 10 in the next window", got)
	}
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d, want 10 in the new window", v)
	}
	c := r.s.Counters()
	if c.Parked == 0 || c.Released != 0 {
		t.Errorf("counters %+v, want parked and not released", c)
	}
	if slept := r.clock.total(); slept < time.Second || slept > 2*time.Second {
		t.Errorf("parked %s of virtual time, want the window's remaining second plus jitter", slept)
	}
	if n := r.kv.calls.Load(); n != 1 {
		t.Errorf("%d kv calls, want exactly 1 (the read for the window end)", n)
	}
	if wall := time.Since(start); wall > 5*time.Second {
		t.Logf("the virtual park took %s of wall time (a loaded machine)", wall)
	}
}

func TestALiftWakesAClaimParkedOnABackoffLongerThanTheParkBudget(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 10, ttl: 1, riders: true, maxPark: 5 * time.Second})
	// A backoff: the counter spent to its ceiling for 120 s.
	if _, err := r.c.KV(t.Context(), queen.KVPut(r.ns, r.key, json.RawMessage("10"), queen.PutOpts{TTLSeconds: 120})); err != nil {
		t.Fatal(err)
	}
	r.clock.onSleep = func(total time.Duration) {
		if total >= 2*time.Second {
			if _, err := r.c.KV(context.Background(), queen.KVDelete(r.ns, r.key, queen.DeleteOpts{})); err != nil {
				t.Error(err)
			}
			r.clock.onSleep = nil
		}
	}
	r.fill("p", seqs(3)...)
	r.claim()
	if got := r.forwarded("p"); len(got) != 3 {
		t.Fatalf("forwarded %v after the lift, want all 3", got)
	}
	if c := r.s.Counters(); c.Released != 0 {
		t.Errorf("counters %+v, want the claim held until the lift, never released", c)
	}
	if slept := r.clock.total(); slept > 3*time.Second {
		t.Errorf("woke %s after the hold began, want within a recheck of the lift at 2 s", slept)
	}
}

func TestAClaimHeldForTheWholeParkBudgetComesBackAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 10, ttl: 1, riders: true, maxPark: 3 * time.Second})
	if _, err := r.c.KV(t.Context(), queen.KVPut(r.ns, r.key, json.RawMessage("10"), queen.PutOpts{TTLSeconds: 120})); err != nil {
		t.Fatal(err)
	}
	r.fill("p", seqs(3)...)
	r.claim()
	if got := r.forwarded("p"); len(got) != 0 {
		t.Fatalf("forwarded %v during the backoff", got)
	}
	if c := r.s.Counters(); c.Released != 1 {
		t.Fatalf("counters %+v, want one release after the park budget", c)
	}
	cl, err := r.c.Pop(t.Context(), r.noWait())
	if err != nil || len(cl.Messages) != 3 {
		t.Fatalf("after the release: %d messages (%v), want the claim back at once, not after its lease", len(cl.Messages), err)
	}
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d, want the backoff's 10 untouched", v)
	}
}

func TestABrokerThatIgnoresRidersNeverLeavesAForwardUncharged(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, ttl: 60, riders: true})
	r.mini.SetRidersIgnored(true)
	r.fill("p", seqs(10)...)
	r.claim()
	if got := r.forwarded("p"); len(got) != 10 {
		t.Fatalf("forwarded %v, want 10", got)
	}
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d after a commit that ignored its riders, want 10 = forwarded (charged afterwards)", v)
	}
	if r.admit.Riders() {
		t.Fatal("the relay still rides after a commit without rider slots")
	}
	if mode, why := r.admit.Mode(); mode != "separate" || !strings.Contains(why, "without applying the kv riders") {
		t.Errorf("mode %s (%s), want separate naming why", mode, why)
	}
	r.fill("q", seqs(5)...)
	r.claim()
	if v := r.counter(r.key); v != 15 {
		t.Errorf("counter %d after the next claim on the separate path, want 15", v)
	}
	if err := r.admit.Probe(t.Context(), r.lim, r.c, plan.RiderProbeKey("test")); err == nil || r.admit.Riders() {
		t.Errorf("a probe of a broker that ignores riders: %v, want refused", err)
	}
}

func TestKVDisabledSwitchesToTheSeparatePathAndForwardsNothingUncharged(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, ttl: 60, riders: true})
	r.mini.SetKVDisabled(true)
	r.fill("p", seqs(4)...)
	r.claim()
	if got := r.forwarded("p"); len(got) != 0 {
		t.Fatalf("forwarded %v with KV switched off, want nothing", got)
	}
	if r.admit.Riders() {
		t.Fatal("kv_disabled must switch the relay to the separate path")
	}
	if c := r.s.Counters(); c.Released != 1 {
		t.Errorf("counters %+v, want the claim released", c)
	}
	r.mini.SetKVDisabled(false)
	if v := r.counter(r.key); v != 0 {
		t.Errorf("counter %d, want 0", v)
	}
}

func TestAnItemWhoseScopeMakesTheKeyTooLongIsPoisonAndTheRestFlows(t *testing.T) {
	t.Parallel()
	for _, riders := range []bool{true, false} {
		t.Run(map[bool]string{true: "riders", false: "separate"}[riders], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ceiling: 100, ttl: 60, scopeBy: cost.Root + ".acct", riders: riders})
			if _, err := r.c.Configure(t.Context(), queen.ConfigureRequest{Queue: r.src, Options: queen.QueueOptions{RetryLimit: queen.Int(1)}}); err != nil {
				t.Fatal(err)
			}
			long := strings.Repeat("x", 600)
			r.fill("p", `{"i":0,"acct":"a"}`, `{"i":1,"acct":"`+long+`"}`, `{"i":2,"acct":"b"}`)
			for n := 0; n < 10 && r.claim(); n++ {
			}
			if got := r.forwarded("p"); len(got) != 2 || got[0] != 0 || got[1] != 2 {
				t.Fatalf("forwarded %v, want [0 2]: the poison item must not hold up its partition", got)
			}
			dl := r.mini.DeadLetters(r.src)
			if len(dl) != 1 || !strings.Contains(dl[0].Error, "kv key") {
				t.Fatalf("dead letters %+v, want the long-scoped item naming the kv key", dl)
			}
			if c := r.s.Counters(); c.Deadlettered == 0 || c.Wedged != 0 {
				t.Errorf("counters %+v, want it counted as dead-lettered, never wedged", c)
			}
			if v := r.counter(plan.ScopedKey(r.key, "a")) + r.counter(plan.ScopedKey(r.key, "b")); v != 2 {
				t.Errorf("scoped counters sum %d, want 2 = forwarded", v)
			}
		})
	}
}

// cutProxy forwards to the broker but, while cut is set, drops the answer
// of every transaction after the broker committed it: the relay sees
// "unexpected EOF" for a settle that did land.
type cutProxy struct {
	rp  *httputil.ReverseProxy
	cut atomic.Bool
	n   atomic.Int64
}

func (p *cutProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.cut.Load() || r.URL.Path != "/api/v1/transaction" {
		p.rp.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	p.n.Add(1)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	_, _ = conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"transactionId\":"))
	_ = conn.(*net.TCPConn).SetLinger(0)
	_ = conn.Close()
}

func TestASettleWhoseAnswerIsCutAfterTheCommitIsNeverRefunded(t *testing.T) {
	t.Parallel()
	proxy := &cutProxy{}
	r := newRig(t, rigOpts{ceiling: 100, ttl: 60, riders: false, url: func(broker string) string {
		u, _ := url.Parse(broker)
		proxy.rp = httputil.NewSingleHostReverseProxy(u)
		srv := httptest.NewServer(proxy)
		t.Cleanup(srv.Close)
		return srv.URL
	}})
	r.fill("p", seqs(10)...)
	proxy.cut.Store(true)
	r.claim()
	proxy.cut.Store(false)
	if proxy.n.Load() != 1 {
		t.Fatalf("%d transactions cut, want 1", proxy.n.Load())
	}
	if got := r.forwarded("p"); len(got) != 10 {
		t.Fatalf("forwarded %v: the broker committed the settle", got)
	}
	if n := r.kv.refunds(); n != 0 {
		t.Fatalf("%d refunds sent after an ambiguous settle, want none: a landed refund would let the window forward more than its counter", n)
	}
	if v := r.counter(r.key); v != 10 {
		t.Errorf("counter %d, want 10 = forwarded", v)
	}
	if c := r.s.Counters(); c.Ambiguous != 1 || c.Released != 1 {
		t.Errorf("counters %+v, want the ambiguous settle counted and the claim released", c)
	}
}

func TestAThinClaimLingersBeforeTheNextPopAndAFullOneDoesNot(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, riders: true})
	r.s.cfg.Linger = 5 * time.Millisecond
	r.s.linger(t.Context(), 200, 3)
	if got := r.clock.total(); got != 5*time.Millisecond {
		t.Fatalf("a 3-item claim of a 200 batch waited %s, want the 5 ms linger", got)
	}
	r.s.linger(t.Context(), 200, 50)
	r.s.cfg.Linger = 0
	r.s.linger(t.Context(), 200, 1)
	if got := r.clock.total(); got != 5*time.Millisecond {
		t.Fatalf("waited %s in all, want no wait after a quarter-full claim or without a linger", got)
	}
}

// A settle acks cumulatively: one completed ack per partition, of the last
// settled message of each, in claim order; nothing after the prefix.
func TestASettleAcksOnlyTheLastSettledMessageOfEachPartition(t *testing.T) {
	t.Parallel()
	parts := []string{"A", "A", "B", "A", "B", "B", "A"}
	msgs := make([]queen.Message, len(parts))
	for i, p := range parts {
		msgs[i] = queen.Message{TransactionID: "t" + strconv.Itoa(i), PartitionID: p, LeaseID: "L", ConsumerGroup: "g"}
	}
	for _, tc := range []struct {
		end  int
		want []string // the acked transaction ids, in order
	}{
		{0, nil},
		{1, []string{"t0"}},
		{3, []string{"t1", "t2"}},
		{5, []string{"t3", "t4"}},
		{7, []string{"t5", "t6"}},
	} {
		h := handler{msgs: msgs}
		var tx queen.Transaction
		h.ackPrefix(&tx, tc.end)
		var got []string
		for _, op := range tx.Operations {
			if op.Type != queen.TxnAckOp || op.Ack.Status != queen.AckCompleted {
				t.Fatalf("prefix %d: op %+v, want completed acks only", tc.end, op)
			}
			got = append(got, op.Ack.TransactionID)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("prefix %d acks %v, want %v", tc.end, got, tc.want)
		}
	}
}

// Against the broker, that one ack settles the whole claim: everything is
// forwarded once and nothing is left to claim.
func TestOneCumulativeAckSettlesAWholeClaim(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, riders: true})
	r.fill("p", seqs(50)...)
	if !r.claim() {
		t.Fatal("nothing to claim")
	}
	if got := r.forwarded("p"); len(got) != 50 || got[0] != 0 || got[49] != 49 {
		t.Fatalf("forwarded %v, want 0…49", got)
	}
	// Past the lease, anything the ack left unsettled would come back.
	r.mini.FastForward(11 * time.Second)
	if r.claim() {
		t.Fatal("a claim after the lease found messages: the cumulative ack did not settle the first claim")
	}
	if c := r.s.Counters(); c.Commits != 1 || c.Forwarded != 50 || c.Released != 0 {
		t.Errorf("counters %+v, want one commit of 50 and nothing released", c)
	}
}

// Workers that all found thin claims take turns, one pop per linger for
// the stage, and a full claim ends every wait at once.
func TestWorkersAfterThinClaimsTakeTurnsAndAFullClaimEndsEveryWait(t *testing.T) {
	t.Parallel()
	const linger = 5 * time.Millisecond
	t0 := time.Unix(1_800_000_000, 0)
	v := clock.NewVirtual(t0)
	s := &Stage{cfg: Config{Linger: linger, Clock: v}}
	done := make(chan struct{}, 3)
	for range 3 {
		go func() {
			s.linger(t.Context(), 200, 2)
			done <- struct{}{}
		}()
	}
	pending := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if !v.WaitForPending(n, ctx.Done()) {
			t.Fatalf("%d waits pending, want %d", v.Pending(), n)
		}
	}
	// turn is one worker's pop: the earliest wait ends at the next linger
	// and exactly one worker goes.
	turn := func(k int) {
		t.Helper()
		if next, ok := v.Next(); !ok || !next.Equal(t0.Add(time.Duration(k)*linger)) {
			t.Fatalf("the next wait ends at %v (%v), want %v: one pop per linger for the stage", next, ok, t0.Add(time.Duration(k)*linger))
		}
		v.Set(t0.Add(time.Duration(k) * linger))
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("no worker went at turn %d", k)
		}
		select {
		case <-done:
			t.Fatalf("two workers went at turn %d", k)
		case <-time.After(20 * time.Millisecond):
		}
	}
	pending(3)
	turn(1)
	turn(2)
	if next, ok := v.Next(); !ok || !next.Equal(t0.Add(3*linger)) {
		t.Fatalf("the third worker waits until %v (%v), want its turn at %v", next, ok, t0.Add(3*linger))
	}
	s.linger(t.Context(), 200, 50) // a quarter full: load is up
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a full claim did not end the wait of the last lingering worker")
	}
	if n := v.Pending(); n != 0 {
		t.Fatalf("%d waits left after a full claim ended them", n)
	}
	// Turns start over: the next thin claim waits one linger, not a fourth.
	go func() {
		s.linger(t.Context(), 200, 1)
		done <- struct{}{}
	}()
	pending(1)
	if next, _ := v.Next(); !next.Equal(v.Now().Add(linger)) {
		t.Fatalf("after a full claim a thin one waits until %v, want one linger from now (%v)", next, v.Now().Add(linger))
	}
	v.Advance(linger)
	<-done
}

// spendKey writes a scoped counter to its ceiling for an hour (the key's
// one item of the hour already went).
func (r *rig) spendKey(value string, ceiling int64) {
	r.t.Helper()
	if _, err := r.c.KV(r.t.Context(), queen.KVIncr(r.ns, plan.ScopedKey(r.key, value), ceiling, queen.IncrOpts{TTLSeconds: 3600})); err != nil {
		r.t.Fatal(err)
	}
}

// runOne pops one claim and runs its handler without driving the hold.
func (r *rig) runOne() bool {
	r.t.Helper()
	cl, err := r.c.Pop(r.t.Context(), r.noWait())
	if err != nil {
		r.t.Fatal(err)
	}
	if cl.Empty() {
		return false
	}
	h := &handler{s: r.s, ctx: r.t.Context(), msgs: cl.Messages}
	h.run()
	return true
}

// Claims whose head waits an hour go to the hold and free the worker at
// once (no park); one recheck reads the head counters of every held claim
// in a single getMany and charges nothing while none fits.
func TestHeldClaimsFreeTheWorkerAndAreRecheckedWithOneRead(t *testing.T) {
	t.Parallel()
	for _, riders := range []bool{true, false} {
		t.Run(map[bool]string{true: "riders", false: "separate"}[riders], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigOpts{ceiling: 1, ttl: 3600, scopeBy: cost.Root + ".acct", riders: riders, maxPark: 30 * time.Second})
			r.spendKey("a", 1)
			r.spendKey("b", 1)
			r.fill("pa", `{"i":0,"acct":"a"}`, `{"i":1,"acct":"a"}`)
			r.fill("pb", `{"i":0,"acct":"b"}`)
			r.fill("pc", `{"i":0,"acct":"c"}`)
			for r.runOne() {
			}
			if slept := r.clock.total(); slept != 0 {
				t.Fatalf("the handlers slept %v: a claim whose window is an hour away must not park the worker", slept)
			}
			if got := r.forwarded("pc"); len(got) != 1 {
				t.Fatalf("partition pc forwarded %v, want its free item", got)
			}
			if n := r.s.hold.len(); n != 2 {
				t.Fatalf("the hold keeps %d claims, want pa's and pb's", n)
			}
			if c := r.s.Counters(); c.Held != 2 || c.Parked != 0 || c.Released != 0 {
				t.Fatalf("counters %+v, want two held, none parked or released", c)
			}
			r.kv.mu.Lock()
			r.kv.ops = nil
			r.kv.mu.Unlock()
			calls := r.kv.calls.Load()
			txns := r.c.Calls().Txn
			r.s.hold.check(t.Context())
			if n := r.kv.calls.Load() - calls; n != 1 {
				t.Fatalf("one recheck made %d kv calls, want one read for both held claims", n)
			}
			r.kv.mu.Lock()
			ops := r.kv.ops
			r.kv.mu.Unlock()
			if len(ops) != 1 || ops[0].Op != queen.OpGetMany || len(ops[0].Keys) != 2 {
				t.Fatalf("the recheck sent %+v, want one getMany of the two held heads' keys", ops)
			}
			if n := r.c.Calls().Txn - txns; n != 0 {
				t.Fatalf("the recheck sent %d transactions while no held head fits", n)
			}
			// A lift of key a: the next recheck retries pa's claim alone.
			if _, err := r.c.KV(t.Context(), queen.KVDelete(r.ns, plan.ScopedKey(r.key, "a"), queen.DeleteOpts{})); err != nil {
				t.Fatal(err)
			}
			r.s.hold.check(t.Context())
			if got := r.forwarded("pa"); len(got) != 1 || got[0] != 0 {
				t.Fatalf("after the lift pa forwarded %v, want its head (one item of key a fits the new window)", got)
			}
			if n := r.s.hold.len(); n != 1 {
				t.Fatalf("the hold keeps %d claims after pa settled its prefix, want pb's", n)
			}
			if dl := r.mini.DeadLetters(r.src); len(dl) != 0 {
				t.Fatalf("dead letters %+v: waiting never fails a message", dl)
			}
		})
	}
}

// A stage holds at most MaxHeld claims; the next refused claim is let go
// without an ack (its lease lapses, its cursor and retry budget untouched)
// and the worker is not parked on it either.
func TestAFullHoldLetsTheNextClaimGoWithoutAnAck(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 1, ttl: 3600, scopeBy: cost.Root + ".acct", riders: true, maxPark: 30 * time.Second})
	for i := 0; i <= MaxHeld; i++ {
		acct := "k" + strconv.Itoa(i)
		r.spendKey(acct, 1)
		r.fill("p"+strconv.Itoa(i), `{"i":0,"acct":"`+acct+`"}`)
	}
	for r.runOne() {
	}
	if n := r.s.hold.len(); n != MaxHeld {
		t.Fatalf("the hold keeps %d claims, want MaxHeld = %d", n, MaxHeld)
	}
	if c := r.s.Counters(); c.Held != MaxHeld || c.Released != 1 || c.Parked != 0 {
		t.Fatalf("counters %+v, want %d held, the one more released, nothing parked", c, MaxHeld)
	}
	if slept := r.clock.total(); slept != 0 {
		t.Fatalf("the worker slept %v on a claim the hold had no room for", slept)
	}
	for i := 0; i <= MaxHeld; i++ {
		p := "p" + strconv.Itoa(i)
		if c, ok := r.mini.Cursor(r.src, r.group, p); ok && (c.Committed >= 0 || c.Retries != 0) {
			t.Fatalf("partition %s cursor %+v: nothing may be acked or nacked while waiting", p, c)
		}
	}
	if dl := r.mini.DeadLetters(r.src); len(dl) != 0 {
		t.Fatalf("dead letters %+v", dl)
	}
}

// deadlettered counts items, not attempts: a poison item on a queue with
// retry limit 3 is nacked four times and dead-lettered once, and the
// counter says one.
func TestDeadletteredCountsItemsNotAttempts(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{ceiling: 100, ttl: 60, scopeBy: cost.Root + ".acct", riders: true})
	if _, err := r.c.Configure(t.Context(), queen.ConfigureRequest{Queue: r.src, Options: queen.QueueOptions{RetryLimit: queen.Int(3)}}); err != nil {
		t.Fatal(err)
	}
	r.fill("p", `{"i":0,"acct":"`+strings.Repeat("x", 600)+`"}`, `{"i":1,"acct":"a"}`)
	claims := 0
	for ; claims < 20 && len(r.mini.DeadLetters(r.src)) == 0 && r.claim(); claims++ {
	}
	if dl := r.mini.DeadLetters(r.src); len(dl) != 1 {
		t.Fatalf("dead letters %d after %d claims, want the poison item", len(dl), claims)
	}
	if claims != 4 {
		t.Fatalf("the poison item was dead-lettered after %d nacks, want 4 (retry limit 3)", claims)
	}
	if c := r.s.Counters(); c.Deadlettered != 1 {
		t.Fatalf("deadlettered = %d after one item's 4 delivery attempts, want 1", c.Deadlettered)
	}
	for r.claim() {
	}
	if got := r.forwarded("p"); len(got) != 1 || got[0] != 1 {
		t.Fatalf("forwarded %v, want the item behind the poison one", got)
	}
}
