package stage

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/queen-mq/gate/libs/cost"
)

// Stamp describes the `_gate` object written on every relayed push.
type Stamp struct {
	Graph string
	Path  string
	// Hop is the stage's hop index + 1.
	Hop int
	// Node is the destination node (the stage's own node on a terminal push).
	Node string
	// At is epoch milliseconds.
	At int64
	// head is the encoded stamp every item of a settle shares (see
	// prepare); nil encodes it per item.
	head []byte
}

// prepare encodes the shared part of the stamp once, for a settle that
// stamps many items with it.
func (s *Stamp) prepare() {
	s.head = cost.GateStamp{Graph: s.Graph, Path: s.Path, Hop: s.Hop, Node: s.Node, At: s.At}.AppendHead(nil)
}

// Apply returns data with its `_gate` key replaced by the stamp when data
// is a JSON object; anything else (arrays, scalars, null, invalid JSON) is
// returned unchanged. A non-negative integer `_gate.attempt` of the
// incoming data is carried forward; every other `_gate` content is
// overwritten.
//
// The object is spliced, not re-encoded: every other top-level member is
// copied byte for byte (values are never decoded), each `_gate` member is
// dropped and the new stamp is appended as the last member.
func (s Stamp) Apply(data []byte) []byte {
	out, ok := s.AppendTo(make([]byte, 0, len(data)+s.overhead()), data)
	if !ok {
		return data
	}
	return out
}

// overhead is about how many bytes the stamp adds to a payload.
func (s Stamp) overhead() int { return len(s.Graph) + len(s.Path) + len(s.Node) + 112 }

// AppendTo appends the stamped object (see Apply) to dst and reports true,
// or returns dst unchanged and false when data is not a JSON object — the
// caller then forwards data as it is. Many payloads can share one dst.
func (s Stamp) AppendTo(dst, data []byte) ([]byte, bool) {
	if !json.Valid(data) {
		return dst, false
	}
	return s.appendClaimed(dst, data)
}

// appendClaimed is AppendTo for data already known to be one valid JSON
// value, such as the Data of a claimed message (the client's decoder
// validated it): it is not scanned a second time.
func (s Stamp) appendClaimed(dst, data []byte) ([]byte, bool) {
	obj := bytes.TrimSpace(data)
	if len(obj) == 0 || obj[0] != '{' {
		return dst, false
	}
	return s.appendObject(dst, obj), true
}

// appendObject appends the stamped copy of obj, a valid JSON object.
func (s Stamp) appendObject(dst, obj []byte) []byte {
	out := append(dst, '{')
	members := 0
	// The incoming stamp is the last `_gate` member (as a decoder keeps the
	// last of duplicate keys); only its attempt is carried forward.
	var incoming []byte
	// obj is valid JSON, so the scan below only has to find boundaries.
	i := skipSpace(obj, 1)
	for obj[i] != '}' {
		keyStart := i
		keyEnd := stringEnd(obj, i)
		i = skipSpace(obj, keyEnd)
		i = skipSpace(obj, i+1) // the ':'
		valueStart := i
		valueEnd := valueEnd(obj, i)
		if isStampKey(obj[keyStart:keyEnd]) {
			incoming = obj[valueStart:valueEnd]
		} else {
			if members > 0 {
				out = append(out, ',')
			}
			out = append(out, obj[keyStart:valueEnd]...)
			members++
		}
		i = skipSpace(obj, valueEnd)
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	attempt, hasAttempt := int64(0), false
	if incoming != nil {
		if raw, ok := cost.Lookup(incoming, cost.Root+".attempt"); ok {
			if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n >= 0 {
				attempt, hasAttempt = n, true
			}
		}
	}
	if members > 0 {
		out = append(out, ',')
	}
	out = append(out, `"_gate":`...)
	st := cost.GateStamp{Graph: s.Graph, Path: s.Path, Hop: s.Hop, Node: s.Node, At: s.At, Attempt: attempt, HasAttempt: hasAttempt}
	if s.head != nil {
		out = st.AppendTail(append(out, s.head...))
	} else {
		out = st.AppendJSON(out)
	}
	return append(out, '}')
}

// isStampKey reports whether the quoted key (escapes included) names the
// stamp member.
func isStampKey(key []byte) bool {
	if string(key) == `"`+cost.Stamp+`"` {
		return true
	}
	if bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	var k string
	return json.Unmarshal(key, &k) == nil && k == cost.Stamp
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] ('"'):
// the first quote not escaped by an odd run of backslashes (found with
// bytes.IndexByte, which is fast over long strings).
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
	return len(b)
}

// valueEnd returns the index just past the valid JSON value starting at
// b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return i
	}
}

// stampedPath returns the `_gate.path` string of data, if any.
func stampedPath(data []byte) (string, bool) {
	raw, ok := cost.Lookup(data, cost.Root+"."+cost.Stamp+".path")
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
