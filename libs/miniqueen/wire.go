package miniqueen

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/internal/jsonkit"
)

// Time layouts used on the wire.
const (
	// createdLayout renders message createdAt in UTC with millis and Z.
	createdLayout = "2006-01-02T15:04:05.000Z"
	// pgLayout renders KV timestamps the way Postgres jsonb renders timestamptz.
	pgLayout = "2006-01-02T15:04:05.000000-07:00"
	// leaseLayout renders lease expiry instants (micros, Z).
	leaseLayout = "2006-01-02T15:04:05.000000Z"
)

// jw is a tiny append-only JSON writer used on the hot paths so responses are
// encoded without reflection; its strings are the one JSON string encoder's
// (jsonkit.AppendString: encoding/json's bytes without HTML escaping).
type jw struct {
	b []byte
}

// pgTime writes t as a JSON string in pgLayout (what fmtPG renders).
func (w *jw) pgTime(t time.Time) {
	w.b = append(w.b, '"')
	w.b = appendPG(w.b, t)
	w.b = append(w.b, '"')
}

// appendPG appends t in pgLayout ("2006-01-02T15:04:05.000000+00:00", in
// UTC) with its digits written directly: a kv listing renders two
// instants a row, and time.AppendFormat's general layout walk was most of
// the broker's cost of rendering a row. Years outside 0–9999 take the
// general path.
func appendPG(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, pgLayout)
	}
	hour, minute, sec := t.Clock()
	us := t.Nanosecond() / 1000
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':', byte('0'+sec/10), byte('0'+sec%10), '.')
	for d := 100000; d > 0; d /= 10 {
		b = append(b, byte('0'+us/d%10))
	}
	return append(b, "+00:00"...)
}

func (w *jw) raw(s string)  { w.b = append(w.b, s...) }
func (w *jw) rawb(b []byte) { w.b = append(w.b, b...) }
func (w *jw) str(s string)  { w.b = jsonkit.AppendString(w.b, s) }
func (w *jw) int(n int64)   { w.b = strconv.AppendInt(w.b, n, 10) }
func (w *jw) bool(v bool)   { w.b = strconv.AppendBool(w.b, v) }
func (w *jw) key(k string) {
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}
func (w *jw) comma() { w.b = append(w.b, ',') }
func (w *jw) uuid(u uuid) {
	w.b = append(w.b, '"')
	w.b = appendUUID(w.b, u)
	w.b = append(w.b, '"')
}

func (w *jw) strOrNull(s string) {
	if s == "" {
		w.raw("null")
		return
	}
	w.str(s)
}

// json writes a raw JSON value, or null when it is empty.
func (w *jw) json(v []byte) {
	if len(v) == 0 {
		w.raw("null")
		return
	}
	w.b = append(w.b, v...)
}

// uuid is a 16-byte UUID kept as an array (no pointer for the GC to scan).
type uuid [16]byte

const hexDigits = "0123456789abcdef"

// appendUUID appends the canonical 36-character form of u.
func appendUUID(b []byte, u uuid) []byte {
	for i := 0; i < 16; i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[u[i]>>4], hexDigits[u[i]&0xf])
	}
	return b
}

func (u uuid) String() string {
	var out [36]byte
	return string(appendUUID(out[:0], u))
}

// idGen mints UUIDv7 ids: 48 bits of unix millis from the injected clock,
// then a counter that starts at a random point, so ids are unique and (with
// a forward clock) ordered.
type idGen struct {
	seq atomic.Uint64
}

func (g *idGen) raw(now time.Time) uuid {
	seq := g.seq.Add(1)
	ms := uint64(now.UnixMilli())
	var u uuid
	u[0] = byte(ms >> 40)
	u[1] = byte(ms >> 32)
	u[2] = byte(ms >> 24)
	u[3] = byte(ms >> 16)
	u[4] = byte(ms >> 8)
	u[5] = byte(ms)
	hi := seq >> 62 // top bits go into rand_a
	u[6] = 0x70 | byte(hi>>8)&0x0f
	u[7] = byte(hi)
	lo := seq & (1<<62 - 1)
	u[8] = 0x80 | byte(lo>>56)&0x3f
	u[9] = byte(lo >> 48)
	u[10] = byte(lo >> 40)
	u[11] = byte(lo >> 32)
	u[12] = byte(lo >> 24)
	u[13] = byte(lo >> 16)
	u[14] = byte(lo >> 8)
	u[15] = byte(lo)
	return u
}

func (g *idGen) next(now time.Time) string { return g.raw(now).String() }

// isUUID reports whether s looks like a canonical UUID string.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

func fmtPG(t time.Time) string      { return t.UTC().Format(pgLayout) }
func fmtCreated(t time.Time) string { return t.UTC().Format(createdLayout) }
func fmtLease(t time.Time) string   { return t.UTC().Format(leaseLayout) }

// parseInstant parses RFC 3339 with optional fraction, Z or numeric offset,
// tolerating a space instead of T.
func parseInstant(s string) (time.Time, bool) {
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999-07", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
