package server

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The query parameters of the read routes (limits, minutes, simulation
// numbers) are read here, one way: a parameter given twice or not a
// whole number is a 422 naming it.

// queryInt reads an optional integer query parameter; given is false when
// it is absent or empty.
func queryInt(v url.Values, name string) (n int64, given bool, bad *apiError) {
	raw, ok := v[name]
	if !ok || len(raw) == 0 || strings.TrimSpace(raw[0]) == "" {
		return 0, false, nil
	}
	if len(raw) > 1 {
		return 0, true, fail(http.StatusUnprocessableEntity, "%s is given %d times: give it once", name, len(raw)).field(name)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw[0]), 10, 64)
	if err != nil {
		return 0, true, fail(http.StatusUnprocessableEntity, "%s=%.40q is not an integer: give a whole number", name, raw[0]).field(name)
	}
	return n, true, nil
}

// queryRange reads an optional integer that must lie in lo..hi (def when
// absent); outside the range is a 422 naming it and the range.
func queryRange[T ~int | ~int64](v url.Values, name string, def, lo, hi T) (T, *apiError) {
	n64, given, bad := queryInt(v, name)
	n := T(n64)
	switch {
	case bad != nil:
		return 0, bad
	case !given:
		return def, nil
	case n64 < int64(lo) || n64 > int64(hi):
		return 0, fail(http.StatusUnprocessableEntity, "%s=%d is out of range: give a whole number in %d..%d", name, n64, lo, hi).field(name)
	}
	return n, nil
}

// queryClamped reads an optional integer (def when absent) and clamps it
// to lo..hi, for the parameters the spec clamps rather than refuses.
func queryClamped[T ~int | ~int64](v url.Values, name string, def, lo, hi T) (T, *apiError) {
	n, given, bad := queryInt(v, name)
	if bad != nil {
		return 0, bad
	}
	if !given {
		return def, nil
	}
	return T(min(max(n, int64(lo)), int64(hi))), nil
}
