package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// strictScan is the part of the strict decoder encoding/json does not do:
// it walks the whole body once (linear in its size) and refuses, naming the
// field, what the declare routes' parser refuses too — a key given twice in
// any object, a top-level field whose name matches a known one only when
// case is ignored (encoding/json would take "Payload" for "payload"), and a
// string (key or value) that is not valid UTF-8 (encoding/json would
// silently replace it). allowed are the top-level field names. Syntax
// errors are left to the decode that follows, which names the byte.
func strictScan(b []byte, allowed []string, what string) *apiError {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		obj, wantKey bool
		keys         map[string]struct{}
	}
	var stack []frame
	var path []string
	field := func() string {
		if len(path) == 0 {
			return "(root)"
		}
		return strings.Join(path, ".")
	}
	// valueDone is called after a whole value inside the top frame.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
			path = path[:len(path)-1]
		}
	}
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil
		}
		if span := b[off:dec.InputOffset()]; !utf8.Valid(span) {
			at := off + int64(invalidUTF8(span))
			return fail(http.StatusUnprocessableEntity, "%s: %s holds bytes that are not valid UTF-8 (at byte %d): send UTF-8 text", what, field(), at).field(field())
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{obj: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			top := len(stack) - 1
			if top >= 0 && stack[top].obj && stack[top].wantKey {
				fr := &stack[top]
				if fr.keys == nil {
					fr.keys = map[string]struct{}{}
				}
				path = append(path, t)
				if _, dup := fr.keys[t]; dup {
					return fail(http.StatusUnprocessableEntity, "%s gives the field %q twice: send each field once (which copy counts would otherwise depend on the reader)", what, field()).field(field())
				}
				fr.keys[t] = struct{}{}
				fr.wantKey = false
				if top == 0 && allowed != nil && !exactName(allowed, t) {
					if near := foldName(allowed, t); near != "" {
						return fail(http.StatusUnprocessableEntity, "%s has an unknown field %q: field names are case-sensitive, did you mean %q?", what, t, near).field(t)
					}
					return fail(http.StatusUnprocessableEntity, "%s has an unknown field %q: remove it (field names are case-sensitive; the fields are %s)", what, t, strings.Join(allowed, ", ")).field(t)
				}
				continue
			}
			valueDone()
		default:
			valueDone()
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
