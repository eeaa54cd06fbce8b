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
	kind kind
	b    bool
	// start and end are byte offsets in the document, for "got …" messages.
	start, end int32
	s          string // string value, or number literal
	// kids are an object's members, or an array's elements (with no key).
	kids []member
}

type member struct {
	key string
	val *value
}

// maxDocumentBytes bounds a document so offsets fit 32 bits; the declare
// routes accept 2 MiB.
const maxDocumentBytes = 1 << 30

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
	// members is the stack open objects and arrays collect their kids
	// into; each container copies its own part out once, at its exact size.
	members []member
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
	if len(b) > maxDocumentBytes {
		return nil, fmt.Errorf("the document is %d bytes, more than the %d a document may have", len(b), maxDocumentBytes)
	}
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
		return t.alloc(value{kind: kindString, s: s, start: int32(start), end: int32(t.i)}), nil
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
	v.start = int32(t.i)
	t.i += len(lit)
	v.end = int32(t.i)
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
	return t.alloc(value{kind: kindNumber, s: t.text[start:t.i], start: int32(start), end: int32(t.i)}), nil
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
	v := t.alloc(value{kind: kindObject, start: int32(t.i)})
	defer t.collect(v, len(t.members))
	t.i++
	t.space()
	if t.i < len(t.b) && t.b[t.i] == '}' {
		t.i++
		v.end = int32(t.i)
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
			v.end = int32(t.i)
			return v, nil
		default:
			return nil, t.fail("expected ',' or '}' in an object")
		}
	}
}

func (t *tree) array(depth int) (*value, error) {
	v := t.alloc(value{kind: kindArray, start: int32(t.i)})
	defer t.collect(v, len(t.members))
	t.i++
	t.space()
	if t.i < len(t.b) && t.b[t.i] == ']' {
		t.i++
		v.end = int32(t.i)
		return v, nil
	}
	for {
		t.space()
		el, err := t.value(depth + 1)
		if err != nil {
			return nil, err
		}
		t.members = append(t.members, member{val: el})
		t.space()
		if t.i >= len(t.b) {
			return nil, t.fail("unexpected end of input in an array")
		}
		switch t.b[t.i] {
		case ',':
			t.i++
		case ']':
			t.i++
			v.end = int32(t.i)
			return v, nil
		default:
			return nil, t.fail("expected ',' or ']' in an array")
		}
	}
}

// collect moves the members a container pushed since mark into the
// container, at their exact size, and pops them.
func (t *tree) collect(v *value, mark int) {
	if n := len(t.members) - mark; n > 0 {
		v.kids = make([]member, n)
		copy(v.kids, t.members[mark:])
	}
	t.members = t.members[:mark]
}
