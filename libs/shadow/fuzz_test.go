package shadow

import (
	"bytes"
	"errors"
	"testing"

	"github.com/queen-mq/gate/libs/cost"
)

// FuzzParseCandidate: any body is either refused with a FieldError (an
// ErrCandidate naming a field) or accepted as a candidate whose canonical
// body parses back to the same candidate; nothing panics.
func FuzzParseCandidate(f *testing.F) {
	for _, s := range []string{
		`{"nodes":{"call":{"budgets":[{"id":"a","count":5,"timeMs":1000}]}}}`,
		`{"nodes":{"call":{"budgets":[]},"ip":{"budgets":[{"count":1,"timeMs":1000,"sharedKey":"x"}]}}}`,
		`{"nodes":{}}`, `{}`, `[]`, `null`, `{"nodes":null}`, `{"nodes":{"call":null}}`, `{"nodes":{"call":{"budgets":"x"}}}`,
		`{"nodes":{"\u0063all":{"budgets":[]}}}`, `{"nodes":{"call":{"budgets":[]}},"nodes":{}}`,
	} {
		f.Add([]byte(s))
	}
	known := []string{"call", "ip"}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseCandidate(body, known)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Message == "" || !errors.Is(err, ErrCandidate) {
				t.Fatalf("refusal %v names no field", err)
			}
			return
		}
		if len(c.Nodes) == 0 {
			t.Fatal("accepted a candidate without nodes")
		}
		back, err := ParseCandidate(c.Marshal(), known)
		if err != nil {
			t.Fatalf("the canonical body %s does not parse: %v", c.Marshal(), err)
		}
		if !bytes.Equal(back.Marshal(), c.Marshal()) {
			t.Fatalf("round trip changed %s into %s", c.Marshal(), back.Marshal())
		}
	})
}

// FuzzAppendScope: whatever an item's payload, its recorded scope is
// either refused (a value no key can hold) or a JSON object the evaluator
// reads back with one member per field, each the value cost.Scope reads
// there (or null when it reads none).
func FuzzAppendScope(f *testing.F) {
	for _, s := range []string{`{"a":"x","b":{"c":1.50}}`, `{"a":null}`, `{"a":"\u0000\"\\"}`, `[]`, `{"a":true,"a":"y"}`, `not json`, `{"b":{"c":"é"}}`} {
		f.Add([]byte(s))
	}
	need := Need{Fields: []string{"payload.a", "payload.b.c"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, ok := AppendScope(nil, need, data)
		if !ok {
			return
		}
		m, err := scopeOf(string(out))
		if err != nil {
			t.Fatalf("recorded scope %q does not read back: %v", out, err)
		}
		if len(m) != len(need.Fields) {
			t.Fatalf("recorded scope %q has %d members, want %d", out, len(m), len(need.Fields))
		}
		for _, field := range need.Fields {
			v, has := cost.Scope(data, field)
			got, present := m[field]
			if !present || (got == nil) == has || (has && *got != v) {
				t.Fatalf("field %s: recorded %v, cost.Scope reads %q %v", field, got, v, has)
			}
		}
	})
}
