package stage

import (
	"encoding/json"
	"testing"
)

func TestStampRewritesGateKeepingOnlyAttempt(t *testing.T) {
	t.Parallel()
	s := Stamp{Graph: "g", Path: "p", Hop: 2, Node: "ip", At: 1700}
	cases := []struct {
		name, in string
		attempt  any
	}{
		{"plain object", `{"a":1}`, nil},
		{"producer-written stamp is overwritten", `{"a":1,"_gate":{"path":"evil","hop":9,"x":true}}`, nil},
		{"attempt carried", `{"_gate":{"attempt":2,"path":"old"}}`, float64(2)},
		{"negative attempt dropped", `{"_gate":{"attempt":-1}}`, nil},
		{"fractional attempt dropped", `{"_gate":{"attempt":1.5}}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got map[string]any
			if err := json.Unmarshal(s.Apply([]byte(c.in)), &got); err != nil {
				t.Fatal(err)
			}
			g := got["_gate"].(map[string]any)
			if g["graph"] != "g" || g["path"] != "p" || g["hop"] != float64(2) || g["node"] != "ip" || g["at"] != float64(1700) {
				t.Fatalf("stamp = %v", g)
			}
			if g["attempt"] != c.attempt || len(g) != 5+map[bool]int{true: 1, false: 0}[c.attempt != nil] {
				t.Fatalf("stamp = %v, want attempt %v and nothing else", g, c.attempt)
			}
		})
	}
	for _, raw := range []string{`[1,2]`, `"text"`, `42`, `null`} {
		if out := s.Apply([]byte(raw)); string(out) != raw {
			t.Fatalf("non-object payload %s was changed to %s; it must pass unstamped", raw, out)
		}
	}
}

func TestStampedPathAndAckRejection(t *testing.T) {
	t.Parallel()
	if p, ok := stampedPath([]byte(`{"_gate":{"path":"p2"}}`)); !ok || p != "p2" {
		t.Fatalf("stamped path = %q %v", p, ok)
	}
	for _, raw := range []string{`{"_gate":{"path":3}}`, `{"x":1}`, `[1]`} {
		if _, ok := stampedPath([]byte(raw)); ok {
			t.Fatalf("%s has no stamped path", raw)
		}
	}
	for text, want := range map[string]bool{
		"queen: refused (ack_rejected): QTXN ack failed for partition x: invalid or expired lease": true,
		"QTXN ACK failed":                           true,
		"ack for unknown transactionId t-1":         true,
		"QDUP duplicate messages in queue":          false,
		"connection reset by peer":                  false,
		"queen: POST /api/v1/transaction: HTTP 500": false,
	} {
		if ackRejection(text) != want {
			t.Errorf("ackRejection(%q) = %v, want %v", text, !want, want)
		}
	}
}

func TestStampKeepsTheProducersBytesMeaning(t *testing.T) {
	t.Parallel()
	out := Stamp{Graph: "g", Path: "p", Hop: 1, Node: "n", At: 1}.Apply([]byte(`{"html":"<a&b>","n":1.50,"nested":{"x":[1,2]}}`))
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if string(got["html"]) != `"<a&b>"` || string(got["n"]) != `1.50` || string(got["nested"]) != `{"x":[1,2]}` {
		t.Fatalf("stamped payload %s rewrote the producer's values", out)
	}
}
