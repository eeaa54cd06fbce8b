package cost

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Root is the first segment of every payload path: the message data root.
const Root = "payload"

// Stamp is the payload field Gate writes on routed messages; paths must not
// address it.
const Stamp = "_gate"

// ErrTooExpensive is wrapped by TooExpensiveError: the item's cost is above
// the node's maximum, so it can never fit a window.
var ErrTooExpensive = errors.New("item cost above the node's maximum")

// TooExpensiveError is returned by Rule.Of for an item that can never be
// admitted: it would park the head of its partition without reaching a DLQ.
type TooExpensiveError struct {
	// Cost is the item's resolved cost; Max the node's maximum.
	Cost, Max int64
}

// Error names the cost, the maximum and the fix.
func (e *TooExpensiveError) Error() string {
	return fmt.Sprintf("item cost %d is above the node's cost.max %d: it can never fit a window and would park the head of its partition without reaching a DLQ; lower the item's cost or raise cost.max and the budgets", e.Cost, e.Max)
}

// Unwrap makes errors.Is(err, ErrTooExpensive) true.
func (e *TooExpensiveError) Unwrap() error { return ErrTooExpensive }

// Rule is a node's per-item cost.
//
// With Path "" the cost is fixed: every item costs Default (and Max equals
// it). Otherwise the integral number ≥ 1 at Path is the cost, any other value
// (absent, null, string, fractional, zero, negative) falls back to Default,
// and a cost above Max is refused. The zero value is a fixed cost of 0,
// which Of floors to 1.
type Rule struct {
	// Path is the payload path of the cost (`payload.a.b`); "" means fixed.
	Path string `json:"path"`
	// Default is the fixed cost, or the fallback of a path cost.
	Default int64 `json:"default"`
	// Max is the largest admissible cost.
	Max int64 `json:"max"`
}

// Fixed returns the rule of a fixed cost n.
func Fixed(n int64) Rule { return Rule{Default: n, Max: n} }

// Of returns the cost of one item whose JSON data is data. It fails with a
// *TooExpensiveError only for a path cost above Max. It does not allocate.
func (r Rule) Of(data []byte) (int64, error) {
	if r.Path == "" {
		return max(r.Default, 1), nil
	}
	c := r.Default
	if raw, ok := Lookup(data, r.Path); ok {
		if v, ok := integral(raw); ok {
			c = v
		}
	}
	if c > r.Max {
		return 0, &TooExpensiveError{Cost: c, Max: r.Max}
	}
	return max(c, 1), nil
}

// integral reads a JSON number that is a whole number ≥ 1 (3 or 3.0).
// Whole numbers beyond int64 saturate to math.MaxInt64.
func integral(raw []byte) (int64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, false
	}
	s := unsafeString(raw)
	if !strings.ContainsAny(s, ".eE") {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if raw[0] == '-' {
				return 0, false
			}
			return math.MaxInt64, true
		}
		return v, v >= 1
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	if f < 1 || f != math.Trunc(f) {
		return 0, false
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(f), true
}

// ValidPath reports whether p is a payload path: dot-separated, the first
// segment exactly "payload", at least one more segment, none empty.
func ValidPath(p string) bool {
	rest, ok := strings.CutPrefix(p, Root+".")
	if !ok || rest == "" {
		return false
	}
	for seg := range strings.SplitSeq(rest, ".") {
		if seg == "" {
			return false
		}
	}
	return true
}

// AddressesStamp reports whether the payload path p reads Gate's own
// `_gate` stamp, which Gate overwrites on every routed message.
func AddressesStamp(p string) bool {
	rest, ok := strings.CutPrefix(p, Root+".")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, ".")
	return first == Stamp
}

// Op returns the item's op: the top-level string field "op" of the data, or
// "" when it is absent or not a string.
func Op(data []byte) string {
	raw, ok := field(data, "op")
	if !ok {
		return ""
	}
	s, _ := text(raw)
	return s
}

// MatchOp reports whether op matches one of the whenOp patterns: `x.*`
// matches an op that starts with `x.` (at any depth), `*` matches every op
// (the empty one included), anything else must be equal.
func MatchOp(patterns []string, op string) bool {
	for _, p := range patterns {
		if p == "*" || p == op {
			return true
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasSuffix(prefix, ".") && strings.HasPrefix(op, prefix) {
			return true
		}
	}
	return false
}

// Applies reports whether a budget with the given whenOp charges an item
// with this op: a nil whenOp charges every item.
func Applies(whenOp []string, op string) bool {
	if whenOp == nil {
		return true
	}
	return MatchOp(whenOp, op)
}

// Scope returns the scope value at the payload path p: a string as-is, a
// whole-number literal as written, another number in its shortest decimal
// form (1.50 and 1.5 are one scope), true or false. Absent, null, objects
// and arrays have no value (ok false).
func Scope(data []byte, p string) (value string, ok bool) {
	raw, ok := Lookup(data, p)
	if !ok || len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		return text(raw)
	case c == 't':
		return "true", true
	case c == 'f':
		return "false", true
	case c == '-' || (c >= '0' && c <= '9'):
		s := string(raw)
		if !strings.ContainsAny(s, ".eE") {
			return s, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return s, true
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}

// Lookup returns the raw JSON value at payload path p inside data, or false
// when p is not a payload path, the data is not an object, or a segment is
// absent or crosses a non-object. A repeated key resolves to its last value.
func Lookup(data []byte, p string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(p, Root+".")
	if !ok || rest == "" {
		return nil, false
	}
	cur := data
	for {
		seg, more, found := strings.Cut(rest, ".")
		if seg == "" {
			return nil, false
		}
		v, ok := field(cur, seg)
		if !ok {
			return nil, false
		}
		if !found {
			return v, true
		}
		cur, rest = v, more
	}
}
