package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

var relayBinary string

// TestMain builds the gate-relay binary the process tests run, then runs
// the tests and fails the package when one left a goroutine behind (a
// stage, a relay loop, a publisher, a handover or an ops server that
// outlived its Stop); only idle keep-alive connections are not counted.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withBinary{m}, gatetest.IgnoreIdleConns()...)
}

// withBinary runs the tests with relayBinary built into a temporary
// directory that is removed afterwards.
type withBinary struct{ m *testing.M }

func (w withBinary) Run() int {
	dir, err := os.MkdirTemp("", "gate-relay-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	relayBinary, err = buildBinary(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building gate-relay:", err)
		return 1
	}
	return w.m.Run()
}

// env is one test's broker, store and application.
type env struct {
	t      *testing.T
	b      *gatetest.Broker
	mini   *miniqueen.Server
	client *queen.Client
	store  *store.Store
	app    string
	rec    *recorder
}

// slow skips a wall-clock suite under -short: the quick loop runs the
// virtual-time tests of gate-relay/stage instead, the full run runs both.
func slow(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("wall-clock suite (seconds of real windows); run without -short")
	}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	b := gatetest.NewBroker(t)
	mini := b.RequireMini(t, "the relay tests read egress, cursors and counters directly")
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &env{t: t, b: b, mini: mini, client: c, store: store.New(c, b.Namespace()), app: b.Prefix, rec: &recorder{}}
}

// declare stores a document (as gate-api would) after checking it compiles.
func (e *env) declare(graph, doc string) {
	e.t.Helper()
	if err := e.store.Put(context.Background(), e.app, graph, json.RawMessage(doc)); err != nil {
		e.t.Fatalf("storing %s: %v", graph, err)
	}
}

func (e *env) egressQueue() string { return e.b.Queue("out") }

// testLogger logs to t under -v (INFO and up) and drops the chatter
// otherwise.
func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		w := &tWriter{t: t}
		t.Cleanup(w.close)
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// tWriter writes log lines to t's log while t runs. A line written once t
// and its cleanups are over — a piece still stopping against a slower
// broker — goes to stderr instead: t.Log then would panic the whole test
// binary ("Log in goroutine after Test… has completed").
type tWriter struct {
	t    interface{ Log(args ...any) }
	mu   sync.Mutex
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return os.Stderr.Write(p)
	}
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// close ends the writer's use of t (a cleanup registered before the
// pieces that log, so it runs after they stopped).
func (w *tWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// knobs are the short test settings.
type knobs struct {
	lease, poll, maxPark, skew time.Duration
	concurrency                int
}

func defaultKnobs() knobs {
	return knobs{lease: 2 * time.Second, poll: 2 * time.Second, maxPark: 30 * time.Second, skew: 0}
}

// startRelay runs an in-process relay until the test ends.
func (e *env) startRelay(k knobs) *relay.Relay {
	e.t.Helper()
	r, _ := e.startStoppableRelay(k)
	return r
}

// startStoppableRelay runs an in-process relay; stop ends it and waits.
func (e *env) startStoppableRelay(k knobs) (*relay.Relay, func()) {
	e.t.Helper()
	r, err := relay.New(relay.Config{
		Client: e.client, Store: e.store, Replica: "test-" + e.app,
		StageConcurrency: k.concurrency, Lease: k.lease, PollTimeout: k.poll, MaxPark: k.maxPark,
		InteriorSeedSkew: k.skew, RetryLimit: 3, Reconcile: 5 * time.Second, SignalPoll: 100 * time.Millisecond,
		Logger: testLogger(e.t), Observer: e.rec.settled, BudgetObserver: e.rec.applied,
	})
	if err != nil {
		e.t.Fatalf("relay: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		cancel()
		e.t.Fatalf("relay start: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-r.Stopped():
			case <-time.After(k.poll + 5*time.Second):
				e.t.Errorf("the relay did not stop within the poll timeout")
			}
		})
	}
	e.t.Cleanup(stop)
	return r, stop
}

// consistently fails t if fn turns false at any check during d.
func consistently(t *testing.T, d time.Duration, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !fn() {
			t.Fatalf("condition broke within %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stageStatus finds a stage's status on r.
func stageStatus(r *relay.Relay, app, graph, path, node string) (store.StageStatus, bool) {
	st := r.Snapshot()
	g, ok := st.Graph(app, graph)
	if !ok {
		return store.StageStatus{}, false
	}
	for _, s := range g.Stages {
		if s.Path == path && s.Node == node {
			return s, true
		}
	}
	return store.StageStatus{}, false
}

// item is one test payload.
type item struct {
	Seq  int    `json:"seq"`
	Part string `json:"part"`
	Op   string `json:"op,omitempty"`
	Cost int    `json:"cost,omitempty"`
	List string `json:"listingId,omitempty"`
	Src  string `json:"src,omitempty"`
}

// push sends items to queue, each to its own partition, txn "t-{seq}".
func (e *env) push(queue string, items ...item) {
	e.t.Helper()
	var batch []queen.PushItem
	for _, it := range items {
		b, _ := json.Marshal(it)
		batch = append(batch, queen.PushItem{Queue: queue, Partition: it.Part, Payload: b, TransactionID: fmt.Sprintf("t-%s-%d", it.Part, it.Seq)})
	}
	for len(batch) > 0 {
		n := min(len(batch), 500)
		res, err := e.client.Push(context.Background(), batch[:n])
		if err != nil {
			e.t.Fatalf("push: %v", err)
		}
		for _, r := range res {
			if !r.Stored() {
				e.t.Fatalf("push: item not stored: %+v", r)
			}
		}
		batch = batch[n:]
	}
}

// out is one egress message.
type out struct {
	item
	Gate struct {
		Graph string `json:"graph"`
		Path  string `json:"path"`
		Hop   int    `json:"hop"`
		Node  string `json:"node"`
		At    int64  `json:"at"`
	} `json:"_gate"`
	Txn       string
	Partition string
	Created   time.Time
}

// egress reads every message of queue, per partition in offset order.
func (e *env) egress(queue string) []out {
	var all []out
	for _, p := range e.mini.Partitions(queue) {
		for _, m := range e.mini.Messages(queue, p) {
			var o out
			if err := json.Unmarshal(m.Data, &o); err != nil {
				e.t.Fatalf("egress payload %s: %v", m.Data, err)
			}
			o.Txn, o.Partition, o.Created = m.TransactionID, p, m.CreatedAt
			all = append(all, o)
		}
	}
	return all
}

func (e *env) egressCount(queue string) int {
	n := 0
	for _, p := range e.mini.Partitions(queue) {
		n += len(e.mini.Messages(queue, p))
	}
	return n
}

// checkOnceInOrder asserts that egress holds each pushed (part, seq) exactly
// once and, per partition, in push order.
func checkOnceInOrder(t *testing.T, got []out, want map[string][]int) {
	t.Helper()
	per := map[string][]int{}
	for _, o := range got {
		if o.Part != o.Partition {
			t.Fatalf("item %d of partition %q left on partition %q: partitions must pass through unchanged", o.Seq, o.Part, o.Partition)
		}
		per[o.Part] = append(per[o.Part], o.Seq)
	}
	for p, seqs := range want {
		g := per[p]
		if len(g) != len(seqs) {
			t.Fatalf("partition %s: %d items left, want %d (%v)", p, len(g), len(seqs), summarize(g))
		}
		for i := range seqs {
			if g[i] != seqs[i] {
				t.Fatalf("partition %s: position %d holds item %d, want %d: order inside a partition broke (%v)", p, i, g[i], seqs[i], summarize(g))
			}
		}
	}
	for p := range per {
		if _, ok := want[p]; !ok {
			t.Fatalf("unexpected partition %q on egress", p)
		}
	}
}

func summarize(s []int) string {
	if len(s) > 20 {
		return fmt.Sprint(s[:20]) + "…"
	}
	return fmt.Sprint(s)
}

// recorder keeps what the observers saw.
type recorder struct {
	mu      sync.Mutex
	writes  []write
	settles []stage.Settled
}

type write struct {
	Key       string
	Delta     int64
	Post      int64
	ExpiresAt time.Time
}

func (r *recorder) applied(key string, delta, post int64, exp time.Time) {
	r.mu.Lock()
	r.writes = append(r.writes, write{key, delta, post, exp})
	r.mu.Unlock()
}

func (r *recorder) settled(s stage.Settled) {
	r.mu.Lock()
	r.settles = append(r.settles, s)
	r.mu.Unlock()
}

// settledAt is how many items the stages of graph at node have reported
// settled. A stage reports a claim's counter writes before its settle, so
// once the terminal node's settles cover every item, no write is still on
// its way here (the egress can show a claim's items a moment earlier).
func (r *recorder) settledAt(graph, node string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.settles {
		if s.Graph == graph && s.Node == node {
			n += s.Items
		}
	}
	return n
}

func (r *recorder) snapshot() ([]write, []stage.Settled) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]write(nil), r.writes...), append([]stage.Settled(nil), r.settles...)
}

// worstSpan is the most timestamps inside any half-open span of length d.
func worstSpan(ts []time.Time, d time.Duration) int {
	s := append([]time.Time(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	best, j := 0, 0
	for i := range s {
		for s[i].Sub(s[j]) >= d {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// A relay that logs after its test ended (still stopping against a slower
// broker) must not log through the ended test, which panics the test
// binary once no parent test runs: the test's log writer hands late lines
// to stderr.
func TestALogLineAfterTheTestEndedDoesNotReachTheTest(t *testing.T) {
	t.Parallel()
	ended := &endedT{}
	w := &tWriter{t: ended}
	_, _ = w.Write([]byte("while the test runs\n"))
	w.close() // the test's cleanup
	ended.over = true
	if _, err := w.Write([]byte("a line after the test ended\n")); err != nil {
		t.Fatal(err)
	}
	if ended.lines != 1 {
		t.Fatalf("the test got %d lines, want only the one written while it ran", ended.lines)
	}
}

// endedT is a test's log that panics, as testing does for a top-level test,
// when written after the test is over.
type endedT struct {
	over  bool
	lines int
}

func (e *endedT) Log(args ...any) {
	if e.over {
		panic("Log in goroutine after the test has completed")
	}
	e.lines++
}
