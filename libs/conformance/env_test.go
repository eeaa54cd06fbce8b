package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/capability"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/queen"
)

// env is one test's broker, client and names.
type env struct {
	*gatetest.Broker
	c   *queen.Client
	ctx context.Context
	ns  string
}

// newEnv returns the broker for t (miniqueen unless GATE_TEST_QUEEN_URL is
// set, or a broker stood in for t's test, see standIn) with a client and a
// namespace/queue prefix of t's own.
func newEnv(t *testing.T) *env {
	t.Helper()
	var b *gatetest.Broker
	if url, ok := standIn(t); ok {
		b = &gatetest.Broker{URL: url, Source: gatetest.SourceEnv, Prefix: gatetest.Prefix(t)}
	} else {
		b = gatetest.NewBroker(t)
	}
	// The relay's transport (queen.SyncTransport): the suite holds the
	// broker to what the relay's calls need, over the calls it makes.
	tr := queen.NewSyncTransport(queen.NewTransport())
	t.Cleanup(tr.CloseIdleConnections)
	c, err := queen.New(b.URL, queen.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatalf("queen.New(%q): %v", b.URL, err)
	}
	return &env{Broker: b, c: c, ctx: t.Context(), ns: b.Namespace()}
}

// real reports whether the broker is not the in-process fake.
func (e *env) real() bool { return e.Mini == nil }

// ---- what the broker has ----

// probes caches one capability probe per broker URL: the suite asks each
// broker once what it has.
var probes sync.Map // URL → *probed

type probed struct {
	once sync.Once
	rep  capability.Report
}

// capabilities is what e's broker has (libs/capability), probed once per
// broker for the whole suite.
func (e *env) capabilities(t *testing.T) capability.Report {
	t.Helper()
	v, _ := probes.LoadOrStore(e.URL, &probed{})
	p := v.(*probed)
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.rep = capability.Probe(ctx, e.c, capability.Options{Namespace: "conformance", Owner: "conformance"})
	})
	return p.rep
}

// needs says what t tests beyond the wire every broker speaks, and skips t
// with that reason when the broker lacks it: kv incr with max, transaction
// riders, the depth route. Against the in-process miniqueen, which has
// everything, a lack is a failure, never a skip.
func (e *env) needs(t *testing.T, ns ...capability.Need) {
	t.Helper()
	rep := e.capabilities(t)
	for _, n := range ns {
		switch verdict, reason := judgeNeed(rep, n, !e.real()); verdict {
		case needFail:
			t.Fatal(reason)
		case needSkip:
			t.Skip(reason)
		}
	}
}

// has reports whether e's broker has n (for a side check that must not
// decide a test about something else).
func (e *env) has(t *testing.T, n capability.Need) bool {
	t.Helper()
	present, _ := e.capabilities(t).Has(n)
	return present || !e.real()
}

// needVerdict is what needs does with one need.
type needVerdict int

const (
	needRun needVerdict = iota
	needSkip
	needFail
)

// judgeNeed decides one need of a test against a broker's report:
// present runs; absent skips naming the need, what the broker answered
// and the fix, unless the broker is the in-process miniqueen (fail: it
// must have everything); a probe that could not finish fails (the broker
// did not answer, so the test could not have run either).
func judgeNeed(rep capability.Report, n capability.Need, inProcess bool) (needVerdict, string) {
	present, known := rep.Has(n)
	switch {
	case present:
		return needRun, ""
	case !known:
		return needFail, fmt.Sprintf("the capability probe of %s could not finish (%v), so whether it has %s is unknown", rep.URL, rep.Err, n.What())
	}
	var c capability.Check
	for _, ch := range rep.Checks {
		if ch.Need == n {
			c = ch
		}
	}
	if inProcess {
		return needFail, fmt.Sprintf("miniqueen lacks %s (%s): it must have everything Gate needs", n.What(), c.Problem)
	}
	version := rep.Version
	if version == "" {
		version = "unknown"
	}
	return needSkip, fmt.Sprintf("needs %s, which the broker at %s (version %s) lacks: %s; %s", n.What(), rep.URL, version, c.Problem, c.Fix)
}

// standIns maps a test name prefix to the URL of a broker that stands in
// for the real one in the tests under it (TestTheSuiteSkipsWhatABrokerLacks
// runs suite tests against a miniqueen switched to an older broker's
// behaviour, as GATE_TEST_QUEEN_URL would).
var standIns sync.Map // prefix → URL

// standIn is the stand-in broker's URL for t, if one is registered.
func standIn(t *testing.T) (string, bool) {
	var url string
	standIns.Range(func(k, v any) bool {
		if strings.HasPrefix(t.Name(), k.(string)) {
			url = v.(string)
			return false
		}
		return true
	})
	return url, url != ""
}

// elapse lets d of broker time pass: on miniqueen it moves the injected clock
// (instant); on a real broker wall time has to pass, so it sleeps. It waits
// for broker time, never to synchronise with a goroutine, and the fake path
// never sleeps here.
func (e *env) elapse(d time.Duration) {
	if e.Mini != nil {
		e.Mini.FastForward(d)
		return
	}
	time.Sleep(d)
}

// ---- pushing and claiming ----

// push stores payloads on (queue, partition) in one call, each with the
// transaction id "<partition>-<payload without punctuation>" (e.g. "p-n3" for
// {"n":3} on p), and fails t unless every item is queued.
func (e *env) push(t *testing.T, queue, partition string, payloads ...string) []queen.PushResult {
	t.Helper()
	items := make([]queen.PushItem, len(payloads))
	for i, p := range payloads {
		items[i] = queen.PushItem{Queue: queue, Partition: partition, Payload: json.RawMessage(p), TransactionID: fmt.Sprintf("%s-%s", partitionOr(partition), txnOf(p))}
	}
	res, err := e.c.Push(e.ctx, items)
	if err != nil {
		t.Fatalf("push to %s/%s: %v", queue, partition, err)
	}
	for i, r := range res {
		if r.Status != queen.PushQueued {
			t.Fatalf("push %s/%s item %d: status %q, want queued", queue, partition, i, r.Status)
		}
	}
	return res
}

func partitionOr(p string) string {
	if p == "" {
		return "Default"
	}
	return p
}

// txnOf derives a stable transaction id from a payload such as `{"n":3}`.
func txnOf(payload string) string {
	r := strings.NewReplacer(`"`, "", "{", "", "}", "", ":", "", ",", "_", " ", "")
	return r.Replace(payload)
}

// msg returns a payload `{"n":i}`.
func msg(i int) string { return fmt.Sprintf(`{"n":%d}`, i) }

// msgs returns payloads {"n":from} … {"n":to}.
func msgs(from, to int) []string {
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, msg(i))
	}
	return out
}

// pop claims with req (subscriptionMode all unless set) and fails t on error.
func (e *env) pop(t *testing.T, req queen.PopRequest) queen.Claim {
	t.Helper()
	if req.SubscriptionMode == "" && req.SubscriptionFrom == "" {
		req.SubscriptionMode = queen.SubscribeAll
	}
	c, err := e.c.Pop(e.ctx, req)
	if err != nil {
		t.Fatalf("pop %+v: %v", req, err)
	}
	return c
}

// popWait long-polls up to timeout for a non-empty claim.
func (e *env) popWait(t *testing.T, req queen.PopRequest, timeout time.Duration) queen.Claim {
	t.Helper()
	req.Wait, req.Timeout = true, timeout
	return e.pop(t, req)
}

// numbers returns the payload numbers ("n") of a claim in delivery order.
func numbers(t *testing.T, c queen.Claim) []int {
	t.Helper()
	out := make([]int, len(c.Messages))
	for i, m := range c.Messages {
		var v struct{ N int }
		if err := json.Unmarshal(m.Data, &v); err != nil {
			t.Fatalf("message %s data %s: %v", m.ID, m.Data, err)
		}
		out[i] = v.N
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ack settles one message and fails t on a transport/HTTP error (a
// success:false verdict is returned for the caller to check).
func (e *env) ack(t *testing.T, a queen.AckItem) queen.AckResult {
	t.Helper()
	r, err := e.c.Ack(e.ctx, a)
	if err != nil {
		t.Fatalf("ack %+v: %v", a, err)
	}
	return r
}

// depth reads the depth route and fails t on error (a test of the depth
// route itself: it needs capability.Depth).
func (e *env) depth(t *testing.T, queue, group string) queen.Depth {
	t.Helper()
	d, err := e.c.Depth(e.ctx, queue, group)
	if err != nil {
		t.Fatalf("depth %s group %q: %v", queue, group, err)
	}
	return d
}

// sideDepth reads the depth route for a side check of a test about
// something else: false (and a log line) when the broker has no depth
// route or the read fails, so the side check never masks the behaviour
// under test; its caller reports a wrong figure with Errorf.
func (e *env) sideDepth(t *testing.T, queue, group string) (queen.Depth, bool) {
	t.Helper()
	if !e.has(t, capability.Depth) {
		t.Logf("side check skipped: the broker has no depth route")
		return queen.Depth{}, false
	}
	d, err := e.c.Depth(e.ctx, queue, group)
	if err != nil {
		t.Errorf("side check: depth %s group %q: %v", queue, group, err)
		return queen.Depth{}, false
	}
	return d, true
}

// partDepth returns one partition's figures from d (zero if absent).
func partDepth(d queen.Depth, partition string) queen.PartitionDepth {
	for _, p := range d.Partitions {
		if p.Partition == partition {
			return p
		}
	}
	return queen.PartitionDepth{Partition: partition}
}

// configure sets the complete option set of queue ("mode":"replace", which a
// 1.0.x broker does anyway and a ≥ 1.6 broker honours).
func (e *env) configure(t *testing.T, queue string, o queen.QueueOptions) queen.QueueConfig {
	t.Helper()
	cfg, err := e.c.Configure(e.ctx, queen.ConfigureRequest{Queue: queue, Options: o, Mode: "replace"})
	if err != nil {
		t.Fatalf("configure %s: %v", queue, err)
	}
	return cfg
}

// ---- KV ----

// kv runs a KV batch and fails t on a transport/HTTP error.
func (e *env) kv(t *testing.T, ops ...queen.KVOp) queen.KVResponse {
	t.Helper()
	r, err := e.c.KV(e.ctx, ops...)
	if err != nil {
		t.Fatalf("kv %v: %v", ops, err)
	}
	return r
}

// kv1 runs one KV op and returns its result, failing t on a refusal envelope.
func (e *env) kv1(t *testing.T, op queen.KVOp) queen.KVResult {
	t.Helper()
	r := e.kv(t, op)
	if r.Refusal != nil {
		t.Fatalf("kv %+v refused as a whole: %v", op, r.Refusal)
	}
	return r.Results[0]
}

// get reads one key through the batch route.
func (e *env) get(t *testing.T, key string) queen.KVResult {
	t.Helper()
	return e.kv1(t, queen.KVGet(e.ns, key))
}

// counter asserts key reads as the live counter want (0 = absent).
func (e *env) counter(t *testing.T, key string, want int64) {
	t.Helper()
	g := e.get(t, key)
	if want == 0 {
		if g.Found {
			n, _ := g.Int64()
			t.Fatalf("key %s found with value %d, want absent", key, n)
		}
		return
	}
	if !g.Found {
		t.Fatalf("key %s absent, want %d", key, want)
	}
	if n, err := g.Int64(); err != nil || n != want {
		t.Fatalf("key %s = %s (err %v), want %d", key, g.Value, err, want)
	}
}

// intOf reads a result's value as an integer.
func intOf(t *testing.T, r queen.KVResult) int64 {
	t.Helper()
	n, err := r.Int64()
	if err != nil {
		t.Fatalf("result %+v: %v", r, err)
	}
	return n
}

// incr is KVIncr in the test's namespace.
func (e *env) incr(key string, delta int64, o queen.IncrOpts) queen.KVOp {
	return queen.KVIncr(e.ns, key, delta, o)
}

// ---- raw wire ----

// raw sends a request verbatim through the client and fails t when no answer
// arrives.
func (e *env) raw(t *testing.T, method, path, body string) queen.RawResponse {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	r, err := e.c.Do(e.ctx, method, path, b)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// rawJSON sends a request, wants status, and decodes the body with UseNumber.
func (e *env) rawJSON(t *testing.T, method, path, body string, status int) any {
	t.Helper()
	r := e.raw(t, method, path, body)
	if r.Status != status {
		t.Fatalf("%s %s %s: HTTP %d, want %d; body %s", method, path, body, r.Status, status, r.Body)
	}
	return decodeNumbers(t, r.Body)
}

// decodeNumbers decodes JSON keeping numbers as json.Number.
func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// obj indexes a decoded JSON value by object keys and array indexes, e.g.
// obj(t, v, "results", 0, "value"); it fails t when the path is missing.
func obj(t *testing.T, v any, path ...any) any {
	t.Helper()
	cur := v
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", path, cur)
			}
			next, ok := m[k]
			if !ok {
				t.Fatalf("at %v: key %q absent in %v", path, k, m)
			}
			cur = next
		case int:
			a, ok := cur.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: %v has no element %d", path, cur, k)
			}
			cur = a[k]
		}
	}
	return cur
}

// has reports whether the decoded object m has key.
func has(v any, key string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[key]
	return ok
}

// wantBadRequest asserts err is a 400 whose reason is one of reasons.
func wantBadRequest(t *testing.T, err error, reasons ...string) {
	t.Helper()
	if !queen.IsBadRequest(err) {
		t.Fatalf("err = %v, want HTTP 400 (%v)", err, reasons)
	}
	got := queen.ReasonOf(err)
	for _, r := range reasons {
		if got == r {
			return
		}
	}
	t.Fatalf("400 reason %q, want one of %v (err %v)", got, reasons, err)
}
