package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// peek returns the payload numbers stored on (queue, partition), read by a
// consumer group nobody else uses (so it starts at the head and sees all).
func (e *env) peek(t *testing.T, queue, partition string) []int {
	t.Helper()
	c := e.pop(t, queen.PopRequest{Queue: queue, Partition: partition, ConsumerGroup: e.Group("peek-" + queen.NewTransactionID()[24:]), Batch: 1000})
	return numbers(t, c)
}

// item builds a push item carrying payload {"n":n}.
func item(queue, partition, txn string, n int) queen.PushItem {
	return queen.PushItem{Queue: queue, Partition: partition, TransactionID: txn, Payload: json.RawMessage(msg(n))}
}

// §12.14 — plain push dedup.

func TestSemantic14_RepeatedTransactionIDOnTheSamePartitionIsADuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	first, err := e.c.Push(e.ctx, []queen.PushItem{item(q, "p", "evt-7f3a", 1)})
	if err != nil || first[0].Status != queen.PushQueued || first[0].MessageID == "" {
		t.Fatalf("first push: %+v %v", first, err)
	}
	body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":"p","payload":{"n":2},"transactionId":"evt-7f3a"}]}`, q)
	v := e.rawJSON(t, http.MethodPost, "/api/v1/push", body, http.StatusCreated)
	if obj(t, v, 0, "status") != "duplicate" || obj(t, v, 0, "message_id") != first[0].MessageID {
		t.Errorf("repeat push: %v, want status duplicate carrying the original message_id %s", v, first[0].MessageID)
	}
	other, err := e.c.Push(e.ctx, []queen.PushItem{item(q, "p2", "evt-7f3a", 3)})
	if err != nil || other[0].Status != queen.PushQueued || other[0].MessageID == first[0].MessageID {
		t.Errorf("same transactionId on another partition: %+v %v, want queued as a new message", other, err)
	}
	in, err := e.c.Push(e.ctx, []queen.PushItem{item(q, "p3", "evt-9", 4), item(q, "p3", "evt-9", 5)})
	if err != nil {
		t.Fatal(err)
	}
	if in[0].Status != queen.PushQueued || in[1].Status != queen.PushDuplicate || in[1].MessageID != in[0].MessageID {
		t.Errorf("repeat inside one request: %+v, want [queued, duplicate with the first's id]", in)
	}
	for p, want := range map[string][]int{"p": {1}, "p2": {3}, "p3": {4}} {
		if got := e.peek(t, q, p); !equalInts(got, want) {
			t.Errorf("partition %s holds %v, want %v", p, got, want)
		}
	}
}

func TestSemantic14_DedupWindowEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	e.configure(t, q, queen.QueueOptions{DedupWindowSeconds: queen.Int(1)})
	first, err := e.c.Push(e.ctx, []queen.PushItem{item(q, "p", "evt-1", 1)})
	if err != nil || first[0].Status != queen.PushQueued {
		t.Fatalf("first push: %+v %v", first, err)
	}
	e.elapse(2500 * time.Millisecond)
	again, err := e.c.Push(e.ctx, []queen.PushItem{item(q, "p", "evt-1", 2)})
	if err != nil || again[0].Status != queen.PushQueued || again[0].MessageID == first[0].MessageID {
		t.Errorf("same transactionId after a 1 s dedup window: %+v %v, want queued as a new message", again, err)
	}
}

// §12.23 — queues and partitions are implicit; configure replaces; defaults.

func TestSemantic23_FirstPushCreatesTheQueueAndTheDefaultPartition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	if _, err := e.c.Queue(e.ctx, q); !queen.IsNotFound(err) {
		t.Fatalf("detail of a never-used queue: %v, want 404", err)
	}
	res, err := e.c.Push(e.ctx, []queen.PushItem{{Queue: q, Payload: json.RawMessage(msg(1)), TransactionID: "t1"}})
	if err != nil || res[0].Status != queen.PushQueued {
		t.Fatalf("push to a new queue: %+v %v", res, err)
	}
	e.push(t, q, "acme", msg(2))
	info, err := e.c.Queue(e.ctx, q)
	if err != nil {
		t.Fatalf("detail after the first push: %v", err)
	}
	names := map[string]bool{}
	for _, p := range info.Partitions {
		names[p.Name] = true
	}
	if !names["Default"] || !names["acme"] || len(names) != 2 {
		t.Errorf("partitions %v, want Default and acme", info.Partitions)
	}
	c := e.pop(t, queen.PopRequest{Queue: q, Partition: "Default", ConsumerGroup: e.Group("g"), Batch: 10})
	if len(c.Messages) != 1 || c.Messages[0].Partition != "Default" {
		t.Errorf("pop of Default: %+v, want the partition-less push there", c.Messages)
	}
}

func TestSemantic23_ConfigureReplacesTheOptionSetAndFillsDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	def := e.configure(t, q, queen.QueueOptions{})
	checkOpts := func(what string, got queen.QueueOptions, lease, retries int64) {
		t.Helper()
		if got.LeaseTime.Value != lease || got.RetryLimit.Value != retries || !got.DeadLetterQueue.Value {
			t.Errorf("%s: leaseTime %v retryLimit %v deadLetterQueue %v, want %d / %d / true", what, got.LeaseTime, got.RetryLimit, got.DeadLetterQueue, lease, retries)
		}
	}
	checkOpts("configure with no options", def.Options, 300, 3)
	checkOpts("configure leaseTime 10 retryLimit 5", e.configure(t, q, queen.QueueOptions{LeaseTime: queen.Int(10), RetryLimit: queen.Int(5)}).Options, 10, 5)
	// The complete option set is replaced: retryLimit goes back to 3. (1.0.x
	// always replaces; ≥ 1.6 merges unless "mode":"replace", which we send.)
	checkOpts("configure leaseTime 20 only", e.configure(t, q, queen.QueueOptions{LeaseTime: queen.Int(20)}).Options, 20, 3)

	// The stored leaseTime is what a pop without leaseSeconds gets.
	e.push(t, q, "p", msg(1))
	if got := leaseLength(t, e, q); got < 18*time.Second || got > 25*time.Second {
		t.Errorf("lease of a pop without leaseSeconds on a leaseTime-20 queue: %v, want ≈ 20s", got)
	}
}

// DLQ-on by default is the Rust broker's SQL default; older docs and SDK
// defaults say off and 1.0.x is unconfirmed (§13.12). We follow the broker.
func TestSemantic23_ImplicitQueueLeasesFor300sAndDeadLettersAfter3Retries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	if got := leaseLength(t, e, q); got < 290*time.Second || got > 310*time.Second {
		t.Errorf("default lease %v, want ≈ 300s", got)
	}
	e.push(t, q, "p2", msg(2))
	for delivery := 1; delivery <= 4; delivery++ {
		c := e.popWait(t, queen.PopRequest{Queue: q, Partition: "p2", ConsumerGroup: g, Batch: 1}, 5*time.Second)
		if !equalInts(numbers(t, c), []int{2}) {
			t.Fatalf("delivery %d: %v, want [2]", delivery, numbers(t, c))
		}
		r := e.ack(t, c.Messages[0].AckItem(queen.AckFailed, "x"))
		if r.DLQ != (delivery == 4) {
			t.Fatalf("failed ack #%d: dlq=%v, want %v (default retryLimit 3, DLQ on)", delivery, r.DLQ, delivery == 4)
		}
	}
}

// leaseLength claims the head of partition "p" of queue without leaseSeconds
// and measures the lease against the message's createdAt, using a 1 s extend
// that (never shortening) reports the current expiry.
func leaseLength(t *testing.T, e *env, queue string) time.Duration {
	t.Helper()
	c := e.pop(t, queen.PopRequest{Queue: queue, Partition: "p", ConsumerGroup: e.Group("lease-probe"), Batch: 1})
	if len(c.Messages) != 1 {
		t.Fatal("nothing to claim for the lease probe")
	}
	ext, err := e.c.ExtendLease(e.ctx, c.LeaseID, time.Second)
	if err != nil || !ext.Success {
		t.Fatalf("extend: %+v %v", ext, err)
	}
	exp, err := ext.ExpiresAt.Time()
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.Messages[0].CreatedAt.Time()
	if err != nil {
		t.Fatal(err)
	}
	return exp.Sub(created)
}
