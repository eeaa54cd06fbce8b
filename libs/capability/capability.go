package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// Need is one thing Gate needs of its broker.
type Need string

const (
	// KV is the kv store with incr honouring max: every budget counter.
	KV Need = "kv"
	// Riders is the transaction's top-level kv array (queen-wire §7):
	// the charge riding the settle. Optional: without it admission charges
	// with a kv call before the settle.
	Riders Need = "riders"
	// Depth is GET /api/v1/resources/queues/:queue/depth: the backlogs
	// (waitingForBudget, waitingForWorkers) and the ETA.
	Depth Need = "depth"
	// Ack is the cumulative ack: in a transaction, the completed ack of a
	// claim's last message settles every message before it and releases
	// the claim's lease (one ack per settle, and a partition claimable at
	// once after it).
	Ack Need = "ack"
)

// Needs lists every need in the order a Report checks them.
var Needs = []Need{KV, Riders, Depth, Ack}

// what is each need in words.
var what = map[Need]string{
	KV:     "kv incr with max (the budget counters)",
	Riders: "transaction riders (the charge riding the settle)",
	Depth:  "the depth route (backlogs and ETAs)",
	Ack:    "the cumulative ack that settles a whole claim and releases its lease",
}

// Required reports whether Gate cannot run without n (every need but
// Riders).
func (n Need) Required() bool { return n != Riders }

// What is n in words.
func (n Need) What() string { return what[n] }

// Check is one need as a probe found it.
type Check struct {
	Need Need
	// Present says the broker has it.
	Present bool
	// Problem is what the broker answered when it lacks it; Fix says how
	// to get it.
	Problem, Fix string
}

// Report is one probe of a broker.
type Report struct {
	// At is when the probe finished.
	At time.Time
	// URL and Version are the broker's address and the version its
	// /health reports ("" when it reports none).
	URL, Version string
	// Checks are the needs the probe decided, in Needs order.
	Checks []Check
	// Err is set when the probe could not finish because the broker did
	// not answer (a transport failure, a 5xx, a timeout): the needs it did
	// not reach are unknown, not missing.
	Err error
}

// Has reports whether the broker has n, and whether the probe decided it.
func (r Report) Has(n Need) (present, known bool) {
	for _, c := range r.Checks {
		if c.Need == n {
			return c.Present, true
		}
	}
	return false, false
}

// Missing is the required needs the broker lacks.
func (r Report) Missing() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Present && c.Need.Required() {
			out = append(out, c)
		}
	}
	return out
}

// OK reports whether the probe found nothing required missing (a probe
// that could not finish is not OK either: nothing is known).
func (r Report) OK() bool { return r.Err == nil && len(r.Missing()) == 0 }

// Problem is one sentence naming every required need the broker lacks,
// what it answered and the fix; "" when nothing is missing.
func (r Report) Problem() string {
	miss := r.Missing()
	if len(miss) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the broker at %s", r.URL)
	if r.Version != "" {
		fmt.Fprintf(&b, " (version %s)", r.Version)
	}
	b.WriteString(" is not the broker Gate needs: it lacks ")
	for i, c := range miss {
		if i > 0 {
			b.WriteString("; and ")
		}
		fmt.Fprintf(&b, "%s (%s): %s", c.Need.What(), c.Problem, c.Fix)
	}
	return b.String()
}

// Wire is the report as /health shows it: every need decided, present or
// not.
func (r Report) Wire() []wire.BrokerNeed {
	out := make([]wire.BrokerNeed, 0, len(r.Checks))
	for _, c := range r.Checks {
		out = append(out, wire.BrokerNeed{Need: string(c.Need), What: c.Need.What(), Present: c.Present,
			Required: c.Need.Required(), Problem: c.Problem, Fix: c.Fix})
	}
	return out
}

// Options say where a probe writes: the kv namespace of Gate's counters
// and who probes (a relay replica id, a gate-api process), which names its
// scratch partition and keys (libs/plan's ProbeQueue, ProbePartition,
// ProbeKey).
type Options struct {
	Namespace string
	Owner     string
	// Now is the clock of Report.At (nil: time.Now).
	Now func() time.Time
}

// The fixes, each naming the version or the knob.
const (
	fixKV       = "run Queen 1.0.4 or newer with its kv store on (1.0.4 needs QUEEN_KV_ENABLED=true; later releases always have it) and point QUEEN_URL at it"
	fixKVOff    = "the broker's operator switched kv off (kv_disabled): switch it back on"
	fixRiders   = "none needed: admission charges with a kv call before each settle instead (GATE_ADMISSION=separate does so from the start); a Queen with transaction riders lets the charge ride the settle"
	fixDepth    = "run Queen 1.0.4 or newer (GET /api/v1/resources/queues/:queue/depth): gate-api's backlog figures and ETAs need it"
	fixAck      = "run Queen 1.0.4 or newer: Gate settles a claim with one ack of its last message, which must settle the whole claim and release its lease (Queen 0.15 releases a lease only after one ack per message, so every partition would stay leased until its lease lapses)"
	probeLeaseS = 30
)

// Probe checks every need of c's broker, in Needs order. A broker that
// does not answer ends the probe with Report.Err set and the remaining
// needs unknown.
func Probe(ctx context.Context, c *queen.Client, o Options) Report {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	// The run id names this run's scratch partition and keys: a nonce, not
	// a time (an injected clock can repeat itself).
	run := rand.Int64N(1 << 62)
	r := Report{URL: c.BaseURL()}
	if h, err := c.Health(ctx); err == nil {
		r.Version = h.Version
	}
	steps := []func(context.Context, *queen.Client, Options, int64) (Check, error){probeKV, probeRiders, probeDepth, probeAck}
	for _, step := range steps {
		ch, err := step(ctx, c, o, run)
		if err != nil {
			r.Err = err
			break
		}
		r.Checks = append(r.Checks, ch)
	}
	r.At = now()
	return r
}

// unanswered reports an error that says nothing about the broker's
// capabilities: no answer, a cut one, a 5xx (other than a kv_disabled
// 503), a timeout.
func unanswered(err error) bool {
	if err == nil {
		return false
	}
	st := queen.StatusOf(err)
	if st == 0 {
		return true
	}
	if queen.CodeOf(err) == "kv_disabled" || queen.ReasonOf(err) == "kv_disabled" {
		return false
	}
	return st >= 500 || st == 429
}

func probeKV(ctx context.Context, c *queen.Client, o Options, run int64) (Check, error) {
	ch := Check{Need: KV, Fix: fixKV}
	fits, over := plan.ProbeKey(o.Owner, run, "fits"), plan.ProbeKey(o.Owner, run, "over")
	res, err := c.KV(ctx,
		queen.KVIncr(o.Namespace, fits, 1, queen.IncrOpts{TTLSeconds: 5, Max: queen.Int(1)}),
		queen.KVIncr(o.Namespace, over, 2, queen.IncrOpts{TTLSeconds: 5, Max: queen.Int(1)}))
	switch {
	case unanswered(err):
		return ch, fmt.Errorf("probing kv: %w", err)
	case err != nil:
		if queen.CodeOf(err) == "kv_disabled" || queen.ReasonOf(err) == "kv_disabled" {
			ch.Fix = fixKVOff
		}
		ch.Problem = short(err)
		return ch, nil
	case res.Refusal != nil:
		ch.Problem = "two incrs were refused as a whole: " + res.Refusal.Error()
		return ch, nil
	case len(res.Results) != 2:
		ch.Problem = fmt.Sprintf("two incrs answered %d results", len(res.Results))
		return ch, nil
	}
	if v, err := res.Results[0].Int64(); !res.Results[0].Applied || err != nil || v != 1 {
		ch.Problem = fmt.Sprintf("an incr of 1 with max 1 on a new key answered applied %v, value %s", res.Results[0].Applied, res.Results[0].Value)
		return ch, nil
	}
	if res.Results[1].Applied {
		ch.Problem = fmt.Sprintf("an incr of 2 with max 1 applied (value %s): the broker ignores max, so no ceiling would hold", res.Results[1].Value)
		return ch, nil
	}
	ch.Present = true
	return ch, nil
}

func probeRiders(ctx context.Context, c *queen.Client, o Options, run int64) (Check, error) {
	ch := Check{Need: Riders, Fix: fixRiders}
	lim := &budget.Limiter{KV: c, NS: o.Namespace}
	err := lim.ProbeRiders(ctx, c, plan.ProbeKey(o.Owner, run, "riders"))
	var qe *queen.Error
	answered := errors.As(err, &qe)
	switch {
	case err == nil:
		ch.Present = true
	case errors.Is(err, budget.ErrRidersIgnored):
		ch.Problem = "a riders-only transaction committed without an applied rider slot: the broker does not read the kv array"
	case answered && !unanswered(qe):
		ch.Problem = "a riders-only transaction: " + short(qe)
	case strings.Contains(err.Error(), "rolled back"):
		ch.Problem = err.Error()
	default:
		return ch, fmt.Errorf("probing transaction riders: %w", err)
	}
	return ch, nil
}

func probeDepth(ctx context.Context, c *queen.Client, o Options, run int64) (Check, error) {
	ch := Check{Need: Depth, Fix: fixDepth}
	// The queue exists once something was pushed to it: a 404 then means
	// the route, not the queue.
	if _, err := c.Push(ctx, []queen.PushItem{{Queue: plan.ProbeQueue, Partition: plan.ProbePartition(o.Owner, run), Payload: json.RawMessage(`{"probe":"depth"}`), TransactionID: plan.ProbeKey(o.Owner, run, "d")}}); err != nil {
		if unanswered(err) {
			return ch, fmt.Errorf("probing the depth route (a push to %s): %w", plan.ProbeQueue, err)
		}
		ch.Problem = "a push to the scratch queue: " + short(err)
		return ch, nil
	}
	_, err := c.Depth(ctx, plan.ProbeQueue, plan.ProbeGroup)
	switch {
	case err == nil:
		ch.Present = true
	case unanswered(err):
		return ch, fmt.Errorf("probing the depth route: %w", err)
	default:
		ch.Problem = short(err)
	}
	return ch, nil
}

// probeAck settles a claim of two messages the way a relay does — one
// completed ack of its last message in a transaction — and then wants the
// partition claimable at once, starting after both.
func probeAck(ctx context.Context, c *queen.Client, o Options, run int64) (Check, error) {
	ch := Check{Need: Ack, Fix: fixAck}
	part := plan.ProbePartition(o.Owner, run)
	push := func(tag string) error {
		_, err := c.Push(ctx, []queen.PushItem{{Queue: plan.ProbeQueue, Partition: part, Payload: json.RawMessage(`{"probe":"` + tag + `"}`), TransactionID: plan.ProbeKey(o.Owner, run, tag)}})
		return err
	}
	pop := func(batch int, wait time.Duration) (queen.Claim, error) {
		return c.Pop(ctx, queen.PopRequest{Queue: plan.ProbeQueue, Partition: part, ConsumerGroup: plan.ProbeGroup, Batch: batch,
			Wait: wait > 0, Timeout: wait, LeaseSeconds: probeLeaseS, SubscriptionMode: queen.SubscribeAll})
	}
	fail := func(step string, err error) (Check, error) {
		if unanswered(err) {
			return ch, fmt.Errorf("probing the ack (%s): %w", step, err)
		}
		ch.Problem = step + ": " + short(err)
		return ch, nil
	}
	if err := push("a1"); err != nil {
		return fail("a push to the scratch queue", err)
	}
	if err := push("a2"); err != nil {
		return fail("a push to the scratch queue", err)
	}
	// The depth probe's message is the partition's first; claim it with
	// the two and ack only the last of the three.
	claim, err := pop(3, 2*time.Second)
	if err != nil {
		return fail("a pop of the scratch partition", err)
	}
	if len(claim.Messages) != 3 {
		ch.Problem = fmt.Sprintf("a pop of a partition holding 3 messages claimed %d", len(claim.Messages))
		return ch, nil
	}
	last := claim.Messages[2]
	res, err := c.Transact(ctx, (&queen.Transaction{}).Ack(last.AckItem(queen.AckCompleted, "")))
	if err != nil {
		return fail("a settle acking the claim's last message", err)
	}
	if !res.Success {
		ch.Problem = "a settle acking the claim's last message was rolled back: " + res.Refusal.Error()
		return ch, nil
	}
	if err := push("a3"); err != nil {
		return fail("a push to the scratch queue", err)
	}
	next, err := pop(3, 2*time.Second)
	if err != nil {
		return fail("a pop after the settle", err)
	}
	switch {
	case len(next.Messages) == 0:
		ch.Problem = "after one ack of a claim's last message the partition stayed leased (the broker releases a lease only once every message of the claim was acked)"
	case next.Messages[0].TransactionID != plan.ProbeKey(o.Owner, run, "a3"):
		ch.Problem = "after one ack of a claim's last message the messages before it came back (the broker's ack is not cumulative)"
	default:
		ch.Present = true
	}
	if len(next.Messages) > 0 {
		end := next.Messages[len(next.Messages)-1]
		_, _ = c.Transact(ctx, (&queen.Transaction{}).Ack(end.AckItem(queen.AckCompleted, "")))
	}
	return ch, nil
}

// short is err's text without the client's "queen: " prefix.
func short(err error) string { return strings.TrimPrefix(err.Error(), "queen: ") }
