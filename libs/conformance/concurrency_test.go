package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/capability"
	"github.com/queen-mq/gate/libs/queen"
)

// Many clients at once over several queues: producers pushing (plainly and
// in transactions), forwarders claiming each queue and settling every claim
// in one transaction that acks it on its queue, pushes its items on to the
// opposite queue and counts them in kv, and the same forwarders acking the
// forwarded items where they land. Transactions cross the queues in both
// directions at once (q0 → q3 while q3 → q0). Every item must arrive exactly
// once, the counter must equal the items moved, and nothing may be left
// pending: a broker that loses, repeats or wedges under concurrent calls on
// different queues fails here.

// relayed is one item's payload: its id and how many hops it made.
type relayed struct {
	N   int `json:"n"`
	Hop int `json:"hop"`
}

func TestConcurrency_PushPopAckAcrossQueuesLoseAndRepeatNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV, capability.Riders)
	const (
		queues      = 6
		producers   = 3 // per queue
		perProducer = 30
		forwarders  = 2 // per queue
		total       = queues * producers * perProducer
	)
	names := make([]string, queues)
	for i := range names {
		names[i] = e.Queue(fmt.Sprintf("q%d", i))
	}
	g := e.Group("g")
	ctx, cancel := context.WithTimeout(e.ctx, 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	arrived := map[int]int{} // item id → times its forwarded copy was acked
	done := make(chan struct{})
	arrive := func(ids []int) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			arrived[id]++
		}
		if len(arrived) == total {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	}

	var wg sync.WaitGroup
	for qi := range queues {
		for pi := range producers {
			wg.Go(func() {
				for k := 0; k < perProducer; {
					n := min(1+k%3, perProducer-k) // one to three items per call
					items := make([]queen.PushItem, n)
					for x := range items {
						id := (qi*producers+pi)*perProducer + k + x
						b, _ := json.Marshal(relayed{N: id})
						items[x] = queen.PushItem{Queue: names[qi], Partition: fmt.Sprintf("p%d", id%3), TransactionID: fmt.Sprintf("h0-%d", id), Payload: b}
					}
					k += n
					if k%2 == 0 {
						res, err := e.c.Push(ctx, items)
						if err != nil {
							t.Errorf("push to %s: %v", names[qi], err)
							return
						}
						for _, r := range res {
							if r.Status != queen.PushQueued {
								t.Errorf("push to %s: %+v, want queued", names[qi], r)
							}
						}
						continue
					}
					res, err := e.c.Transact(ctx, (&queen.Transaction{}).Push(items...))
					if err != nil || !res.Success {
						t.Errorf("transaction push to %s: %+v %v, want committed", names[qi], res, err)
						return
					}
				}
			})
		}
		for range forwarders {
			wg.Go(func() {
				to := names[(qi+queues/2)%queues]
				for {
					select {
					case <-done:
						return
					case <-ctx.Done():
						return
					default:
					}
					c, err := e.c.Pop(ctx, queen.PopRequest{Queue: names[qi], ConsumerGroup: g, SubscriptionMode: queen.SubscribeAll, Batch: 5, Wait: true, Timeout: 200 * time.Millisecond})
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("pop %s: %v", names[qi], err)
						}
						return
					}
					if c.Empty() {
						continue
					}
					var acks []queen.AckItem
					var forward []queen.PushItem
					var ids []int
					for _, m := range c.Messages {
						var v relayed
						if err := json.Unmarshal(m.Data, &v); err != nil {
							t.Errorf("message %s on %s: %v", m.TransactionID, names[qi], err)
							return
						}
						acks = append(acks, m.AckItem(queen.AckCompleted, ""))
						if v.Hop == 0 {
							b, _ := json.Marshal(relayed{N: v.N, Hop: 1})
							forward = append(forward, queen.PushItem{Queue: to, Partition: "fwd", TransactionID: fmt.Sprintf("h1-%d", v.N), Payload: b})
						} else {
							ids = append(ids, v.N)
						}
					}
					if len(forward) == 0 {
						res, err := e.c.AckBatch(ctx, g, acks)
						if err != nil {
							t.Errorf("ack on %s: %v", names[qi], err)
							return
						}
						for _, r := range res {
							if !r.Success {
								t.Errorf("ack on %s: %+v, want success", names[qi], r)
							}
						}
						arrive(ids)
						continue
					}
					tx := (&queen.Transaction{}).Push(forward...).AddKV(e.incr("moved", int64(len(forward)), queen.IncrOpts{TTLSeconds: 600})).RequireLease(c.LeaseID)
					for _, a := range acks {
						tx.Ack(a)
					}
					res, err := e.c.Transact(ctx, tx)
					if err != nil || !res.Success {
						t.Errorf("settling a claim of %s onto %s: %+v %v, want committed", names[qi], to, res, err)
						return
					}
					if len(ids) > 0 {
						t.Errorf("a claim of %s mixed forwarded and new items", names[qi])
					}
				}
			})
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var missing, repeated []int
	for id := range total {
		switch arrived[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			repeated = append(repeated, id)
		}
	}
	sort.Ints(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d items never arrived (first %v)", len(missing), total, missing[:min(len(missing), 10)])
	}
	if len(repeated) > 0 {
		t.Errorf("%d items arrived more than once (first %v)", len(repeated), repeated[:min(len(repeated), 10)])
	}
	if len(arrived) != total {
		t.Errorf("%d distinct items arrived, want %d", len(arrived), total)
	}
	e.counter(t, "moved", total)
	for _, q := range names {
		if c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 100}); !c.Empty() {
			t.Errorf("%s still holds %d items for the group after every item arrived", q, len(c.Messages))
		}
	}
}
