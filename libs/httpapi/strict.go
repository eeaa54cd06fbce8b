package httpapi

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/queen-mq/gate/internal/jsonkit"
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
	_, bad := sc.value(jsonkit.SkipSpace(b, 0), 0)
	return bad
}

// strictScanner walks a valid document once, in place, with the JSON
// toolkit's token steps (white space, string ends, unquoting): each value
// returns where it ended, so nothing is walked twice however deep.
type strictScanner struct {
	b       []byte
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

func (sc *strictScanner) badUTF8(raw []byte, at int) *Refusal {
	if utf8.Valid(raw) {
		return nil
	}
	return Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidUTF8, "%s: %s holds bytes that are not valid UTF-8 (at byte %d): send UTF-8 text", sc.what, sc.field(), at+1+invalidUTF8(raw)).Field(sc.field())
}

// value checks the value at b[i] and returns the index just past it.
func (sc *strictScanner) value(i, depth int) (int, *Refusal) {
	if i >= len(sc.b) {
		return i, nil
	}
	switch sc.b[i] {
	case '{':
		return sc.object(i, depth)
	case '[':
		i = jsonkit.SkipSpace(sc.b, i+1)
		for i < len(sc.b) && sc.b[i] != ']' {
			end, bad := sc.value(i, depth+1)
			if bad != nil {
				return end, bad
			}
			i = jsonkit.SkipSpace(sc.b, end)
			if i < len(sc.b) && sc.b[i] == ',' {
				i = jsonkit.SkipSpace(sc.b, i+1)
			}
		}
		return i + 1, nil
	case '"':
		end := jsonkit.StringEnd(sc.b, i)
		return end, sc.badUTF8(sc.b[i+1:end-1], i)
	}
	return jsonkit.ValueEnd(sc.b, i), nil
}

// object checks the object at b[i] and returns the index just past it.
func (sc *strictScanner) object(i, depth int) (int, *Refusal) {
	var keys map[string]struct{}
	i = jsonkit.SkipSpace(sc.b, i+1)
	for i < len(sc.b) && sc.b[i] == '"' {
		at, end := i, jsonkit.StringEnd(sc.b, i)
		raw := sc.b[at+1 : end-1]
		key := string(raw)
		if bytes.IndexByte(raw, '\\') >= 0 {
			if d, ok := jsonkit.Unquote(nil, sc.b[at:end]); ok {
				key = string(d)
			}
		}
		// A key that is not UTF-8 is named by the object that holds it.
		if bad := sc.badUTF8(raw, at); bad != nil {
			return end, bad
		}
		sc.path = append(sc.path, key)
		if keys == nil {
			keys = map[string]struct{}{}
		}
		if _, dup := keys[key]; dup {
			return end, Refuse(http.StatusUnprocessableEntity, wire.CodeDuplicateField, "%s gives the field %q twice: send each field once (which copy counts would otherwise depend on the reader)", sc.what, sc.field()).Field(sc.field())
		}
		keys[key] = struct{}{}
		if depth == 0 && sc.allowed != nil && !exactName(sc.allowed, key) {
			if near := foldName(sc.allowed, key); near != "" {
				return end, Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownField, "%s has an unknown field %q: field names are case-sensitive, did you mean %q?", sc.what, key, near).Field(key)
			}
			return end, Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownField, "%s has an unknown field %q: remove it (field names are case-sensitive; the fields are %s)", sc.what, key, strings.Join(sc.allowed, ", ")).Field(key)
		}
		// past the ':'
		i = jsonkit.SkipSpace(sc.b, jsonkit.SkipSpace(sc.b, end)+1)
		vend, bad := sc.value(i, depth+1)
		if bad != nil {
			return vend, bad
		}
		sc.path = sc.path[:len(sc.path)-1]
		i = jsonkit.SkipSpace(sc.b, vend)
		if i < len(sc.b) && sc.b[i] == ',' {
			i = jsonkit.SkipSpace(sc.b, i+1)
		}
	}
	return i + 1, nil
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
