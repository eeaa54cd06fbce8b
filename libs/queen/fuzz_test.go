package queen

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecoders feeds arbitrary bodies to every response decoder: they must
// never panic, and what they report must be self-consistent.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{
		claimAnswer,
		`{"messages":[],"paused":true}`,
		`{"success":false,"error":"x","messages":[]}`,
		`{"transactionId":"x","success":false,"ok":false,"reason":"kv_precondition","failedIndex":2,"kvReason":"limit","version":1,"value":3,"results":[]}`,
		`{"transactionId":"x","success":true,"results":[{"index":0,"type":"kv","opIndex":0,"op":"incr","applied":true,"value":1,"version":2}]}`,
		`{"results":[{"index":0,"op":"incr","applied":false,"reason":"limit","value":95,"version":41012}]}`,
		`{"ok":false,"reason":"kv_precondition"}`,
		`[{"index":0,"message_id":"m","transaction_id":"t","status":"duplicate"}]`,
		`[{"index":0,"transactionId":"t","success":true,"error":null,"leaseReleased":true,"dlq":false,"noop":false}]`,
		`{"error":"kv_bad_request","reason":"kv_bad_ttl","detail":"d"}`,
		``, `null`, `[]`, `{}`, `{"success":null}`, `{"failedIndex":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if cl, err := decodeClaim("/p", 200, b, 1); err == nil && cl.Messages != nil && len(cl.Messages) == 0 {
			t.Fatal("a claim without messages must carry a nil Messages slice")
		}
		if cl, err := decodeClaim("/p", 204, b, 0); err != nil || !cl.Empty() {
			t.Fatalf("204 must be an empty claim whatever the body: %v", err)
		}
		full, ferr := decodeTxn(b, 1, false)
		lean, lerr := decodeTxn(b, 1, true)
		if (ferr == nil) != (lerr == nil) {
			t.Fatalf("txn: full decode err %v, lean decode err %v; lean must check as strictly", ferr, lerr)
		}
		if ferr == nil {
			blank := full
			if full.Results != nil {
				blank.Results = make([]TxnItemResult, 0, len(full.Results))
			}
			for _, r := range full.Results {
				r.TransactionID, r.MessageID, r.QueueName = "", "", ""
				blank.Results = append(blank.Results, r)
			}
			if !reflect.DeepEqual(blank, lean) {
				t.Fatalf("txn: lean decode %+v differs from the full one without its strings %+v", lean, blank)
			}
		}
		if res, err := full, ferr; err == nil {
			if res.Success == (res.Refusal != nil) {
				t.Fatalf("txn: success=%v with refusal=%v", res.Success, res.Refusal)
			}
			if !res.Success && len(res.Results) != 0 {
				t.Fatal("txn: a refusal carries results")
			}
			if (res.Err() == nil) != res.Success {
				t.Fatal("txn: Err disagrees with Success")
			}
		}
		if res, err := decodeKV(b, 1); err == nil {
			if res.Refused() == (len(res.Results) == 1) {
				t.Fatalf("kv: refused=%v with %d results", res.Refused(), len(res.Results))
			}
		}
		items := []PushItem{{Queue: "q", TransactionID: "t"}}
		if rs, err := decodePush(b, items); err == nil && len(rs) != 1 {
			t.Fatalf("push: %d results for 1 item", len(rs))
		}
		if rs, err := decodeAcks(b, 1); err == nil && len(rs) != 1 {
			t.Fatalf("ack: %d results for 1 ack", len(rs))
		}
		e := newError("GET", "/x", 500, nil, b)
		if len(e.Body) > maxErrorBody || len(e.Message) > maxErrorMessage || e.Error() == "" {
			t.Fatal("error envelope out of bounds")
		}
		for _, r := range []*KVResult{{Value: b}} {
			_, _ = r.Int64()
		}
	})
}

// refTxnItem is how encoding/json would read a flat transaction slot.
type refTxnItem struct {
	Index         int    `json:"index"`
	Type          string `json:"type"`
	OpIndex       int    `json:"opIndex"`
	Success       bool   `json:"success"`
	TransactionID string `json:"transactionId"`
	MessageID     string `json:"messageId"`
	QueueName     string `json:"queueName"`
	Duplicate     bool   `json:"duplicate"`
	Error         string `json:"error"`
	DLQ           bool   `json:"dlq"`
	OK            bool   `json:"ok"`
	Status        string `json:"status"`
	KVResult
}

type refTxnWire struct {
	TransactionID string       `json:"transactionId"`
	Results       []refTxnItem `json:"results"`
	refusalWire
}

// refTxn decodes a transaction answer with encoding/json, shaped like
// decodeTxnFast's output.
func refTxn(b []byte) (txnWire, error) {
	var r refTxnWire
	if err := json.Unmarshal(b, &r); err != nil {
		return txnWire{}, err
	}
	w := txnWire{TransactionID: r.TransactionID, refusalWire: r.refusalWire}
	if r.Results != nil {
		w.Results = make([]TxnItemResult, 0, len(r.Results))
	}
	for _, it := range r.Results {
		out := TxnItemResult{Index: it.Index, Type: it.Type, OpIndex: it.OpIndex, Success: it.Success,
			TransactionID: it.TransactionID, MessageID: it.MessageID, QueueName: it.QueueName,
			Duplicate: it.Duplicate, Error: it.Error, DLQ: it.DLQ, OK: it.OK, Status: it.Status}
		kv := it.KVResult
		if it.Type == "kv" || !reflect.ValueOf(kv).IsZero() {
			kv.Index = it.OpIndex
			out.KV = &kv
		}
		w.Results = append(w.Results, out)
	}
	return w, nil
}

// knownKeys are every key the fast decoders look at.
var knownKeys = []string{
	"queue", "partition", "partitionId", "leaseId", "consumerGroup", "partitionsClaimed", "paused", "success", "error",
	"messages", "id", "transactionId", "traceId", "data", "producerSub", "createdAt", "retryCount",
	"index", "op", "key", "applied", "found", "reason", "value", "version", "expiresAt", "updatedAt", "rows", "missing",
	"truncated", "nextAfter", "ok", "failedIndex", "kvReason", "results", "type", "opIndex", "messageId", "queueName",
	"duplicate", "dlq", "status",
}

// ambiguousKeys reports documents where encoding/json's lenient key
// matching (case folding, last duplicate merging into earlier values) makes
// a byte-for-byte comparison meaningless.
func ambiguousKeys(b []byte) bool {
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				stack = append(stack, &frame{obj: d == '{', wantKey: d == '{', keys: map[string]bool{}})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].wantKey = true
				}
			}
			continue
		}
		if top == nil || !top.obj {
			continue
		}
		if !top.wantKey {
			top.wantKey = true
			continue
		}
		k := tok.(string)
		if top.keys[k] {
			return true
		}
		top.keys[k] = true
		for _, kn := range knownKeys {
			if kn != k && strings.EqualFold(kn, k) {
				return true
			}
		}
		top.wantKey = false
	}
}

// FuzzFastDecodersMatchEncodingJSON is the differential test of the
// hand-written decoders: on any input, they accept exactly what
// encoding/json accepts and produce the same values.
func FuzzFastDecodersMatchEncodingJSON(f *testing.F) {
	for _, s := range []string{
		claimAnswer, string(benchClaimAnswer(3)), string(benchTxnAnswer(2)),
		`{"messages":[],"paused":true}`,
		`{"success":false,"error":"x","messages":[null,{"id":"\u0061\ud83d\ude00","data":  [1, {"a":null}] }]}`,
		`{"transactionId":"x","success":false,"ok":false,"reason":"kv_precondition","failedIndex":2,"kvReason":"limit","version":1,"value":3,"results":[]}`,
		`{"transactionId":"x","success":true,"results":[{"index":0,"type":"kv","opIndex":1,"op":"getMany","rows":[{"key":"a","value":{"x":[true,false,null,-0.5e+3]},"version":2,"expiresAt":null}],"missing":["b"],"truncated":false}]}`,
		`{"transactionId":"x","success":true,"results":[{"index":0,"type":"push","key":null}]}`,
		`{"results":[{"index":0,"op":"incr","applied":false,"reason":"limit","value":95,"version":41012}]}`,
		`{"ok":false,"reason":"kv_precondition","failedIndex":null}`,
		`{"results":null}`, `null`, `{}`, `{"a":"\xff"}`, `{"messages":{}}`, `{"partitionsClaimed":1.0}`, `{"version":9223372036854775808}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if ambiguousKeys(b) {
			return
		}
		compare := func(what string, gotErr, wantErr error, got, want any) {
			t.Helper()
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s: fast err = %v, encoding/json err = %v\ninput: %q", what, gotErr, wantErr, b)
			}
			if gotErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s differs\nfast: %+v\njson: %+v\ninput: %q", what, got, want, b)
			}
		}
		var gc, wc popWire
		compare("claim", decodeClaimFast(b, &gc), json.Unmarshal(b, &wc), gc, wc)
		var gk, wk kvWire
		compare("kv", decodeKVFast(b, &gk), json.Unmarshal(b, &wk), gk, wk)
		var gt txnWire
		gtErr := decodeTxnFast(b, &gt, false)
		wt, wtErr := refTxn(b)
		compare("txn", gtErr, wtErr, gt, wt)
	})
}
