package queen

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/queen-mq/gate/libs/internal/jsonplain"
)

// The hot-path answers (a claim of up to 200 messages, a committed
// transaction's flat results, a KV batch) are decoded by the small scanner
// below rather than by encoding/json's reflection, which cost several
// microseconds per relayed item. It mirrors encoding/json's semantics for
// the types it fills (null leaves a field zero, an empty array is a non-nil
// empty slice, a RawMessage keeps the value's bytes, invalid UTF-8 in a
// string becomes U+FFFD, an integer field refuses fractions) and rejects
// invalid JSON; the tests compare it with encoding/json.

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

var errEnd = errors.New("unexpected end of JSON input")

// scanner walks one JSON document. When owned is set, RawMessage values it
// returns alias buf (a private copy the caller handed over, worth it when
// most values are raw, as a claim's payloads are); otherwise each raw value
// is copied out of the borrowed buffer.
type scanner struct {
	buf   []byte
	i     int
	depth int
	owned bool
}

func (s *scanner) fail(what string) error {
	if s.i >= len(s.buf) {
		return fmt.Errorf("%s: %w", what, errEnd)
	}
	return fmt.Errorf("%s at offset %d (%q)", what, s.i, s.buf[s.i])
}

func (s *scanner) ws() {
	// Every white space byte is at most ' ', so one comparison passes the
	// usual next byte, which is not.
	for s.i < len(s.buf) && s.buf[s.i] <= ' ' {
		switch s.buf[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.buf) {
		return 0
	}
	return s.buf[s.i]
}

// end checks that only white space follows the document.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.buf) {
		return s.fail("invalid character after top-level value")
	}
	return nil
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.buf)-s.i >= 4 && string(s.buf[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// object walks an object, calling fn with each key (unescaped when needed);
// fn must consume the value. A null object is accepted and walks nothing.
func (s *scanner) object(fn func(key []byte) error) error {
	if s.null() {
		return nil
	}
	if s.peek() != '{' {
		return s.fail("expected an object")
	}
	s.i++
	if s.depth++; s.depth > maxDepth {
		return s.fail("exceeded max depth")
	}
	if s.peek() == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.fail("expected an object key")
		}
		tok, plain, err := s.stringToken()
		if err != nil {
			return err
		}
		key := tok[1 : len(tok)-1]
		if !plain {
			var k string
			if err := json.Unmarshal(tok, &k); err != nil {
				return err
			}
			key = []byte(k)
		}
		if s.peek() != ':' {
			return s.fail("expected ':' after an object key")
		}
		s.i++
		if err := fn(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return nil
		default:
			return s.fail("expected ',' or '}' in an object")
		}
	}
}

// array walks an array, calling fn for each element (fn consumes it). It
// reports whether the value was an array (false for null).
func (s *scanner) array(fn func() error) (bool, error) {
	if s.null() {
		return false, nil
	}
	if s.peek() != '[' {
		return false, s.fail("expected an array")
	}
	s.i++
	if s.depth++; s.depth > maxDepth {
		return false, s.fail("exceeded max depth")
	}
	if s.peek() == ']' {
		s.i++
		s.depth--
		return true, nil
	}
	for {
		if err := fn(); err != nil {
			return false, err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return true, nil
		default:
			return false, s.fail("expected ',' or ']' in an array")
		}
	}
}

// stringToken scans a string (the cursor is on its opening quote) and
// returns it with its quotes; plain means no escapes, no control or invalid
// bytes, so its content is the string itself.
func (s *scanner) stringToken() (tok []byte, plain bool, err error) {
	start := s.i
	s.i++
	plain = true
	for {
		s.i = jsonplain.Run(s.buf, s.i)
		if s.i >= len(s.buf) {
			break
		}
		c := s.buf[s.i]
		switch {
		case c == '"':
			s.i++
			return s.buf[start:s.i], plain, nil
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.buf) {
				return nil, false, errEnd
			}
			switch s.buf[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				if len(s.buf)-s.i < 4 {
					return nil, false, errEnd
				}
				for k := 0; k < 4; k++ {
					if !isHex(s.buf[s.i+k]) {
						return nil, false, s.fail("invalid \\u escape in string")
					}
				}
				s.i += 4
			default:
				return nil, false, s.fail("invalid escape in string")
			}
		case c < 0x20:
			return nil, false, s.fail("invalid control character in string")
		default:
			r, size := utf8.DecodeRune(s.buf[s.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			s.i += size
		}
	}
	return nil, false, errEnd
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// str decodes a string value; null leaves *dst unchanged. When the decoded
// value equals *dst the existing string is kept instead of allocating.
func (s *scanner) str(dst *string) error {
	return s.strShared(dst, dst)
}

// strSkip checks a string (or null) value without keeping it.
func (s *scanner) strSkip() error {
	if s.null() {
		return nil
	}
	if s.peek() != '"' {
		return s.fail("expected a string")
	}
	_, _, err := s.stringToken()
	return err
}

// strShared is str with a reuse slot for values that repeat across
// elements (partition ids, lease ids, queue names).
func (s *scanner) strShared(dst, shared *string) error {
	if s.null() {
		return nil
	}
	if s.peek() != '"' {
		return s.fail("expected a string")
	}
	tok, plain, err := s.stringToken()
	if err != nil {
		return err
	}
	if !plain {
		return json.Unmarshal(tok, dst)
	}
	body := tok[1 : len(tok)-1]
	if *shared != string(body) {
		*shared = string(body)
	}
	*dst = *shared
	return nil
}

// number scans a number token (strict JSON grammar).
func (s *scanner) number() ([]byte, error) {
	start := s.i
	b := s.buf
	i := s.i
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
		s.i = i
		return nil, s.fail("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.i = i
			return nil, s.fail("invalid number fraction")
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
			s.i = i
			return nil, s.fail("invalid number exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	return b[start:i], nil
}

// int64 decodes an integer value; null leaves *dst unchanged; a fraction,
// exponent or overflow is an error (as encoding/json into int64).
func (s *scanner) int64(dst *int64) error {
	if s.null() {
		return nil
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return s.fail("expected a number")
	}
	tok, err := s.number()
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return fmt.Errorf("json: cannot unmarshal number %s into an int64", tok)
	}
	*dst = n
	return nil
}

// int decodes an integer into an int.
func (s *scanner) int(dst *int) error {
	v := int64(*dst)
	if err := s.int64(&v); err != nil {
		return err
	}
	if int64(int(v)) != v {
		return fmt.Errorf("json: number %d overflows int", v)
	}
	*dst = int(v)
	return nil
}

// boolean decodes true/false; null leaves *dst unchanged.
func (s *scanner) boolean(dst *bool) error {
	if s.null() {
		return nil
	}
	b := s.buf[s.i:]
	switch {
	case len(b) >= 4 && string(b[:4]) == "true":
		*dst = true
		s.i += 4
	case len(b) >= 5 && string(b[:5]) == "false":
		*dst = false
		s.i += 5
	default:
		return s.fail("expected a boolean")
	}
	return nil
}

// optBool decodes into a *bool (null sets nil).
func (s *scanner) optBool(dst **bool) error {
	if s.null() {
		*dst = nil
		return nil
	}
	var v bool
	if err := s.boolean(&v); err != nil {
		return err
	}
	*dst = &v
	return nil
}

// optInt decodes into a *int (null sets nil).
func (s *scanner) optInt(dst **int) error {
	if s.null() {
		*dst = nil
		return nil
	}
	var v int
	if err := s.int(&v); err != nil {
		return err
	}
	*dst = &v
	return nil
}

// raw returns the next value's bytes (null included), capacity-capped so
// an append by the caller cannot overwrite the neighbouring bytes.
func (s *scanner) raw() (json.RawMessage, error) {
	s.ws()
	start := s.i
	if err := s.skip(); err != nil {
		return nil, err
	}
	if !s.owned {
		return json.RawMessage(append([]byte(nil), s.buf[start:s.i]...)), nil
	}
	return json.RawMessage(s.buf[start:s.i:s.i]), nil
}

// skip validates and steps over one value.
func (s *scanner) skip() error {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.skip() })
	case c == '[':
		_, err := s.array(s.skip)
		return err
	case c == '"':
		_, _, err := s.stringToken()
		return err
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.number()
		return err
	case c == 't' || c == 'f':
		var b bool
		return s.boolean(&b)
	case c == 'n':
		if s.null() {
			return nil
		}
		return s.fail("invalid literal")
	default:
		return s.fail("expected a value")
	}
}

// strings decodes an array of strings (null leaves *dst unchanged; [] is a
// non-nil empty slice).
func (s *scanner) strings(dst *[]string) error {
	out := (*dst)[:0]
	isArr, err := s.array(func() error {
		var v string
		if err := s.str(&v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil || !isArr {
		return err
	}
	if out == nil {
		out = []string{}
	}
	*dst = out
	return nil
}

// ---- claim ----

// decodeClaimFast decodes a pop answer body into w.
func decodeClaimFast(body []byte, w *popWire) error {
	s := &scanner{buf: append([]byte(nil), body...), owned: true}
	var shared struct{ partitionID, partition, leaseID, group, createdAt string }
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "queue":
			return s.str(&w.Queue)
		case "partition":
			return s.str(&w.Partition)
		case "partitionId":
			return s.str(&w.PartitionID)
		case "leaseId":
			return s.str(&w.LeaseID)
		case "consumerGroup":
			return s.str(&w.ConsumerGroup)
		case "partitionsClaimed":
			return s.int(&w.PartitionsClaimed)
		case "paused":
			return s.boolean(&w.Paused)
		case "success":
			return s.optBool(&w.Success)
		case "error":
			v, err := s.raw()
			w.Error = v
			return err
		case "messages":
			msgs := w.Messages[:0]
			isArr, err := s.array(func() error {
				if len(msgs) < cap(msgs) {
					msgs = msgs[:len(msgs)+1]
					msgs[len(msgs)-1] = Message{}
				} else {
					msgs = append(msgs, Message{})
				}
				m := &msgs[len(msgs)-1]
				return s.object(func(k []byte) error {
					switch string(k) {
					case "id":
						return s.str(&m.ID)
					case "transactionId":
						return s.str(&m.TransactionID)
					case "traceId":
						return s.str(&m.TraceID)
					case "data":
						v, err := s.raw()
						m.Data = v
						return err
					case "producerSub":
						return s.str(&m.ProducerSub)
					case "createdAt":
						str := string(m.CreatedAt)
						err := s.strShared(&str, &shared.createdAt)
						m.CreatedAt = Timestamp(str)
						return err
					case "partitionId":
						return s.strShared(&m.PartitionID, &shared.partitionID)
					case "partition":
						return s.strShared(&m.Partition, &shared.partition)
					case "leaseId":
						return s.strShared(&m.LeaseID, &shared.leaseID)
					case "consumerGroup":
						return s.strShared(&m.ConsumerGroup, &shared.group)
					case "retryCount":
						return s.int(&m.RetryCount)
					default:
						return s.skip()
					}
				})
			})
			if err != nil || !isArr {
				return err
			}
			if msgs == nil {
				msgs = []Message{}
			}
			w.Messages = msgs
			return nil
		default:
			return s.skip()
		}
	})
	if err != nil {
		return err
	}
	return s.end()
}

// ---- kv ----

// kvResult decodes one KV result object into r.
func (s *scanner) kvResult(r *KVResult, key []byte) (bool, error) {
	switch string(key) {
	case "index":
		return true, s.int(&r.Index)
	case "op":
		v := string(r.Op)
		err := s.str(&v)
		r.Op = KVOpType(v)
		return true, err
	case "key":
		return true, s.str(&r.Key)
	case "applied":
		return true, s.boolean(&r.Applied)
	case "found":
		return true, s.boolean(&r.Found)
	case "reason":
		v := string(r.Reason)
		err := s.str(&v)
		r.Reason = KVReason(v)
		return true, err
	case "value":
		v, err := s.raw()
		r.Value = v
		return true, err
	case "version":
		return true, s.int64(&r.Version)
	case "expiresAt":
		v := string(r.ExpiresAt)
		err := s.str(&v)
		r.ExpiresAt = Timestamp(v)
		return true, err
	case "updatedAt":
		v := string(r.UpdatedAt)
		err := s.str(&v)
		r.UpdatedAt = Timestamp(v)
		return true, err
	case "rows":
		rows := r.Rows[:0]
		isArr, err := s.array(func() error {
			rows = append(rows, KVRow{})
			row := &rows[len(rows)-1]
			return s.object(func(k []byte) error {
				switch string(k) {
				case "key":
					return s.str(&row.Key)
				case "value":
					v, err := s.raw()
					row.Value = v
					return err
				case "version":
					return s.int64(&row.Version)
				case "expiresAt":
					v := string(row.ExpiresAt)
					err := s.str(&v)
					row.ExpiresAt = Timestamp(v)
					return err
				case "updatedAt":
					v := string(row.UpdatedAt)
					err := s.str(&v)
					row.UpdatedAt = Timestamp(v)
					return err
				default:
					return s.skip()
				}
			})
		})
		if err != nil || !isArr {
			return true, err
		}
		if rows == nil {
			rows = []KVRow{}
		}
		r.Rows = rows
		return true, nil
	case "missing":
		return true, s.strings(&r.Missing)
	case "truncated":
		return true, s.boolean(&r.Truncated)
	case "nextAfter":
		return true, s.str(&r.NextAfter)
	}
	return false, nil
}

// refusalField decodes one key of the refusal envelope into w.
func (s *scanner) refusalField(w *refusalWire, key []byte) (bool, error) {
	switch string(key) {
	case "ok":
		return true, s.optBool(&w.OK)
	case "success":
		return true, s.optBool(&w.Success)
	case "reason":
		return true, s.str(&w.Reason)
	case "error":
		v, err := s.raw()
		w.Error = v
		return true, err
	case "failedIndex":
		return true, s.optInt(&w.FailedIndex)
	case "kvReason":
		return true, s.str(&w.KVReason)
	case "version":
		return true, s.int64(&w.Version)
	case "value":
		v, err := s.raw()
		w.Value = v
		return true, err
	}
	return false, nil
}

// decodeKVFast decodes a KV batch answer into w.
func decodeKVFast(body []byte, w *kvWire) error {
	s := &scanner{buf: body}
	err := s.object(func(key []byte) error {
		if string(key) == "results" {
			res := w.Results[:0]
			isArr, err := s.array(func() error {
				res = append(res, KVResult{})
				r := &res[len(res)-1]
				return s.object(func(k []byte) error {
					if ok, err := s.kvResult(r, k); ok {
						return err
					}
					return s.skip()
				})
			})
			if err != nil || !isArr {
				return err
			}
			if res == nil {
				res = []KVResult{}
			}
			w.Results = res
			return nil
		}
		if ok, err := s.refusalField(&w.refusalWire, key); ok {
			return err
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	return s.end()
}

// ---- transaction ----

// decodeTxnFast decodes a transaction answer into w.
func decodeTxnFast(body []byte, w *txnWire, lean bool) error {
	s := &scanner{buf: body}
	var queueName string
	var kv KVResult // scratch for one slot; copied out only for KV riders
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "transactionId":
			return s.str(&w.TransactionID)
		case "results":
			res := w.Results[:0]
			isArr, err := s.array(func() error {
				res = append(res, TxnItemResult{})
				r := &res[len(res)-1]
				kv = KVResult{}
				hasKV := false
				err := s.object(func(k []byte) error {
					switch string(k) {
					case "index":
						return s.int(&r.Index)
					case "type":
						return s.str(&r.Type)
					case "opIndex":
						return s.int(&r.OpIndex)
					case "success":
						return s.boolean(&r.Success)
					case "transactionId":
						if lean {
							return s.strSkip()
						}
						return s.str(&r.TransactionID)
					case "messageId":
						if lean {
							return s.strSkip()
						}
						return s.str(&r.MessageID)
					case "queueName":
						if lean {
							return s.strSkip()
						}
						return s.strShared(&r.QueueName, &queueName)
					case "duplicate":
						return s.boolean(&r.Duplicate)
					case "error":
						return s.str(&r.Error)
					case "dlq":
						return s.boolean(&r.DLQ)
					case "ok":
						return s.boolean(&r.OK)
					case "status":
						return s.str(&r.Status)
					}
					if ok, err := s.kvResult(&kv, k); ok {
						hasKV = true
						return err
					}
					return s.skip()
				})
				if err != nil {
					return err
				}
				if r.Type == "kv" || hasKV && !reflect.ValueOf(kv).IsZero() {
					rider := kv
					rider.Index = r.OpIndex
					r.KV = &rider
				}
				return nil
			})
			if err != nil || !isArr {
				return err
			}
			if res == nil {
				res = []TxnItemResult{}
			}
			w.Results = res
			return nil
		}
		if ok, err := s.refusalField(&w.refusalWire, key); ok {
			return err
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	return s.end()
}
