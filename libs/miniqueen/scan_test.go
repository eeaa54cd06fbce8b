package miniqueen

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var scanSeeds = []string{
	`{"items":[{"queue":"q","partition":"p","payload":{"a":[1,2.5e-3,true,null,"x\u00e9\ud83d\ude00"]},"transactionId":"t"}]}`,
	`{"items":[{"queue":"q","payload":null},{"queue":"q2","data":"s","partition":null}]}`,
	`{"items":[]}`,
	`{}`,
	`{"items":null}`,
	`{"items":[{"queue":"q\n","payload":"\ud800"}]}`,
	`{"items":[{"QUEUE":"q"}]}`,
	`{"items":[{"queue":1}]}`,
	`{"items":[{"queue":"q","payload":01}]}`,
	`{"items":[{"queue":"q","payload":[1,]}]}`,
	`{"items":[{"queue":"q","payload":"\x"}]}`,
	`  {"items" : [ { "queue" : "q" , "payload" : { } } ] }  `,
	`{"items":[{"queue":"q"}]} x`,
	"{\"items\":[{\"queue\":\"\xff\"}]}",
	// A later null leaves a string as it was and sets a pointer to nil, as
	// encoding/json does (the fast path once cleared the queue).
	`{"items":[{"queue":"a","queue":null,"partition":"p","partition":null,"transactionId":"t","transactionId":null}]}`,
	`{"items":[{"queue":"q"}],"items":null}`,
	`null`,
	// encoding/json decodes a repeated array into the first one's
	// elements, merging them: the fast path leaves such bodies to it.
	`{"items":[{"queue":"x","traceId":"t"}],"items":[{"queue":"y"}]}`,
}

func samePush(t *testing.T, a, b *[]pushItemWire) {
	t.Helper()
	if (a == nil) != (b == nil) {
		t.Fatalf("nil mismatch: %v vs %v", a, b)
	}
	if a == nil {
		return
	}
	if len(*a) != len(*b) {
		t.Fatalf("len %d vs %d", len(*a), len(*b))
	}
	for i := range *a {
		x, y := (*a)[i], (*b)[i]
		if x.Queue != y.Queue || x.TransactionID != y.TransactionID || x.TraceID != y.TraceID || !reflect.DeepEqual(x.Partition, y.Partition) {
			t.Fatalf("item %d: %+v vs %+v", i, x, y)
		}
		for _, pair := range [][2][]byte{{x.Payload, y.Payload}, {x.Data, y.Data}} {
			if !bytes.Equal(compactJSON(pair[0]), compactJSON(pair[1])) {
				t.Fatalf("item %d raw: %s vs %s", i, pair[0], pair[1])
			}
		}
	}
}

// checkScanPush asserts the fast scanner agrees with encoding/json.
func checkScanPush(t *testing.T, body []byte) {
	var want struct {
		Items *[]pushItemWire `json:"items"`
	}
	err := json.Unmarshal(body, &want)
	got, ok := scanPush(body)
	if !ok {
		return // falls back to encoding/json: always consistent
	}
	if err != nil {
		t.Fatalf("scanner accepted %q that encoding/json refuses: %v", body, err)
	}
	samePush(t, got, want.Items)
}

func TestScanPushAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range scanSeeds {
		checkScanPush(t, []byte(s))
	}
	if _, ok := scanPush([]byte(scanSeeds[0])); !ok {
		t.Fatalf("the fast path must handle the common shape")
	}
}

func FuzzScanPush(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkScanPush(t, body)
	})
}

func TestScanTxnAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","leaseId":"l","consumerGroup":"g","status":"completed"},{"type":"push","items":[{"queue":"d","partition":"","payload":{"a":1},"transactionId":"x"}]}],"requiredLeases":["l"],"kv":[{"op":"incr","ns":"gate","key":"b","delta":3,"ttlSeconds":60,"max":10}]}`,
		`{"operations":[{"type":"push","queue":"d","data":[1],"traceId":"0198f0aa-0000-7000-8000-000000000001"}],"timers":null}`,
		`{"operations":[{"type":"ack","status":null,"error":"e"}]}`,
		// Later duplicates: a null leaves a string as it was and sets a
		// pointer (partition, status) to nil, as encoding/json does.
		`{"operations":[{"type":"push","queue":"q","queue":null,"partition":"a","partition":null,"items":null,"status":"s","status":null}],"kv":[1],"kv":null}`,
		`{"operations":[{"type":"push","items":[{"queue":"d","partition":"p","partition":null}]}],"requiredLeases":["l",null]}`,
	}
	for _, b := range bodies {
		var want, got txnWire
		if err := json.Unmarshal([]byte(b), &want); err != nil {
			t.Fatal(err)
		}
		if !scanTxn([]byte(b), &got) {
			t.Fatalf("fast path refused %s", b)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if !bytes.Equal(wb, gb) {
			t.Fatalf("mismatch:\n%s\n%s", wb, gb)
		}
	}
}

// encoding/json decodes an array given twice into the first one's
// elements, merging their fields: the fast path gives such bodies up to it.
func TestScanTxnLeavesRepeatedArraysToEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, b := range []string{
		`{"operations":[{"type":"ack","queue":"q"}],"operations":[{"type":"push"}]}`,
		`{"operations":[{"type":"ack"}],"operations":null,"requiredLeases":["l"],"requiredLeases":null}`,
		`{"requiredLeases":["a"],"requiredLeases":[null]}`,
		`{"operations":[{"type":"push","items":[{"queue":"x","traceId":"t"}],"items":[{"queue":"y"}]}]}`,
	} {
		var got txnWire
		if scanTxn([]byte(b), &got) {
			t.Errorf("the fast path read %s, which repeats an array", b)
		}
	}
	if _, ok := scanPush([]byte(`{"items":[{"queue":"x"}],"items":[{"queue":"y"}]}`)); ok {
		t.Errorf("the fast path read a push body that repeats items")
	}
}

func FuzzScanTxn(f *testing.F) {
	f.Add([]byte(`{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","leaseId":"l","consumerGroup":"g","status":"completed"},{"type":"ack","transactionId":"u","partitionId":"p","leaseId":"l","consumerGroup":"g","status":"completed"},{"type":"push","items":[{"queue":"d","partition":"p","payload":{"a":1},"transactionId":"x"},{"queue":"d","partition":"p","payload":2}]}],"requiredLeases":["l"],"kv":[{"op":"incr"}]}`))
	f.Add([]byte(`{"operations":[{"type":"push","queue":"d","data":[1],"partition":"\u00e9"},{"type":"push","queue":"d","partition":"é"}],"timers":null}`))
	f.Add([]byte(`{"operations":[{"type":"push","queue":"q","queue":null,"partition":"a","partition":null,"items":[{"queue":"x","queue":null}],"status":"s","status":null}]}`))
	f.Add([]byte(`{"operations":[{"type":"ack","queue":"q"}],"operations":[{"type":"push"}],"requiredLeases":["a"],"requiredLeases":[null]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var want, got txnWire
		err := json.Unmarshal(body, &want)
		if !scanTxn(body, &got) {
			return
		}
		if err != nil {
			t.Fatalf("scanner accepted %q that encoding/json refuses: %v", body, err)
		}
		// Compare through a canonical re-encoding (raw values compacted).
		norm := func(w *txnWire) []byte {
			if w.Operations != nil {
				for i := range *w.Operations {
					op := &(*w.Operations)[i]
					op.Payload, op.Data = compactJSON(op.Payload), compactJSON(op.Data)
					if op.Items != nil {
						for k := range *op.Items {
							it := &(*op.Items)[k]
							it.Payload, it.Data = compactJSON(it.Payload), compactJSON(it.Data)
						}
					}
				}
			}
			w.KV, w.Timers = compactJSON(w.KV), compactJSON(w.Timers)
			b, _ := json.Marshal(w)
			return b
		}
		if a, b := norm(&want), norm(&got); !bytes.Equal(a, b) {
			t.Fatalf("mismatch for %q:\n%s\n%s", body, a, b)
		}
	})
}
