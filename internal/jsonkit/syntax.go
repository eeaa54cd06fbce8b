package jsonkit

import "unicode/utf8"

// The JSON grammar, once. Each function below checks one string, number or
// value of b that starts at index i and returns the index just past it; on
// a syntax error it returns where the error stands (len(b) when the
// document ends too early) and what was expected, which the Scanner turns
// into its error. They keep their place in a local index rather than in a
// Scanner, which is what makes them fast enough for every payload a relay
// passes.

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	// Every white space byte is at most ' ', so one comparison passes the
	// usual next byte, which is not.
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainTable[c] is Plain(c).
var plainTable = func() (t [256]bool) {
	for c := range t {
		t[c] = Plain(byte(c))
	}
	return t
}()

// quickString returns the index just past the string that starts at b[i]
// (a quote) when the string is plain and at most 16 bytes long, else -1:
// then scanString reads it. Most keys and many values are such strings,
// and quickString, unlike scanString, is inlined where it is called.
func quickString(b []byte, i int) int {
	j, n := i+1, min(len(b), i+17)
	for j < n && plainTable[b[j]] {
		j++
	}
	if j < n && b[j] == '"' {
		return j + 1
	}
	return -1
}

// quickNumber returns the index just past the number that starts at b[i]
// when it is a plain non-negative integer (digits, no leading zero), else
// -1: then scanNumber reads it. Inlined, like quickString.
func quickNumber(b []byte, i int) int {
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || b[i] == '0' && j > i+1 || j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return -1
	}
	return j
}

// scanString checks the string that starts at b[i] (a quote). plain
// reports a string whose content is its value: no escape and, when
// checkUTF8 is set, no invalid UTF-8 (a string's bytes of 0x80 and more
// are not checked otherwise: JSON does not require them to be UTF-8).
func scanString(b []byte, i int, checkUTF8 bool) (end int, plain bool, what string) {
	plain = true
	for i = Run(b, i+1); i < len(b); i = Run(b, i) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, plain, ""
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return len(b), false, "unterminated string"
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(b) || !isHex(b[k]) {
						return k, false, "invalid \\u escape in string"
					}
				}
				i += 6
			default:
				return i + 1, false, "invalid escape in string"
			}
		case c < 0x20:
			return i, false, "invalid control character in string"
		case !checkUTF8:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			i += size
		}
	}
	return len(b), false, "unterminated string"
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber checks the number that starts at b[i]: an optional minus, no
// leading zero, no plus, digits after a point and after an exponent.
func scanNumber(b []byte, i int) (end int, what string) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, "invalid number"
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, "invalid number fraction"
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, "invalid number exponent"
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, ""
}

// scanLiteral checks that lit (true, false or null) starts at b[i].
func scanLiteral(b []byte, i int, lit string) (end int, what string) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, "invalid literal"
	}
	return i + len(lit), ""
}

// scanValue checks one value of any kind at or after b[i] (white space
// before it passed); depth objects and arrays are open around it, and more
// than limit fail.
func scanValue(b []byte, i, depth, limit int) (end int, what string) {
	return scanValueAt(b, SkipSpace(b, i), depth, limit)
}

// scanValueAt is scanValue with no white space before the value.
func scanValueAt(b []byte, i, depth, limit int) (end int, what string) {
	if i >= len(b) {
		return i, "expected a value"
	}
	switch c := b[i]; {
	case c == '"':
		if end = quickString(b, i); end > 0 {
			return end, ""
		}
		end, _, what = scanString(b, i, false)
		return end, what
	case c == '{' || c == '[':
		return scanContainer(b, i, depth+1, limit, nil)
	case c == '-' || c >= '0' && c <= '9':
		if end = quickNumber(b, i); end > 0 {
			return end, ""
		}
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return i, "expected a value"
}

// scanContainer checks the object or array that starts at b[i], the
// depth-th open one. find, when not nil, looks for the object's member
// named find.key (keys compared decoded, as Text decodes a string) and
// keeps the value's bytes of the last one.
func scanContainer(b []byte, i, depth, limit int, find *member) (end int, what string) {
	object := b[i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	if depth > limit {
		return i + 1, "exceeded max depth"
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == closing {
		return i + 1, ""
	}
	for {
		match := false
		if object {
			if i >= len(b) || b[i] != '"' {
				return i, "expected an object key"
			}
			start := i
			plain := true
			if end := quickString(b, i); end > 0 {
				i = end
			} else if i, plain, what = scanString(b, i, find != nil); what != "" {
				return i, what
			}
			if find != nil {
				match = find.is(b[start+1:i-1], plain)
			}
			if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, "expected ':' after an object key"
			}
			i++
		}
		// Short strings and integers, the usual members, are read here
		// without a call.
		start := SkipSpace(b, i)
		end := -1
		if start < len(b) {
			switch c := b[start]; {
			case c == '"':
				end = quickString(b, start)
			case c >= '0' && c <= '9':
				end = quickNumber(b, start)
			}
		}
		if end > 0 {
			i = end
		} else if i, what = scanValueAt(b, start, depth, limit); what != "" {
			return i, what
		}
		if match {
			find.value, find.found = b[start:i], true
		}
		if i = SkipSpace(b, i); i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
			continue
		}
		switch {
		case i < len(b) && b[i] == closing:
			return i + 1, ""
		case object:
			return i, "expected ',' or '}' in an object"
		default:
			return i, "expected ',' or ']' in an array"
		}
	}
}

// member is what LastMember looks for and finds.
type member struct {
	key   string
	value []byte
	found bool
}

// is reports whether content, a key's content as written (plain as
// scanString says), decodes to the key looked for.
func (m *member) is(content []byte, plain bool) bool {
	if plain {
		return string(content) == m.key
	}
	var buf [64]byte
	return string(unescape(buf[:0], content)) == m.key
}

// LastMember returns the value's bytes of the last member named key of the
// JSON object doc starts with (white space before it allowed, what follows
// its closing brace not read); keys are compared decoded, as encoding/json
// decodes them. ok is false when doc starts with anything but a valid
// object, or the object opens more than limit objects and arrays at once,
// itself included (limit ≤ 0: MaxDepth); found is false when no member has
// the key.
func LastMember(doc []byte, key string, limit int) (value []byte, found, ok bool) {
	if limit <= 0 {
		limit = MaxDepth
	}
	i := SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false, false
	}
	find := member{key: key}
	if _, what := scanContainer(doc, i, 1, limit, &find); what != "" {
		return nil, false, false
	}
	return find.value, find.found, true
}
