package shadow

import (
	"bytes"
	"errors"
	"testing"
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
