package miniqueen

import (
	"net/url"
	"strings"
)

// rawQuery reads a request's query string the way url.Values.Get does,
// without building the map: a pop reads a dozen parameters of a query of
// about a hundred bytes, and url.ParseQuery's map and slices were a third
// of the broker's own work on an empty pop (which an idle fleet sends
// hundreds of a second).
type rawQuery string

// Get answers the first value of key, "" when there is none: what
// url.ParseQuery(q).Get(key) answers (a pair holding ';' or a malformed
// escape is skipped, as ParseQuery skips it).
func (q rawQuery) Get(key string) string {
	var v [1]string
	q.GetEach([]string{key}, v[:])
	return v[0]
}

// GetEach answers into vals[i] what Get(keys[i]) answers, in one pass over
// the query instead of one per key (a pop reads ten keys). vals must be
// as long as keys.
func (q rawQuery) GetEach(keys []string, vals []string) {
	found := 0
	seen := uint64(0) // bit i: keys[i] has its first value
	for i := range vals {
		vals[i] = ""
	}
	s := string(q)
	for s != "" && found < len(keys) {
		var pair string
		pair, s, _ = strings.Cut(s, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			var err error
			if k, err = url.QueryUnescape(k); err != nil {
				continue
			}
		}
		i := -1
		for j, key := range keys {
			if key == k && seen&(1<<j) == 0 {
				i = j
				break
			}
		}
		if i < 0 {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			var err error
			if v, err = url.QueryUnescape(v); err != nil {
				continue
			}
		}
		vals[i] = v
		seen |= 1 << i
		found++
	}
}
