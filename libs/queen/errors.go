package queen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrEmptyTransaction is returned by Transact for a bundle with no
// operations, no kv ops and no timers; the broker refuses such a bundle, so
// the client does not send it.
var ErrEmptyTransaction = errors.New("queen: empty transaction: add at least one operation, kv op or timer")

// Error is a call that reached the broker and was refused: a non-2xx HTTP
// status, or one of the few 200 answers that describe a failed call rather
// than a business verdict (a refused configure, a failed pop). Business
// verdicts such as applied:false, success:false on a transaction, ok:false on
// a KV batch and duplicate pushes are never an Error: they come back as typed
// results.
type Error struct {
	// Status is the HTTP status code (200 for the failed-call answers above).
	Status int
	// Method and Route name the call, e.g. "POST" and "/api/v1/kv".
	Method string
	Route  string
	// Code is the body's "error" field (or the proxy's "code"), e.g.
	// "kv_bad_request" or "rate_limited"; empty when the body had none.
	Code string
	// Reason is the body's stable "reason" field, e.g. "kv_bad_ttl"; empty
	// when absent.
	Reason string
	// Message is the human text: the body's "detail", else its "error"
	// text, else the raw body (truncated to 512 bytes).
	Message string
	// RetryAfter is the parsed Retry-After header (seconds or HTTP date);
	// zero when absent.
	RetryAfter time.Duration
	// Body is the raw response body (truncated to 4 KiB).
	Body []byte
}

// Error renders the status, the call and what the broker said.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("queen: ")
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(e.Route)
	b.WriteString(": ")
	if e.Status != 0 {
		b.WriteString("HTTP ")
		b.WriteString(strconv.Itoa(e.Status))
	}
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Reason != "" && e.Reason != e.Code {
		b.WriteString(" (")
		b.WriteString(e.Reason)
		b.WriteString(")")
	}
	if e.Message != "" && e.Message != e.Code {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " [retry after %s]", e.RetryAfter)
	}
	return b.String()
}

// StatusOf returns the HTTP status of a *Error in err's chain, or 0 when err
// is nil or not a broker answer (a transport failure, a cancelled context).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// CodeNotFound is the Code the client gives an answer that says "not
// found" without a 404: an older broker's 200 {"error": "Queue not found"}
// on the queue detail route.
const CodeNotFound = "not_found"

// IsNotFound reports whether the broker said the thing is not there: a 404
// (unknown queue on the depth or detail route, or a route a too-old broker
// does not have) or an older broker's 200 answer saying so (CodeNotFound).
func IsNotFound(err error) bool {
	return StatusOf(err) == http.StatusNotFound || CodeOf(err) == CodeNotFound
}

// IsBadRequest reports whether the broker answered 400 (malformed input; the
// *Error's Reason names the rule, e.g. "kv_bad_ttl").
func IsBadRequest(err error) bool { return StatusOf(err) == http.StatusBadRequest }

// IsForbidden reports whether the broker answered 403 (quota, feature gate,
// kill switch on transaction riders, suspended cluster).
func IsForbidden(err error) bool { return StatusOf(err) == http.StatusForbidden }

// IsRateLimited reports whether the broker (or a proxy in front of it)
// answered 429; RetryAfter tells how long to wait.
func IsRateLimited(err error) bool { return StatusOf(err) == http.StatusTooManyRequests }

// IsUnavailable reports whether the broker answered 503 (KV disabled or shed,
// database down on /health); RetryAfter tells how long to wait.
func IsUnavailable(err error) bool { return StatusOf(err) == http.StatusServiceUnavailable }

// IsServerError reports whether the broker answered any 5xx.
func IsServerError(err error) bool { s := StatusOf(err); return s >= 500 && s <= 599 }

// RetryAfter returns the Retry-After of a *Error in err's chain and whether
// the broker sent one.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}

// CodeOf returns the "error" code of a *Error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ReasonOf returns the "reason" of a *Error in err's chain, or "".
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

const (
	maxErrorBody    = 4 << 10
	maxErrorMessage = 512
)

// errorBody is the union of the error envelopes the broker and its proxy use.
type errorBody struct {
	Error  json.RawMessage `json:"error"`
	Reason string          `json:"reason"`
	Detail string          `json:"detail"`
	Code   string          `json:"code"`
}

// newError builds an *Error from a refused answer.
func newError(method, route string, status int, header http.Header, body []byte) *Error {
	e := &Error{Status: status, Method: method, Route: route}
	if len(body) > maxErrorBody {
		body = body[:maxErrorBody]
	}
	e.Body = append([]byte(nil), body...)
	if header != nil {
		e.RetryAfter = parseRetryAfter(header.Get("Retry-After"), time.Now())
	}
	var eb errorBody
	if len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &eb) == nil {
		var errText string
		if len(eb.Error) > 0 && eb.Error[0] == '"' {
			_ = json.Unmarshal(eb.Error, &errText)
		}
		e.Reason = eb.Reason
		switch {
		case eb.Code != "":
			e.Code = eb.Code
		case isCode(errText):
			e.Code = errText
		}
		switch {
		case eb.Detail != "":
			e.Message = eb.Detail
		case errText != "":
			e.Message = errText
		}
	} else {
		e.Message = strings.TrimSpace(string(body))
	}
	if len(e.Message) > maxErrorMessage {
		e.Message = e.Message[:maxErrorMessage]
	}
	return e
}

// isCode reports whether s looks like a machine code ("kv_bad_request")
// rather than a sentence ("bad body: …").
func isCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > 86400 {
			n = 86400
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// TimeoutError is a call the client's own deadline (WithCallTimeout, by
// default DefaultCallTimeout) ended before the broker answered: the broker
// is hung or unreachable. Whether a write took effect is unknown. It wraps
// context.DeadlineExceeded.
type TimeoutError struct {
	Method, Route string
	// After is the deadline that passed.
	After time.Duration
	// Err is the transport's error.
	Err error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("queen: %s %s: the broker did not answer within %s", e.Method, e.Route, e.After)
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) true.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// IsTimeout reports whether err is (or wraps) a *TimeoutError.
func IsTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te)
}
