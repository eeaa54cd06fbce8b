package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const benchBatch = 200

// benchClaimAnswer is a pop answer of n messages with ~100-byte payloads.
func benchClaimAnswer(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"success":true,"queue":"gate.rrl.g.n.in","partition":"p7","partitionId":"0198e1","leaseId":"0198a001","consumerGroup":"gate.rrl.g.main.n","messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"0198f0aa-0000-7000-8000-%012d","transactionId":"evt-%d","traceId":null,`+
			`"data":{"op":"price.update","cost":1,"listingId":"listing-%d","account":"acct-7","price":{"amount":129,"currency":"EUR"}},`+
			`"producerSub":null,"createdAt":"2026-08-04T09:15:00.123Z","partitionId":"0198e1","partition":"p7","leaseId":"0198a001","consumerGroup":"gate.rrl.g.main.n"}`, i, i, i)
	}
	b.WriteString(`],"partitionsClaimed":1}`)
	return []byte(b.String())
}

// benchTxnAnswer is a committed transaction answer of n acks + n pushes +
// one kv rider.
func benchTxnAnswer(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"transactionId":"0198ffff","success":true,"results":[`)
	idx := 0
	for i := range n {
		fmt.Fprintf(&b, `{"index":%d,"type":"push","success":true,"transactionId":"fwd-%d","messageId":"0198f0bb-%d","queueName":"gate.rrl.g.n2.in"},`, idx, i, i)
		idx++
	}
	for i := range n {
		fmt.Fprintf(&b, `{"index":%d,"type":"ack","success":true,"transactionId":"evt-%d","error":null,"dlq":false},`, idx, i)
		idx++
	}
	fmt.Fprintf(&b, `{"index":%d,"type":"kv","opIndex":0,"op":"incr","applied":true,"key":"b:rrl:g:n","value":200,"version":90210}]}`, idx)
	return []byte(b.String())
}

// relayBundle builds the relay's transaction for a claim into t: one kv
// incr rider, an ack per message and a push per message.
func relayBundle(t *Transaction, cl *Claim) {
	t.Reset()
	t.AddKV(KVIncr("gate", "b:rrl:g:n", int64(len(cl.Messages)), IncrOpts{TTLSeconds: 1, Max: Int(1 << 40)}))
	items := make([]PushItem, len(cl.Messages))
	for i := range cl.Messages {
		m := &cl.Messages[i]
		items[i] = PushItem{Queue: "gate.rrl.g.n2.in", Partition: m.Partition, Payload: m.Data, TransactionID: m.TransactionID}
	}
	t.Push(items...)
	for i := range cl.Messages {
		t.Ack(cl.Messages[i].AckItem(AckCompleted, ""))
	}
	t.RequireLease(cl.LeaseID)
}

// BenchmarkRelayCodec measures the client-side CPU of one relay cycle of
// 200 items (decode the claim, encode the bundle, decode the commit),
// without any network.
func BenchmarkRelayCodec(b *testing.B) {
	claim, commit := benchClaimAnswer(benchBatch), benchTxnAnswer(benchBatch)
	var t Transaction
	b.ReportAllocs()
	b.SetBytes(int64(len(claim) + len(commit)))
	for b.Loop() {
		cl, err := decodeClaim("/p", 200, claim, benchBatch)
		if err != nil || len(cl.Messages) != benchBatch {
			b.Fatalf("claim: %v (%d)", err, len(cl.Messages))
		}
		relayBundle(&t, &cl)
		if _, err := encodeTransaction(&t); err != nil {
			b.Fatal(err)
		}
		res, err := decodeTxn(commit, t.Slots(), false)
		if err != nil || !res.Success {
			b.Fatalf("commit: %v", err)
		}
	}
	b.ReportMetric(float64(benchBatch*b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkRelayLoopback runs the relay pattern through the real HTTP
// client against a loopback server that answers with canned bodies: wildcard
// pop of 200, then one transaction of kv incr + 200 acks + 200 pushes. It
// measures the client and transport cost (the broker's own work is not
// included).
func BenchmarkRelayLoopback(b *testing.B) {
	claim, commit := benchClaimAnswer(benchBatch), benchTxnAnswer(benchBatch)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = r.Body.Read(make([]byte, 0))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/v1/pop/"):
			_, _ = w.Write(claim)
		case r.URL.Path == "/api/v1/transaction":
			buf := make([]byte, 64<<10)
			for {
				if _, err := r.Body.Read(buf); err != nil {
					break
				}
			}
			_, _ = w.Write(commit)
		default:
			w.WriteHeader(404)
		}
	}))
	b.Cleanup(srv.Close)
	c, err := New(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := PopRequest{Queue: "gate.rrl.g.n.in", ConsumerGroup: "gate.rrl.g.main.n", Batch: benchBatch, Wait: true,
		Timeout: 30 * time.Second, SubscriptionMode: SubscribeAll, LeaseSeconds: 10}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		var t Transaction
		for pb.Next() {
			cl, err := c.Pop(ctx, req)
			if err != nil || len(cl.Messages) != benchBatch {
				b.Errorf("pop: %v", err)
				return
			}
			relayBundle(&t, &cl)
			res, err := c.Transact(ctx, &t)
			if err != nil || !res.Success {
				b.Errorf("transact: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(benchBatch*b.N)/b.Elapsed().Seconds(), "items/s")
}

// BenchmarkKVAdmission measures one admission call's encode and decode
// (incr with max + getMany), the relay's other per-claim round trip.
func BenchmarkKVAdmission(b *testing.B) {
	answer := []byte(`{"results":[{"index":0,"op":"incr","applied":true,"key":"b:k","value":57,"version":41007},` +
		`{"index":1,"op":"getMany","rows":[{"key":"b:k","value":57,"version":41007,"expiresAt":"2026-08-21T08:00:01.204311+00:00","updatedAt":"2026-08-21T08:00:00.981002+00:00"}],"missing":[],"truncated":false}]}`)
	ops := []KVOp{KVIncr("gate", "b:k", 12, IncrOpts{TTLSeconds: 1, Max: Int(100)}), KVGetMany("gate", "b:k")}
	b.ReportAllocs()
	for b.Loop() {
		buf := make([]byte, 0, 256)
		for i := range ops {
			var err error
			if buf, err = appendKVOp(buf, &ops[i], "op"); err != nil {
				b.Fatal(err)
			}
		}
		res, err := decodeKV(answer, 2)
		if err != nil || !res.Results[0].Applied {
			b.Fatal(err)
		}
		if _, err := res.Results[1].Rows[0].ExpiresAt.Time(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRelayBundleShape pins the benchmark's bundle to the relay's wire shape
// so the benchmark measures the real thing.
func TestRelayBundleShape(t *testing.T) {
	t.Parallel()
	cl, err := decodeClaim("/p", 200, benchClaimAnswer(2), 0)
	noErr(t, err)
	var tx Transaction
	relayBundle(&tx, &cl)
	body, err := encodeTransaction(&tx)
	noErr(t, err)
	var got map[string]json.RawMessage
	noErr(t, json.Unmarshal(body, &got))
	want := `{"operations":[
		{"type":"push","items":[
			{"queue":"gate.rrl.g.n2.in","partition":"p7","payload":{"op":"price.update","cost":1,"listingId":"listing-0","account":"acct-7","price":{"amount":129,"currency":"EUR"}},"transactionId":"evt-0"},
			{"queue":"gate.rrl.g.n2.in","partition":"p7","payload":{"op":"price.update","cost":1,"listingId":"listing-1","account":"acct-7","price":{"amount":129,"currency":"EUR"}},"transactionId":"evt-1"}]},
		{"type":"ack","transactionId":"evt-0","partitionId":"0198e1","leaseId":"0198a001","consumerGroup":"gate.rrl.g.main.n","status":"completed"},
		{"type":"ack","transactionId":"evt-1","partitionId":"0198e1","leaseId":"0198a001","consumerGroup":"gate.rrl.g.main.n","status":"completed"}],
		"requiredLeases":["0198a001"],
		"kv":[{"op":"incr","ns":"gate","key":"b:rrl:g:n","delta":2,"ttlSeconds":1,"max":1099511627776}]}`
	jsonEqual(t, "relay bundle", body, []byte(want))
}
