package queen

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// specBundle is the transaction of queen-wire.md §7.1.
func specBundle() *Transaction {
	t := &Transaction{}
	t.Ack(AckItem{TransactionID: "evt-7f3a", PartitionID: "0198e1", LeaseID: "0198a001", ConsumerGroup: "admission", Status: AckCompleted}).
		Push(PushItem{Queue: "work", Partition: "acme", Payload: json.RawMessage(`{"tenant":"acme","requestId":"R-4"}`), TransactionID: "fwd-R-4"}).
		RequireLease("0198a001").
		AddKV(
			KVIncr("quota", "quota:acme", 1, IncrOpts{TTLSeconds: 8, Max: Int(3), Required: true}),
			KVPutIfAbsent("quota", "admitted:R-4", json.RawMessage(`{"tenant":"acme"}`), PutOpts{TTLSeconds: 3600, Required: true}),
		)
	return t
}

const specBundleWire = `{
  "operations": [
    { "type": "ack", "transactionId": "evt-7f3a", "partitionId": "0198e1",
      "leaseId": "0198a001", "consumerGroup": "admission", "status": "completed" },
    { "type": "push", "items": [
      { "queue": "work", "partition": "acme", "payload": {"tenant":"acme","requestId":"R-4"},
        "transactionId": "fwd-R-4" } ] }
  ],
  "requiredLeases": ["0198a001"],
  "kv": [
    { "op": "incr", "ns": "quota", "key": "quota:acme", "delta": 1, "ttlSeconds": 8, "max": 3, "required": true },
    { "op": "putIfAbsent", "ns": "quota", "key": "admitted:R-4", "value": {"tenant":"acme"}, "ttlSeconds": 3600, "required": true }
  ]
}`

func TestTransactionWire(t *testing.T) {
	t.Parallel()
	txnWire := func(status int, answer string) wire {
		return wire{method: "POST", path: "/api/v1/transaction", body: specBundleWire, status: status, answer: answer}
	}
	refused := func(t *testing.T, ctx context.Context, c *Client) *Refusal {
		t.Helper()
		res, err := c.Transact(ctx, specBundle())
		noErr(t, err)
		eq(t, "success", res.Success, false)
		if res.Refusal == nil {
			t.Fatal("refusal missing")
		}
		eq(t, "results", len(res.Results), 0)
		if res.Err() == nil || !errors.As(res.Err(), new(*Refusal)) {
			t.Errorf("Err() = %v, want the *Refusal", res.Err())
		}
		return res.Refusal
	}
	runWire(t, []wireCase{
		{
			name: "commit: flat results with ack, push and kv riders",
			wire: txnWire(200, `{ "transactionId": "0198ffff", "success": true, "results": [
				{"index":0,"type":"ack","success":true,"transactionId":"evt-7f3a","error":null,"dlq":false},
				{"index":1,"type":"push","success":true,"transactionId":"fwd-R-4","messageId":"01980009","queueName":"work"},
				{"index":2,"type":"kv","opIndex":0,"op":"incr","applied":true,"key":"quota:acme","value":3,"version":90210},
				{"index":3,"type":"kv","opIndex":1,"op":"putIfAbsent","applied":true,"key":"admitted:R-4","value":{"tenant":"acme"},"version":9007199254740993}
			] }`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				b := specBundle()
				eq(t, "slots", b.Slots(), 4)
				res, err := c.Transact(ctx, b)
				noErr(t, err)
				eq(t, "success", res.Success, true)
				eq(t, "Err", res.Err(), nil)
				eq(t, "transactionId", res.TransactionID, "0198ffff")
				if len(res.Results) != 4 {
					t.Fatalf("results = %d, want 4", len(res.Results))
				}
				r := res.Results
				eq(t, "[0].type", r[0].Type, "ack")
				if r[0].KV != nil || r[1].KV != nil {
					t.Error("ack/push slots carry a KV result")
				}
				eq(t, "[0].success", r[0].Success, true)
				eq(t, "[1].messageId", r[1].MessageID, "01980009")
				eq(t, "[1].queueName", r[1].QueueName, "work")
				eq(t, "[1].duplicate", r[1].Duplicate, false)
				kv := r[2].KV
				eq(t, "[2].index", r[2].Index, 2)
				eq(t, "[2].kv.index", kv.Index, 0)
				eq(t, "[2].kv.op", kv.Op, OpIncr)
				eq(t, "[2].kv.applied", kv.Applied, true)
				n, err := kv.Int64()
				noErr(t, err)
				eq(t, "[2].kv.value", n, int64(3))
				eq(t, "[3].kv.version (beyond 2^53)", r[3].KV.Version, int64(9007199254740993))
				jsonEqual(t, "[3].kv.value", r[3].KV.Value, []byte(`{"tenant":"acme"}`))
			},
		},
		{
			name: "lost required kv gate: kvReason, failedIndex, current value",
			wire: txnWire(200, `{ "transactionId": "0198ffff", "success": false, "ok": false,
				"reason": "kv_precondition", "error": "kv_precondition_failed",
				"failedIndex": 2, "kvReason": "limit", "version": 90210, "value": 3, "results": [] }`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				rf := refused(t, ctx, c)
				eq(t, "reason", rf.Reason, ReasonKVPrecondition)
				eq(t, "kvReason", rf.KVReason, KVLimit)
				eq(t, "failedIndex", rf.FailedIndex, 2)
				eq(t, "version", rf.Version, int64(90210))
				eq(t, "value", string(rf.Value), "3")
				eq(t, "message", rf.Message, "kv_precondition_failed")
				eq(t, "KVPrecondition", rf.KVPrecondition(), true)
				eq(t, "Duplicate", rf.Duplicate(), false)
			},
		},
		{
			name: "QDUP rollback",
			wire: txnWire(200, `{ "transactionId": "0198ffff", "success": false, "reason": "duplicate",
				"error": "QDUP duplicate messages in queue \"work\" partition \"acme\"; transaction rolled back", "results": [] }`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				rf := refused(t, ctx, c)
				eq(t, "Duplicate", rf.Duplicate(), true)
				eq(t, "AckRejected", rf.AckRejected(), false)
				eq(t, "failedIndex", rf.FailedIndex, -1)
			},
		},
		{
			name: "QDUP from a broker older than the riders (no reason)",
			wire: txnWire(200, `{"transactionId":"x","success":false,"error":"QDUP duplicate messages in queue \"work\"; transaction rolled back","results":[]}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				rf := refused(t, ctx, c)
				eq(t, "reason", rf.Reason, RefusalReason(""))
				eq(t, "Duplicate", rf.Duplicate(), true)
			},
		},
		{
			name: "rejected ack (QTXN)",
			wire: txnWire(200, `{ "transactionId": "0198ffff", "success": false, "reason": "ack_rejected",
				"error": "QTXN ack failed for partition 0198e1 group \"g\": invalid or expired lease; transaction rolled back", "results": [] }`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				rf := refused(t, ctx, c)
				eq(t, "AckRejected", rf.AckRejected(), true)
				eq(t, "Duplicate", rf.Duplicate(), false)
				if s := rf.Error(); s == "" {
					t.Error("empty refusal text")
				}
			},
		},
		{
			name: "unknown op type is a 400 error",
			wire: txnWire(400, `{"transactionId":"x","success":false,"error":"unknown operation type","results":[]}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Transact(ctx, specBundle())
				e := mustErr(t, err, 400)
				eq(t, "message", e.Message, "unknown operation type")
			},
		},
		{
			name: "riders refused by the kill switch: 403, permanent",
			wire: txnWire(403, `{"success":false,"reason":"kv_disabled","error":"kv_disabled"}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Transact(ctx, specBundle())
				e := mustErr(t, err, 403)
				eq(t, "IsForbidden", IsForbidden(err), true)
				eq(t, "reason", e.Reason, "kv_disabled")
				eq(t, "retryAfter", e.RetryAfter, 0)
			},
		},
		{
			name: "pool unavailable: 500",
			wire: txnWire(500, `{"error":"pool"}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Transact(ctx, specBundle())
				mustErr(t, err, 500)
				eq(t, "IsServerError", IsServerError(err), true)
			},
		},
		{
			name: "in-bundle repeat is a duplicate slot; a nack carries its error",
			wire: wire{method: "POST", path: "/api/v1/transaction", status: 200,
				body: `{"operations":[
					{"type":"push","items":[{"queue":"q","partition":"p","payload":{"a":1},"transactionId":"t1"},{"queue":"q","partition":"p","payload":{"a":1},"transactionId":"t1"}]},
					{"type":"ack","transactionId":"s1","partitionId":"pid","leaseId":"L","consumerGroup":"g","status":"failed","error":"poison"}]}`,
				answer: `{"transactionId":"x","success":true,"results":[
					{"index":0,"type":"push","success":true,"transactionId":"t1","messageId":"m1","queueName":"q"},
					{"index":1,"type":"push","success":true,"transactionId":"t1","messageId":"m1","queueName":"q","duplicate":true},
					{"index":2,"type":"ack","success":true,"transactionId":"s1","error":null,"dlq":true}]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				var b Transaction
				b.Push(PushItem{Queue: "q", Partition: "p", Payload: json.RawMessage(`{"a":1}`), TransactionID: "t1"},
					PushItem{Queue: "q", Partition: "p", Payload: json.RawMessage(`{"a":1}`), TransactionID: "t1"})
				b.Operations = append(b.Operations, TxnAck(AckItem{TransactionID: "s1", PartitionID: "pid", LeaseID: "L", ConsumerGroup: "g", Status: AckFailed, Error: "poison"}))
				res, err := c.Transact(ctx, &b)
				noErr(t, err)
				eq(t, "[1].duplicate", res.Results[1].Duplicate, true)
				eq(t, "[1].messageId", res.Results[1].MessageID, "m1")
				eq(t, "[2].dlq", res.Results[2].DLQ, true)
			},
		},
		{
			name: "riders only, with getMany and a timer passed through",
			wire: wire{method: "POST", path: "/api/v1/transaction", status: 200,
				body: `{"operations":[],"kv":[{"op":"getMany","ns":"gate","keys":["a","b"]}],
					"timers":[{"op":"cancel","queue":"reminders","timerKey":"req:R-6"}]}`,
				answer: `{"transactionId":"x","success":true,"results":[
					{"index":0,"type":"kv","opIndex":0,"op":"getMany","rows":[{"key":"a","value":1,"version":5,"expiresAt":null,"updatedAt":"2026-08-21 08:00:00.98+00"}],"missing":["b"],"truncated":false},
					{"index":1,"type":"timer","opIndex":0,"ok":false,"status":"absent"}]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				b := &Transaction{Timers: []json.RawMessage{json.RawMessage(`{"op":"cancel","queue":"reminders","timerKey":"req:R-6"}`)}}
				b.AddKV(KVGetMany("gate", "a", "b"))
				res, err := c.Transact(ctx, b)
				noErr(t, err)
				kv := res.Results[0].KV
				eq(t, "rows", len(kv.Rows), 1)
				eq(t, "missing", kv.Missing[0], "b")
				up, err := kv.Rows[0].UpdatedAt.Time()
				noErr(t, err)
				eq(t, "updatedAt ms", up.UnixMilli()%1000, int64(980))
				eq(t, "timer status", res.Results[1].Status, "absent")
				eq(t, "timer ok", res.Results[1].OK, false)
			},
		},
		{
			name: "client-side refusals send nothing",
			wire: wire{},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Transact(ctx, &Transaction{}); !errors.Is(err, ErrEmptyTransaction) {
					t.Errorf("empty bundle: err = %v, want ErrEmptyTransaction", err)
				}
				if _, err := c.Transact(ctx, nil); !errors.Is(err, ErrEmptyTransaction) {
					t.Errorf("nil bundle: err = %v, want ErrEmptyTransaction", err)
				}
				bad := []*Transaction{
					{Operations: []TxnOp{TxnPush()}},
					{Operations: []TxnOp{{Type: "nack"}}},
					{Operations: []TxnOp{TxnAck(AckItem{TransactionID: "t"})}},
					{Operations: []TxnOp{TxnPush(PushItem{Queue: "q", Payload: json.RawMessage("{")})}},
					{KV: []KVOp{{NS: "n", Key: "k"}}},
					{Timers: []json.RawMessage{json.RawMessage("{")}},
				}
				for i, b := range bad {
					if _, err := c.Transact(ctx, b); err == nil {
						t.Errorf("bad bundle %d accepted", i)
					}
				}
			},
		},
		{
			name: "answer without a success flag is an error",
			wire: txnWire(200, `{"results":[]}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Transact(ctx, specBundle()); err == nil {
					t.Fatal("want an error")
				}
			},
		},
	})
}

func TestTransactionReset(t *testing.T) {
	t.Parallel()
	b := specBundle()
	b.Reset()
	if len(b.Operations)+len(b.KV)+len(b.RequiredLeases)+len(b.Timers) != 0 {
		t.Fatalf("Reset left %+v", b)
	}
	if cap(b.Operations) == 0 || cap(b.KV) == 0 {
		t.Error("Reset dropped capacity")
	}
	b.Ack(AckItem{TransactionID: "t", PartitionID: "p"})
	body, err := encodeTransaction(b)
	noErr(t, err)
	jsonEqual(t, "reused bundle", body, []byte(`{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","status":"completed"}]}`))
}

// A payload marked valid is copied without a second check; an unmarked one
// is still checked, so an invalid payload is refused before it is sent.
func TestPushPayloadValidSkipsOnlyTheCheck(t *testing.T) {
	good := json.RawMessage(`{"a":[1,2,{"b":"c"}]}`)
	var tx Transaction
	tx.Push(PushItem{Queue: "q", Payload: good, PayloadValid: true}, PushItem{Queue: "q", Payload: good})
	body, err := encodeTransaction(&tx)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Operations []struct {
			Items []struct {
				Payload json.RawMessage `json:"payload"`
			} `json:"items"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		t.Fatalf("the encoded bundle is not JSON: %v\n%s", err, body)
	}
	for i, it := range wire.Operations[0].Items {
		if string(it.Payload) != string(good) {
			t.Errorf("item %d payload = %s, want %s verbatim", i, it.Payload, good)
		}
	}
	var bad Transaction
	bad.Push(PushItem{Queue: "q", Payload: json.RawMessage(`{"a":`)})
	if _, err := encodeTransaction(&bad); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("an unmarked invalid payload was encoded (err %v); it must be refused before sending", err)
	}
}
