package queen

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func TestPushWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "two items, one duplicate, snake_case answer",
			wire: wire{method: "POST", path: "/api/v1/push", status: 201,
				body: `{"items":[
					{"queue":"rrl.ingress.price-airbnb","partition":"listing-42","payload":{"op":"price.update","cost":2},"transactionId":"evt-7f3a"},
					{"queue":"rrl.ingress.price-airbnb","payload":null}]}`,
				answer: `[
					{"index":0,"message_id":"0198f0aa-0001","transaction_id":"evt-7f3a","queueName":"rrl.ingress.price-airbnb","status":"duplicate"},
					{"index":1,"message_id":"0198f0aa-0002","transaction_id":"0198f0aa-0002","queueName":"rrl.ingress.price-airbnb","status":"queued"}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.Push(ctx, []PushItem{
					{Queue: "rrl.ingress.price-airbnb", Partition: "listing-42", Payload: json.RawMessage(`{"op": "price.update", "cost": 2}`), TransactionID: "evt-7f3a"},
					{Queue: "rrl.ingress.price-airbnb"},
				})
				noErr(t, err)
				if len(res) != 2 {
					t.Fatalf("results = %d, want 2", len(res))
				}
				eq(t, "[0].duplicate", res[0].Duplicate(), true)
				eq(t, "[0].stored", res[0].Stored(), false)
				eq(t, "[0].messageId", res[0].MessageID, "0198f0aa-0001")
				eq(t, "[1].status", res[1].Status, PushQueued)
				eq(t, "[1].transactionId", res[1].TransactionID, "0198f0aa-0002")
				eq(t, "[1].queueName", res[1].QueueName, "rrl.ingress.price-airbnb")
			},
		},
		{
			name: "traceId and scalar payload; missing transaction_id falls back to the one sent",
			wire: wire{method: "POST", path: "/api/v1/push", status: 201,
				body:   `{"items":[{"queue":"q","payload":7,"transactionId":"t-1","traceId":"0198aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"}]}`,
				answer: `[{"index":0,"message_id":"m1","status":"buffered"}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.Push(ctx, []PushItem{{Queue: "q", Payload: json.RawMessage("7"), TransactionID: "t-1", TraceID: "0198aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"}})
				noErr(t, err)
				eq(t, "status", res[0].Status, PushBuffered)
				eq(t, "stored", res[0].Stored(), true)
				eq(t, "transactionId", res[0].TransactionID, "t-1")
			},
		},
		{
			name: "failed item is a result, not an error",
			wire: wire{method: "POST", path: "/api/v1/push", status: 201,
				body:   `{"items":[{"queue":"q","payload":{}}]}`,
				answer: `[{"index":0,"message_id":null,"transaction_id":null,"status":"failed","error":"boom"}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.Push(ctx, []PushItem{{Queue: "q", Payload: json.RawMessage("{}")}})
				noErr(t, err)
				eq(t, "status", res[0].Status, PushFailed)
				eq(t, "error", res[0].Error, "boom")
			},
		},
		{
			name: "empty items answers 201 []",
			wire: wire{method: "POST", path: "/api/v1/push", status: 201, body: `{"items":[]}`, answer: `[]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.Push(ctx, nil)
				noErr(t, err)
				eq(t, "len", len(res), 0)
			},
		},
		{
			name: "invalid payload is refused before sending",
			wire: wire{},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Push(ctx, []PushItem{{Queue: "q", Payload: json.RawMessage(`{"a":`)}}); err == nil {
					t.Fatal("want an error naming the payload")
				}
				if _, err := c.Push(ctx, []PushItem{{Payload: json.RawMessage(`1`)}}); err == nil {
					t.Fatal("want an error naming the queue")
				}
			},
		},
		{
			name: "400 is an error with the body message",
			wire: wire{method: "POST", path: "/api/v1/push", status: 400, answer: `{"error":"bad body: expected items"}`,
				body: `{"items":[{"queue":"q","payload":null}]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Push(ctx, []PushItem{{Queue: "q"}})
				e := mustErr(t, err, 400)
				eq(t, "message", e.Message, "bad body: expected items")
				eq(t, "code", e.Code, "")
			},
		},
	})
}

const claimAnswer = `{
  "success": true, "queue": "gate.rrl.g.n.in", "partition": "p7", "partitionId": "0198e1", "leaseId": "0198a001",
  "consumerGroup": "gate.rrl.g.main.n",
  "messages": [
    { "id": "01980001", "transactionId": "evt-7f3a", "traceId": null,
      "data": { "op": "price.update", "cost": 2 }, "producerSub": null,
      "createdAt": "2026-08-04T09:15:00.123Z",
      "partitionId": "0198e1", "partition": "p7", "leaseId": "0198a001", "consumerGroup": "gate.rrl.g.main.n" },
    { "id": "01980002", "transactionId": "evt-7f3b", "traceId": "0198aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee",
      "data": null, "producerSub": "svc-a", "createdAt": "2026-08-04T09:15:00.123456Z", "retryCount": 2,
      "partitionId": "0198e1", "partition": "p7", "leaseId": "0198a001", "consumerGroup": "gate.rrl.g.main.n" }
  ],
  "partitionsClaimed": 1
}`

func TestPopWire(t *testing.T) {
	t.Parallel()
	empty := func(t *testing.T, ctx context.Context, c *Client) {
		cl, err := c.Pop(ctx, PopRequest{Queue: "q", ConsumerGroup: "g", Wait: true, Timeout: 100 * time.Millisecond})
		noErr(t, err)
		eq(t, "empty", cl.Empty(), true)
	}
	emptyWire := func(status int, answer string) wire {
		return wire{method: "GET", path: "/api/v1/pop/queue/q", query: "wait=true&timeout=100&consumerGroup=g", status: status, answer: answer}
	}
	runWire(t, []wireCase{
		{
			name: "Gate's stage pop: wildcard, group, subscription all, lease",
			wire: wire{method: "GET", path: "/api/v1/pop/queue/gate.rrl.g.n.in",
				query:  "batch=200&wait=true&timeout=30000&consumerGroup=gate.rrl.g.main.n&subscriptionMode=all&leaseSeconds=10",
				status: 200, answer: claimAnswer},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				cl, err := c.Pop(ctx, PopRequest{Queue: "gate.rrl.g.n.in", ConsumerGroup: "gate.rrl.g.main.n", Batch: 200,
					Partitions: 1, Wait: true, Timeout: 30 * time.Second, SubscriptionMode: SubscribeAll, LeaseSeconds: 10})
				noErr(t, err)
				eq(t, "leaseId", cl.LeaseID, "0198a001")
				eq(t, "partitionsClaimed", cl.PartitionsClaimed, 1)
				eq(t, "queue", cl.Queue, "gate.rrl.g.n.in")
				eq(t, "partition", cl.Partition, "p7")
				if len(cl.Messages) != 2 {
					t.Fatalf("messages = %d, want 2", len(cl.Messages))
				}
				m := cl.Messages[0]
				eq(t, "id", m.ID, "01980001")
				eq(t, "transactionId", m.TransactionID, "evt-7f3a")
				eq(t, "traceId", m.TraceID, "")
				eq(t, "producerSub", m.ProducerSub, "")
				jsonEqual(t, "data", m.Data, []byte(`{"op":"price.update","cost":2}`))
				ts, err := m.CreatedAt.Time()
				noErr(t, err)
				eq(t, "createdAt", ts.Equal(time.Date(2026, 8, 4, 9, 15, 0, 123e6, time.UTC)), true)
				m2 := cl.Messages[1]
				eq(t, "data null", string(m2.Data), "null")
				eq(t, "retryCount", m2.RetryCount, 2)
				eq(t, "producerSub", m2.ProducerSub, "svc-a")
				eq(t, "traceId", m2.TraceID, "0198aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee")
				a := m.AckItem(AckCompleted, "")
				eq(t, "ack", a, AckItem{TransactionID: "evt-7f3a", PartitionID: "0198e1", LeaseID: "0198a001", ConsumerGroup: "gate.rrl.g.main.n", Status: AckCompleted})
			},
		},
		{
			name: "named partition is escaped, partitions not sent, interior seed from a timestamp",
			wire: wire{method: "GET", path: "/api/v1/pop/queue/gate.x/partition/acme%2Feu%20west",
				query: "batch=10&consumerGroup=g&subscriptionMode=new&subscriptionFrom=2026-08-04T09:13:00.000Z", status: 204},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				cl, err := c.Pop(ctx, PopRequest{Queue: "gate.x", Partition: "acme/eu west", ConsumerGroup: "g", Batch: 10, Partitions: 4,
					SubscriptionMode: SubscribeNew, SubscriptionFrom: FormatTimestamp(time.Date(2026, 8, 4, 9, 13, 0, 0, time.UTC))})
				noErr(t, err)
				eq(t, "empty", cl.Empty(), true)
			},
		},
		{
			name: "wildcard with several partitions and autoAck",
			wire: wire{method: "GET", path: "/api/v1/pop/queue/q", query: "batch=50&partitions=4&autoAck=true&subscriptionFrom=now", status: 204},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Pop(ctx, PopRequest{Queue: "q", Batch: 50, Partitions: 4, AutoAck: true, SubscriptionFrom: "now"})
				noErr(t, err)
			},
		},
		{
			name: "bare pop sends no query",
			wire: wire{method: "GET", path: "/api/v1/pop/queue/q", status: 204},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Pop(ctx, PopRequest{Queue: "q"})
				noErr(t, err)
			},
		},
		{
			name: "discovery pop by namespace and task",
			wire: wire{method: "GET", path: "/api/v1/pop", query: "namespace=gate.rrl&task=in&batch=5", status: 204},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Pop(ctx, PopRequest{Namespace: "gate.rrl", Task: "in", Batch: 5})
				noErr(t, err)
			},
		},
		{name: "204 is an empty claim", wire: emptyWire(204, ""), run: empty},
		{name: "200 with empty body is an empty claim", wire: emptyWire(200, ""), run: empty},
		{name: "200 with messages [] is an empty claim", wire: emptyWire(200, `{"success":true,"messages":[],"partitionsClaimed":0}`), run: empty},
		{
			name: "pop maintenance mode is an empty paused claim",
			wire: emptyWire(200, `{"messages":[],"paused":true}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				cl, err := c.Pop(ctx, PopRequest{Queue: "q", ConsumerGroup: "g", Wait: true, Timeout: 100 * time.Millisecond})
				noErr(t, err)
				eq(t, "paused", cl.Paused, true)
				eq(t, "empty", cl.Empty(), true)
			},
		},
		{
			name: "success false in a 200 is a broker failure",
			wire: emptyWire(200, `{"success":false,"error":"segment read failed","messages":[]}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Pop(ctx, PopRequest{Queue: "q", ConsumerGroup: "g", Wait: true, Timeout: 100 * time.Millisecond})
				e := mustErr(t, err, 200)
				eq(t, "code", e.Code, "pop_failed")
				eq(t, "message", e.Message, "segment read failed")
			},
		},
		{
			name: "no queue is refused before sending",
			wire: wire{},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Pop(ctx, PopRequest{ConsumerGroup: "g"}); err == nil {
					t.Fatal("want an error naming the queue")
				}
			},
		},
	})
}

func TestAckWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "single ack with group and lease",
			wire: wire{method: "POST", path: "/api/v1/ack", status: 200,
				body:   `{"transactionId":"evt-7f3a","partitionId":"0198e1","leaseId":"0198a001","consumerGroup":"gate.rrl.g.main.n","status":"completed"}`,
				answer: `[{"index":0,"transactionId":"evt-7f3a","success":true,"error":null,"leaseReleased":true,"dlq":false,"noop":false}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.Ack(ctx, AckItem{TransactionID: "evt-7f3a", PartitionID: "0198e1", LeaseID: "0198a001", ConsumerGroup: "gate.rrl.g.main.n"})
				noErr(t, err)
				eq(t, "result", r, AckResult{TransactionID: "evt-7f3a", Success: true, LeaseReleased: true})
			},
		},
		{
			name: "nack with reason; expired lease is a result",
			wire: wire{method: "POST", path: "/api/v1/ack", status: 200,
				body:   `{"transactionId":"t2","partitionId":"p-1","leaseId":"L1","consumerGroup":"g","status":"failed","error":"gate: node 'n': cost 70 > max 50"}`,
				answer: `[{"index":0,"transactionId":"t2","success":false,"error":"invalid or expired lease","leaseReleased":false,"dlq":false,"noop":false}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.Ack(ctx, AckItem{TransactionID: "t2", PartitionID: "p-1", LeaseID: "L1", ConsumerGroup: "g", Status: AckFailed, Error: "gate: node 'n': cost 70 > max 50"})
				noErr(t, err)
				eq(t, "success", r.Success, false)
				eq(t, "error", r.Error, "invalid or expired lease")
			},
		},
		{
			name: "queue-mode ack without lease; object answer tolerated",
			wire: wire{method: "POST", path: "/api/v1/ack", status: 200,
				body:   `{"transactionId":"t","partitionId":"p","status":"dlq"}`,
				answer: `{"index":0,"transactionId":"t","success":true,"error":null,"leaseReleased":true,"dlq":true,"noop":false}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.Ack(ctx, AckItem{TransactionID: "t", PartitionID: "p", Status: AckDLQ})
				noErr(t, err)
				eq(t, "dlq", r.DLQ, true)
			},
		},
		{
			name: "batch carries one group; results in order",
			wire: wire{method: "POST", path: "/api/v1/ack/batch", status: 200,
				body: `{"consumerGroup":"workers","acknowledgments":[
					{"transactionId":"t1","partitionId":"p-1","leaseId":"L1","status":"completed"},
					{"transactionId":"t2","partitionId":"p-1","leaseId":"L1","status":"failed","error":"vendor 500"},
					{"transactionId":"t0","partitionId":"p-1","status":"retry"}]}`,
				answer: `[{"index":0,"transactionId":"t1","success":true,"error":null,"leaseReleased":true,"dlq":false,"noop":false},
					{"index":1,"transactionId":"t2","success":true,"error":null,"leaseReleased":true,"dlq":false,"noop":false},
					{"index":2,"transactionId":"t0","success":false,"error":"already committed","leaseReleased":false,"dlq":false,"noop":false}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				rs, err := c.AckBatch(ctx, "workers", []AckItem{
					{TransactionID: "t1", PartitionID: "p-1", LeaseID: "L1", ConsumerGroup: "workers", Status: AckCompleted},
					{TransactionID: "t2", PartitionID: "p-1", LeaseID: "L1", Status: AckFailed, Error: "vendor 500"},
					{TransactionID: "t0", PartitionID: "p-1", Status: AckRetry},
				})
				noErr(t, err)
				eq(t, "len", len(rs), 3)
				eq(t, "[2].success", rs[2].Success, false)
				eq(t, "[2].error", rs[2].Error, "already committed")
				eq(t, "[1].index", rs[1].Index, 1)
			},
		},
		{
			name: "below-cursor duplicate is a noop success",
			wire: wire{method: "POST", path: "/api/v1/ack/batch", status: 200,
				body:   `{"consumerGroup":"g","acknowledgments":[{"transactionId":"t","partitionId":"p","leaseId":"L","status":"completed"}]}`,
				answer: `[{"index":0,"transactionId":"t","success":true,"error":null,"leaseReleased":false,"dlq":false,"noop":true}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				rs, err := c.AckBatch(ctx, "g", []AckItem{{TransactionID: "t", PartitionID: "p", LeaseID: "L"}})
				noErr(t, err)
				eq(t, "noop", rs[0].Noop, true)
			},
		},
		{
			name: "client-side refusals: missing ids, mixed groups",
			wire: wire{},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Ack(ctx, AckItem{PartitionID: "p"}); err == nil {
					t.Error("want an error naming transactionId")
				}
				if _, err := c.Ack(ctx, AckItem{TransactionID: "t"}); err == nil {
					t.Error("want an error naming partitionId")
				}
				if _, err := c.AckBatch(ctx, "g", []AckItem{{TransactionID: "t", PartitionID: "p", ConsumerGroup: "other"}}); err == nil {
					t.Error("want an error naming the group mismatch")
				}
				rs, err := c.AckBatch(ctx, "g", nil)
				noErr(t, err)
				eq(t, "empty batch", len(rs), 0)
			},
		},
		{
			name: "result count mismatch is an error",
			wire: wire{method: "POST", path: "/api/v1/ack", status: 200, answer: `[]`,
				body: `{"transactionId":"t","partitionId":"p","status":"completed"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Ack(ctx, AckItem{TransactionID: "t", PartitionID: "p"}); err == nil {
					t.Fatal("want an error for an empty answer")
				}
			},
		},
	})
}

func TestLeaseWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "renewed",
			wire: wire{method: "POST", path: "/api/v1/lease/0198a001/extend", body: `{"seconds":10}`, status: 200,
				answer: `{"leaseId":"0198a001","success":true,"renewed":2,"newExpiresAt":"2026-08-04T10:05:00.000000Z",
					"expiresAt":"2026-08-04T10:05:00.000000Z","lease_expires_at":"2026-08-04T10:05:00.000000Z"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				l, err := c.ExtendLease(ctx, "0198a001", 10*time.Second)
				noErr(t, err)
				eq(t, "success", l.Success, true)
				eq(t, "renewed", l.Renewed, 2)
				eq(t, "expiresAt", l.ExpiresAt, Timestamp("2026-08-04T10:05:00.000000Z"))
			},
		},
		{
			name: "expired lease is not revived",
			wire: wire{method: "POST", path: "/api/v1/lease/L%2F1/extend", body: `{"seconds":2}`, status: 200,
				answer: `{"leaseId":"L/1","success":false,"renewed":0,"newExpiresAt":null,"expiresAt":null,"lease_expires_at":null}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				l, err := c.ExtendLease(ctx, "L/1", 1500*time.Millisecond)
				noErr(t, err)
				eq(t, "success", l.Success, false)
				eq(t, "expiresAt", l.ExpiresAt, Timestamp(""))
			},
		},
		{
			name: "only the legacy key carries the expiry; zero duration sends no body",
			wire: wire{method: "POST", path: "/api/v1/lease/L/extend", status: 200,
				answer: `{"success":true,"renewed":1,"lease_expires_at":"2026-08-04T10:05:00Z"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				l, err := c.ExtendLease(ctx, "L", 0)
				noErr(t, err)
				eq(t, "leaseId", l.LeaseID, "L")
				eq(t, "expiresAt", l.ExpiresAt, Timestamp("2026-08-04T10:05:00Z"))
			},
		},
	})
}
