package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/queen-mq/gate/libs/wire"
)

// strictScan is the part of the strict decoder encoding/json does not do:
// it walks the whole body once, in place (linear in its size, no copy of
// its values), and refuses, naming the field, what the declare routes'
// parser refuses too — a key given twice in any object, a top-level field
// whose name matches a known one only when case is ignored (encoding/json
// would take "Payload" for "payload"), and a string (key or value) that is
// not valid UTF-8 (encoding/json would silently replace it). allowed are
// the top-level field names. b must already be valid JSON (json.Valid).
func strictScan(b []byte, allowed []string, what string) *Refusal {
	sc := &strictScanner{b: b, allowed: allowed, what: what}
	sc.space()
	return sc.value(0)
}

type strictScanner struct {
	b       []byte
	i       int
	allowed []string
	what    string
	path    []string
}

func (sc *strictScanner) field() string {
	if len(sc.path) == 0 {
		return "(root)"
	}
	return strings.Join(sc.path, ".")
}

func (sc *strictScanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// str steps over the string at sc.i and returns its raw bytes (between
// the quotes, escapes undecoded) and its offset.
func (sc *strictScanner) str() ([]byte, int) {
	start := sc.i
	sc.i++
	for sc.i < len(sc.b) && sc.b[sc.i] != '"' {
		if sc.b[sc.i] == '\\' {
			sc.i++
		}
		sc.i++
	}
	sc.i++
	return sc.b[start+1 : sc.i-1], start
}

func (sc *strictScanner) badUTF8(raw []byte, at int) *Refusal {
	if utf8.Valid(raw) {
		return nil
	}
	return Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidUTF8, "%s: %s holds bytes that are not valid UTF-8 (at byte %d): send UTF-8 text", sc.what, sc.field(), at+1+invalidUTF8(raw)).Field(sc.field())
}

func (sc *strictScanner) value(depth int) *Refusal {
	if sc.i >= len(sc.b) {
		return nil
	}
	switch sc.b[sc.i] {
	case '{':
		return sc.object(depth)
	case '[':
		sc.i++
		sc.space()
		if sc.b[sc.i] == ']' {
			sc.i++
			return nil
		}
		for {
			sc.space()
			if bad := sc.value(depth + 1); bad != nil {
				return bad
			}
			sc.space()
			c := sc.b[sc.i]
			sc.i++
			if c == ']' {
				return nil
			}
		}
	case '"':
		raw, at := sc.str()
		return sc.badUTF8(raw, at)
	}
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return nil
		}
		sc.i++
	}
	return nil
}

func (sc *strictScanner) object(depth int) *Refusal {
	sc.i++
	sc.space()
	if sc.b[sc.i] == '}' {
		sc.i++
		return nil
	}
	var keys map[string]struct{}
	for {
		sc.space()
		raw, at := sc.str()
		key := string(raw)
		if bytes.IndexByte(raw, '\\') >= 0 {
			_ = json.Unmarshal(sc.b[at:sc.i], &key)
		}
		// A key that is not UTF-8 is named by the object that holds it.
		if bad := sc.badUTF8(raw, at); bad != nil {
			return bad
		}
		sc.path = append(sc.path, key)
		if keys == nil {
			keys = map[string]struct{}{}
		}
		if _, dup := keys[key]; dup {
			return Refuse(http.StatusUnprocessableEntity, wire.CodeDuplicateField, "%s gives the field %q twice: send each field once (which copy counts would otherwise depend on the reader)", sc.what, sc.field()).Field(sc.field())
		}
		keys[key] = struct{}{}
		if depth == 0 && sc.allowed != nil && !exactName(sc.allowed, key) {
			if near := foldName(sc.allowed, key); near != "" {
				return Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownField, "%s has an unknown field %q: field names are case-sensitive, did you mean %q?", sc.what, key, near).Field(key)
			}
			return Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownField, "%s has an unknown field %q: remove it (field names are case-sensitive; the fields are %s)", sc.what, key, strings.Join(sc.allowed, ", ")).Field(key)
		}
		sc.space()
		sc.i++ // ':'
		sc.space()
		if bad := sc.value(depth + 1); bad != nil {
			return bad
		}
		sc.path = sc.path[:len(sc.path)-1]
		sc.space()
		c := sc.b[sc.i]
		sc.i++
		if c == '}' {
			return nil
		}
	}
}

// invalidUTF8 is the offset of the first invalid byte of b.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

func exactName(names []string, s string) bool {
	for _, n := range names {
		if n == s {
			return true
		}
	}
	return false
}

func foldName(names []string, s string) string {
	for _, n := range names {
		if strings.EqualFold(n, s) {
			return n
		}
	}
	return ""
}

// jsonFields are the JSON names of the fields of the struct dst points to.
func jsonFields(dst any) []string {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case name == "":
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
