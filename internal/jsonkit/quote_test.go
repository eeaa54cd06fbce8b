package jsonkit

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// encodingJSON is what encoding/json writes for s without HTML escaping.
func encodingJSON(t testing.TB, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Every byte value alone and between plain bytes, and every rune of the
// Basic Multilingual Plane (surrogate code points are invalid UTF-8 and
// stand for themselves here), is written as encoding/json writes it: the
// control characters with their short escapes (\b and \f included) or
// \u00XX, U+2028/U+2029 escaped, invalid bytes as \ufffd.
func TestAppendStringIsEncodingJSONForEveryByteAndRune(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		for _, s := range []string{string([]byte{byte(c)}), "ab" + string([]byte{byte(c)}) + "cdefghijk"} {
			if got, want := AppendString(nil, s), encodingJSON(t, s); !bytes.Equal(got, want) {
				t.Errorf("AppendString(%q) = %s, encoding/json = %s", s, got, want)
			}
		}
	}
	for r := rune(0); r < 0x10000; r++ {
		s := string(utf8.AppendRune([]byte("x"), r))
		if got, want := AppendString(nil, s), encodingJSON(t, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json = %s", s, got, want)
		}
	}
	if got := string(AppendString([]byte("prefix:"), "\b\f")); got != `prefix:"\b\f"` {
		t.Errorf("AppendString appends %s after the prefix; want \\b and \\f short escapes", got)
	}
}

// FuzzAppendString checks the string encoder against encoding/json
// (without HTML escaping): same bytes, and it round-trips.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\n\n\r\t\x00\x1f", "é€😀", "\u2028\u2029", "\xff\xfe", "<&>", "\b\f\x7f", "0198f0aa-0000-7000-8000-000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		want := encodingJSON(t, s)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json = %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s does not decode: %v", got, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip %q -> %q", s, back)
		}
		if u, ok := Unquote(nil, got); !ok || string(u) != back {
			t.Fatalf("Unquote(%s) = %q, %v; encoding/json decodes %q", got, u, ok, back)
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	s := "0198f0aa-0000-7000-8000-000000000001"
	buf := make([]byte, 0, 64)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
