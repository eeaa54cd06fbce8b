package cost

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// The splice writes the stamp as the last member and copies every other
// member's bytes; a payload that is not an object is refused. The first
// cases are gate-bench's former appendGate table: `{ }` now loses its
// inner space and a producer's `_gate` is replaced (appendGate refused
// both), as gate-relay always did.
func TestAppendStampedSplicesTheStampIn(t *testing.T) {
	t.Parallel()
	st := GateStamp{Graph: "g", Path: "p", Hop: 1, Node: "n", At: 5}
	const gate = `"_gate":{"graph":"g","path":"p","hop":1,"node":"n","at":5}`
	cases := []struct {
		in   string
		how  Splice
		want string // "" when refused
	}{
		{`{"i":1}`, Splice{}, `{"i":1,` + gate + `}`},
		{` {} `, Splice{}, `{` + gate + `}`},
		{`{ }`, Splice{}, `{` + gate + `}`},
		{`[1]`, Splice{}, ""},
		{`"s"`, Splice{}, ""},
		{`null`, Splice{}, ""},
		{`{"_gate":1}`, Splice{}, `{` + gate + `}`},
		{` { "a" : [ 1 , 2 ] , "b":"<&>" } `, Splice{}, `{"a" : [ 1 , 2 ],"b":"<&>",` + gate + `}`},
		{`{"_gate":{"attempt":3},"a":1,"\u005fgate":{"attempt":4}}`, Splice{KeepAttempt: true}, `{"a":1,"_gate":{"graph":"g","path":"p","hop":1,"node":"n","at":5,"attempt":4}}`},
		{`{"_gate":{"attempt":3}}`, Splice{}, `{` + gate + `}`},
		{`{"_gate":{"attempt":-1}}`, Splice{KeepAttempt: true}, `{` + gate + `}`},
		{`{"_gate":{"attempt":1.0}}`, Splice{KeepAttempt: true}, `{` + gate + `}`},
		{`{"a":1,"op":"old","o\u0070":"older"}`, Splice{Op: "x.y"}, `{"a":1,"op":"x.y",` + gate + `}`},
		{`{}`, Splice{Op: "x\u2028<"}, `{"op":"x\u2028<",` + gate + `}`},
		{`{"op":"kept"}`, Splice{}, `{"op":"kept",` + gate + `}`},
		{`{"i":1}`, Splice{Head: st.AppendHead(nil)}, `{"i":1,` + gate + `}`},
	}
	for _, c := range cases {
		prefix := []byte("earlier|")
		out, ok := st.AppendStamped(prefix, []byte(c.in), c.how)
		if !ok {
			if c.want != "" || string(out) != "earlier|" {
				t.Errorf("AppendStamped(%s, %+v) = %q, refused; want %s", c.in, c.how, out, c.want)
			}
			continue
		}
		if got := string(out[len(prefix):]); got != c.want || string(out[:len(prefix)]) != "earlier|" {
			t.Errorf("AppendStamped(%s, %+v) = %q; want %s", c.in, c.how, out, c.want)
		}
		if !json.Valid(out[len(prefix):]) {
			t.Errorf("AppendStamped(%s) is not valid JSON: %s", c.in, out)
		}
	}
}

// stampByDecoding is the reference splice: decode the object, drop `_gate`
// (and "op" when one is given), add them back, re-encode.
func stampByDecoding(st GateStamp, data []byte, how Splice) ([]byte, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, false
	}
	if how.KeepAttempt {
		var prior map[string]json.RawMessage
		if g, ok := obj[Stamp]; ok && len(g) > 0 && g[0] == '{' && json.Unmarshal(g, &prior) == nil {
			if n, err := strconv.ParseInt(string(prior["attempt"]), 10, 64); err == nil && n >= 0 {
				st.Attempt, st.HasAttempt = n, true
			}
		}
	}
	g := map[string]any{"graph": st.Graph, "hop": st.Hop, "node": st.Node, "at": st.At}
	if st.Path != "" {
		g["path"] = st.Path
	}
	if st.HasAttempt {
		g["attempt"] = st.Attempt
	}
	obj[Stamp], _ = json.Marshal(g)
	if how.Op != "" {
		obj["op"], _ = json.Marshal(how.Op)
	}
	out, err := json.Marshal(obj)
	return out, err == nil
}

// sameJSON reports whether a and b hold the same JSON value: objects
// compared as decoded (keys unordered), numbers by their text.
func sameJSON(a, b []byte) bool {
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	var va, vb any
	return da.Decode(&va) == nil && db.Decode(&vb) == nil && reflect.DeepEqual(va, vb)
}

// FuzzAppendStampedEqualsDecodeEncode: on any valid JSON object the splice
// is the same JSON value as decoding, replacing and re-encoding (keys
// unordered, numbers by their text), with and without an op, a prepared
// head and the carried attempt; anything else is refused with dst as it
// was.
func FuzzAppendStampedEqualsDecodeEncode(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"_gate":{"path":"p","attempt":3},"x":[1,{"_gate":2}]}`,
		`{"a":1,"_gate":1,"b":"x","_gate":{"attempt":7}}`, `{"\u005fgate":{"attempt":2},"k":"v"}`,
		`{ "a" : { "b" : [ "}" , "\"" , "\\" ] } , "c" : -1.5e3 , "d" : true , "e" : null }`,
		`{"op":"a","o\u0070":"b"}`, `[1]`, `"s"`, `null`, "{\"bad\":\"\xff\"}", `{"_gate":{"attempt":1.0}}`,
	} {
		f.Add([]byte(seed), "g", "main", 1, "n", int64(1700000000000), int64(0), "x.y", byte(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, graph, path string, hop int, node string, at, attempt int64, op string, mode byte) {
		if !json.Valid(data) {
			return
		}
		st := GateStamp{Graph: graph, Path: path, Hop: hop, Node: node, At: at, Attempt: attempt, HasAttempt: attempt > 0}
		how := Splice{KeepAttempt: mode&1 != 0}
		if mode&2 != 0 {
			how.Op = op
		}
		if mode&4 != 0 {
			how.Head = st.AppendHead(nil)
		}
		got, ok := st.AppendStamped([]byte("x"), data, how)
		want, wantOK := stampByDecoding(st, data, how)
		if ok != wantOK {
			t.Fatalf("input %q: splice ok %v, reference ok %v", data, ok, wantOK)
		}
		if !ok {
			if string(got) != "x" {
				t.Fatalf("input %q: refused, but dst became %q", data, got)
			}
			return
		}
		if !json.Valid(got[1:]) || !sameJSON(got[1:], want) {
			t.Fatalf("input %q (%+v):\n splice    %s\n reference %s", data, how, got[1:], want)
		}
	})
}

func BenchmarkAppendStamped(b *testing.B) {
	data := []byte(`{"op":"price.update","cost":1,"listingId":"listing-42","account":"acct-7","price":{"amount":129,"currency":"EUR"},"_gate":{"graph":"g","path":"main","hop":1,"node":"n","at":1764650000000}}`)
	st := GateStamp{Graph: "airbnb-bench", Path: "main", Hop: 2, Node: "egress", At: 1764650000001}
	how := Splice{Head: st.AppendHead(nil), KeepAttempt: true}
	dst := make([]byte, 0, 1024)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		dst, _ = st.AppendStamped(dst[:0], data, how)
	}
}
