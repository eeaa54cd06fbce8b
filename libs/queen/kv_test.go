package queen

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestKVBatchWire(t *testing.T) {
	t.Parallel()
	const key = "b:rrl:price-airbnb:providerX:providerX"
	admission := []KVOp{
		KVIncr("gate", key, 12, IncrOpts{TTLSeconds: 1, Max: Int(100)}),
		KVGetMany("gate", key),
	}
	const admissionWire = `{"operations":[
		{"op":"incr","ns":"gate","key":"b:rrl:price-airbnb:providerX:providerX","delta":12,"ttlSeconds":1,"max":100},
		{"op":"getMany","ns":"gate","keys":["b:rrl:price-airbnb:providerX:providerX"]}]}`
	kvWire := func(status int, answer string) wire {
		return wire{method: "POST", path: "/api/v1/kv", body: admissionWire, status: status, answer: answer}
	}
	runWire(t, []wireCase{
		{
			name: "admission applied; getMany supplies the expiry",
			wire: kvWire(200, `{"results":[
				{"index":0,"op":"incr","applied":true,"key":"b:rrl:price-airbnb:providerX:providerX","value":57,"version":41007},
				{"index":1,"op":"getMany","rows":[
					{"key":"b:rrl:price-airbnb:providerX:providerX","value":57,"version":41007,
					"expiresAt":"2026-08-21T08:00:01.204311+00:00","updatedAt":"2026-08-21T08:00:00.981002+00:00"}],
				"missing":[],"truncated":false}]}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.KV(ctx, admission...)
				noErr(t, err)
				eq(t, "refused", res.Refused(), false)
				eq(t, "Err", res.Err(), nil)
				incr := res.Results[0]
				eq(t, "applied", incr.Applied, true)
				eq(t, "expiresAt on incr", incr.ExpiresAt, Timestamp(""))
				v, err := incr.Int64()
				noErr(t, err)
				eq(t, "value", v, int64(57))
				eq(t, "version", incr.Version, int64(41007))
				row := res.Results[1].Rows[0]
				exp, err := row.ExpiresAt.Time()
				noErr(t, err)
				eq(t, "expiresAt", exp.UnixMicro(), time.Date(2026, 8, 21, 8, 0, 1, 204311000, time.UTC).UnixMicro())
				rv, err := row.Int64()
				noErr(t, err)
				eq(t, "row value", rv, int64(57))
			},
		},
		{
			name: "admission refused: applied false, reason limit, current value",
			wire: kvWire(200, `{"results":[
				{"index":0,"op":"incr","applied":false,"reason":"limit","key":"b:rrl:price-airbnb:providerX:providerX","value":95,"version":41012},
				{"index":1,"op":"getMany","rows":[{"key":"b:rrl:price-airbnb:providerX:providerX","value":95,"version":41012,
					"expiresAt":"2026-08-21T08:00:01.204311+00:00","updatedAt":"2026-08-21T08:00:00.981002+00:00"}],"missing":[],"truncated":false}]}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.KV(ctx, admission...)
				noErr(t, err)
				incr := res.Results[0]
				eq(t, "applied", incr.Applied, false)
				eq(t, "reason", incr.Reason, KVLimit)
				v, _ := incr.Int64()
				eq(t, "current value", v, int64(95))
			},
		},
		{
			name: "required op lost: refusal envelope, no results",
			wire: kvWire(200, `{"ok":false,"reason":"kv_precondition","failedIndex":0,"kvReason":"exists","version":2021,"value":{"owner":"worker-1"}}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.KV(ctx, admission...)
				noErr(t, err)
				eq(t, "refused", res.Refused(), true)
				if res.Err() == nil {
					t.Error("Err() = nil for a refusal")
				}
				rf := res.Refusal
				eq(t, "reason", rf.Reason, ReasonKVPrecondition)
				eq(t, "kvReason", rf.KVReason, KVExists)
				eq(t, "failedIndex", rf.FailedIndex, 0)
				eq(t, "version", rf.Version, int64(2021))
				jsonEqual(t, "value", rf.Value, []byte(`{"owner":"worker-1"}`))
				eq(t, "results", len(res.Results), 0)
			},
		},
		{
			name: "refusal whose detail was cut",
			wire: kvWire(200, `{"ok":false,"reason":"kv_precondition"}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				res, err := c.KV(ctx, admission...)
				noErr(t, err)
				eq(t, "failedIndex", res.Refusal.FailedIndex, -1)
				eq(t, "KVPrecondition", res.Refusal.KVPrecondition(), true)
			},
		},
		{
			name: "400 with the KV error envelope",
			wire: kvWire(400, `{"error":"kv_bad_request","reason":"kv_duplicate_key_in_call","detail":"key written twice in one call"}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.KV(ctx, admission...)
				e := mustErr(t, err, 400)
				eq(t, "code", e.Code, "kv_bad_request")
				eq(t, "reason", e.Reason, "kv_duplicate_key_in_call")
				eq(t, "ReasonOf", ReasonOf(err), "kv_duplicate_key_in_call")
				eq(t, "CodeOf", CodeOf(err), "kv_bad_request")
				eq(t, "message", e.Message, "key written twice in one call")
				eq(t, "IsBadRequest", IsBadRequest(err), true)
			},
		},
		{
			name: "429 carries Retry-After",
			wire: wire{method: "POST", path: "/api/v1/kv", body: admissionWire, status: 429,
				header: map[string]string{"Retry-After": "3"}, answer: `{"error":"rate_limited","reason":"rate_limited"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.KV(ctx, admission...)
				mustErr(t, err, 429)
				eq(t, "IsRateLimited", IsRateLimited(err), true)
				d, ok := RetryAfter(err)
				eq(t, "retry after set", ok, true)
				eq(t, "retry after", d, 3*time.Second)
			},
		},
		{
			name: "503 kv_unavailable carries Retry-After: 1",
			wire: wire{method: "POST", path: "/api/v1/kv", body: admissionWire, status: 503,
				header: map[string]string{"Retry-After": "1"}, answer: `{"error":"kv_unavailable","reason":"kv_pool_exhausted","detail":"pool exhausted"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.KV(ctx, admission...)
				e := mustErr(t, err, 503)
				eq(t, "IsUnavailable", IsUnavailable(err), true)
				eq(t, "code", e.Code, "kv_unavailable")
				eq(t, "retry after", e.RetryAfter, time.Second)
			},
		},
		{
			name: "1.0.4 with KV disabled answers 404",
			wire: kvWire(404, `Not Found`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.KV(ctx, admission...)
				e := mustErr(t, err, 404)
				eq(t, "message", e.Message, "Not Found")
			},
		},
		{
			name: "result count mismatch is an error",
			wire: kvWire(200, `{"results":[{"index":0,"op":"incr","applied":true,"value":1,"version":1}]}`),
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.KV(ctx, admission...); err == nil {
					t.Fatal("want an error for 1 result to 2 ops")
				}
			},
		},
	})
}

// TestKVOpShapes pins every op's exact wire shape.
func TestValidNamespaceFollowsTheBrokerPattern(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 64)
	for ns, want := range map[string]bool{
		"gate": true, "gate.rrl": true, "0-x_y.z": true, "a": true, long: true,
		"": false, long + "a": false, "Gate": false, ".gate": false, "-gate": false,
		"_gate": false, "gate/x": false, "gate x": false, "gaté": false,
	} {
		if got := ValidNamespace(ns); got != want {
			t.Errorf("ValidNamespace(%q) = %v, want %v", ns, got, want)
		}
	}
}

func TestKVOpShapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		op   KVOp
		want string
	}{
		{"get", KVGet("gate", "graph:app:x"), `{"op":"get","ns":"gate","key":"graph:app:x"}`},
		{"getMany", KVGetMany("gate", "a", "b/c"), `{"op":"getMany","ns":"gate","keys":["a","b/c"]}`},
		{"getPrefix first page", KVGetPrefix("gate", "graph:", PrefixOpts{Limit: 1000}), `{"op":"getPrefix","ns":"gate","prefix":"graph:","limit":1000}`},
		{"getPrefix next page keys only", KVGetPrefix("gate", "graph:", PrefixOpts{After: "graph:m", KeysOnly: true}), `{"op":"getPrefix","ns":"gate","prefix":"graph:","after":"graph:m","keysOnly":true}`},
		{"put forever", KVPut("gate", "graph:a:b", json.RawMessage(`{"v":1}`), PutOpts{Forever: true}), `{"op":"put","ns":"gate","key":"graph:a:b","value":{"v":1},"forever":true}`},
		{"put null value with ttl", KVPut("n", "k", nil, PutOpts{TTLSeconds: 30}), `{"op":"put","ns":"n","key":"k","value":null,"ttlSeconds":30}`},
		{"put expect version required", KVPut("n", "k", json.RawMessage(`"x"`), PutOpts{TTLSeconds: 5, Expect: Int(90210), Required: true}), `{"op":"put","ns":"n","key":"k","value":"x","ttlSeconds":5,"expect":90210,"required":true}`},
		{"put expect 0", KVPut("n", "k", json.RawMessage(`1`), PutOpts{TTLSeconds: 5, Expect: Int(0)}), `{"op":"put","ns":"n","key":"k","value":1,"ttlSeconds":5,"expect":0}`},
		{"putIfAbsent", KVPutIfAbsent("quota", "admitted:R-4", json.RawMessage(`{"tenant":"acme"}`), PutOpts{TTLSeconds: 3600, Required: true}), `{"op":"putIfAbsent","ns":"quota","key":"admitted:R-4","value":{"tenant":"acme"},"ttlSeconds":3600,"required":true}`},
		{"incr with max", KVIncr("gate", "b:k", 12, IncrOpts{TTLSeconds: 1, Max: Int(100)}), `{"op":"incr","ns":"gate","key":"b:k","delta":12,"ttlSeconds":1,"max":100}`},
		{"refund min=max=0", KVIncr("gate", "b:k", -12, IncrOpts{TTLSeconds: 1, Min: Int(0), Max: Int(0)}), `{"op":"incr","ns":"gate","key":"b:k","delta":-12,"ttlSeconds":1,"min":0,"max":0}`},
		{"incr delta 0 forever", KVIncr("gate", "c", 0, IncrOpts{Forever: true}), `{"op":"incr","ns":"gate","key":"c","delta":0,"forever":true}`},
		{"incr big bounds", KVIncr("gate", "c", 1, IncrOpts{TTLSeconds: 1, Min: Int(-9007199254740993), Max: Int(9007199254740993), Required: true}), `{"op":"incr","ns":"gate","key":"c","delta":1,"ttlSeconds":1,"min":-9007199254740993,"max":9007199254740993,"required":true}`},
		{"delete", KVDelete("gate", "brk:x", DeleteOpts{}), `{"op":"delete","ns":"gate","key":"brk:x"}`},
		{"delete expect required", KVDelete("gate", "brk:x", DeleteOpts{Expect: Int(7), Required: true}), `{"op":"delete","ns":"gate","key":"brk:x","expect":7,"required":true}`},
		{"key escaping", KVGet("gate", "q\"uote\\back\nline\u2028é\x01"), `{"op":"get","ns":"gate","key":"q\"uote\\back\nline\u2028é\u0001"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := appendKVOp(nil, &tc.op, "op")
			noErr(t, err)
			jsonEqual(t, tc.name, b, []byte(tc.want))
		})
	}
}

func TestKVPathWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "get escapes ns and key; found with forever expiry",
			wire: wire{method: "GET", path: "/api/v1/kv/gate/graph%3Aapp%3Aname%2Fv2", status: 200,
				header: map[string]string{"ETag": `"41"`},
				answer: `{"index":0,"op":"get","found":true,"key":"graph:app:name/v2","value":{"doc":1},"version":41,"expiresAt":null,"updatedAt":"2026-08-21T08:00:00+00:00"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.KVGetKey(ctx, "gate", "graph:app:name/v2")
				noErr(t, err)
				eq(t, "found", r.Found, true)
				eq(t, "version", r.Version, int64(41))
				eq(t, "forever", r.ExpiresAt.IsZero(), true)
				jsonEqual(t, "value", r.Value, []byte(`{"doc":1}`))
			},
		},
		{
			name: "miss is found false",
			wire: wire{method: "GET", path: "/api/v1/kv/gate/k", status: 200, answer: `{"index":0,"op":"get","found":false,"key":"k"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.KVGetKey(ctx, "gate", "k")
				noErr(t, err)
				eq(t, "found", r.Found, false)
				eq(t, "key", r.Key, "k")
			},
		},
		{
			name: "put forever (Gate's spec store)",
			wire: wire{method: "PUT", path: "/api/v1/kv/gate/graph%3Aapp%3Aname", body: `{"value":{"graph":"x"},"forever":true}`, status: 200,
				answer: `{"index":0,"op":"put","applied":true,"key":"graph:app:name","value":{"graph":"x"},"version":77}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.KVPutKey(ctx, "gate", "graph:app:name", json.RawMessage(`{"graph":"x"}`), PutOpts{Forever: true})
				noErr(t, err)
				eq(t, "applied", r.Applied, true)
				eq(t, "version", r.Version, int64(77))
			},
		},
		{
			name: "put with ttl, expect and required; lost precondition folds into applied false",
			wire: wire{method: "PUT", path: "/api/v1/kv/gate/brk%3Ax", body: `{"value":100,"ttlSeconds":60,"expect":3,"required":true}`, status: 200,
				answer: `{"ok":false,"reason":"kv_precondition","failedIndex":0,"kvReason":"version","version":4,"value":90}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.KVPutKey(ctx, "gate", "brk:x", json.RawMessage(`100`), PutOpts{TTLSeconds: 60, Expect: Int(3), Required: true})
				noErr(t, err)
				eq(t, "applied", r.Applied, false)
				eq(t, "reason", r.Reason, KVVersion)
				eq(t, "version", r.Version, int64(4))
				eq(t, "op", r.Op, OpPut)
			},
		},
		{
			name: "delete without options sends no body; missing key is absent",
			wire: wire{method: "DELETE", path: "/api/v1/kv/gate/brk%3Ax", status: 200,
				answer: `{"index":0,"op":"delete","applied":false,"reason":"absent","key":"brk:x","value":null,"version":0}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.KVDeleteKey(ctx, "gate", "brk:x", DeleteOpts{})
				noErr(t, err)
				eq(t, "applied", r.Applied, false)
				eq(t, "reason", r.Reason, KVAbsent)
			},
		},
		{
			name: "delete with expect",
			wire: wire{method: "DELETE", path: "/api/v1/kv/gate/k", body: `{"expect":9,"required":true}`, status: 200,
				answer: `{"index":0,"op":"delete","applied":true,"key":"k","value":1,"version":9}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.KVDeleteKey(ctx, "gate", "k", DeleteOpts{Expect: Int(9), Required: true})
				noErr(t, err)
				eq(t, "applied", r.Applied, true)
			},
		},
		{
			name: "400 kv_field_in_path",
			wire: wire{method: "PUT", path: "/api/v1/kv/gate/k", body: `{"value":1,"ttlSeconds":1}`, status: 400,
				answer: `{"error":"kv_bad_request","reason":"kv_field_in_path","detail":"body must not carry key"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.KVPutKey(ctx, "gate", "k", json.RawMessage(`1`), PutOpts{TTLSeconds: 1})
				eq(t, "reason", ReasonOf(err), "kv_field_in_path")
			},
		},
		{
			name: "empty key or namespace is refused before sending",
			wire: wire{},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.KVGetKey(ctx, "gate", ""); err == nil {
					t.Error("empty key accepted")
				}
				if _, err := c.KVDeleteKey(ctx, "", "k", DeleteOpts{}); err == nil {
					t.Error("empty namespace accepted")
				}
				if _, err := c.KVPutKey(ctx, "gate", "k", json.RawMessage(`{`), PutOpts{Forever: true}); err == nil {
					t.Error("invalid value accepted")
				}
				if _, err := c.KV(ctx, KVOp{NS: "gate", Key: "k"}); err == nil {
					t.Error("op without type accepted")
				}
			},
		},
	})
}

func TestKVValueNumbers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw  string
		want int64
		ok   bool
	}{
		{"57", 57, true},
		{"-3", -3, true},
		{"null", 0, true},
		{"", 0, true},
		{"5.0", 5, true},
		{"9007199254740993", 9007199254740993, true},
		{"1.5", 0, false},
		{`"x"`, 0, false},
		{"1e30", 0, false},
	}
	for _, tc := range cases {
		r := KVResult{Value: json.RawMessage(tc.raw)}
		got, err := r.Int64()
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Int64(%s) = %d, %v; want %d ok=%v", tc.raw, got, err, tc.want, tc.ok)
		}
	}
}
