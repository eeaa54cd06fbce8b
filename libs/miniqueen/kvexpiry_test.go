package miniqueen

import (
	"slices"
	"testing"
	"time"
)

func put(key string, value any, ttl int) map[string]any {
	op := map[string]any{"op": "put", "ns": "gate", "key": key, "value": value}
	if ttl == 0 {
		op["forever"] = true
	} else {
		op["ttlSeconds"] = ttl
	}
	return op
}

// TestExpiredKeysAreReclaimedWhateverTheyWentThrough checks that the sweep
// frees exactly the keys whose current entry expired: not a key rewritten
// with a later expiry or made forever, a counter whose incr kept its
// expiry, nor a key a rolled-back call wrote and restored.
func TestExpiredKeysAreReclaimedWhateverTheyWentThrough(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	stored := func() int { return w.s.counters().KVKeys }
	w.kv(
		put("plain", 1, 2),
		put("later", 1, 2),
		put("forever", 1, 2),
		put("sooner", 1, 100),
		put("gone", 1, 2),
		put("guard", 1, 0),
		put("restored", 1, 3),
		incr("counter", 1, map[string]any{"ttlSeconds": 2}),
	)
	w.kv(
		put("later", 2, 50),
		put("forever", 2, 0),
		put("sooner", 2, 2),
		map[string]any{"op": "delete", "ns": "gate", "key": "gone"},
		incr("counter", 1, nil),
	)
	// A call that rewrites "restored" forever, then loses its required
	// gate: the whole call rolls back, "restored" keeps its 3 s expiry.
	v := w.kv(put("restored", 2, 0), map[string]any{"op": "putIfAbsent", "ns": "gate", "key": "guard", "value": 1, "ttlSeconds": 5, "required": true})
	if at(t, v, "ok") != false {
		t.Fatalf("the gated call applied: %v", v)
	}
	if n := stored(); n != 7 {
		t.Fatalf("%d keys stored before any expiry, want 7", n)
	}
	// The sweep runs with the next kv call, once per clock second.
	w.s.FastForward(2 * time.Second)
	w.kv(map[string]any{"op": "get", "ns": "gate", "key": "guard"})
	if got, want := w.s.KVKeys("gate"), []string{"forever", "guard", "later", "restored"}; !slices.Equal(got, want) {
		t.Fatalf("live keys after 2 s: %v, want %v", got, want)
	}
	if n := stored(); n != 4 {
		t.Fatalf("%d keys stored after 2 s, want 4 (plain, sooner and counter reclaimed)", n)
	}
	w.s.FastForward(2 * time.Second)
	w.kv(map[string]any{"op": "get", "ns": "gate", "key": "guard"})
	if n := stored(); n != 3 {
		t.Fatalf("%d keys stored after 4 s, want 3 (restored reclaimed at its own 3 s expiry)", n)
	}
	w.s.FastForward(60 * time.Second)
	w.kv(map[string]any{"op": "get", "ns": "gate", "key": "guard"})
	if got, want := w.s.KVKeys("gate"), []string{"forever", "guard"}; !slices.Equal(got, want) || stored() != 2 {
		t.Fatalf("after 64 s: live %v and %d stored, want %v and 2", got, stored(), want)
	}
}
