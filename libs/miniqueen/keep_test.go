package miniqueen

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestWhatIsStoredDoesNotHoldTheRequestThatBroughtIt: a message pushed in
// a transaction, and a kv key put in a batch, keep their own bytes, not
// the request body they were read from (keepArena). Each call here
// carries a 50 KB read beside one small write; 200 of them held 10 MB of
// bodies when a stored message or key was a slice of its body, and hold a
// few hundred bytes each now. The test runs alone (not parallel) so the
// heap it reads is its own.
func TestWhatIsStoredDoesNotHoldTheRequestThatBroughtIt(t *testing.T) {
	w := newWire(t)
	// padding is a getMany of 200 keys of 250 bytes: read, never stored.
	padding := func(call int) map[string]any {
		keys := make([]string, 200)
		for i := range keys {
			keys[i] = fmt.Sprintf("pad-%03d-%03d-%s", call, i, strings.Repeat("x", 240))
		}
		return map[string]any{"op": "getMany", "ns": "gate", "keys": keys}
	}
	const calls = 200
	for _, c := range []struct {
		name string
		send func(i int)
	}{{
		"a message pushed in a transaction", func(i int) {
			v := w.txn(map[string]any{
				"operations": []any{map[string]any{"type": "push", "items": []any{item("keep", "Default", map[string]any{"i": i}, fmt.Sprintf("t-%d", i))}}},
				"kv":         []any{padding(i)},
			})
			if at(t, v, "success") != true {
				t.Fatalf("transaction %d: %v", i, v)
			}
		}}, {
		"a kv key put in a batch", func(i int) {
			v := w.kv(map[string]any{"op": "put", "ns": "gate", "key": fmt.Sprintf("kept-%d", i), "value": i, "ttlSeconds": 3600}, padding(i))
			if r := at(t, v, "results", 0); at(t, r, "applied") != true {
				t.Fatalf("kv call %d: %v", i, v)
			}
		}},
	} {
		before := liveHeap()
		for i := range calls {
			c.send(i)
		}
		grew := int64(liveHeap()) - int64(before)
		// 200 bodies of 50 KB are 10 MB; what is stored is under 100 KB.
		if grew > 3<<20 {
			t.Errorf("%s: the live heap grew by %.1f MB over %d calls that each stored one small thing: what is stored holds the bodies it came in", c.name, float64(grew)/(1<<20), calls)
		}
	}
	if n := w.s.counters().KVKeys; n != calls {
		t.Fatalf("%d kv keys stored, want the %d put", n, calls)
	}
}

// liveHeap is the heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
