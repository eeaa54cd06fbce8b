package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// §12.8 — per-(partition, group) exclusive claim.

func TestSemantic08_LeasedPartitionIsSkippedBySameGroupOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g, h := e.Queue("in"), e.Group("g"), e.Group("h")
	e.push(t, q, "p1", msgs(1, 2)...)

	a := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1})
	if !equalInts(numbers(t, a), []int{1}) {
		t.Fatalf("first claim %v, want [1]", numbers(t, a))
	}
	if b := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10}); !b.Empty() {
		t.Fatalf("a second consumer of the same group claimed %v from the leased partition", numbers(t, b))
	}
	if b := e.pop(t, queen.PopRequest{Queue: q, Partition: "p1", ConsumerGroup: g, Batch: 10}); !b.Empty() {
		t.Fatalf("the partition route claimed %v from a partition leased to the same group", numbers(t, b))
	}
	// With work on another partition, the leased one is skipped, not waited on.
	e.push(t, q, "p2", msgs(10, 11)...)
	b := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10}, 5*time.Second)
	if !equalInts(numbers(t, b), []int{10, 11}) || b.Messages[0].Partition != "p2" {
		t.Fatalf("second consumer got %v, want [10 11] from p2", numbers(t, b))
	}
	// Another group is independent of g's leases.
	other := e.pop(t, queen.PopRequest{Queue: q, Partition: "p1", ConsumerGroup: h, Batch: 10})
	if !equalInts(numbers(t, other), []int{1, 2}) {
		t.Fatalf("group h on p1 got %v, want [1 2] (g's lease does not block h)", numbers(t, other))
	}
}

// §12.9 — wildcard pop: random partitions, partitions=1 by default, batch is
// global, one leaseId, per-message partitionId.

func TestSemantic09_WildcardPopClaimsOnePartitionByDefaultAndBatchIsGlobal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	for _, p := range []string{"p1", "p2", "p3"} {
		e.push(t, q, p, fmt.Sprintf(`{"n":1,"p":%q}`, p), fmt.Sprintf(`{"n":2,"p":%q}`, p))
	}
	one := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("g"), Batch: 10})
	if len(one.Messages) != 2 {
		t.Fatalf("default pop claimed %d messages, want the 2 of exactly one partition", len(one.Messages))
	}
	if one.Messages[0].Partition != one.Messages[1].Partition {
		t.Errorf("default pop mixed partitions %s and %s; partitions defaults to 1", one.Messages[0].Partition, one.Messages[1].Partition)
	}
	if one.PartitionsClaimed > 1 {
		t.Errorf("partitionsClaimed %d, want 1", one.PartitionsClaimed)
	}

	multi := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("h"), Batch: 3, Partitions: 3})
	if len(multi.Messages) != 3 {
		t.Fatalf("partitions=3 batch=3 claimed %d messages, want 3 (batch is a budget for the whole pop)", len(multi.Messages))
	}
	ids := map[string]string{}
	seen := map[string]bool{}
	for _, m := range multi.Messages {
		seen[m.Partition] = true
		if m.LeaseID == "" || m.LeaseID != multi.LeaseID {
			t.Errorf("message %s lease %q, want the pop's single lease %q", m.ID, m.LeaseID, multi.LeaseID)
		}
		if m.PartitionID == "" {
			t.Errorf("message %s has no partitionId", m.ID)
		}
		if id, ok := ids[m.Partition]; ok && id != m.PartitionID {
			t.Errorf("partition %s reported ids %s and %s", m.Partition, id, m.PartitionID)
		}
		ids[m.Partition] = m.PartitionID
	}
	if len(seen) != 2 {
		t.Errorf("claimed from %d partitions, want 2 (2 messages from one, 1 from the next)", len(seen))
	}
	if len(ids) == 2 {
		var distinct = map[string]bool{}
		for _, id := range ids {
			distinct[id] = true
		}
		if len(distinct) != 2 {
			t.Errorf("two partitions share a partitionId: %v", ids)
		}
	}
	// Each message acks with its own partitionId under the shared lease.
	acks := make([]queen.AckItem, len(multi.Messages))
	for i := range multi.Messages {
		acks[i] = multi.Messages[i].AckItem(queen.AckCompleted, "")
	}
	res, err := e.c.AckBatch(e.ctx, e.Group("h"), acks)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Success {
			t.Errorf("ack %d with the message's own partitionId: %+v", i, r)
		}
	}
}

func TestSemantic09_WildcardPopPicksPartitionsAtRandom(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	const parts = 8
	for i := range parts {
		e.push(t, q, fmt.Sprintf("p%d", i), msg(i))
	}
	chosen := map[string]int{}
	for i := range 16 {
		c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group(fmt.Sprintf("g%d", i)), Batch: 1})
		if len(c.Messages) != 1 {
			t.Fatalf("fresh group %d claimed %d messages, want 1", i, len(c.Messages))
		}
		chosen[c.Messages[0].Partition]++
	}
	// 16 fresh groups over 8 eligible partitions: a fixed order would pick one
	// partition every time; a uniform random pick does so with p ≈ 1e-13.
	if len(chosen) < 2 {
		t.Errorf("16 fresh groups all claimed %v first; the wildcard pop must pick eligible partitions at random", chosen)
	}
}

// §12.10 — lease expiry re-offers from committed+1 and never charges the retry
// budget.

func TestSemantic10_LeaseExpiryRedeliversWithoutChargingRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.configure(t, q, queen.QueueOptions{RetryLimit: queen.Int(1)})
	e.push(t, q, "p", msg(1))

	var id string
	for round := range 3 {
		c := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, LeaseSeconds: 1}, 5*time.Second)
		if !equalInts(numbers(t, c), []int{1}) {
			t.Fatalf("round %d: claim %v, want the same message [1] again", round, numbers(t, c))
		}
		if id != "" && c.Messages[0].ID != id {
			t.Errorf("round %d: redelivered id %s, want the original %s (nothing is rewritten)", round, c.Messages[0].ID, id)
		}
		id = c.Messages[0].ID
		e.elapse(1500 * time.Millisecond) // let the lease lapse without acking
	}
	// Three lapses later, with retryLimit 1, the budget is untouched: the
	// first failed ack retries, only the second dead-letters.
	c := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, LeaseSeconds: 30}, 5*time.Second)
	if r := e.ack(t, c.Messages[0].AckItem(queen.AckFailed, "boom")); !r.Success || r.DLQ {
		t.Fatalf("first failed ack after 3 lease expiries: %+v, want success without dlq (expiry must not charge the budget)", r)
	}
	c = e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, LeaseSeconds: 30}, 5*time.Second)
	if !equalInts(numbers(t, c), []int{1}) {
		t.Fatalf("after a failed ack got %v, want [1] redelivered", numbers(t, c))
	}
	if r := e.ack(t, c.Messages[0].AckItem(queen.AckFailed, "boom")); !r.DLQ {
		t.Fatalf("second failed ack with retryLimit 1: %+v, want dlq:true", r)
	}
}

func TestSemantic10_LeaseExpiryReoffersFromCommittedPlusOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msgs(1, 3)...)
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 3, LeaseSeconds: 1})
	if !equalInts(numbers(t, c), []int{1, 2, 3}) {
		t.Fatalf("claim %v, want [1 2 3]", numbers(t, c))
	}
	// Settle a prefix only. Whether the broker keeps the lease afterwards is
	// open (§13.3); either way the tail comes back, from committed+1.
	if r := e.ack(t, c.Messages[0].AckItem(queen.AckCompleted, "")); !r.Success {
		t.Fatalf("prefix ack: %+v", r)
	}
	e.elapse(1500 * time.Millisecond)
	again := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, LeaseSeconds: 30}, 5*time.Second)
	if !equalInts(numbers(t, again), []int{2, 3}) {
		t.Fatalf("after lease expiry got %v, want [2 3] (from committed+1)", numbers(t, again))
	}
	if again.Messages[0].ID != c.Messages[1].ID {
		t.Errorf("redelivered id %s, want the original %s", again.Messages[0].ID, c.Messages[1].ID)
	}
}

// §12.11 — ack is cumulative; the lowest nack is a barrier; a full ack
// releases the lease at once.

func TestSemantic11_AckOfTheLastMessageSettlesTheWholeClaimAndReleasesTheLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msgs(1, 3)...)
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 3}) // lease: the queue's 300 s
	r := e.ack(t, c.Messages[2].AckItem(queen.AckCompleted, ""))
	if !r.Success || !r.LeaseReleased {
		t.Fatalf("ack of the last message: %+v, want success and leaseReleased", r)
	}
	if d, ok := e.sideDepth(t, q, g); ok && d.Pending != 0 {
		t.Errorf("depth pending %d after acking the last message, want 0 (earlier ones acked implicitly)", d.Pending)
	}
	e.push(t, q, "p", msg(4))
	next := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10})
	if !equalInts(numbers(t, next), []int{4}) {
		t.Fatalf("claim right after the full ack: %v, want [4] (lease released at once, 1–3 settled)", numbers(t, next))
	}
}

func TestSemantic11_LowestNackIsABarrierForCompletedAcksAboveIt(t *testing.T) {
	t.Parallel()
	for _, status := range []queen.AckStatus{queen.AckFailed, queen.AckRetry} {
		t.Run(string(status), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			q, g := e.Queue("in"), e.Group("g")
			e.push(t, q, "p", msgs(1, 4)...)
			c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 4})
			res, err := e.c.AckBatch(e.ctx, g, []queen.AckItem{
				c.Messages[3].AckItem(queen.AckCompleted, ""),
				c.Messages[1].AckItem(status, "vendor 500"),
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if !r.Success {
					t.Errorf("ack %d: %+v, want success", i, r)
				}
			}
			again := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10}, 5*time.Second)
			if !equalInts(numbers(t, again), []int{2, 3, 4}) {
				t.Fatalf("after [4 completed, 2 %s] got %v, want [2 3 4] (1 settled, the nack at 2 is a barrier)", status, numbers(t, again))
			}
		})
	}
}

// §12.12 — ack validation.

func TestSemantic12_AckWithAWrongLeaseIsRejectedAndMovesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1})
	bad := c.Messages[0].AckItem(queen.AckCompleted, "")
	bad.LeaseID = queen.NewTransactionID()
	if r := e.ack(t, bad); r.Success {
		t.Fatalf("ack with a wrong leaseId: %+v, want success:false", r)
	}
	if d, ok := e.sideDepth(t, q, g); ok && d.Pending != 1 {
		t.Errorf("pending %d after a rejected ack, want 1", d.Pending)
	}
	if r := e.ack(t, c.Messages[0].AckItem(queen.AckCompleted, "")); !r.Success {
		t.Errorf("ack with the right lease after a rejected one: %+v", r)
	}
}

func TestSemantic12_AckWithAnExpiredLeaseIsRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, LeaseSeconds: 1})
	e.elapse(1500 * time.Millisecond)
	if r := e.ack(t, c.Messages[0].AckItem(queen.AckCompleted, "")); r.Success {
		t.Fatalf("ack under an expired lease: %+v, want success:false", r)
	}
	again := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1}, 5*time.Second)
	if !equalInts(numbers(t, again), []int{1}) {
		t.Fatalf("after the rejected ack got %v, want [1] again", numbers(t, again))
	}
}

func TestSemantic12_RejectedAckRollsBackTheTransactionWithQTXN(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, out, g := e.Queue("in"), e.Queue("out"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1})
	bad := c.Messages[0].AckItem(queen.AckCompleted, "")
	bad.LeaseID = queen.NewTransactionID()
	tx := (&queen.Transaction{}).Ack(bad).Push(queen.PushItem{Queue: out, Partition: "p", Payload: []byte(msg(1)), TransactionID: "fwd-1"})
	res, err := e.c.Transact(e.ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || res.Refusal == nil {
		t.Fatalf("transaction with a wrong-lease ack committed: %+v", res)
	}
	if res.Refusal.Reason != queen.ReasonAckRejected || !strings.HasPrefix(res.Refusal.Message, "QTXN") {
		t.Errorf("refusal reason %q error %q, want ack_rejected and an error starting QTXN", res.Refusal.Reason, res.Refusal.Message)
	}
	if got := e.pop(t, queen.PopRequest{Queue: out, ConsumerGroup: g, Batch: 10}); !got.Empty() {
		t.Errorf("the rolled-back bundle's push is visible: %v", numbers(t, got))
	}
}

func TestSemantic12_AckWithoutGroupAddressesQueueModeNotTheGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1})
	groupless := c.Messages[0].AckItem(queen.AckCompleted, "")
	groupless.ConsumerGroup, groupless.LeaseID = "", ""
	e.ack(t, groupless) // settles (or not) __QUEUE_MODE__; never g
	if d, ok := e.sideDepth(t, q, g); ok && d.Pending != 1 {
		t.Errorf("group %s pending %d after a group-less ack, want 1 (the ack addressed __QUEUE_MODE__)", g, d.Pending)
	}
	if r := e.ack(t, c.Messages[0].AckItem(queen.AckCompleted, "")); !r.Success || r.Noop {
		t.Errorf("the group's own ack afterwards: %+v, want a real (non-noop) success", r)
	}
}

func TestSemantic12_AckBelowTheCursorIsANoopForCompletedAndRefusedForNacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1})
	if r := e.ack(t, c.Messages[0].AckItem(queen.AckCompleted, "")); !r.Success || r.Noop {
		t.Fatalf("first ack: %+v", r)
	}
	dup := c.Messages[0].AckItem(queen.AckCompleted, "")
	dup.LeaseID = "" // the lease is gone; a lease-less ack skips the lease check
	if r := e.ack(t, dup); !r.Success || !r.Noop {
		t.Errorf("completed ack below the cursor: %+v, want success:true noop:true", r)
	}
	nack := dup
	nack.Status = queen.AckFailed
	if r := e.ack(t, nack); r.Success {
		t.Errorf("failed ack below the cursor: %+v, want success:false (already committed)", r)
	}
}

// §12.13 — retry budget and DLQ.

func TestSemantic13_RetryLimit3DeliversFourTimesThenDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.configure(t, q, queen.QueueOptions{RetryLimit: queen.Int(3)}) // DLQ left to its default (on)
	e.push(t, q, "p", msgs(1, 2)...)

	// The second poison proves the counter reset after the first was
	// dead-lettered: it too gets four deliveries.
	for _, n := range []int{1, 2} {
		for delivery := 1; delivery <= 4; delivery++ {
			c := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1}, 5*time.Second)
			if got := numbers(t, c); !equalInts(got, []int{n}) {
				t.Fatalf("delivery %d of message %d: claimed %v", delivery, n, got)
			}
			r := e.ack(t, c.Messages[0].AckItem(queen.AckFailed, fmt.Sprintf("poison %d", n)))
			if !r.Success || r.DLQ != (delivery == 4) {
				t.Fatalf("message %d failed ack #%d: %+v, want success with dlq=%v", n, delivery, r, delivery == 4)
			}
		}
	}
	if d, ok := e.sideDepth(t, q, g); ok && d.Pending != 0 {
		t.Errorf("pending %d after both poisons were dead-lettered, want 0 (cursor moved past them)", d.Pending)
	}
	dl, err := e.c.DeadLetters(e.ctx, queen.DLQQuery{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, m := range dl.Messages {
		found[m.TransactionID] = m.ErrorMessage
	}
	for _, n := range []int{1, 2} {
		txn := "p-" + txnOf(msg(n))
		if errText, ok := found[txn]; !ok {
			t.Errorf("DLQ lacks message %d (txn %s): %+v", n, txn, dl.Messages)
		} else if errText != fmt.Sprintf("poison %d", n) {
			t.Errorf("DLQ errorMessage for %d = %q, want %q", n, errText, fmt.Sprintf("poison %d", n))
		}
	}
}

// §12.19 — long-poll.

func TestSemantic19_EmptyLongPollHoldsUntilTimeoutThenAnswers204(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.configure(t, q, queen.QueueOptions{})
	path := fmt.Sprintf("/api/v1/pop/queue/%s?wait=true&timeout=400&consumerGroup=%s&subscriptionMode=all&batch=10", q, g)
	start := time.Now()
	r := e.raw(t, http.MethodGet, path, "")
	held := time.Since(start)
	if r.Status != http.StatusNoContent {
		t.Fatalf("empty long-poll: HTTP %d %s, want 204", r.Status, r.Body)
	}
	if held < 300*time.Millisecond {
		t.Errorf("empty long-poll with timeout=400 answered after %v; it must hold until the timeout", held)
	}
	r = e.raw(t, http.MethodGet, strings.Replace(path, "wait=true", "wait=false", 1), "")
	if r.Status != http.StatusNoContent {
		t.Errorf("empty pop without wait: HTTP %d, want 204", r.Status)
	}
}

func TestSemantic19_ParkedLongPollWakesOnPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.configure(t, q, queen.QueueOptions{})
	got := make(chan queen.Claim, 1)
	errs := make(chan error, 1)
	start := time.Now()
	go func() {
		c, err := e.c.Pop(e.ctx, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, Wait: true, Timeout: 20 * time.Second, SubscriptionMode: queen.SubscribeAll})
		if err != nil {
			errs <- err
			return
		}
		got <- c
	}()
	// Let the poll park before pushing. If it has not parked yet it simply
	// finds the message on its first look, so this delay cannot fail the test.
	time.Sleep(200 * time.Millisecond)
	e.push(t, q, "p", msg(1))
	select {
	case c := <-got:
		if !equalInts(numbers(t, c), []int{1}) {
			t.Fatalf("woken poll got %v, want [1]", numbers(t, c))
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Errorf("parked poll returned after %v; a push must wake it, not its 20 s timeout", waited)
		}
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("parked poll never returned")
	}
}

func TestSemantic19_ParkedLongPollPicksUpAnExpiredLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	first := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, LeaseSeconds: 1})
	if len(first.Messages) != 1 {
		t.Fatal("nothing claimed")
	}
	// miniqueen re-offers at expiry; a real broker may take up to its
	// re-check interval (§13.15: observed up to ~1 min), so its poll is longer.
	timeout := 10 * time.Second
	if e.real() {
		timeout = 90 * time.Second
	}
	got := make(chan queen.Claim, 1)
	errs := make(chan error, 1)
	go func() {
		c, err := e.c.Pop(e.ctx, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, Wait: true, Timeout: timeout, SubscriptionMode: queen.SubscribeAll})
		if err != nil {
			errs <- err
			return
		}
		got <- c
	}()
	e.elapse(1500 * time.Millisecond)
	select {
	case c := <-got:
		if len(c.Messages) != 1 || c.Messages[0].ID != first.Messages[0].ID {
			t.Fatalf("parked poll got %v, want the expired claim's message %s", numbers(t, c), first.Messages[0].ID)
		}
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(timeout + 10*time.Second):
		t.Fatal("parked poll never returned")
	}
}

// §12.21 — lease extend.

func TestSemantic21_ExtendLengthensALiveLeaseAndNeverShortensIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, LeaseSeconds: 1})
	lease := c.LeaseID

	long, err := e.c.ExtendLease(e.ctx, lease, 4*time.Second)
	if err != nil || !long.Success || long.Renewed != 1 || long.ExpiresAt == "" {
		t.Fatalf("extend a live lease by 4s: %+v %v, want success renewed:1 with an expiry", long, err)
	}
	v := e.rawJSON(t, http.MethodPost, "/api/v1/lease/"+lease+"/extend", `{"seconds":1}`, http.StatusOK)
	for _, k := range []string{"newExpiresAt", "expiresAt", "lease_expires_at"} {
		s, _ := obj(t, v, k).(string)
		if s == "" {
			t.Errorf("extend answer %v lacks %s", v, k)
			continue
		}
		got, err := queen.ParseTimestamp(s)
		want, _ := long.ExpiresAt.Time()
		if err != nil || got.Before(want) {
			t.Errorf("%s after a 1 s extend = %s, want ≥ the 4 s extend's %s (never shortened)", k, s, long.ExpiresAt)
		}
	}
	// The claim really lives past its original 1 s.
	e.elapse(2 * time.Second)
	if other := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1}); !other.Empty() {
		t.Fatalf("the partition was claimable 2 s into a lease extended to 4 s")
	}
	e.elapse(3 * time.Second)
	if other := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1}, 5*time.Second); len(other.Messages) != 1 {
		t.Fatalf("the partition is not claimable after the extended lease ran out")
	}
}

func TestSemantic21_ExtendDoesNotReviveAnExpiredLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.push(t, q, "p", msg(1))
	c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1, LeaseSeconds: 1})
	e.elapse(1500 * time.Millisecond)
	v := e.rawJSON(t, http.MethodPost, "/api/v1/lease/"+c.LeaseID+"/extend", `{"seconds":30}`, http.StatusOK)
	if renewed, _ := obj(t, v, "renewed").(json.Number); obj(t, v, "success") != false || renewed.String() != "0" {
		t.Fatalf("extend of an expired lease: %v, want success:false renewed:0", v)
	}
	for _, k := range []string{"newExpiresAt", "expiresAt", "lease_expires_at"} {
		if x, ok := v.(map[string]any)[k]; ok && x != nil {
			t.Errorf("%s = %v on a failed extend, want null", k, x)
		}
	}
	if again := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1}, 5*time.Second); len(again.Messages) != 1 {
		t.Fatal("the expired claim was revived by extend: nobody can claim the message")
	}
	unknown, err := e.c.ExtendLease(e.ctx, queen.NewTransactionID(), 10*time.Second)
	if err != nil || unknown.Success || unknown.Renewed != 0 {
		t.Errorf("extend of an unknown lease: %+v %v, want HTTP 200 success:false renewed:0", unknown, err)
	}
}

func TestSemantic13_OnlyFailedAcksChargeTheBudgetNotRetryOrDLQStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, g := e.Queue("in"), e.Group("g")
	e.configure(t, q, queen.QueueOptions{RetryLimit: queen.Int(1)})
	e.push(t, q, "p", msgs(1, 2)...)
	next := func(want int) queen.Message {
		t.Helper()
		c := e.popWait(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 1}, 5*time.Second)
		if !equalInts(numbers(t, c), []int{want}) {
			t.Fatalf("claimed %v, want [%d]", numbers(t, c), want)
		}
		return c.Messages[0]
	}
	for i := range 3 {
		m := next(1)
		if r := e.ack(t, m.AckItem(queen.AckRetry, "later")); !r.Success || r.DLQ {
			t.Fatalf("retry ack #%d: %+v, want success without dlq", i+1, r)
		}
	}
	m := next(1)
	if r := e.ack(t, m.AckItem(queen.AckFailed, "boom")); !r.Success || r.DLQ {
		t.Fatalf("first failed ack after 3 retry acks: %+v, want no dlq (retry must not charge the budget)", r)
	}
	m = next(1)
	if r := e.ack(t, m.AckItem(queen.AckFailed, "boom")); !r.DLQ {
		t.Fatalf("second failed ack with retryLimit 1: %+v, want dlq", r)
	}
	// dlq status dead-letters at once, whatever the budget.
	m = next(2)
	if r := e.ack(t, m.AckItem(queen.AckDLQ, "bad payload")); !r.Success || !r.DLQ {
		t.Fatalf("dlq ack: %+v, want dlq at once", r)
	}
	if d, ok := e.sideDepth(t, q, g); ok && d.Pending != 0 {
		t.Errorf("pending %d, want 0", d.Pending)
	}
}
