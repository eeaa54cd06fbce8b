package stage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/queen"
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
	cases := []struct {
		err  error
		want bool
	}{
		{&queen.Refusal{Reason: queen.ReasonAckRejected, Message: "QTXN ack failed for partition x: invalid or expired lease"}, true},
		{&queen.Refusal{Message: "QTXN ack failed (a broker older than reasons)"}, true},
		{fmt.Errorf("settle: %w", &queen.Refusal{Reason: queen.ReasonAckRejected}), true},
		{&queen.Refusal{Reason: queen.ReasonDuplicate, Message: "QDUP duplicate messages in queue"}, false},
		{errors.New("QTXN ack failed, but only as text"), false},
		{errors.New("connection reset by peer"), false},
	}
	for _, c := range cases {
		if isAckRejection(c.err) != c.want {
			t.Errorf("isAckRejection(%v) = %v, want %v", c.err, !c.want, c.want)
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

// applyByDecoding is the reference stamp: decode the object, replace the
// `_gate` member, re-encode. Apply must produce an equivalent object.
func applyByDecoding(s Stamp, data []byte) []byte {
	// JSON's white space only: bytes.TrimSpace would also take a form
	// feed, which makes "\f{}" invalid JSON, for white space.
	trimmed := bytes.Trim(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return data
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return data
	}
	attempt, has := int64(0), false
	if raw, ok := cost.Lookup(trimmed, cost.Root+"."+cost.Stamp+".attempt"); ok {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n >= 0 {
			attempt, has = n, true
		}
	}
	g := map[string]any{"graph": s.Graph, "path": s.Path, "hop": s.Hop, "node": s.Node, "at": s.At}
	if s.Path == "" {
		delete(g, "path") // the one encoder (cost.GateStamp) omits an empty path
	}
	if has {
		g["attempt"] = attempt
	}
	obj[cost.Stamp], _ = json.Marshal(g)
	out, err := json.Marshal(obj)
	if err != nil {
		return data
	}
	return out
}

// decodeExact decodes JSON keeping numbers as their text.
func decodeExact(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// The spliced stamp is the decoded-and-re-encoded stamp: for any input the
// two results are the same JSON value (objects compared as decoded, keys
// unordered, numbers by their text), and non-objects or invalid JSON come
// back byte for byte.
func FuzzStampSpliceEqualsDecodeEncode(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"i":42}`, `{"_gate":{"path":"p","attempt":3},"x":[1,{"_gate":2}]}`,
		`{"a":1,"_gate":1,"b":"x","_gate":{"attempt":7}}`, `{"\u005fgate":{"attempt":2},"k":"v"}`,
		`{ "a" : { "b" : [ "}" , "\"" , "\\" ] } , "c" : -1.5e3 , "d" : true , "e" : null }`,
		`{"a":1,"a":2}`, `[1,2]`, `"s"`, `12`, `null`, `{"a":}`, `{"a":1}x`, `{"html":"<&>"}`, "{\"bad\":\"\xff\"}",
		`{"_gate":{"attempt":-1}}`, `{"_gate":{"attempt":1.0}}`, `{"_gate":{"attempt":99999999999999999999}}`,
	} {
		f.Add([]byte(seed), "g", "main", 1, "n", int64(1700000000000))
	}
	f.Fuzz(func(t *testing.T, data []byte, graph, path string, hop int, node string, at int64) {
		s := Stamp{Graph: graph, Path: path, Hop: hop, Node: node, At: at}
		in := bytes.Clone(data)
		got := s.Apply(data)
		want := applyByDecoding(s, data)
		if !bytes.Equal(data, in) {
			t.Fatalf("Apply modified its input")
		}
		prepared := s
		prepared.prepare()
		if again := prepared.Apply(data); !bytes.Equal(again, got) {
			t.Fatalf("input %q: the prepared stamp wrote %q, the plain one %q", data, again, got)
		}
		// The settle path skips the second scan of claimed (decoder-validated)
		// data and marks its output valid for the encoder: both must hold.
		if json.Valid(data) {
			claimed, ok := prepared.appendClaimed(nil, data)
			if ok && !bytes.Equal(claimed, got) || !ok && !bytes.Equal(got, data) {
				t.Fatalf("input %q: the claimed-data splice wrote %q (ok %v), Apply %q", data, claimed, ok, got)
			}
			if !json.Valid(got) {
				t.Fatalf("input %q: the stamped output %q is not valid JSON", data, got)
			}
		}
		wv, werr := decodeExact(want)
		if bytes.Equal(want, data) && (werr != nil || len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{') {
			if !bytes.Equal(got, data) {
				t.Fatalf("input %q: the reference leaves it unchanged, the splice wrote %q", data, got)
			}
			return
		}
		gv, gerr := decodeExact(got)
		if werr != nil || gerr != nil {
			t.Fatalf("input %q: reference %q (%v), splice %q (%v)", data, want, werr, got, gerr)
		}
		if !reflect.DeepEqual(gv, wv) {
			t.Fatalf("input %q:\n splice    %s\n reference %s", data, got, want)
		}
	})
}
