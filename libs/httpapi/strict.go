package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queen-mq/gate/internal/jsonkit"
	"github.com/queen-mq/gate/libs/wire"
)

// strictScan is the part of the strict decoder encoding/json does not do:
// it walks the whole body once, in place (linear in its size, no copy of
// its values), and refuses, naming the field, what the declare routes'
// parser refuses too — a key given twice in any object, a field the
// route's type does not know (at the top level and inside every nested
// object the type describes, array elements included: a chat message's
// fields as strictly as the chat body's) or whose name matches a known one
// only when case is ignored (encoding/json would take "Payload" for
// "payload"), and a string (key or value) that is not valid UTF-8
// (encoding/json would silently replace it). sh is the shape of the body
// (shapeOf the destination type; nil checks no field names). b must
// already be valid JSON (json.Valid).
func strictScan(b []byte, sh *shape, what string) *Refusal {
	sc := &strictScanner{b: b, what: what}
	_, bad := sc.value(jsonkit.SkipSpace(b, 0), 0, sh)
	return bad
}

// shape is what the strict scanner knows of a value: the fields of an
// object (names, and each field's own shape), or the shape of an array's
// elements. A nil shape is a value whose fields are anyone's (a raw
// payload, a map).
type shape struct {
	names  []string
	fields map[string]*shape
	elem   *shape
}

// shapeOf is the shape of values of type t: a struct's JSON fields, a
// slice's or array's elements, through pointers; nil for everything else
// (json.RawMessage, maps, interfaces and scalars).
func shapeOf(t reflect.Type) *shape {
	return shapeOfDepth(t, 0)
}

func shapeOfDepth(t reflect.Type, depth int) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if depth > 8 || t == rawMessageType || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		// A type that decodes itself has its own JSON shape.
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		sh := &shape{fields: map[string]*shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case name == "":
				name = f.Name
			}
			sh.names = append(sh.names, name)
			sh.fields[name] = shapeOfDepth(f.Type, depth+1)
		}
		return sh
	case reflect.Slice, reflect.Array:
		if e := shapeOfDepth(t.Elem(), depth+1); e != nil {
			return &shape{elem: e}
		}
	}
	return nil
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// strictScanner walks a valid document once, in place, with the JSON
// toolkit's token steps (white space, string ends, unquoting): each value
// returns where it ended, so nothing is walked twice however deep.
type strictScanner struct {
	b    []byte
	what string
	path []string
}

// field names the value being scanned: its keys joined by dots, an array
// element by its index ("messages[2].role").
func (sc *strictScanner) field() string {
	if len(sc.path) == 0 {
		return "(root)"
	}
	var b strings.Builder
	for i, p := range sc.path {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func (sc *strictScanner) badUTF8(raw []byte, at int) *Refusal {
	if utf8.Valid(raw) {
		return nil
	}
	return Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidUTF8, "%s: %s holds bytes that are not valid UTF-8 (at byte %d): send UTF-8 text", sc.what, sc.field(), at+1+invalidUTF8(raw)).Field(sc.field())
}

// value checks the value at b[i], of shape sh, and returns the index just
// past it.
func (sc *strictScanner) value(i, depth int, sh *shape) (int, *Refusal) {
	if i >= len(sc.b) {
		return i, nil
	}
	switch sc.b[i] {
	case '{':
		return sc.object(i, depth, sh)
	case '[':
		var elem *shape
		if sh != nil {
			elem = sh.elem
		}
		i = jsonkit.SkipSpace(sc.b, i+1)
		for n := 0; i < len(sc.b) && sc.b[i] != ']'; n++ {
			sc.path = append(sc.path, "["+strconv.Itoa(n)+"]")
			end, bad := sc.value(i, depth+1, elem)
			if bad != nil {
				return end, bad
			}
			sc.path = sc.path[:len(sc.path)-1]
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

// object checks the object at b[i], of shape sh, and returns the index
// just past it.
func (sc *strictScanner) object(i, depth int, sh *shape) (int, *Refusal) {
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
		var child *shape
		if sh != nil && sh.fields != nil {
			if !exactName(sh.names, key) {
				if near := foldName(sh.names, key); near != "" {
					return end, Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownField, "%s has an unknown field %q: field names are case-sensitive, did you mean %q?", sc.what, sc.field(), near).Field(sc.field())
				}
				return end, Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownField, "%s has an unknown field %q: remove it (field names are case-sensitive; the fields are %s)", sc.what, sc.field(), strings.Join(sh.names, ", ")).Field(sc.field())
			}
			child = sh.fields[key]
		}
		// past the ':'
		i = jsonkit.SkipSpace(sc.b, jsonkit.SkipSpace(sc.b, end)+1)
		vend, bad := sc.value(i, depth+1, child)
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
	if sh := shapeOf(reflect.TypeOf(dst)); sh != nil {
		return sh.names
	}
	return nil
}
