package jsonkit

import "math/bits"

// Plain JSON string content: the one per-byte loop every scan and write of
// a string runs.
//
// A byte is plain when it may stand inside a JSON string as itself with no
// further thought: printable ASCII other than the quote and the backslash.
// Everything else (the quote that ends a string, an escape, a control byte,
// a byte of a multi-byte UTF-8 sequence) is the caller's slow path. Eight
// bytes are judged at a time, because the strings on the hot path (ids,
// names, payload members) are almost always plain.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// Plain reports whether c may stand in a JSON string as itself.
func Plain(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }

// Run returns the index of the first byte of b at or after i that is not
// plain, or len(b) when there is none.
func Run[T string | []byte](b T, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := special(load(b, i)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if !Plain(b[i]) {
			return i
		}
	}
	return len(b)
}

// load reads b[i:i+8] as a little-endian word: b[i] is its lowest byte.
// Slicing first leaves one bounds check instead of eight, and the compiler
// makes the eight bytes one load.
func load[T string | []byte](b T, i int) uint64 {
	w := b[i : i+8]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// special sets the high bit of the lowest byte of x that is not plain, and
// of no byte below it (bytes above it may be set too: a borrow travels
// upward only), so the trailing zeros of the result locate the first such
// byte, and a zero result means all eight are plain. The terms, each exact
// up to its first hit: a byte below 0x20 (the subtraction borrows and the
// byte's own high bit was clear), a byte equal to the quote or the
// backslash (that byte of the XOR is zero), a byte of 0x80 or more.
func special(x uint64) uint64 {
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x | (q-ones)&^q | (s-ones)&^s | x) & highs
}
