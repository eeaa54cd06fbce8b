package miniqueen

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
)

// TestGetPrefixPagesMatchEveryLiveKey drives the kv with random puts,
// deletes, TTLs that run out, transactions that roll back and re-puts of
// deleted keys, and after every step pages through several prefixes (at
// random page sizes, from random cursors) over the wire: each listing
// must be exactly the live keys with the prefix after the cursor, in byte
// order, as a brute-force scan of a model of the kv says — the kept order
// of keys (kvSpace) never shows a deleted or expired key, never misses a
// new one and never repeats one.
func TestGetPrefixPagesMatchEveryLiveKey(t *testing.T) {
	t.Parallel()
	v := clock.NewVirtual(t0)
	w := newWire(t, WithClock(v))
	rnd := rand.New(rand.NewPCG(7, 11))
	type modelEntry struct{ exp time.Time } // zero: forever
	model := map[string]modelEntry{}
	keyOf := func() string {
		return fmt.Sprintf("%s:%s%d", []string{"a", "ab", "b", "graph"}[rnd.IntN(4)], []string{"", "x", "y/"}[rnd.IntN(3)], rnd.IntN(40))
	}
	live := func(prefix, after string) []string {
		var out []string
		now := w.s.Now()
		for k, e := range model {
			if strings.HasPrefix(k, prefix) && k > after && (e.exp.IsZero() || now.Before(e.exp)) {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	for step := 0; step < 400; step++ {
		switch n := rnd.IntN(10); {
		case n < 5:
			k := keyOf()
			if rnd.IntN(3) == 0 {
				ttl := 1 + rnd.IntN(3)
				w.kv(map[string]any{"op": "put", "ns": "gate", "key": k, "value": step, "ttlSeconds": ttl})
				model[k] = modelEntry{exp: w.s.Now().Add(time.Duration(ttl) * time.Second)}
			} else {
				w.kv(map[string]any{"op": "put", "ns": "gate", "key": k, "value": step, "forever": true})
				model[k] = modelEntry{}
			}
		case n < 7:
			k := keyOf()
			w.kv(map[string]any{"op": "delete", "ns": "gate", "key": k})
			delete(model, k)
		case n < 8:
			// A batch whose required gate fails changes nothing: the
			// key it put first is rolled back.
			k := keyOf()
			w.do("POST", "/api/v1/kv", mustJSON(map[string]any{"operations": []map[string]any{
				{"op": "put", "ns": "gate", "key": k + "-rolled", "value": 1, "forever": true},
				{"op": "putIfAbsent", "ns": "gate", "key": "gate-held", "value": 1, "forever": true, "required": true},
			}}))
			if _, ok := model["gate-held"]; !ok {
				model["gate-held"] = modelEntry{}
				model[k+"-rolled"] = modelEntry{}
			}
		default:
			v.Advance(time.Duration(300+rnd.IntN(900)) * time.Millisecond)
		}
		for _, prefix := range []string{"a", "ab:", "b:", "graph:", "g", "zz"} {
			after := ""
			if rnd.IntN(2) == 0 {
				after = keyOf()
			}
			want := live(prefix, after)
			limit := 1 + rnd.IntN(7)
			var got []string
			cursor := after
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatalf("step %d: paging %q never ended", step, prefix)
				}
				op := map[string]any{"op": "getPrefix", "ns": "gate", "prefix": prefix, "limit": limit, "keysOnly": true}
				if cursor != "" {
					op["after"] = cursor
				}
				r := at(t, w.kv(op), "results", 0)
				for _, row := range at(t, r, "rows").([]any) {
					got = append(got, row.(map[string]any)["key"].(string))
				}
				if at(t, r, "truncated") != true {
					break
				}
				cursor = at(t, r, "nextAfter").(string)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d: getPrefix %q after %q (pages of %d) = %v\nwant %v", step, prefix, after, limit, got, want)
			}
		}
	}
}
