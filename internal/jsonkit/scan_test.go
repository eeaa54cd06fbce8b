package jsonkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// decodeAny reads one value through the Scanner into what encoding/json's
// Decoder with UseNumber makes of it.
func decodeAny(s *Scanner) (any, error) {
	switch c := s.Peek(); {
	case c == '{':
		m := map[string]any{}
		err := s.Object(func(key []byte) error {
			k := string(key)
			v, err := decodeAny(s)
			m[k] = v
			return err
		})
		return m, err
	case c == '[':
		a := []any{}
		_, err := s.Array(func() error {
			v, err := decodeAny(s)
			a = append(a, v)
			return err
		})
		return a, err
	case c == '"':
		t, err := s.Text()
		return string(t), err
	case c == 't' || c == 'f':
		var b bool
		err := s.Bool(&b)
		return b, err
	case c == 'n':
		if s.Null() {
			return nil, nil
		}
	}
	n, err := s.Number()
	return json.Number(n), err
}

// standard decodes b with encoding/json, numbers kept as their text.
func standard(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

var scanSeeds = []string{
	`{"a":1,"b":[true,false,null,-0.5e+3,"x"],"c":{"d":"\u00e9\ud83d\ude00\n\"\\\/\b\f\r\t"}}`,
	`{"a":1,"a":2}`, `[]`, `{}`, ` [ 1 , { } , [ ] ] `, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
	`"\ud83d\ude00\ud83d"`, "\"\xff\xfe caf\xc3\xa9 \xed\xa0\x80\"", `0`, `-0`, `1e5`, `1E-5`, `12.50`,
	`01`, `1.`, `.5`, `-`, `+1`, `1e`, `tru`, `nul`, `"\x"`, `"\u12"`, "\"a\x01\"", `{"a" 1}`, `{"a":1,}`, `[1,]`,
	`{"a":1}x`, `{"\u005fgate":{"attempt":2}}`, `"` + strings.Repeat("plain", 40) + `"`, ``, ` `,
}

// FuzzScannerMatchesEncodingJSON: the Scanner accepts exactly what
// json.Valid accepts, reads every value as encoding/json decodes it (each
// string to the same value, invalid UTF-8 and lone surrogates included),
// and the valid-JSON helpers (ValueEnd, NextMember, Unquote) find the same
// boundaries and keys as the Scanner does.
func FuzzScannerMatchesEncodingJSON(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		valid := json.Valid(b)
		s := NewScanner(b)
		err := s.Skip()
		if err == nil {
			err = s.End()
		}
		if (err == nil) != valid {
			t.Fatalf("input %q: Skip+End err %v, json.Valid %v", b, err, valid)
		}
		s = NewScanner(b)
		got, gerr := decodeAny(s)
		if gerr == nil {
			gerr = s.End()
		}
		want, werr := standard(b)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("input %q: scanner err %v, encoding/json err %v", b, gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("input %q:\nscanner       %#v\nencoding/json %#v", b, got, want)
		}
		if !bytes.Equal(b, in) {
			t.Fatalf("the scanner changed its input")
		}
		// LastMember accepts what starts with a valid object, whatever
		// follows it.
		s = NewScanner(b)
		isObject := s.Peek() == '{'
		if _, _, ok := LastMember(b, "a", 0); ok != (isObject && s.Skip() == nil) {
			t.Fatalf("input %q: LastMember ok %v", b, ok)
		}
		if !valid {
			return
		}
		start := SkipSpace(b, 0)
		if end := ValueEnd(b, start); SkipSpace(b, end) != len(b) {
			t.Fatalf("input %q: ValueEnd stops at %d", b, end)
		}
		if b[start] == '{' {
			checkMembers(t, b[start:])
		}
		if b[start] == '"' {
			tok := bytes.TrimSpace(b)
			u, ok := Unquote(nil, tok)
			if !ok || string(u) != want.(string) {
				t.Fatalf("Unquote(%q) = %q, %v; want %q", tok, u, ok, want)
			}
		}
	})
}

// checkMembers walks a valid object both ways: NextMember's keys and
// values are the Scanner's.
func checkMembers(t *testing.T, obj []byte) {
	t.Helper()
	type kv struct{ key, value string }
	var byScanner, byMembers []kv
	s := NewScanner(obj)
	err := s.Object(func(key []byte) error {
		k := string(key)
		v, err := s.Raw()
		byScanner = append(byScanner, kv{k, string(v)})
		return err
	})
	if err != nil {
		t.Fatalf("object %q: %v", obj, err)
	}
	for m, ok := NextMember(obj, 1); ok; m, ok = NextMember(obj, m.ValueEnd) {
		k, good := Unquote(nil, obj[m.KeyStart:m.KeyEnd])
		if !good {
			t.Fatalf("object %q: key %q does not unquote", obj, obj[m.KeyStart:m.KeyEnd])
		}
		byMembers = append(byMembers, kv{string(k), string(obj[m.ValueStart:m.ValueEnd])})
	}
	if !reflect.DeepEqual(byScanner, byMembers) {
		t.Fatalf("object %q:\nScanner    %q\nNextMember %q", obj, byScanner, byMembers)
	}
	last := map[string]string{}
	for _, m := range byScanner {
		last[m.key] = m.value
	}
	for k, want := range last {
		if v, found, ok := LastMember(obj, k, 0); !ok || !found || string(v) != want {
			t.Fatalf("object %q: LastMember(%q) = %q, %v, %v; want %q", obj, k, v, found, ok, want)
		}
	}
	if _, has := last["absent"]; has {
		return
	}
	if _, found, ok := LastMember(obj, "absent", 0); !ok || found {
		t.Fatalf("object %q: LastMember of an absent key = %v, %v", obj, found, ok)
	}
}

func TestScannerMatchesEncodingJSONOnSeeds(t *testing.T) {
	t.Parallel()
	for _, seed := range scanSeeds {
		b := []byte(seed)
		s := NewScanner(b)
		got, gerr := decodeAny(s)
		if gerr == nil {
			gerr = s.End()
		}
		want, werr := standard(b)
		if (gerr == nil) != (werr == nil) || gerr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("input %q: scanner %#v (%v), encoding/json %#v (%v)", seed, got, gerr, want, werr)
		}
	}
}

// The depth limit is encoding/json's: 10000 open arrays pass, 10001 fail;
// LastMember takes a lower one.
func TestScannerDepthLimit(t *testing.T) {
	t.Parallel()
	nest := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	for _, c := range []struct {
		n  int
		ok bool
	}{{MaxDepth, true}, {MaxDepth + 1, false}} {
		b := nest(c.n)
		if err := NewScanner(b).Skip(); (err == nil) != c.ok {
			t.Errorf("%d nested arrays: err %v", c.n, err)
		}
		if json.Valid(b) != c.ok {
			t.Errorf("%d nested arrays: json.Valid disagrees", c.n)
		}
	}
	for _, c := range []struct {
		doc   string
		limit int
		ok    bool
	}{{`{"a":[[1]]}`, 3, true}, {`{"a":[[[1]]]}`, 3, false}, {`{"a":[[[]]]}`, 3, false}} {
		if _, _, ok := LastMember([]byte(c.doc), "a", c.limit); ok != c.ok {
			t.Errorf("LastMember(%s, limit %d) ok %v, want %v", c.doc, c.limit, ok, c.ok)
		}
	}
}

// Typed reads fill Go values as encoding/json fills the same types.
func TestScannerTypedReads(t *testing.T) {
	t.Parallel()
	type typed struct {
		S   string   `json:"s"`
		I   int      `json:"i"`
		I64 int64    `json:"i64"`
		B   bool     `json:"b"`
		OB  *bool    `json:"ob"`
		OI  *int     `json:"oi"`
		Ss  []string `json:"ss"`
	}
	read := func(b []byte) (typed, error) {
		v := typed{S: "keep", I: 7, I64: 8, B: true, Ss: []string{"x"}}
		s := NewScanner(b)
		err := s.Object(func(key []byte) error {
			switch string(key) {
			case "s":
				return s.Str(&v.S)
			case "i":
				return s.Int(&v.I)
			case "i64":
				return s.Int64(&v.I64)
			case "b":
				return s.Bool(&v.B)
			case "ob":
				return s.OptBool(&v.OB)
			case "oi":
				return s.OptInt(&v.OI)
			case "ss":
				return s.Strings(&v.Ss)
			}
			return s.Skip()
		})
		if err == nil {
			err = s.End()
		}
		return v, err
	}
	for _, doc := range []string{
		`{"s":"a\u00e9","i":-3,"i64":9223372036854775807,"b":false,"ob":true,"oi":4,"ss":["p","\u0071"]}`,
		`{"s":null,"i":null,"i64":null,"b":null,"ob":null,"oi":null,"ss":null}`,
		`{"ss":[]}`, `{"ss":["a",null]}`, `{"i":1.0}`, `{"i":1e2}`, `{"i64":9223372036854775808}`, `{"s":1}`,
		`{"b":"true"}`, `{"oi":"1"}`, `{"ss":"a"}`, `{"x":[1,{"y":2}],"s":"z"}`, `null`,
	} {
		want := typed{S: "keep", I: 7, I64: 8, B: true, Ss: []string{"x"}}
		werr := json.Unmarshal([]byte(doc), &want)
		got, gerr := read([]byte(doc))
		if (gerr == nil) != (werr == nil) {
			t.Errorf("%s: scanner err %v, encoding/json err %v", doc, gerr, werr)
			continue
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nscanner       %+v\nencoding/json %+v", doc, got, want)
		}
	}
}

// Raw's bytes end where the value does, capacity included, so an append
// to them cannot overwrite the document.
func TestRawIsCapped(t *testing.T) {
	t.Parallel()
	doc := []byte(`[{"a":1},2]`)
	s := NewScanner(doc)
	var first []byte
	if _, err := s.Array(func() error {
		v, err := s.Raw()
		if first == nil {
			first = v
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(first) != `{"a":1}` || cap(first) != len(first) {
		t.Fatalf("Raw = %q (cap %d)", first, cap(first))
	}
	_ = append(first, 'x')
	if string(doc) != `[{"a":1},2]` {
		t.Fatalf("an append to Raw's bytes changed the document: %s", doc)
	}
}

func BenchmarkScannerSkip(b *testing.B) {
	doc := []byte(`{"op":"price.update","cost":1,"listingId":"listing-42","account":"acct-7","price":{"amount":129,"currency":"EUR"},"tags":["a","b"],"ok":true,"none":null}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := NewScanner(doc).Skip(); err != nil {
			b.Fatal(err)
		}
	}
}
