package jsonkit

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is encoding/json's nesting limit: how many objects and arrays a
// document may have open at once.
const MaxDepth = 10000

// ErrEnd is the error (or is wrapped by the error) of a document that ends
// before its value does.
var ErrEnd = errors.New("unexpected end of JSON input")

// Scanner reads one JSON document held in memory, value by value: the
// caller says what it expects next (an object, a string, an int64…) and the
// Scanner checks it and fills the Go value the way encoding/json fills the
// same type: null leaves the value as it was (or sets a pointer or a slice
// to nil), an empty array is a non-nil empty slice, a string's escapes are
// decoded and each invalid UTF-8 byte in it becomes U+FFFD, an integer
// refuses a fraction, an exponent and an overflow. Every byte it passes is
// checked: a document encoding/json would refuse makes some method fail
// (Skip and End accept exactly what json.Valid accepts). A Scanner is not
// safe for concurrent use.
type Scanner struct {
	doc   []byte
	i     int
	depth int
	// keyBuf and textBuf hold keys and strings whose escapes had to be
	// decoded; each is overwritten by the next such key or string.
	keyBuf, textBuf []byte
}

// NewScanner returns a Scanner at the start of doc. The Scanner keeps doc
// and returns sub-slices of it; doc must not change while they are used.
func NewScanner(doc []byte) *Scanner { return &Scanner{doc: doc} }

// Offset is how many bytes of the document the Scanner has read.
func (s *Scanner) Offset() int { return s.i }

func (s *Scanner) fail(what string) error {
	if s.i >= len(s.doc) {
		return fmt.Errorf("%s: %w", what, ErrEnd)
	}
	return fmt.Errorf("%s at offset %d (%q)", what, s.i, s.doc[s.i])
}

func (s *Scanner) ws() { s.i = SkipSpace(s.doc, s.i) }

// Peek returns the first byte of the next value (white space passed), or 0
// at the end of the document.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i >= len(s.doc) {
		return 0
	}
	return s.doc[s.i]
}

// End checks that only white space follows the value read.
func (s *Scanner) End() error {
	s.ws()
	if s.i != len(s.doc) {
		return s.fail("invalid character after top-level value")
	}
	return nil
}

// Null reads a null if one is next and reports whether it did.
func (s *Scanner) Null() bool {
	if s.Peek() == 'n' && len(s.doc)-s.i >= 4 && string(s.doc[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// Object reads an object, calling fn with each key, decoded; fn must read
// the member's value (Skip when it has no use for it). A null reads as an
// object without members. The key's bytes are the document's own or the
// Scanner's, which the next decoded key overwrites: fn should look at key
// before it reads the value.
func (s *Scanner) Object(fn func(key []byte) error) error {
	if s.Null() {
		return nil
	}
	if s.Peek() != '{' {
		return s.fail("expected an object")
	}
	more, err := s.open('}')
	for more && err == nil {
		var key []byte
		var plain bool
		if key, plain, err = s.key(); err != nil {
			break
		}
		key = key[1 : len(key)-1]
		if !plain {
			s.keyBuf = unescape(s.keyBuf[:0], key)
			key = s.keyBuf
		}
		if err = fn(key); err == nil {
			more, err = s.next('}')
		}
	}
	return err
}

// Array reads an array, calling fn for each element, which fn must read.
// It reports whether the value was an array (false for null).
func (s *Scanner) Array(fn func() error) (bool, error) {
	if s.Null() {
		return false, nil
	}
	if s.Peek() != '[' {
		return false, s.fail("expected an array")
	}
	more, err := s.open(']')
	for more && err == nil {
		if err = fn(); err == nil {
			more, err = s.next(']')
		}
	}
	return err == nil, err
}

// open enters the object or array whose opening byte is at the cursor and
// reports whether a member or an element follows (false when close, the
// closing byte, does: the container is then closed again).
func (s *Scanner) open(close byte) (bool, error) {
	s.i++
	if s.depth++; s.depth > MaxDepth {
		return false, s.fail("exceeded max depth")
	}
	if s.Peek() == close {
		s.i++
		s.depth--
		return false, nil
	}
	return true, nil
}

// key reads a member's key and the colon after it, and returns the key's
// token (quotes included; plain as stringToken says).
func (s *Scanner) key() (tok []byte, plain bool, err error) {
	if s.Peek() != '"' {
		return nil, false, s.fail("expected an object key")
	}
	if tok, plain, err = s.stringToken(); err != nil {
		return nil, false, err
	}
	if s.Peek() != ':' {
		return nil, false, s.fail("expected ':' after an object key")
	}
	s.i++
	return tok, plain, nil
}

// next reads what follows a member or an element: true after a comma,
// false at close, the container's closing byte (the container is closed).
func (s *Scanner) next(close byte) (bool, error) {
	switch s.Peek() {
	case ',':
		s.i++
		return true, nil
	case close:
		s.i++
		s.depth--
		return false, nil
	}
	if close == '}' {
		return false, s.fail("expected ',' or '}' in an object")
	}
	return false, s.fail("expected ',' or ']' in an array")
}

// stringToken reads a string (the cursor is on its opening quote) and
// returns it with its quotes; plain means no escapes and no invalid UTF-8,
// so that its content is its value.
func (s *Scanner) stringToken() (tok []byte, plain bool, err error) {
	start := s.i
	if end := quickString(s.doc, start); end > 0 {
		s.i = end
		return s.doc[start:end], true, nil
	}
	end, plain, what := scanString(s.doc, start, true)
	s.i = end
	if what != "" {
		return nil, false, s.fail(what)
	}
	return s.doc[start:end], plain, nil
}

// hex4 is the value of four hex digits that scanString checked.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		case c >= 'a':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// unescape appends the value of body, the content of a string token that
// stringToken accepted, decoded as encoding/json decodes it: an escaped
// UTF-16 surrogate pair is one rune, a surrogate escape outside a pair and
// each invalid UTF-8 byte are U+FFFD.
func unescape(dst, body []byte) []byte {
	for i := 0; i < len(body); {
		j := Run(body, i)
		dst = append(dst, body[i:j]...)
		if i = j; i == len(body) {
			break
		}
		if body[i] != '\\' {
			// A byte of 0x80 or more: control characters never pass
			// stringToken, nor do the quote or an escape at the end.
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\ufffd"...)
			} else {
				dst = append(dst, body[i:i+size]...)
			}
			i += size
			continue
		}
		e := body[i+1]
		i += 2
		switch e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(body[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				pair := utf8.RuneError
				if len(body)-i >= 6 && body[i] == '\\' && body[i+1] == 'u' {
					pair = utf16.DecodeRune(r, hex4(body[i+2:]))
				}
				if pair != utf8.RuneError {
					i += 6
				}
				r = pair
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\' and '/' stand for themselves
			dst = append(dst, e)
		}
	}
	return dst
}

// Text reads a string and returns its value (see unescape). The bytes are
// the document's own when the string holds no escape and no invalid UTF-8,
// else the Scanner's, which the next such string overwrites: copy what is
// kept. A null is not a string here; see Null.
func (s *Scanner) Text() ([]byte, error) {
	if s.Peek() != '"' {
		return nil, s.fail("expected a string")
	}
	tok, plain, err := s.stringToken()
	if err != nil {
		return nil, err
	}
	if plain {
		return tok[1 : len(tok)-1], nil
	}
	s.textBuf = unescape(s.textBuf[:0], tok[1:len(tok)-1])
	return s.textBuf, nil
}

// Unquote returns the value of tok, one JSON string with its quotes,
// decoded as encoding/json decodes it and appended to dst; false when tok
// is anything else.
func Unquote(dst, tok []byte) ([]byte, bool) {
	if len(tok) == 0 || tok[0] != '"' {
		return dst, false
	}
	s := Scanner{doc: tok}
	t, plain, err := s.stringToken()
	if err != nil || s.i != len(tok) {
		return dst, false
	}
	if plain {
		return append(dst, t[1:len(t)-1]...), true
	}
	return unescape(dst, t[1:len(t)-1]), true
}

// Str reads a string into *dst; null leaves *dst unchanged. When the value
// equals *dst the string already there is kept instead of allocating.
func (s *Scanner) Str(dst *string) error {
	return s.StrShared(dst, dst)
}

// StrShared is Str with a reuse slot for values that repeat across the
// elements of an array (partition ids, lease ids, queue names): *dst gets
// *shared's string when the value equals it, and *shared the new one when
// not.
func (s *Scanner) StrShared(dst, shared *string) error {
	if s.Null() {
		return nil
	}
	t, err := s.Text()
	if err != nil {
		return err
	}
	if *shared != string(t) {
		*shared = string(t)
	}
	*dst = *shared
	return nil
}

// SkipStr checks a string (or null) without keeping it.
func (s *Scanner) SkipStr() error {
	if s.Null() {
		return nil
	}
	if s.Peek() != '"' {
		return s.fail("expected a string")
	}
	_, _, err := s.stringToken()
	return err
}

// Number reads a number and returns its text (strict JSON grammar: no
// leading zero, no leading plus, digits after a point and an exponent).
func (s *Scanner) Number() ([]byte, error) {
	s.ws()
	start := s.i
	end, what := scanNumber(s.doc, start)
	s.i = end
	if what != "" {
		return nil, s.fail(what)
	}
	return s.doc[start:end], nil
}

// Int64 reads an integer into *dst; null leaves *dst unchanged; a fraction,
// an exponent or an overflow is an error (as encoding/json into an int64).
func (s *Scanner) Int64(dst *int64) error {
	if s.Null() {
		return nil
	}
	c := s.Peek()
	if c != '-' && (c < '0' || c > '9') {
		return s.fail("expected a number")
	}
	tok, err := s.Number()
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

// Int is Int64 into an int.
func (s *Scanner) Int(dst *int) error {
	v := int64(*dst)
	if err := s.Int64(&v); err != nil {
		return err
	}
	if int64(int(v)) != v {
		return fmt.Errorf("json: number %d overflows int", v)
	}
	*dst = int(v)
	return nil
}

// Bool reads true or false into *dst; null leaves *dst unchanged.
func (s *Scanner) Bool(dst *bool) error {
	if s.Null() {
		return nil
	}
	b := s.doc[s.i:]
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

// OptBool reads into a *bool: null sets it to nil.
func (s *Scanner) OptBool(dst **bool) error { return optional(s, dst, s.Bool) }

// OptInt reads into a *int: null sets it to nil.
func (s *Scanner) OptInt(dst **int) error { return optional(s, dst, s.Int) }

// optional reads into a pointer field with read: null sets it to nil.
func optional[T any](s *Scanner, dst **T, read func(*T) error) error {
	if s.Null() {
		*dst = nil
		return nil
	}
	v := new(T)
	if err := read(v); err != nil {
		return err
	}
	*dst = v
	return nil
}

// Raw reads the next value (null included) and returns its bytes: a
// sub-slice of the document whose capacity ends with the value, so that an
// append to it cannot overwrite what follows.
func (s *Scanner) Raw() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.doc[start:s.i:s.i], nil
}

// Skip reads one value of any kind and keeps nothing of it.
func (s *Scanner) Skip() error {
	end, what := scanValue(s.doc, s.i, s.depth, MaxDepth)
	s.i = end
	if what != "" {
		return s.fail(what)
	}
	return nil
}

// Strings reads an array of strings into *dst, reusing its backing array;
// null sets *dst to nil and [] makes it a non-nil empty slice.
func (s *Scanner) Strings(dst *[]string) error {
	out := (*dst)[:0]
	isArr, err := s.Array(func() error {
		var v string
		if err := s.Str(&v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return err
	}
	if !isArr {
		*dst = nil
		return nil
	}
	if out == nil {
		out = []string{}
	}
	*dst = out
	return nil
}
