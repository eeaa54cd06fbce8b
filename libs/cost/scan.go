package cost

import (
	"encoding/json"
	"unsafe"
)

// field returns the raw value of key in the JSON object obj (last
// occurrence wins), or false when obj is not an object or lacks key.
func field(obj []byte, key string) ([]byte, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i++
	var found []byte
	ok := false
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return nil, false
		}
		if obj[i] == '}' {
			return found, ok
		}
		if obj[i] != '"' {
			return nil, false
		}
		end, escaped := scanString(obj, i)
		if end < 0 {
			return nil, false
		}
		match := false
		if escaped {
			s, good := decodeString(obj[i:end])
			match = good && s == key
		} else {
			match = unsafeString(obj[i+1:end-1]) == key
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i, 0)
		if vend < 0 {
			return nil, false
		}
		if match {
			found, ok = obj[i:vend], true
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) {
			return nil, false
		}
		switch obj[i] {
		case ',':
			i++
		case '}':
			return found, ok
		default:
			return nil, false
		}
	}
}

// maxDepth bounds nesting so hostile payloads cannot exhaust the stack.
const maxDepth = 512

// skipValue returns the index just past the JSON value starting at i, or -1.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) || depth > maxDepth {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, _ := scanString(b, i)
		return end
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1
		}
		for {
			i = skipSpace(b, i)
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				end, _ := scanString(b, i)
				if end < 0 {
					return -1
				}
				i = skipSpace(b, end)
				if i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipSpace(b, i+1)
			}
			i = skipValue(b, i, depth+1)
			if i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == ',' {
				i++
				continue
			}
			if b[i] == closing {
				return i + 1
			}
			return -1
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) {
			d := b[j]
			if (d >= '0' && d <= '9') || d == '.' || d == 'e' || d == 'E' || d == '+' || d == '-' {
				j++
				continue
			}
			break
		}
		return j
	}
	return -1
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || unsafeString(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanString returns the index past the closing quote of the string at i
// and whether it contains escapes; -1 when unterminated.
func scanString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// decodeString decodes a raw JSON string (quotes included).
func decodeString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// unsafeString views b as a string without copying; the caller must not
// keep it beyond b's lifetime or mutate b meanwhile.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
