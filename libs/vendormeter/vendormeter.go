package vendormeter

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Family names which headers speak for a vendor's meter.
type Family string

// The families a budget may mirror.
const (
	// IETF is RateLimit-Policy (q, w) with RateLimit (r, t).
	IETF Family = "ratelimit"
	// XRateLimit is X-RateLimit-Limit, -Remaining and -Reset.
	XRateLimit Family = "x-ratelimit"
	// GitHub is X-RateLimit-* with -Used and -Resource (reset in epoch
	// seconds, read by the same rule as XRateLimit).
	GitHub Family = "github"
)

// Families lists every family, in the order the docs show them.
var Families = []Family{IETF, XRateLimit, GitHub}

// Known reports whether f is a family this package reads.
func Known(f Family) bool {
	for _, k := range Families {
		if f == k {
			return true
		}
	}
	return false
}

// Bounds on what Parse reads. Anything beyond is an *Error, never
// truncated silently.
const (
	// MaxHeaders is the most header lines one answer may carry.
	MaxHeaders = 128
	// MaxNameBytes is the longest header name.
	MaxNameBytes = 256
	// MaxValueBytes is the longest header value.
	MaxValueBytes = 4096
	// MaxTotalBytes is the most bytes of names and values together.
	MaxTotalBytes = 64 << 10
	// MaxCount is the largest limit, remaining or used count (10^12).
	MaxCount = 1_000_000_000_000
	// MaxWait is the furthest reset or Retry-After (31 days): a vendor
	// whose window is longer is not paced per window.
	MaxWait = 31 * 24 * time.Hour
	// Skew is how far in the past an absolute reset or Retry-After date
	// may lie and still read as "now" (the vendor's clock and ours).
	Skew = 60 * time.Second
	// MaxPolicies is the most members of a RateLimit-Policy or RateLimit
	// list.
	MaxPolicies = 16
)

// Epoch thresholds of the X-RateLimit-Reset rule (see ResetRule).
const (
	epochSeconds = 1_000_000_000     // 2001-09-09 in epoch seconds
	epochMillis  = 1_000_000_000_000 // 2001-09-09 in epoch milliseconds
)

// ResetRule says how an X-RateLimit-Reset number was read. The rule: a
// value of at least 10^12 is epoch milliseconds, at least 10^9 epoch
// seconds, anything smaller seconds from now. No vendor window is 31 years
// long and no epoch clock reads before 2001, so the three never overlap.
type ResetRule string

// The reset rules.
const (
	ResetNone         ResetRule = ""
	ResetSeconds      ResetRule = "seconds"
	ResetEpochSeconds ResetRule = "epoch-seconds"
	ResetEpochMillis  ResetRule = "epoch-ms"
	ResetDelta        ResetRule = "delta" // IETF t=, always seconds from now
)

// Header is one response header line as the worker saw it.
type Header struct {
	Name, Value string
}

// Reading is what one vendor answer says about its meter. A Has flag false
// means the answer did not say it.
type Reading struct {
	// Status is the HTTP status of the answer.
	Status int
	// Limit is the vendor's quota per window.
	Limit    int64
	HasLimit bool
	// Remaining is what is left of the quota in the vendor's window.
	Remaining    int64
	HasRemaining bool
	// Used is what the vendor counts as used in its window: the GitHub
	// header, else Limit − Remaining when both are known.
	Used    int64
	HasUsed bool
	// Reset is how long until the vendor's window refills, from now.
	Reset     time.Duration
	HasReset  bool
	ResetRule ResetRule
	// Window is the vendor's window length (IETF w), when said.
	Window    time.Duration
	HasWindow bool
	// RetryAfter is the wait a 429 or 503 asked for (at least 1 s).
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Policy is the IETF policy name or the GitHub resource the numbers
	// belong to ("" when the answer names none).
	Policy string
}

// Refused reports whether the vendor refused the call (429 or 503).
func (r Reading) Refused() bool {
	return r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable
}

// Says reports whether the answer said anything about the meter.
func (r Reading) Says() bool {
	return r.HasLimit || r.HasRemaining || r.HasUsed || r.HasReset || r.HasRetryAfter
}

// Error is one header the parser could not read: it names the header and
// says what is wrong and what it expects.
type Error struct {
	// Header is the header's name as sent ("" for the list as a whole).
	Header string
	// Problem is a sentence: what was wrong and what is expected.
	Problem string
}

func (e *Error) Error() string {
	if e.Header == "" {
		return "headers: " + e.Problem
	}
	return fmt.Sprintf("header %s: %s", e.Header, e.Problem)
}

// ErrMismatch is returned (wrapped in an *Error) when the answer's numbers
// belong to another GitHub resource or IETF policy than the one mirrored.
var ErrMismatch = errors.New("the answer speaks for another meter")

// Mismatch is the error of an answer for another meter.
type Mismatch struct {
	Header, Want, Got string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("header %s names %q, the budget mirrors %q", m.Header, m.Got, m.Want)
}

// Unwrap makes a Mismatch an ErrMismatch.
func (m *Mismatch) Unwrap() error { return ErrMismatch }

func bad(name, format string, args ...any) *Error {
	return &Error{Header: name, Problem: fmt.Sprintf(format, args...)}
}

// Options say which meter to read.
type Options struct {
	// Family is the headers that speak for the meter.
	Family Family
	// Name is the IETF policy or GitHub resource mirrored; "" takes the
	// first policy (IETF) or any resource (GitHub).
	Name string
	// Now is the time the answer arrived (epoch rules read against it).
	Now time.Time
}

// index is the headers by lower-cased name, values of repeated lines
// joined with ", " as HTTP joins list fields.
type index map[string]entry

type entry struct {
	name  string // first spelling seen
	value string
	lines int
}

// Check bounds the header list alone: the count, each name and value, the
// total, and that names are tokens and values printable. Parse calls it.
func Check(headers []Header) error {
	if len(headers) > MaxHeaders {
		return bad("", "%d header lines, over %d: send only the answer's response headers", len(headers), MaxHeaders)
	}
	total := 0
	for _, h := range headers {
		if h.Name == "" {
			return bad("", "a header has an empty name: send each header as its name and value")
		}
		if len(h.Name) > MaxNameBytes {
			return bad(clip(h.Name), "the name is %d bytes, over %d", len(h.Name), MaxNameBytes)
		}
		if !token(h.Name) {
			return bad(clip(h.Name), "the name is not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)")
		}
		if len(h.Value) > MaxValueBytes {
			return bad(h.Name, "the value is %d bytes, over %d", len(h.Value), MaxValueBytes)
		}
		if !utf8.ValidString(h.Value) || strings.ContainsAny(h.Value, "\r\n\x00") {
			return bad(h.Name, "the value holds a line break, a NUL or invalid UTF-8")
		}
		total += len(h.Name) + len(h.Value)
		if total > MaxTotalBytes {
			return bad("", "the headers add up to over %d bytes: send only the answer's response headers", MaxTotalBytes)
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func token(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

func build(headers []Header) index {
	ix := make(index, 8)
	for _, h := range headers {
		k := strings.ToLower(h.Name)
		e, ok := ix[k]
		if !ok {
			ix[k] = entry{name: h.Name, value: strings.TrimSpace(h.Value), lines: 1}
			continue
		}
		e.value += ", " + strings.TrimSpace(h.Value)
		e.lines++
		ix[k] = e
	}
	return ix
}

// Parse reads one vendor answer. status must be an HTTP status (100–599).
// Headers of other families than o.Family are ignored, except Retry-After,
// read on 429 and 503. A Reading that says nothing is not an error: the
// caller decides whether that is worth a refusal.
func Parse(status int, headers []Header, o Options) (Reading, error) {
	if status < 100 || status > 599 {
		return Reading{}, bad("", "status %d is not an HTTP status (100–599)", status)
	}
	if !Known(o.Family) {
		return Reading{}, bad("", "family %q is not one of ratelimit, x-ratelimit, github", o.Family)
	}
	if err := Check(headers); err != nil {
		return Reading{}, err
	}
	ix := build(headers)
	r := Reading{Status: status}
	var err error
	switch o.Family {
	case IETF:
		err = ietf(ix, o, &r)
	case XRateLimit, GitHub:
		err = xrate(ix, o, &r)
	}
	if err != nil {
		return Reading{}, err
	}
	if r.Refused() {
		if e, ok := ix["retry-after"]; ok {
			d, err := retryAfter(e, o.Now)
			if err != nil {
				return Reading{}, err
			}
			r.RetryAfter, r.HasRetryAfter = d, true
		}
	}
	if r.HasLimit && r.HasRemaining && !r.HasUsed {
		r.Used, r.HasUsed = max(r.Limit-r.Remaining, 0), true
	}
	return r, nil
}

// single returns the one value of a singleton field: a field sent on two
// lines (or as a list) is malformed.
func single(e entry) (string, error) {
	if e.lines > 1 {
		return "", bad(e.name, "sent %d times: a vendor sends it once per answer", e.lines)
	}
	return e.value, nil
}

// count reads a non-negative whole number up to MaxCount.
func count(name, v string) (int64, error) {
	if v == "" {
		return 0, bad(name, "is empty: expected a whole number")
	}
	if len(v) > 13 {
		return 0, bad(name, "%q is too long: expected a whole number up to %d", clip(v), int64(MaxCount))
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			if v[0] == '-' {
				return 0, bad(name, "%q is negative: expected a whole number ≥ 0", v)
			}
			return 0, bad(name, "%q is not a whole number", v)
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > MaxCount {
		return 0, bad(name, "%q is over %d", v, int64(MaxCount))
	}
	return n, nil
}

func xrate(ix index, o Options, r *Reading) error {
	get := func(k string) (string, string, bool, error) {
		e, ok := ix[k]
		if !ok {
			return "", "", false, nil
		}
		v, err := single(e)
		return e.name, v, true, err
	}
	if o.Family == GitHub {
		name, v, ok, err := get("x-ratelimit-resource")
		if err != nil {
			return err
		}
		if ok {
			if !token(v) || len(v) > 64 {
				return bad(name, "%q is not a resource name", clip(v))
			}
			r.Policy = v
			if o.Name != "" && v != o.Name {
				return &Mismatch{Header: name, Want: o.Name, Got: v}
			}
		}
	}
	for _, f := range []struct {
		key string
		n   *int64
		has *bool
	}{
		{"x-ratelimit-limit", &r.Limit, &r.HasLimit},
		{"x-ratelimit-remaining", &r.Remaining, &r.HasRemaining},
		{"x-ratelimit-used", &r.Used, &r.HasUsed},
	} {
		if f.key == "x-ratelimit-used" && o.Family != GitHub {
			continue
		}
		name, v, ok, err := get(f.key)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		n, err := count(name, v)
		if err != nil {
			return err
		}
		*f.n, *f.has = n, true
	}
	if r.HasLimit && r.HasRemaining && r.Remaining > r.Limit {
		return bad(ix["x-ratelimit-remaining"].name, "%d is above the limit %d", r.Remaining, r.Limit)
	}
	if r.HasLimit && r.HasUsed && r.Used > r.Limit && !(r.HasRemaining && r.Remaining == 0) {
		return bad(ix["x-ratelimit-used"].name, "%d is above the limit %d while requests remain", r.Used, r.Limit)
	}
	name, v, ok, err := get("x-ratelimit-reset")
	if err != nil || !ok {
		return err
	}
	d, rule, err := reset(name, v, o.Now)
	if err != nil {
		return err
	}
	r.Reset, r.HasReset, r.ResetRule = d, true, rule
	return nil
}

// reset reads an X-RateLimit-Reset by the ResetRule. Seconds from now may
// carry a fraction (some vendors send "0.5").
func reset(name, v string, now time.Time) (time.Duration, ResetRule, error) {
	if v == "" {
		return 0, "", bad(name, "is empty: expected seconds from now, epoch seconds or epoch milliseconds")
	}
	if strings.HasPrefix(v, "-") {
		return 0, "", bad(name, "%q is negative: expected seconds from now, epoch seconds or epoch milliseconds", clip(v))
	}
	if len(v) > 20 {
		return 0, "", bad(name, "%q is too long for a reset", clip(v))
	}
	if i := strings.IndexByte(v, '.'); i >= 0 {
		whole, frac := v[:i], v[i+1:]
		if whole == "" || frac == "" || len(frac) > 9 || !digits(whole) || !digits(frac) {
			return 0, "", bad(name, "%q is not a number of seconds", clip(v))
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f >= epochSeconds {
			return 0, "", bad(name, "%q: a fractional reset is read as seconds from now and must be below %d", clip(v), epochSeconds)
		}
		d := time.Duration(f * float64(time.Second))
		if d > MaxWait {
			return 0, "", bad(name, "%q seconds is over %s", clip(v), MaxWait)
		}
		return d, ResetSeconds, nil
	}
	if !digits(v) {
		return 0, "", bad(name, "%q is not a number: expected seconds from now, epoch seconds or epoch milliseconds", clip(v))
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > math.MaxInt64/2 {
		return 0, "", bad(name, "%q is too large for a reset", clip(v))
	}
	var at time.Time
	var rule ResetRule
	switch {
	case n >= epochMillis:
		at, rule = time.UnixMilli(int64(n)), ResetEpochMillis
	case n >= epochSeconds:
		at, rule = time.Unix(int64(n), 0), ResetEpochSeconds
	default:
		d := time.Duration(n) * time.Second
		if d > MaxWait {
			return 0, "", bad(name, "%d seconds is over %s: a window that long is not paced per window", n, MaxWait)
		}
		return d, ResetSeconds, nil
	}
	d := at.Sub(now)
	if d < -Skew {
		return 0, "", bad(name, "%q (%s, read as %s) is %s in the past: the answer is dated", v, at.UTC().Format(time.RFC3339), rule, (-d).Round(time.Second))
	}
	if d > MaxWait {
		return 0, "", bad(name, "%q (%s, read as %s) is over %s ahead", v, at.UTC().Format(time.RFC3339), rule, MaxWait)
	}
	return max(d, 0), rule, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// retryAfter reads Retry-After: delay-seconds or an HTTP-date (RFC 9110
// §10.2.3). A wait below a second (a date now or just past) is 1 s.
func retryAfter(e entry, now time.Time) (time.Duration, error) {
	v, err := single(e)
	if err != nil {
		return 0, err
	}
	if v == "" {
		return 0, bad(e.name, "is empty: expected seconds or an HTTP-date")
	}
	if digits(v) {
		if len(v) > 10 {
			return 0, bad(e.name, "%q seconds is over %s", clip(v), MaxWait)
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		d := time.Duration(n) * time.Second
		if d > MaxWait {
			return 0, bad(e.name, "%q seconds is over %s", v, MaxWait)
		}
		return max(d, time.Second), nil
	}
	if strings.HasPrefix(v, "-") {
		return 0, bad(e.name, "%q is negative: expected seconds ≥ 0 or an HTTP-date", clip(v))
	}
	at, perr := http.ParseTime(v)
	if perr != nil {
		return 0, bad(e.name, "%q is neither seconds nor an HTTP-date (e.g. Wed, 21 Oct 2015 07:28:00 GMT)", clip(v))
	}
	d := at.Sub(now)
	if d < -Skew {
		return 0, bad(e.name, "%q is %s in the past: the answer is dated", v, (-d).Round(time.Second))
	}
	if d > MaxWait {
		return 0, bad(e.name, "%q is over %s ahead", v, MaxWait)
	}
	return max(d.Round(time.Second), time.Second), nil
}
