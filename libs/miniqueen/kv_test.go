package miniqueen

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func incr(key string, delta int64, extra map[string]any) map[string]any {
	op := map[string]any{"op": "incr", "ns": "gate", "key": key, "delta": delta, "ttlSeconds": 10}
	for k, v := range extra {
		op[k] = v
	}
	return op
}

func TestIncrIsTheAdmissionDecision(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	type want struct {
		applied bool
		value   int64
		reason  string
	}
	cases := []struct {
		name    string
		advance time.Duration
		op      map[string]any
		want    want
		stored  int64 // counter after the call (0 = absent)
		expiry  time.Time
	}{
		{"create applies delta and sets ttl", 0, incr("c", 57, map[string]any{"max": 100}), want{true, 57, ""}, 57, t0.Add(10 * time.Second)},
		{"refused when crossing max, never clamped", time.Second, incr("c", 44, map[string]any{"max": 100}), want{false, 57, "limit"}, 57, t0.Add(10 * time.Second)},
		{"exactly max applies", 0, incr("c", 43, map[string]any{"max": 100, "ttlSeconds": 99}), want{true, 100, ""}, 100, t0.Add(10 * time.Second)},
		{"min guards the result", 0, incr("c", -101, map[string]any{"min": 0}), want{false, 100, "limit"}, 100, t0.Add(10 * time.Second)},
		{"refund with min==max applies only on the expected value", 0, incr("c", -3, map[string]any{"min": 97, "max": 97}), want{true, 97, ""}, 97, t0.Add(10 * time.Second)},
		{"refund on a moved counter refuses", 0, incr("c", -3, map[string]any{"min": 97, "max": 97}), want{false, 97, "limit"}, 97, t0.Add(10 * time.Second)},
		{"expired counter reads 0 and a refused incr creates nothing", 10 * time.Second, incr("c", 5, map[string]any{"max": 4}), want{false, 0, "limit"}, 0, time.Time{}},
		{"refund into a reaped key refuses", 0, incr("c", -1, map[string]any{"min": 0}), want{false, 0, "limit"}, 0, time.Time{}},
		{"next applied incr opens a new window", 0, incr("c", 5, map[string]any{"max": 100}), want{true, 5, ""}, 5, t0.Add(21 * time.Second)},
	}
	for _, c := range cases {
		w.s.FastForward(c.advance)
		v := w.kv(c.op)
		r := at(t, v, "results", 0).(map[string]any)
		if r["applied"] != c.want.applied || num(t, r["value"]) != c.want.value || r["op"] != "incr" || r["key"] != "c" {
			t.Fatalf("%s: %v", c.name, r)
		}
		if has(r, "expiresAt") {
			t.Fatalf("%s: incr results never carry expiresAt: %v", c.name, r)
		}
		if c.want.reason != "" && r["reason"] != c.want.reason {
			t.Fatalf("%s: reason %v", c.name, r["reason"])
		}
		if !c.want.applied && c.stored == 0 && num(t, r["version"]) != 0 {
			t.Fatalf("%s: absent key must report version 0: %v", c.name, r)
		}
		e, ok := w.s.KV("gate", "c")
		if ok != (c.stored != 0) || e.Int != c.stored {
			t.Fatalf("%s: stored %+v %v, want %d", c.name, e, ok, c.stored)
		}
		if ok && !e.ExpiresAt.Equal(c.expiry) {
			t.Fatalf("%s: expiry %v, want %v (TTL is create-only)", c.name, e.ExpiresAt, c.expiry)
		}
	}
}

func TestIncrTypeAndGetManySeesBatchWrites(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.kv(map[string]any{"op": "put", "ns": "gate", "key": "s", "value": "text", "forever": true})
	v := w.kv(
		incr("s", 1, nil),
		incr("n", 12, map[string]any{"max": 100}),
		map[string]any{"op": "getMany", "ns": "gate", "keys": []string{"n", "missing", "s"}},
	)
	if r := at(t, v, "results", 0); at(t, r, "reason") != "type" || num(t, at(t, r, "value")) != 0 || num(t, at(t, r, "version")) == 0 {
		t.Fatalf("incr on a string: %v", r)
	}
	g := at(t, v, "results", 2)
	if at(t, g, "rows", 0, "key") != "n" || num(t, at(t, g, "rows", 0, "value")) != 12 || at(t, g, "rows", 1, "key") != "s" {
		t.Fatalf("getMany rows (byte order, batch writes visible): %v", g)
	}
	if at(t, g, "missing", 0) != "missing" || at(t, g, "truncated") != false || at(t, g, "rows", 1, "expiresAt") != nil {
		t.Fatalf("getMany: %v", g)
	}
	exp := str(t, at(t, g, "rows", 0, "expiresAt"))
	if !strings.HasSuffix(exp, "+00:00") {
		t.Fatalf("expiresAt %q must carry a numeric offset", exp)
	}
	if _, err := time.Parse(time.RFC3339Nano, exp); err != nil {
		t.Fatalf("expiresAt %q: %v", exp, err)
	}
}

func TestKVOpsAreIndependentUnlessRequired(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.kv(map[string]any{"op": "put", "ns": "gate", "key": "owner", "value": map[string]any{"owner": "worker-1"}, "ttlSeconds": 60})
	v := w.kv(
		incr("a", 1, nil),
		map[string]any{"op": "putIfAbsent", "ns": "gate", "key": "owner", "value": "me", "ttlSeconds": 60},
	)
	if at(t, v, "results", 1, "applied") != false || at(t, v, "results", 1, "reason") != "exists" || at(t, v, "results", 1, "value", "owner") != "worker-1" {
		t.Fatalf("lost putIfAbsent: %v", v)
	}
	if e, ok := w.s.KV("gate", "a"); !ok || e.Int != 1 {
		t.Fatalf("independent incr must apply")
	}
	v = w.kv(
		incr("a", 1, nil),
		map[string]any{"op": "putIfAbsent", "ns": "gate", "key": "owner", "value": "me", "ttlSeconds": 60, "required": true},
	)
	if has(v, "results") || at(t, v, "ok") != false || at(t, v, "reason") != "kv_precondition" || num(t, at(t, v, "failedIndex")) != 1 ||
		at(t, v, "kvReason") != "exists" || at(t, v, "value", "owner") != "worker-1" || num(t, at(t, v, "version")) == 0 {
		t.Fatalf("required verdict: %v", v)
	}
	if e, _ := w.s.KV("gate", "a"); e.Int != 1 {
		t.Fatalf("a lost required gate must roll the incr back: %d", e.Int)
	}
}

func TestPutDeleteExpect(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	put := func(extra map[string]any) map[string]any {
		op := map[string]any{"op": "put", "ns": "gate", "key": "k", "value": 1, "ttlSeconds": 60}
		for k, v := range extra {
			op[k] = v
		}
		return at(t, w.kv(op), "results", 0).(map[string]any)
	}
	if r := put(map[string]any{"expect": 3}); r["applied"] != false || r["reason"] != "absent" || r["value"] != nil {
		t.Fatalf("expect N on absent: %v", r)
	}
	r := put(map[string]any{"expect": 0})
	ver := num(t, r["version"])
	if r["applied"] != true {
		t.Fatalf("expect 0 on absent: %v", r)
	}
	if r := put(map[string]any{"expect": ver + 1}); r["reason"] != "version" || num(t, r["version"]) != ver {
		t.Fatalf("version mismatch: %v", r)
	}
	if r := put(map[string]any{"expect": ver, "value": 2}); r["applied"] != true || num(t, r["value"]) != 2 {
		t.Fatalf("version match: %v", r)
	}
	del := at(t, w.kv(map[string]any{"op": "delete", "ns": "gate", "key": "k"}), "results", 0)
	if at(t, del, "applied") != true || num(t, at(t, del, "value")) != 2 {
		t.Fatalf("delete: %v", del)
	}
	del = at(t, w.kv(map[string]any{"op": "delete", "ns": "gate", "key": "k"}), "results", 0)
	if at(t, del, "applied") != false || at(t, del, "reason") != "absent" {
		t.Fatalf("delete of absent: %v", del)
	}
}

func TestKVRefusesBadInput(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	many := make([]map[string]any, 257)
	for i := range many {
		many[i] = map[string]any{"op": "get", "ns": "gate", "key": "k"}
	}
	cases := []struct {
		name   string
		body   any
		status int
		reason string
	}{
		{"no expiry", []map[string]any{{"op": "incr", "ns": "gate", "key": "k", "delta": 1}}, 400, "kv_expiry_not_specified"},
		{"both expiries", []map[string]any{{"op": "put", "ns": "gate", "key": "k", "value": 1, "ttlSeconds": 1, "forever": true}}, 400, "kv_expiry_not_specified"},
		{"zero ttl", []map[string]any{{"op": "incr", "ns": "gate", "key": "k", "delta": 1, "ttlSeconds": 0}}, 400, "kv_bad_ttl"},
		{"fractional ttl", []map[string]any{{"op": "incr", "ns": "gate", "key": "k", "delta": 1, "ttlSeconds": 0.5}}, 400, "kv_bad_ttl"},
		{"uppercase namespace", []map[string]any{{"op": "get", "ns": "Gate", "key": "k"}}, 400, "kv_bad_namespace"},
		{"empty key", []map[string]any{{"op": "get", "ns": "gate", "key": ""}}, 400, "kv_bad_key"},
		{"key too long", []map[string]any{{"op": "get", "ns": "gate", "key": strings.Repeat("k", 513)}}, 413, "kv_key_too_large"},
		{"value too large", []map[string]any{{"op": "put", "ns": "gate", "key": "k", "value": strings.Repeat("v", 65536), "forever": true}}, 413, "kv_value_too_large"},
		{"absent value", []map[string]any{{"op": "put", "ns": "gate", "key": "k", "forever": true}}, 400, "kv_bad_body"},
		{"unknown op", []map[string]any{{"op": "frob", "ns": "gate", "key": "k"}}, 400, "kv_unknown_op"},
		{"key written twice", []map[string]any{incr("k", 1, nil), {"op": "delete", "ns": "gate", "key": "k"}}, 400, "kv_duplicate_key_in_call"},
		{"too many ops", many, 400, "kv_too_many_ops"},
		{"tenant is not an input", []map[string]any{{"op": "get", "ns": "gate", "key": "k", "tenant": "x"}}, 400, "kv_tenant_not_an_input"},
		{"expect on incr", []map[string]any{incr("k", 1, map[string]any{"expect": 0})}, 400, "kv_bad_expect"},
		{"getPrefix needs a prefix", []map[string]any{{"op": "getPrefix", "ns": "gate"}}, 400, "kv_prefix_required"},
	}
	for _, c := range cases {
		v := w.call("POST", "/api/v1/kv", mustJSON(map[string]any{"operations": c.body}), c.status)
		if at(t, v, "reason") != c.reason || str(t, at(t, v, "detail")) == "" {
			t.Fatalf("%s: %v", c.name, v)
		}
		wantErr := "kv_bad_request"
		if c.status == 413 {
			wantErr = "payload_too_large"
		}
		if at(t, v, "error") != wantErr {
			t.Fatalf("%s: error %v", c.name, at(t, v, "error"))
		}
	}
	// A bare array is accepted too.
	if v := w.call("POST", "/api/v1/kv", `[{"op":"get","ns":"gate","key":"k"}]`, 200); at(t, v, "results", 0, "found") != false {
		t.Fatalf("bare array: %v", v)
	}
}

func TestKVPathRoutes(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	v := w.call("PUT", "/api/v1/kv/gate/graph%3Aapp%3Aname", `{"value":{"doc":1},"forever":true}`, 200)
	if at(t, v, "applied") != true || at(t, v, "key") != "graph:app:name" {
		t.Fatalf("put: %v", v)
	}
	status, b, h := w.do("GET", "/api/v1/kv/gate/graph%3Aapp%3Aname", "")
	g := decode(t, b)
	if status != 200 || at(t, g, "found") != true || at(t, g, "expiresAt") != nil || h.Get("ETag") != `"`+string(at(t, g, "version").(interface{ String() string }).String())+`"` {
		t.Fatalf("get: %d %v %v", status, g, h)
	}
	w.call("PUT", "/api/v1/kv/gate/a%2Fb/c", `{"value":1,"ttlSeconds":5}`, 200)
	if _, ok := w.s.KV("gate", "a/b/c"); !ok {
		t.Fatalf("%%2F must decode to / in keys: %v", w.s.KVKeys("gate"))
	}
	miss := w.call("GET", "/api/v1/kv/gate/nope", "", 200)
	if at(t, miss, "found") != false || at(t, miss, "key") != "nope" || has(miss, "value") {
		t.Fatalf("miss: %v", miss)
	}
	list := w.kv(map[string]any{"op": "getPrefix", "ns": "gate", "prefix": "graph:", "limit": 1000})
	if at(t, list, "results", 0, "rows", 0, "key") != "graph:app:name" || at(t, list, "results", 0, "truncated") != false {
		t.Fatalf("getPrefix: %v", list)
	}
	for _, c := range []struct{ method, path, body, reason string }{
		{"GET", "/api/v1/kv/gate/k?x=1", "", "kv_no_query_string"},
		{"PUT", "/api/v1/kv/gate/k", `{"key":"other","value":1,"forever":true}`, "kv_field_in_path"},
		{"PUT", "/api/v1/kv/gate/k", `{"value":1}`, "kv_expiry_not_specified"},
	} {
		v := w.call(c.method, c.path, c.body, http.StatusBadRequest)
		if at(t, v, "reason") != c.reason {
			t.Fatalf("%s %s: %v", c.method, c.path, v)
		}
	}
	del := w.call("DELETE", "/api/v1/kv/gate/graph%3Aapp%3Aname", "", 200)
	if at(t, del, "applied") != true {
		t.Fatalf("delete: %v", del)
	}
	if _, ok := w.s.KV("gate", "graph:app:name"); ok {
		t.Fatalf("deleted key still there")
	}
}

func TestGetPrefixPaging(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	for _, k := range []string{"p:c", "p:a", "p:b", "q:a"} {
		w.kv(map[string]any{"op": "put", "ns": "gate", "key": k, "value": k, "forever": true})
	}
	v := w.kv(map[string]any{"op": "getPrefix", "ns": "gate", "prefix": "p:", "limit": 2, "keysOnly": true})
	r := at(t, v, "results", 0)
	if at(t, r, "truncated") != true || at(t, r, "nextAfter") != "p:b" || has(at(t, r, "rows", 0), "value") {
		t.Fatalf("page 1: %v", r)
	}
	v = w.kv(map[string]any{"op": "getPrefix", "ns": "gate", "prefix": "p:", "after": "p:b"})
	r = at(t, v, "results", 0)
	if at(t, r, "rows", 0, "key") != "p:c" || len(at(t, r, "rows").([]any)) != 1 || at(t, r, "truncated") != false {
		t.Fatalf("page 2: %v", r)
	}
}

// TestListingRowsCarryTheirOwnInstants checks each row of a listing renders
// its own updatedAt and expiresAt, rows written together sharing theirs
// (the writer reuses the last instant it rendered), listing after listing.
func TestListingRowsCarryTheirOwnInstants(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0) // 2026-08-21 08:00:00 UTC
	w.kv(put("k:a", 1, 10), put("k:b", 1, 10))
	w.s.FastForward(1500 * time.Millisecond)
	w.kv(put("k:c", 1, 10), put("k:d", 1, 0))
	want := []struct {
		key, updated string
		expires      any
	}{
		{"k:a", "2026-08-21T08:00:00.000000+00:00", "2026-08-21T08:00:10.000000+00:00"},
		{"k:b", "2026-08-21T08:00:00.000000+00:00", "2026-08-21T08:00:10.000000+00:00"},
		{"k:c", "2026-08-21T08:00:01.500000+00:00", "2026-08-21T08:00:11.500000+00:00"},
		{"k:d", "2026-08-21T08:00:01.500000+00:00", nil},
	}
	for round := range 3 {
		v := w.kv(map[string]any{"op": "getPrefix", "ns": "gate", "prefix": "k:"})
		for i, row := range want {
			got := at(t, v, "results", 0, "rows", i).(map[string]any)
			if got["key"] != row.key || got["updatedAt"] != row.updated || got["expiresAt"] != row.expires {
				t.Fatalf("listing %d, row %d: %v, want key %s updatedAt %s expiresAt %v", round, i, got, row.key, row.updated, row.expires)
			}
		}
	}
}
