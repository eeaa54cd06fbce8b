package graph

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// kind is the JSON type of a parsed value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is one node of the order-preserving JSON tree the strict decoder
// walks. Numbers keep their literal text so integers and floats can be told
// apart exactly.
type value struct {
	kind       kind
	b          bool
	s          string // string value, or number literal
	arr        []*value
	obj        []member
	start, end int // byte offsets in the document, for "got …" messages
}

type member struct {
	key string
	val *value
}

// maxNesting bounds the depth of a document; real graphs nest about six
// levels, and the bound keeps hostile input from exhausting the stack.
const maxNesting = 64

// tree parses a JSON text into an ordered tree, or fails with a syntax
// error that names the byte offset.
type tree struct {
	b    []byte
	i    int
	slab []value
	// text is the body as one string: unescaped strings and number
	// literals are substrings of it, which costs no allocation each.
	text string
	// members and elems are stacks the open objects and arrays collect
	// into; each container copies its own part out once, at its exact size.
	members []member
	elems   []*value
}

// alloc hands out values from chunks, so a document costs a few
// allocations rather than one per value. Chunks are never grown in place,
// so earlier pointers stay valid.
func (t *tree) alloc(v value) *value {
	if len(t.slab) == cap(t.slab) {
		t.slab = make([]value, 0, 64)
	}
	t.slab = append(t.slab, v)
	return &t.slab[len(t.slab)-1]
}

func parseTree(b []byte) (*value, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("the document is not valid UTF-8")
	}
	t := &tree{b: b, text: string(b)}
	t.space()
	v, err := t.value(0)
	if err != nil {
		return nil, err
	}
	t.space()
	if t.i != len(b) {
		return nil, t.fail("unexpected data after the document")
	}
	return v, nil
}

func (t *tree) fail(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", t.i, fmt.Sprintf(format, args...))
}

func (t *tree) space() {
	for t.i < len(t.b) {
		switch t.b[t.i] {
		case ' ', '\t', '\n', '\r':
			t.i++
		default:
			return
		}
	}
}

func (t *tree) value(depth int) (*value, error) {
	if depth > maxNesting {
		return nil, t.fail("nested more than %d levels deep", maxNesting)
	}
	if t.i >= len(t.b) {
		return nil, t.fail("unexpected end of input")
	}
	start := t.i
	switch c := t.b[t.i]; {
	case c == '{':
		return t.object(depth)
	case c == '[':
		return t.array(depth)
	case c == '"':
		s, err := t.str()
		if err != nil {
			return nil, err
		}
		return t.alloc(value{kind: kindString, s: s, start: start, end: t.i}), nil
	case c == 't':
		return t.literal("true", value{kind: kindBool, b: true})
	case c == 'f':
		return t.literal("false", value{kind: kindBool})
	case c == 'n':
		return t.literal("null", value{kind: kindNull})
	case c == '-' || (c >= '0' && c <= '9'):
		return t.number()
	}
	return nil, t.fail("unexpected character %q", t.b[t.i])
}

func (t *tree) literal(lit string, v value) (*value, error) {
	if len(t.b)-t.i < len(lit) || string(t.b[t.i:t.i+len(lit)]) != lit {
		return nil, t.fail("expected %s", lit)
	}
	v.start = t.i
	t.i += len(lit)
	v.end = t.i
	return t.alloc(v), nil
}

func (t *tree) number() (*value, error) {
	start := t.i
	digits := func() int {
		n := 0
		for t.i < len(t.b) && t.b[t.i] >= '0' && t.b[t.i] <= '9' {
			t.i++
			n++
		}
		return n
	}
	if t.b[t.i] == '-' {
		t.i++
	}
	if t.i < len(t.b) && t.b[t.i] == '0' {
		t.i++
	} else if digits() == 0 {
		return nil, t.fail("malformed number")
	}
	if t.i < len(t.b) && t.b[t.i] == '.' {
		t.i++
		if digits() == 0 {
			return nil, t.fail("malformed number")
		}
	}
	if t.i < len(t.b) && (t.b[t.i] == 'e' || t.b[t.i] == 'E') {
		t.i++
		if t.i < len(t.b) && (t.b[t.i] == '+' || t.b[t.i] == '-') {
			t.i++
		}
		if digits() == 0 {
			return nil, t.fail("malformed number")
		}
	}
	return t.alloc(value{kind: kindNumber, s: t.text[start:t.i], start: start, end: t.i}), nil
}

func (t *tree) str() (string, error) {
	start := t.i
	t.i++
	escaped := false
	for t.i < len(t.b) {
		c := t.b[t.i]
		switch {
		case c == '"':
			t.i++
			if !escaped {
				return t.text[start+1 : t.i-1], nil
			}
			var s string
			if err := json.Unmarshal(t.b[start:t.i], &s); err != nil {
				t.i = start
				return "", t.fail("malformed string")
			}
			return s, nil
		case c == '\\':
			escaped = true
			t.i += 2
		case c < 0x20:
			return "", t.fail("control character in string")
		default:
			t.i++
		}
	}
	return "", t.fail("unterminated string")
}

func (t *tree) object(depth int) (*value, error) {
	v := t.alloc(value{kind: kindObject, start: t.i})
	mark := len(t.members)
	defer func() {
		if n := len(t.members) - mark; n > 0 {
			v.obj = make([]member, n)
			copy(v.obj, t.members[mark:])
		}
		t.members = t.members[:mark]
	}()
	t.i++
	t.space()
	if t.i < len(t.b) && t.b[t.i] == '}' {
		t.i++
		v.end = t.i
		return v, nil
	}
	for {
		t.space()
		if t.i >= len(t.b) || t.b[t.i] != '"' {
			return nil, t.fail("expected a field name")
		}
		key, err := t.str()
		if err != nil {
			return nil, err
		}
		t.space()
		if t.i >= len(t.b) || t.b[t.i] != ':' {
			return nil, t.fail("expected ':' after field name %q", key)
		}
		t.i++
		t.space()
		val, err := t.value(depth + 1)
		if err != nil {
			return nil, err
		}
		t.members = append(t.members, member{key: key, val: val})
		t.space()
		if t.i >= len(t.b) {
			return nil, t.fail("unexpected end of input in an object")
		}
		switch t.b[t.i] {
		case ',':
			t.i++
		case '}':
			t.i++
			v.end = t.i
			return v, nil
		default:
			return nil, t.fail("expected ',' or '}' in an object")
		}
	}
}

func (t *tree) array(depth int) (*value, error) {
	v := t.alloc(value{kind: kindArray, start: t.i})
	mark := len(t.elems)
	defer func() {
		if n := len(t.elems) - mark; n > 0 {
			v.arr = make([]*value, n)
			copy(v.arr, t.elems[mark:])
		}
		t.elems = t.elems[:mark]
	}()
	t.i++
	t.space()
	if t.i < len(t.b) && t.b[t.i] == ']' {
		t.i++
		v.end = t.i
		return v, nil
	}
	for {
		t.space()
		el, err := t.value(depth + 1)
		if err != nil {
			return nil, err
		}
		t.elems = append(t.elems, el)
		t.space()
		if t.i >= len(t.b) {
			return nil, t.fail("unexpected end of input in an array")
		}
		switch t.b[t.i] {
		case ',':
			t.i++
		case ']':
			t.i++
			v.end = t.i
			return v, nil
		default:
			return nil, t.fail("expected ',' or ']' in an array")
		}
	}
}
