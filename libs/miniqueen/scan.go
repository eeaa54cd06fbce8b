package miniqueen

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/queen-mq/gate/libs/internal/jsonplain"
)

// scanner is a small strict JSON reader for the hot request shapes (push
// items, transaction operations). Anything it does not expect makes it give
// up (ok=false) and the caller falls back to encoding/json, so behaviour and
// error messages stay those of the standard decoder.
type scanner struct {
	b   []byte
	i   int
	bad bool
	ar  *arena // where decoded strings and raw values are copied
}

func newScanner(b []byte) *scanner {
	// Everything kept is a copy of (at most all of) the body's bytes, so
	// one allocation of the body's size holds every string and payload.
	return &scanner{b: b, ar: &arena{b: make([]byte, 0, len(b))}}
}

func (s *scanner) ws() {
	// Every white space byte is at most ' ', so one comparison passes the
	// usual next byte, which is not.
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		s.bad = true
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) eat(c byte) bool {
	if s.peek() == c && !s.bad {
		s.i++
		return true
	}
	return false
}

func (s *scanner) expect(c byte) {
	if !s.eat(c) {
		s.bad = true
	}
}

// null consumes a JSON null if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a JSON string and returns its value.
func (s *scanner) str() string {
	if s.peek() != '"' {
		s.bad = true
		return ""
	}
	s.i++
	start := s.i
	if s.i = jsonplain.Run(s.b, s.i); s.i < len(s.b) && s.b[s.i] == '"' {
		v := s.ar.str(s.b[start:s.i])
		s.i++
		return v
	}
	// Slow path: escapes or non-ASCII.
	var out []byte
	out = append(out, s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.ar.str(out)
		case c < 0x20:
			s.bad = true
			return ""
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.bad = true
				return ""
			}
			e := s.b[s.i+1]
			s.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := s.hex4()
				if !ok {
					return ""
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
						save := s.i
						s.i += 2
						if x, ok := s.hex4(); ok {
							if d := utf16.DecodeRune(r, x); d != utf8.RuneError {
								r2 = d
							} else {
								s.i = save
							}
						} else {
							return ""
						}
					}
					r = r2
				}
				out = utf8.AppendRune(out, r)
			default:
				s.bad = true
				return ""
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\ufffd"...)
			} else {
				out = append(out, s.b[s.i:s.i+size]...)
			}
			s.i += size
		}
	}
	s.bad = true
	return ""
}

// strSame reads a string field; when its raw bytes equal *prev (no escapes)
// it returns *prev without allocating: acks and pushes of one bundle repeat
// their group, lease, partition and queue names.
func (s *scanner) strSame(prev *string) string {
	if s.peek() == '"' && !s.bad {
		p := *prev
		end := s.i + 1 + len(p)
		if p != "" && end < len(s.b) && s.b[end] == '"' && string(s.b[s.i+1:end]) == p && jsonplain.Run(s.b[:end], s.i+1) == end {
			s.i = end + 1
			return p
		}
	}
	v := s.str()
	*prev = v
	return v
}

// optSame is optStr with strSame.
func (s *scanner) optSame(prev *string) (string, bool) {
	if s.null() {
		return "", false
	}
	return s.strSame(prev), true
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		s.bad = true
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			s.bad = true
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// skipString validates a string without decoding it.
func (s *scanner) skipString() {
	if s.peek() != '"' {
		s.bad = true
		return
	}
	s.i++
	for {
		if s.i = jsonplain.Run(s.b, s.i); s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return
		case c < 0x20:
			s.bad = true
			return
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.bad = true
				return
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				s.i += 2
				if _, ok := s.hex4(); !ok {
					return
				}
			default:
				s.bad = true
				return
			}
		default:
			s.i++
		}
	}
	s.bad = true
}

func (s *scanner) skipNumber() {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		s.bad = true
		return
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			s.bad = true
			return
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			s.bad = true
			return
		}
	}
	if s.i == start {
		s.bad = true
	}
}

// value skips one JSON value and returns its raw bytes (a sub-slice of the
// input).
func (s *scanner) value(depth int) []byte {
	if depth > 1000 {
		s.bad = true
		return nil
	}
	c := s.peek()
	start := s.i
	switch {
	case s.bad:
		return nil
	case c == '"':
		s.skipString()
	case c == '{':
		s.i++
		if !s.eat('}') {
			for !s.bad {
				s.skipString()
				s.expect(':')
				s.value(depth + 1)
				if s.eat(',') {
					continue
				}
				s.expect('}')
				break
			}
		}
	case c == '[':
		s.i++
		if !s.eat(']') {
			for !s.bad {
				s.value(depth + 1)
				if s.eat(',') {
					continue
				}
				s.expect(']')
				break
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if s.i+len(lit) <= len(s.b) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return s.b[start:s.i]
			}
		}
		s.bad = true
	case c == '-' || c >= '0' && c <= '9':
		s.skipNumber()
	default:
		s.bad = true
	}
	if s.bad {
		return nil
	}
	return s.b[start:s.i]
}

// object calls field for each key of an object; field must consume the
// value.
func (s *scanner) object(field func(key string)) {
	s.expect('{')
	if s.bad || s.eat('}') {
		return
	}
	for !s.bad {
		k := s.str()
		s.expect(':')
		if s.bad {
			return
		}
		field(k)
		if s.eat(',') {
			continue
		}
		s.expect('}')
		return
	}
}

// array calls elem for each element of an array; a null counts as absent
// (returns false).
func (s *scanner) array(elem func()) bool {
	if s.null() {
		return false
	}
	s.expect('[')
	if s.bad || s.eat(']') {
		return !s.bad
	}
	for !s.bad {
		elem()
		if s.eat(',') {
			continue
		}
		s.expect(']')
		break
	}
	return !s.bad
}

// optStr reads a string field where null means absent.
func (s *scanner) optStr() (string, bool) {
	if s.null() {
		return "", false
	}
	return s.str(), true
}

// end checks that only whitespace follows.
func (s *scanner) end() bool {
	s.ws()
	return !s.bad && s.i == len(s.b)
}

// skipUnknown skips the value of a key the fast path does not know; a key
// that encoding/json would match case-insensitively to a known one makes
// the scanner give up, so both decoders agree.
func (s *scanner) skipUnknown(k string, known ...string) {
	for _, kn := range known {
		if strings.EqualFold(k, kn) {
			s.bad = true
			return
		}
	}
	s.value(0)
}

var pushKeys = []string{"queue", "partition", "payload", "data", "transactionId", "traceId"}

var txnOpKeys = []string{"type", "items", "queue", "partition", "payload", "data", "transactionId", "traceId", "partitionId", "leaseId", "consumerGroup", "status", "error"}

// arena copies raw payloads and strings into one allocation per request.
// Bytes written to it are never modified again, which is what makes the
// strings it returns valid.
type arena struct{ b []byte }

func (a *arena) keep(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	if cap(a.b)-len(a.b) < len(raw) {
		a.b = make([]byte, 0, max(len(raw), 4<<10))
	}
	start := len(a.b)
	a.b = append(a.b, raw...)
	return a.b[start:len(a.b):len(a.b)]
}

// str returns a string with the bytes of raw, stored in the arena.
func (a *arena) str(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	k := a.keep(raw)
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// pushItemSame reads one push item object, reusing the previous item's
// queue and partition strings when they repeat.
func (s *scanner) pushItemSame(it *pushItemWire, ar *arena, lastQueue, lastPartition *string) {
	s.object(func(k string) {
		switch k {
		case "queue":
			it.Queue, _ = s.optSame(lastQueue)
		case "partition":
			if v, ok := s.optSame(lastPartition); ok {
				it.Partition = &v
			} else {
				it.Partition = nil
			}
		case "payload":
			it.Payload = ar.keep(s.value(0))
		case "data":
			it.Data = ar.keep(s.value(0))
		case "transactionId":
			it.TransactionID, _ = s.optStr()
		case "traceId":
			it.TraceID, _ = s.optStr()
		default:
			s.skipUnknown(k, pushKeys...)
		}
	})
}

// scanPush decodes {"items":[…]}; ok=false means "use encoding/json".
func scanPush(b []byte) (items *[]pushItemWire, ok bool) {
	s := newScanner(b)
	ar := s.ar
	s.object(func(k string) {
		if k != "items" {
			s.skipUnknown(k, "items")
			return
		}
		list := make([]pushItemWire, 0, min(8192, len(b)/80+4))
		var lastQueue, lastPartition string
		if s.array(func() {
			list = append(list, pushItemWire{})
			s.pushItemSame(&list[len(list)-1], ar, &lastQueue, &lastPartition)
		}) {
			if list == nil {
				list = []pushItemWire{}
			}
			items = &list
		} else {
			items = nil
		}
	})
	if !s.end() {
		return nil, false
	}
	return items, true
}

// txnWire is the decoded body of POST /api/v1/transaction.
type txnWire struct {
	Operations     *[]txnOpWire `json:"operations"`
	RequiredLeases []string     `json:"requiredLeases"`
	KV             rawJSON      `json:"kv"`
	Timers         rawJSON      `json:"timers"`
}

// scanTxn decodes a transaction body; ok=false means "use encoding/json".
func scanTxn(b []byte, out *txnWire) bool {
	s := newScanner(b)
	ar := s.ar
	var lastType, lastPart, lastLease, lastGroup, lastStatus, lastQueue, lastPartition string
	s.object(func(k string) {
		switch k {
		case "operations":
			ops := make([]txnOpWire, 0, min(4096, len(b)/160+4))
			if s.array(func() {
				ops = append(ops, txnOpWire{})
				op := &ops[len(ops)-1]
				s.object(func(k string) {
					switch k {
					case "type":
						op.Type, _ = s.optSame(&lastType)
					case "items":
						list := make([]pushItemWire, 0, min(4096, (len(b)-s.i)/100+4))
						if s.array(func() {
							list = append(list, pushItemWire{})
							s.pushItemSame(&list[len(list)-1], ar, &lastQueue, &lastPartition)
						}) {
							if list == nil {
								list = []pushItemWire{}
							}
							op.Items = &list
						}
					case "queue":
						op.Queue, _ = s.optStr()
					case "partition":
						if v, ok := s.optStr(); ok {
							op.Partition = &v
						}
					case "payload":
						op.Payload = ar.keep(s.value(0))
					case "data":
						op.Data = ar.keep(s.value(0))
					case "transactionId":
						op.TransactionID, _ = s.optStr()
					case "traceId":
						op.TraceID, _ = s.optStr()
					case "partitionId":
						op.PartitionID, _ = s.optSame(&lastPart)
					case "leaseId":
						op.LeaseID, _ = s.optSame(&lastLease)
					case "consumerGroup":
						op.ConsumerGroup, _ = s.optSame(&lastGroup)
					case "status":
						if v, ok := s.optSame(&lastStatus); ok {
							op.Status = &v
						}
					case "error":
						op.Error, _ = s.optStr()
					default:
						s.skipUnknown(k, txnOpKeys...)
					}
				})
			}) {
				if ops == nil {
					ops = []txnOpWire{}
				}
				out.Operations = &ops
			}
		case "requiredLeases":
			// As encoding/json: a later requiredLeases replaces an earlier
			// one, [] is empty but not nil, null is nil.
			var leases []string
			if s.array(func() {
				v, _ := s.optStr()
				leases = append(leases, v)
			}) && leases == nil {
				leases = []string{}
			}
			out.RequiredLeases = leases
		case "kv":
			out.KV = append(rawJSON(nil), s.value(0)...)
		case "timers":
			out.Timers = append(rawJSON(nil), s.value(0)...)
		default:
			s.skipUnknown(k, "operations", "requiredLeases", "kv", "timers")
		}
	})
	return s.end()
}
