package queen_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// The relay pattern: claim one partition, charge the budget with an incr
// that refuses past max, then ack the claim and push the next hop in one
// transaction.
func Example_relay() {
	ctx := context.Background()
	c, err := queen.New("http://127.0.0.1:6632")
	if err != nil {
		log.Fatal(err)
	}
	claim, err := c.Pop(ctx, queen.PopRequest{
		Queue: "gate.rrl.g.n.in", ConsumerGroup: "gate.rrl.g.main.n", Batch: 200,
		Wait: true, Timeout: 30 * time.Second, SubscriptionMode: queen.SubscribeAll, LeaseSeconds: 10,
	})
	if err != nil || claim.Empty() {
		return // transport/broker error, or nothing to do
	}
	charge, err := c.KV(ctx,
		queen.KVIncr("gate", "b:rrl:g:n", int64(len(claim.Messages)), queen.IncrOpts{TTLSeconds: 1, Max: queen.Int(100)}),
		queen.KVGetMany("gate", "b:rrl:g:n"))
	if err != nil {
		return // not a refusal: let the lease redeliver
	}
	if !charge.Results[0].Applied {
		exp, _ := charge.Results[1].Rows[0].ExpiresAt.Time()
		fmt.Println("refused until", exp) // park or release; never nack for pacing
		return
	}
	var txn queen.Transaction
	for i := range claim.Messages {
		m := &claim.Messages[i]
		txn.Ack(m.AckItem(queen.AckCompleted, ""))
		txn.Push(queen.PushItem{Queue: "gate.rrl.g.n2.in", Partition: m.Partition, Payload: m.Data, TransactionID: m.TransactionID})
	}
	txn.RequireLease(claim.LeaseID)
	res, err := c.Transact(ctx, &txn)
	switch {
	case err != nil:
		log.Print(err)
	case res.Refusal != nil && res.Refusal.Duplicate():
		log.Print("already forwarded: settle smaller prefixes")
	case !res.Success:
		log.Print(res.Refusal)
	}
}
