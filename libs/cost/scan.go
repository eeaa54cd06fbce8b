package cost

import (
	"bytes"
	"unsafe"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// maxDepth bounds how deeply a member's value may nest objects and arrays
// for a lookup to read past it, so that hostile payloads stay cheap: an
// object with a member nested deeper has no fields for Lookup, Op and
// Scope.
const maxDepth = 512

// field returns the raw value of key in the JSON object obj (last
// occurrence wins), or false when obj is not an object, is not valid JSON
// up to its closing brace, or lacks key. Keys are compared decoded, as
// encoding/json decodes them.
func field(obj []byte, key string) ([]byte, bool) {
	v, found, ok := jsonkit.LastMember(obj, key, maxDepth+1) // the object itself is one level
	return v, found && ok
}

// text decodes raw, a JSON string as field returns it: with no escape its
// value is its bytes as they are, invalid UTF-8 included; with escapes it
// is decoded as encoding/json decodes it.
func text(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var buf [64]byte
	v, ok := jsonkit.Unquote(buf[:0], raw)
	return string(v), ok
}

// unsafeString views b as a string without copying; the caller must not
// keep it beyond b's lifetime or mutate b meanwhile.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
