package httpapi

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// fuzzBody has the push body's shape (gate-api's push door decodes its
// body with DecodeStrict into it).
type fuzzBody struct {
	Op        *string         `json:"op"`
	Partition *string         `json:"partition"`
	Key       *string         `json:"key"`
	Txn       *string         `json:"txn"`
	Cost      *int64          `json:"cost"`
	Payload   json.RawMessage `json:"payload"`
}

// FuzzDecodeStrict: the strict decoder of the push body never panics, and
// what it accepts is valid JSON, valid UTF-8, and has no key twice at the
// top level; what it refuses is a 400 or 422 with the catalogue's code for
// that status.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"partition":"a","payload":{"x":1}}`, `{"partition":"a","partition":"b"}`,
		`{"Payload":{}}`, "{\"op\":\"a\xffb\"}", `{"payload":{"a":{"b":[1,{"c":2,"c":3}]}}}`,
		`{"txn":"t","cost":3}`, `[1]`, `{"op":`, `{"payload":{"a":1}} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var pb fuzzBody
		if bad := DecodeStrict(b, &pb, "the push body"); bad != nil {
			if bad.status != 400 && bad.status != 422 {
				t.Fatalf("status %d for %q", bad.status, b)
			}
			if !bad.Code().Known(bad.status) {
				t.Fatalf("code %q with status %d for %q: not the catalogue's", bad.Code(), bad.status, b)
			}
			return
		}
		if !json.Valid(b) || !utf8.Valid(b) {
			t.Fatalf("accepted %q, which is not valid JSON and UTF-8", b)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("accepted %q, not an object: %v", b, err)
		}
		for k := range top {
			if !exactName(jsonFields(&pb), k) {
				t.Fatalf("accepted the unknown field %q", k)
			}
		}
	})
}
