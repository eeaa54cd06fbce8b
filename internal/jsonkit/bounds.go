package jsonkit

import "bytes"

// The functions below step over JSON that is known to be valid (json.Valid
// said so, or a Scanner read it): they only find where things end, which
// is cheaper than checking them again. On invalid JSON their answers mean
// nothing, but they stay within the slice they are given.

// StringEnd returns the index just past the string that starts at b[i] (a
// quote): the first quote after it that an even run of backslashes
// precedes, found with bytes.IndexByte, which is fast over long strings.
func StringEnd(b []byte, i int) int {
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

// ValueEnd returns the index just past the value that starts at b[i].
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = StringEnd(b, i) - 1
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

// Member is where one member of an object stands in its document: its key
// as written (quotes and escapes included) is doc[KeyStart:KeyEnd], its
// value doc[ValueStart:ValueEnd].
type Member struct {
	KeyStart, KeyEnd, ValueStart, ValueEnd int
}

// NextMember finds the next member of an object: i is just past the
// object's opening brace, or the ValueEnd of the member before. It reports
// false at the object's end. The object must be valid JSON; the usual loop:
//
//	for m, ok := NextMember(obj, 1); ok; m, ok = NextMember(obj, m.ValueEnd) {
func NextMember(doc []byte, i int) (Member, bool) {
	i = SkipSpace(doc, i)
	if i < len(doc) && doc[i] == ',' {
		i = SkipSpace(doc, i+1)
	}
	if i >= len(doc) || doc[i] != '"' {
		return Member{}, false
	}
	m := Member{KeyStart: i, KeyEnd: StringEnd(doc, i)}
	i = SkipSpace(doc, m.KeyEnd)
	m.ValueStart = SkipSpace(doc, i+1) // past the ':'
	m.ValueEnd = ValueEnd(doc, m.ValueStart)
	return m, true
}
