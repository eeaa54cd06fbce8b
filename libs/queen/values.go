package queen

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// OptInt is an integer that may be absent from the wire. The zero value is
// absent (the key is not sent); Int(0) sends an explicit 0.
type OptInt struct {
	Value int64
	Set   bool
}

// Int returns a present OptInt holding v.
func Int(v int64) OptInt { return OptInt{Value: v, Set: true} }

// IsZero reports whether the value is absent, so `omitzero` drops it.
func (o OptInt) IsZero() bool { return !o.Set }

// MarshalJSON renders the integer (or null when absent).
func (o OptInt) MarshalJSON() ([]byte, error) {
	if !o.Set {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, o.Value, 10), nil
}

// UnmarshalJSON reads an integer (an integral float such as 10.0 too);
// null leaves the value absent.
func (o *OptInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = OptInt{}
		return nil
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil {
		var f float64
		if json.Unmarshal(b, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return err
		}
		v = int64(f)
	}
	*o = Int(v)
	return nil
}

// OptBool is a boolean that may be absent from the wire. The zero value is
// absent (the key is not sent); Bool(false) sends an explicit false.
type OptBool struct {
	Value bool
	Set   bool
}

// Bool returns a present OptBool holding v.
func Bool(v bool) OptBool { return OptBool{Value: v, Set: true} }

// IsZero reports whether the value is absent, so `omitzero` drops it.
func (o OptBool) IsZero() bool { return !o.Set }

// MarshalJSON renders the boolean (or null when absent).
func (o OptBool) MarshalJSON() ([]byte, error) {
	switch {
	case !o.Set:
		return []byte("null"), nil
	case o.Value:
		return []byte("true"), nil
	default:
		return []byte("false"), nil
	}
}

// UnmarshalJSON reads a boolean; null leaves the value absent.
func (o *OptBool) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = OptBool{}
		return nil
	}
	var v bool
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = Bool(v)
	return nil
}

// Timestamp is a broker timestamp exactly as it arrived (ISO-8601; message
// createdAt in UTC with "Z", KV expiresAt/updatedAt as Postgres timestamptz
// with an offset). The empty Timestamp means the broker sent null or nothing
// (for a KV expiresAt: the key lives forever). It is kept as text so that
// decoding a claim of 200 messages parses nothing the caller does not read.
type Timestamp string

// Time parses the timestamp (see ParseTimestamp). The empty Timestamp yields
// the zero time and no error.
func (t Timestamp) Time() (time.Time, error) {
	if t == "" {
		return time.Time{}, nil
	}
	return ParseTimestamp(string(t))
}

// IsZero reports whether the broker sent no timestamp.
func (t Timestamp) IsZero() bool { return t == "" }

// timestampLayouts are tried in order by ParseTimestamp.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999",
}

// ParseTimestamp parses the broker's timestamps: RFC 3339 with an optional
// fraction, "Z" or a numeric offset (also the short "+00" form), a space
// instead of "T", and no offset at all (read as UTC).
func ParseTimestamp(s string) (time.Time, error) {
	v := strings.TrimSpace(s)
	if len(v) > 10 && v[10] == ' ' {
		v = v[:10] + "T" + v[11:]
	}
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("queen: timestamp %q is not RFC 3339 (want e.g. 2026-08-21T08:00:01.204311+00:00)", s)
}

// FormatTimestamp renders t the way the broker's query parameters and seek
// bodies expect it: UTC, milliseconds, "Z" (e.g. 2026-08-04T09:15:00.123Z).
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// CeilSeconds converts a duration to the whole seconds a KV ttlSeconds
// needs, rounded up (a 1.2 s window is 2 s; anything above 0 is at least 1),
// the way the SDKs turn "until T" into a TTL. Durations ≤ 0 give 0.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// NewTransactionID returns a fresh UUIDv7 string (time-ordered, random
// tail), the id SDKs mint for a push whose caller gave none.
func NewTransactionID() string {
	var u [16]byte
	if _, err := rand.Read(u[6:]); err != nil {
		panic("queen: crypto/rand failed: " + err.Error())
	}
	ms := uint64(time.Now().UnixMilli())
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(u[0:6], ts[2:8])
	u[6] = (u[6] & 0x0f) | 0x70
	u[8] = (u[8] & 0x3f) | 0x80
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], u[10:16])
	return string(out[:])
}
