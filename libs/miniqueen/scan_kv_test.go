package miniqueen

import (
	"bytes"
	"encoding/json"
	"testing"
)

// kvScanSeeds are kv operation arrays as the relay's riders, the store and
// odd clients send them.
var kvScanSeeds = []string{
	`[{"op":"incr","ns":"gate","key":"b:1","delta":3,"ttlSeconds":60,"max":10,"required":true},{"op":"getMany","ns":"gate","keys":["b:1","b:2"]}]`,
	`[{"op":"put","ns":"n","key":"k","value":{"a":[1,2.5e-3,true,null,"x\u00e9"]},"forever":true,"expect":0}]`,
	`[{"op":"getPrefix","ns":"n","prefix":"p:","after":"p:3","limit":50,"keysOnly":true,"tenant":"t","tenantId":"u","_tenant":"v"}]`,
	`[{"op":"incr","key":"k","min":-1,"delta":-1,"value":null,"keys":null,"required":null}]`,
	`[{"op":"getMany","keys":["a",null]}]`,
	`[]`,
	`null`,
	`[null]`,
	`[1]`,
	`[{"OP":"incr"}]`,
	`[{"op":1}]`,
	`[{"op":"incr","required":"yes"}]`,
	`[{"op":"incr","keys":"a"}]`,
	`[{"op":"incr","keys":["a"],"keys":["b"]}]`,
	`[{"op":"incr","op":null,"ns":"a","ns":"b","key":"k"}]`,
	`  [ { "op" : "incr" , "delta" : 1 } ]  `,
	`[{"op":"incr"}] x`,
	"[{\"op\":\"\xff\"}]",
	`[{"op":"incr","delta":01}]`,
	`{"operations":[{"op":"incr"}]}`,
}

// checkScanKVOps asserts the fast reader agrees with encoding/json on b
// whenever it accepts b.
func checkScanKVOps(t *testing.T, b []byte) {
	var want []kvOpWire
	err := json.Unmarshal(b, &want)
	got, ok := scanKVOps(b)
	if !ok {
		return // falls back to encoding/json: always consistent
	}
	if err != nil {
		t.Fatalf("the fast reader accepted %q, which encoding/json refuses: %v", b, err)
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if !bytes.Equal(wb, gb) {
		t.Fatalf("%s:\nencoding/json %s\nfast reader   %s", b, wb, gb)
	}
}

func TestScanKVOpsAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range kvScanSeeds {
		checkScanKVOps(t, []byte(s))
	}
	// The shapes the relay and the store send take the fast path.
	for _, s := range kvScanSeeds[:5] {
		if _, ok := scanKVOps([]byte(s)); !ok {
			t.Errorf("the fast reader gave up on %s", s)
		}
	}
	// What it does not expect is left to encoding/json.
	for _, s := range []string{`null`, `[null]`, `[{"OP":"incr"}]`, `[{"op":"incr","keys":["a"],"keys":["b"]}]`, `[{"op":"incr","required":"yes"}]`} {
		if _, ok := scanKVOps([]byte(s)); ok {
			t.Errorf("the fast reader read %s", s)
		}
	}
}

// The values it keeps are copies: the kv batch route gives its body's
// buffer back to a pool before the store is done with them.
func TestScanKVOpsKeepsNothingOfTheBody(t *testing.T) {
	t.Parallel()
	b := []byte(`[{"op":"put","ns":"n","key":"k","value":{"v":1},"keys":["a"]}]`)
	ops, ok := scanKVOps(b)
	if !ok {
		t.Fatal("the fast reader gave up on a put")
	}
	for i := range b {
		b[i] = ' '
	}
	if op := ops[0]; op.Op != "put" || op.NS != "n" || op.Key != "k" || string(op.Value) != `{"v":1}` || len(op.Keys) != 1 || op.Keys[0] != "a" {
		t.Fatalf("the operation changed with its body: %+v", op)
	}
}

func TestScanKVBodyAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{"operations":[{"op":"incr","ns":"gate","key":"b","delta":1,"max":5}]}`,
		`{"operations":[]}`,
		`{"operations":null}`,
		`{}`,
		`{"other":1,"operations":[{"op":"get","key":"k"}]}`,
		`{"Operations":[]}`,
		`{"operations":[{"op":"get"}],"operations":[]}`,
		`{"operations":[1]}`,
	} {
		var want struct {
			Operations *[]kvOpWire `json:"operations"`
		}
		err := json.Unmarshal([]byte(s), &want)
		got, ok := scanKVBody([]byte(s))
		if !ok {
			continue
		}
		if err != nil {
			t.Fatalf("the fast reader accepted %s, which encoding/json refuses: %v", s, err)
		}
		wb, _ := json.Marshal(want.Operations)
		gb, _ := json.Marshal(got)
		if !bytes.Equal(wb, gb) {
			t.Fatalf("%s:\nencoding/json %s\nfast reader   %s", s, wb, gb)
		}
	}
	if ops, ok := scanKVBody([]byte(`{"operations":[{"op":"incr","ns":"gate","key":"b","delta":1,"max":5}]}`)); !ok || ops == nil || len(*ops) != 1 {
		t.Fatalf("the fast reader gave up on the client's body: %v %v", ops, ok)
	}
}

func FuzzScanKVOps(f *testing.F) {
	for _, s := range kvScanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanKVOps(t, b)
	})
}
