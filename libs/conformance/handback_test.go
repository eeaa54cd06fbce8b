package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// §5.3–5.4 on the transaction route — a settle that acks a prefix and
// carries a `retry` ack of the first unsettled message hands the tail back:
// the cursor stops just before the retry, the lease is released at once
// (a consumer already parked on the queue gets the tail long before the
// 300 s lease could lapse), and the retry budget is not charged.

func TestSemantic11_RetryAckInATransactionHandsTheTailBackAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	e.configure(t, q, queen.QueueOptions{RetryLimit: queen.Int(1), LeaseTime: queen.Int(300)})
	e.push(t, q, "p", msgs(1, 6)...)
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 4, LeaseSeconds: 300})
	if !equalInts(numbers(t, c), []int{1, 2, 3, 4}) {
		t.Fatalf("first claim %v, want [1 2 3 4]", numbers(t, c))
	}
	if other := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10}); !other.Empty() {
		t.Fatalf("the leased partition was claimed twice: %v", numbers(t, other))
	}
	// A second consumer parks on the queue before the settle. It reports
	// through the channel, never through t, and the test waits for it
	// before it returns: nothing of it outlives the test (a slower broker
	// answering the poll after the test ended used to panic the binary).
	type popped struct {
		claim queen.Claim
		err   error
	}
	parked := make(chan popped, 1)
	pctx, stopParked := context.WithCancel(context.WithoutCancel(e.ctx))
	go func() {
		cl, err := e.c.Pop(pctx, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, Wait: true, Timeout: 20 * time.Second, SubscriptionMode: queen.SubscribeAll})
		parked <- popped{cl, err}
	}()
	var got *popped
	defer func() {
		stopParked()
		if got == nil {
			<-parked
		}
	}()

	settle := func(claim queen.Claim, settled int, status queen.AckStatus) queen.TxnResult {
		t.Helper()
		tx := &queen.Transaction{}
		for i := 0; i < settled; i++ {
			m := claim.Messages[i]
			tx.Ack(m.AckItem(queen.AckCompleted, ""))
			tx.Push(queen.PushItem{Queue: out, Partition: "p", Payload: m.Data, TransactionID: "fwd-" + m.TransactionID})
		}
		tx.Ack(claim.Messages[settled].AckItem(status, ""))
		res, err := e.c.Transact(e.ctx, tx)
		if err != nil || !res.Success {
			t.Fatalf("settle of %d + %s: %+v %v, want committed", settled, status, res, err)
		}
		for _, r := range res.Results {
			if r.Type == "ack" && (!r.Success || r.DLQ) {
				t.Fatalf("ack result %+v, want success without dlq", r)
			}
		}
		return res
	}
	settle(c, 2, queen.AckRetry)
	var tail queen.Claim
	select {
	case p := <-parked:
		got = &p
		if p.err != nil {
			t.Fatalf("parked pop: %v", p.err)
		}
		tail = p.claim
	case <-time.After(15 * time.Second):
		t.Fatal("the parked consumer did not get the handed-back tail (the lease was kept)")
	}
	if !equalInts(numbers(t, tail), []int{3, 4, 5, 6}) {
		t.Fatalf("after acking [1 2] and retry at 3 the next claim is %v, want [3 4 5 6]", numbers(t, tail))
	}
	if got := e.peek(t, out, "p"); !equalInts(got, []int{1, 2}) {
		t.Fatalf("out holds %v, want [1 2]", got)
	}
	// Two more hand-backs; with retryLimit 1 a charged counter would make
	// the failed ack below dead-letter.
	settle(tail, 1, queen.AckRetry)
	next := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, LeaseSeconds: 300})
	if !equalInts(numbers(t, next), []int{4, 5, 6}) {
		t.Fatalf("claim after the second hand-back %v, want [4 5 6]", numbers(t, next))
	}
	settle(next, 1, queen.AckRetry)
	next = e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, LeaseSeconds: 300})
	if !equalInts(numbers(t, next), []int{5, 6}) {
		t.Fatalf("claim after the third hand-back %v, want [5 6]", numbers(t, next))
	}
	if r := e.ack(t, next.Messages[0].AckItem(queen.AckFailed, "boom")); !r.Success || r.DLQ {
		t.Fatalf("first failed ack after three retry hand-backs: %+v, want no dlq (retry must not charge the budget)", r)
	}
	next = e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, LeaseSeconds: 300})
	if !equalInts(numbers(t, next), []int{5, 6}) {
		t.Fatalf("claim after the failed ack %v, want [5 6] (redelivered at once)", numbers(t, next))
	}
}

// §5.3 on the transaction route — the ack is cumulative there too: a
// settle that pushes a whole prefix and acks only its last message
// completes every message before it (a relay sends one ack per partition
// per claim, not one per message). Acking the last of the claim releases
// the lease at once; acking the last of a prefix with a `retry` right
// after it hands back exactly the tail.
func TestSemantic11_InATransactionTheAckOfTheLastMessageSettlesEveryOneBeforeIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	e.configure(t, q, queen.QueueOptions{LeaseTime: queen.Int(300)})
	e.push(t, q, "p", msgs(1, 7)...)
	settle := func(claim queen.Claim, settled int, handBack bool) {
		t.Helper()
		tx := &queen.Transaction{}
		for i := 0; i < settled; i++ {
			m := claim.Messages[i]
			tx.Push(queen.PushItem{Queue: out, Partition: "p", Payload: m.Data, TransactionID: "fwd-" + m.TransactionID})
		}
		tx.Ack(claim.Messages[settled-1].AckItem(queen.AckCompleted, ""))
		if handBack {
			tx.Ack(claim.Messages[settled].AckItem(queen.AckRetry, ""))
		}
		res, err := e.c.Transact(e.ctx, tx)
		if err != nil || !res.Success {
			t.Fatalf("settle of %d acking only message %d: %+v %v, want committed", settled, settled, res, err)
		}
	}
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 4, LeaseSeconds: 300})
	if !equalInts(numbers(t, c), []int{1, 2, 3, 4}) {
		t.Fatalf("first claim %v, want [1 2 3 4]", numbers(t, c))
	}
	settle(c, 4, false)
	// The lease is gone and 1–3 are settled: the next claim, at once, starts at 5.
	next := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, LeaseSeconds: 300})
	if !equalInts(numbers(t, next), []int{5, 6, 7}) {
		t.Fatalf("claim after a settle acking only message 4: %v, want [5 6 7] (1–3 acked with it, the lease released)", numbers(t, next))
	}
	settle(next, 1, true)
	tail := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, LeaseSeconds: 300})
	if !equalInts(numbers(t, tail), []int{6, 7}) {
		t.Fatalf("claim after acking 5 with a retry at 6: %v, want [6 7]", numbers(t, tail))
	}
	settle(tail, 2, false)
	if d, ok := e.sideDepth(t, q, g); ok && d.Pending != 0 {
		t.Errorf("depth pending %d after every claim was settled by its last ack, want 0", d.Pending)
	}
	if got := e.peek(t, out, "p"); !equalInts(got, []int{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("out holds %v, want [1 … 7], each once", got)
	}
}
