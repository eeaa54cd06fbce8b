package httpapi

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/libs/wire"
)

// The query parameters of the read routes (limits, minutes, simulation
// numbers) are read here, one way: a parameter given twice or not a
// whole number is a 422 naming it (code invalid-query).

// QueryInt reads an optional integer query parameter; given is false when
// it is absent or empty. A whole number beyond int64 saturates at its end.
func QueryInt(v url.Values, name string) (n int64, given bool, bad *Refusal) {
	raw, ok := v[name]
	if !ok || len(raw) == 0 || strings.TrimSpace(raw[0]) == "" {
		return 0, false, nil
	}
	if len(raw) > 1 {
		return 0, true, Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s is given %d times: give it once", name, len(raw)).Field(name)
	}
	text := strings.TrimSpace(raw[0])
	n, err := strconv.ParseInt(text, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		// A whole number too large for int64 is still one: it saturates,
		// and the caller's range refuses or clamps it like any other.
		if strings.HasPrefix(text, "-") {
			return math.MinInt64, true, nil
		}
		return math.MaxInt64, true, nil
	}
	if err != nil {
		return 0, true, Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s=%.40q is not an integer: give a whole number", name, raw[0]).Field(name)
	}
	return n, true, nil
}

// QueryRange reads an optional integer that must lie in lo..hi (def when
// absent); outside the range is a 422 naming it and the range.
func QueryRange[T ~int | ~int64](v url.Values, name string, def, lo, hi T) (T, *Refusal) {
	n64, given, bad := QueryInt(v, name)
	n := T(n64)
	switch {
	case bad != nil:
		return 0, bad
	case !given:
		return def, nil
	case n64 < int64(lo) || n64 > int64(hi):
		return 0, Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "%s=%d is out of range: give a whole number in %d..%d", name, n64, lo, hi).Field(name)
	}
	return n, nil
}

// QueryClamped reads an optional integer (def when absent) and clamps it
// to lo..hi, for the parameters the spec clamps rather than refuses: every
// route's minutes (timeline, both simulations, roll-ups, flow) — one rule,
// a whole number is clamped to the route's range, anything else is 422.
func QueryClamped[T ~int | ~int64](v url.Values, name string, def, lo, hi T) (T, *Refusal) {
	n, given, bad := QueryInt(v, name)
	if bad != nil {
		return 0, bad
	}
	if !given {
		return def, nil
	}
	return T(min(max(n, int64(lo)), int64(hi))), nil
}
