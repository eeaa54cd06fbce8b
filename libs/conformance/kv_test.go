package conformance

import (
	"encoding/json"
	"fmt"
	"github.com/queen-mq/gate/libs/capability"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// §12.1 — incr with max/min refuses, never clamps.

func TestSemantic01_IncrOverMaxRefusesWithoutClamping(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	ttl := queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(10)}
	first := e.kv1(t, e.incr("c", 8, ttl))
	if !first.Applied || intOf(t, first) != 8 {
		t.Fatalf("incr 8 on absent key: %+v, want applied value 8", first)
	}
	over := e.kv1(t, e.incr("c", 5, ttl))
	if over.Applied || over.Reason != queen.KVLimit {
		t.Fatalf("incr 5 onto 8 with max 10: applied=%v reason=%q, want refused with reason limit", over.Applied, over.Reason)
	}
	if intOf(t, over) != 8 || over.Version != first.Version {
		t.Errorf("refused incr reports value %s version %d, want the current 8 / %d (not a clamped 10)", over.Value, over.Version, first.Version)
	}
	e.counter(t, "c", 8)
	exact := e.kv1(t, e.incr("c", 2, ttl))
	if !exact.Applied || intOf(t, exact) != 10 {
		t.Errorf("incr 2 onto 8 with max 10 (lands exactly on max): %+v, want applied value 10", exact)
	}
}

func TestSemantic01_IncrOnAbsentKeyOverMaxCreatesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	r := e.kv1(t, e.incr("c", 5, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(3)}))
	if r.Applied || r.Reason != queen.KVLimit || intOf(t, r) != 0 || r.Version != 0 {
		t.Fatalf("incr 5 max 3 on absent key: %+v, want applied:false reason:limit value:0 version:0", r)
	}
	e.counter(t, "c", 0)
}

func TestSemantic01_IncrUnderMinRefusesWithoutClamping(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	e.kv1(t, e.incr("c", 5, queen.IncrOpts{TTLSeconds: 60}))
	r := e.kv1(t, e.incr("c", -7, queen.IncrOpts{TTLSeconds: 60, Min: queen.Int(0)}))
	if r.Applied || r.Reason != queen.KVLimit || intOf(t, r) != 5 {
		t.Fatalf("incr -7 min 0 on 5: %+v, want refused, reason limit, value 5 (not clamped to 0)", r)
	}
	e.counter(t, "c", 5)
}

// §12.2 — create-only TTL.

func TestSemantic02_LiveCounterKeepsItsExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	e.kv1(t, e.incr("w", 1, queen.IncrOpts{TTLSeconds: 3}))
	before := e.get(t, "w")
	e.elapse(1100 * time.Millisecond)
	again := e.kv1(t, e.incr("w", 1, queen.IncrOpts{TTLSeconds: 100}))
	if !again.Applied || intOf(t, again) != 2 {
		t.Fatalf("second incr: %+v, want applied value 2", again)
	}
	after := e.get(t, "w")
	if before.ExpiresAt == "" || after.ExpiresAt != before.ExpiresAt {
		t.Errorf("expiresAt moved from %q to %q; a live counter keeps its expiry (TTL is create-only)", before.ExpiresAt, after.ExpiresAt)
	}
}

func TestSemantic02_ExpiredCounterReadsZeroAndNextApplyOpensAFreshWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	e.kv1(t, e.incr("w", 7, queen.IncrOpts{TTLSeconds: 1}))
	first := e.get(t, "w")
	e.elapse(1500 * time.Millisecond)
	e.counter(t, "w", 0)

	// A refused incr on the expired key opens no window.
	refused := e.kv1(t, e.incr("w", 5, queen.IncrOpts{TTLSeconds: 30, Max: queen.Int(3)}))
	if refused.Applied || intOf(t, refused) != 0 || refused.Version != 0 {
		t.Fatalf("refused incr on expired key: %+v, want applied:false value:0 version:0", refused)
	}
	e.counter(t, "w", 0)

	fresh := e.kv1(t, e.incr("w", 2, queen.IncrOpts{TTLSeconds: 30, Max: queen.Int(3)}))
	if !fresh.Applied || intOf(t, fresh) != 2 {
		t.Fatalf("incr 2 on expired key: %+v, want applied value 2 (expired reads 0, not 7)", fresh)
	}
	row := e.get(t, "w")
	exp1, _ := first.ExpiresAt.Time()
	exp2, err := row.ExpiresAt.Time()
	if err != nil {
		t.Fatalf("expiresAt %q: %v", row.ExpiresAt, err)
	}
	upd, _ := row.UpdatedAt.Time()
	if got := exp2.Sub(upd); got < 29*time.Second || got > 31*time.Second {
		t.Errorf("recreated counter: expiresAt − updatedAt = %v, want ≈ 30s (now + the new ttl)", got)
	}
	if !exp2.After(exp1) {
		t.Errorf("recreated counter expires at %v, not after the old window's %v", exp2, exp1)
	}
}

// §12.3 — incr results carry no expiresAt; reads do; a read in the batch sees
// the batch's writes.

func TestSemantic03_IncrResultsCarryNoExpiryButReadsDo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	body := fmt.Sprintf(`{"operations":[
		{"op":"incr","ns":%q,"key":"k","delta":3,"ttlSeconds":60,"max":5},
		{"op":"incr","ns":%q,"key":"j","delta":9,"ttlSeconds":60,"max":5},
		{"op":"getMany","ns":%q,"keys":["k","j"]}]}`, e.ns, e.ns, e.ns)
	v := e.rawJSON(t, http.MethodPost, "/api/v1/kv", body, http.StatusOK)
	applied, refused := obj(t, v, "results", 0), obj(t, v, "results", 1)
	if obj(t, applied, "applied") != true || obj(t, refused, "applied") != false {
		t.Fatalf("results %v: want the first incr applied and the second refused", obj(t, v, "results"))
	}
	for _, r := range []any{applied, refused} {
		if has(r, "expiresAt") {
			t.Errorf("incr result %v carries expiresAt; incr results never do", r)
		}
	}
	rows := obj(t, v, "results", 2, "rows").([]any)
	if len(rows) != 1 || obj(t, rows[0], "key") != "k" {
		t.Fatalf("getMany rows %v, want exactly key k", rows)
	}
	if s, _ := obj(t, rows[0], "expiresAt").(string); s == "" {
		t.Errorf("getMany row %v has no expiresAt", rows[0])
	}
	if miss := obj(t, v, "results", 2, "missing").([]any); len(miss) != 1 || miss[0] != "j" {
		t.Errorf("getMany missing = %v, want [j] (the refused incr created nothing)", miss)
	}
	g := e.get(t, "k")
	if !g.Found || g.ExpiresAt == "" {
		t.Errorf("get k: %+v, want found with expiresAt", g)
	}
}

func TestSemantic03_GetManyBeforeAWriteInTheBatchSeesTheWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	r := e.kv(t,
		queen.KVGetMany(e.ns, "a", "b"),
		e.incr("a", 4, queen.IncrOpts{TTLSeconds: 60}),
		queen.KVPut(e.ns, "b", json.RawMessage(`{"x":1}`), queen.PutOpts{TTLSeconds: 60}),
	)
	if r.Refusal != nil {
		t.Fatal(r.Refusal)
	}
	gm := r.Results[0]
	if len(gm.Rows) != 2 || len(gm.Missing) != 0 {
		t.Fatalf("getMany listed first in the batch: rows %+v missing %v, want both keys (reads run after the batch's writes)", gm.Rows, gm.Missing)
	}
	if gm.Rows[0].Key != "a" || string(gm.Rows[0].Value) != "4" || gm.Rows[1].Key != "b" {
		t.Errorf("rows %+v, want a=4 then b (byte order)", gm.Rows)
	}
}

// §12.4 — min guards the resulting value; the create branch tests delta alone.

func TestSemantic04_MinGuardsTheResultAndTheCreateBranchTestsDelta(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	ttl := int64(60)
	cases := []struct {
		name    string
		start   int64 // 0 = key absent
		delta   int64
		min     queen.OptInt
		max     queen.OptInt
		applied bool
		value   int64 // the value reported
	}{
		{"refund within min applies", 5, -2, queen.Int(0), queen.OptInt{}, true, 3},
		{"refund below min refuses", 5, -7, queen.Int(0), queen.OptInt{}, false, 5},
		{"negative refund into absent key refuses", 0, -1, queen.Int(0), queen.OptInt{}, false, 0},
		{"min==max==x applies when the result is x", 10, -4, queen.Int(6), queen.Int(6), true, 6},
		{"min==max==x refuses when someone else moved the counter", 12, -4, queen.Int(6), queen.Int(6), false, 12},
		{"min==max refund into a reaped key refuses", 0, -4, queen.Int(6), queen.Int(6), false, 0},
		{"create tests delta against min", 0, 2, queen.Int(3), queen.OptInt{}, false, 0},
		{"create tests delta against both bounds", 0, 3, queen.Int(3), queen.Int(3), true, 3},
	}
	for i, tc := range cases {
		key := fmt.Sprintf("k%d", i)
		if tc.start != 0 {
			e.kv1(t, e.incr(key, tc.start, queen.IncrOpts{TTLSeconds: ttl}))
		}
		r := e.kv1(t, e.incr(key, tc.delta, queen.IncrOpts{TTLSeconds: ttl, Min: tc.min, Max: tc.max}))
		if r.Applied != tc.applied || intOf(t, r) != tc.value {
			t.Errorf("%s: incr %d on %d (min %v max %v) = applied %v value %s reason %q, want applied %v value %d",
				tc.name, tc.delta, tc.start, tc.min, tc.max, r.Applied, r.Value, r.Reason, tc.applied, tc.value)
		}
		if !tc.applied && r.Reason != queen.KVLimit {
			t.Errorf("%s: reason %q, want limit", tc.name, r.Reason)
		}
		want := tc.start
		if tc.applied {
			want = tc.value
		}
		e.counter(t, key, want)
	}
}

// §12.5 — ops are independent unless required; a lost required op rolls back
// the whole call.

func TestSemantic05_OpsInABatchAreIndependent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	r := e.kv(t,
		e.incr("a", 5, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(3)}),
		e.incr("b", 1, queen.IncrOpts{TTLSeconds: 60}),
		queen.KVPutIfAbsent(e.ns, "c", json.RawMessage(`"x"`), queen.PutOpts{TTLSeconds: 60}),
	)
	if r.Refusal != nil {
		t.Fatalf("batch without required ops was refused as a whole: %v", r.Refusal)
	}
	if r.Results[0].Applied || !r.Results[1].Applied || !r.Results[2].Applied {
		t.Fatalf("results %+v, want [refused, applied, applied]", r.Results)
	}
	for i, res := range r.Results {
		if res.Index != i {
			t.Errorf("result %d has index %d", i, res.Index)
		}
	}
	e.counter(t, "a", 0)
	e.counter(t, "b", 1)
}

func TestSemantic05_LostRequiredOpRollsBackTheWholeCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	winner := e.kv1(t, queen.KVPut(e.ns, "lock", json.RawMessage(`{"owner":"worker-1"}`), queen.PutOpts{TTLSeconds: 60}))
	e.kv1(t, e.incr("n", 10, queen.IncrOpts{TTLSeconds: 60}))

	body := fmt.Sprintf(`{"operations":[
		{"op":"incr","ns":%[1]q,"key":"n","delta":1,"ttlSeconds":60},
		{"op":"put","ns":%[1]q,"key":"other","value":1,"ttlSeconds":60},
		{"op":"putIfAbsent","ns":%[1]q,"key":"lock","value":{"owner":"worker-2"},"ttlSeconds":60,"required":true}]}`, e.ns)
	v := e.rawJSON(t, http.MethodPost, "/api/v1/kv", body, http.StatusOK)
	if obj(t, v, "ok") != false || obj(t, v, "reason") != "kv_precondition" {
		t.Fatalf("answer %v, want ok:false reason:kv_precondition", v)
	}
	if has(v, "results") {
		t.Errorf("refusal envelope %v carries results; it must not", v)
	}
	if n := obj(t, v, "failedIndex").(json.Number); n.String() != "2" {
		t.Errorf("failedIndex %s, want 2", n)
	}
	if obj(t, v, "kvReason") != "exists" {
		t.Errorf("kvReason %v, want exists", obj(t, v, "kvReason"))
	}
	if ver := obj(t, v, "version").(json.Number); ver.String() != fmt.Sprint(winner.Version) {
		t.Errorf("version %s, want the winner's %d", ver, winner.Version)
	}
	if owner := obj(t, v, "value", "owner"); owner != "worker-1" {
		t.Errorf("value.owner %v, want the winner's worker-1", owner)
	}
	e.counter(t, "n", 10)
	if g := e.get(t, "other"); g.Found {
		t.Errorf("key other was written by a rolled-back call: %+v", g)
	}

	// The same through the typed client.
	r := e.kv(t, e.incr("n", 1, queen.IncrOpts{TTLSeconds: 60}), e.incr("n2", 9, queen.IncrOpts{TTLSeconds: 60, Max: queen.Int(3), Required: true}))
	if r.Refusal == nil || !r.Refusal.KVPrecondition() || r.Refusal.FailedIndex != 1 || r.Refusal.KVReason != queen.KVLimit || len(r.Results) != 0 {
		t.Fatalf("typed: %+v / %+v, want a kv_precondition refusal at index 1 with kvReason limit", r, r.Refusal)
	}
	e.counter(t, "n", 10)
}

// §12.6 — mandatory expiry in whole seconds ≥ 1; expired keys are invisible.

func TestSemantic06_WritesWithoutAValidExpiryAre400(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	cases := []struct {
		name    string
		op      string
		reasons []string
	}{
		{"put without expiry", `{"op":"put","ns":%q,"key":"k","value":1}`, []string{"kv_expiry_not_specified"}},
		{"incr without expiry", `{"op":"incr","ns":%q,"key":"k","delta":1}`, []string{"kv_expiry_not_specified"}},
		{"putIfAbsent without expiry", `{"op":"putIfAbsent","ns":%q,"key":"k","value":1}`, []string{"kv_expiry_not_specified"}},
		{"both ttl and forever", `{"op":"put","ns":%q,"key":"k","value":1,"ttlSeconds":5,"forever":true}`, []string{"kv_expiry_not_specified"}},
		{"fractional ttl", `{"op":"incr","ns":%q,"key":"k","delta":1,"ttlSeconds":1.5}`, []string{"kv_bad_ttl"}},
		{"negative ttl", `{"op":"put","ns":%q,"key":"k","value":1,"ttlSeconds":-1}`, []string{"kv_bad_ttl"}},
		// ttlSeconds 0: "≤ 0 → kv_bad_ttl", but a 0 may also read as "not specified".
		{"zero ttl", `{"op":"put","ns":%q,"key":"k","value":1,"ttlSeconds":0}`, []string{"kv_bad_ttl", "kv_expiry_not_specified"}},
		{"string ttl", `{"op":"put","ns":%q,"key":"k","value":1,"ttlSeconds":"5"}`, []string{"kv_bad_ttl", "kv_bad_body"}},
	}
	for _, tc := range cases {
		body := `{"operations":[` + fmt.Sprintf(tc.op, e.ns) + `]}`
		r := e.raw(t, http.MethodPost, "/api/v1/kv", body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d %s, want 400", tc.name, r.Status, r.Body)
			continue
		}
		v := decodeNumbers(t, r.Body)
		reason, _ := obj(t, v, "reason").(string)
		if !contains(tc.reasons, reason) || obj(t, v, "error") != "kv_bad_request" {
			t.Errorf("%s: body %s, want error kv_bad_request with reason in %v", tc.name, r.Body, tc.reasons)
		}
	}
	e.counter(t, "k", 0)
	ok := e.kv1(t, queen.KVPut(e.ns, "k", json.RawMessage(`1`), queen.PutOpts{TTLSeconds: 1}))
	if !ok.Applied {
		t.Errorf("put with ttlSeconds 1 (the minimum): %+v, want applied", ok)
	}
}

func TestSemantic06_ExpiredKeysAreInvisibleToEveryReadAndPrecondition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	old := e.kv1(t, queen.KVPut(e.ns, "p:k", json.RawMessage(`"old"`), queen.PutOpts{TTLSeconds: 1}))
	e.kv1(t, queen.KVPut(e.ns, "p:keep", json.RawMessage(`"keep"`), queen.PutOpts{TTLSeconds: 600}))
	e.elapse(1500 * time.Millisecond)

	r := e.kv(t,
		queen.KVGet(e.ns, "p:k"),
		queen.KVGetMany(e.ns, "p:k", "p:keep"),
		queen.KVGetPrefix(e.ns, "p:", queen.PrefixOpts{}),
	)
	if r.Results[0].Found {
		t.Errorf("get of an expired key: %+v, want found:false", r.Results[0])
	}
	if gm := r.Results[1]; len(gm.Rows) != 1 || gm.Rows[0].Key != "p:keep" || len(gm.Missing) != 1 || gm.Missing[0] != "p:k" {
		t.Errorf("getMany: rows %+v missing %v, want only p:keep live and p:k missing", gm.Rows, gm.Missing)
	}
	if gp := r.Results[2]; len(gp.Rows) != 1 || gp.Rows[0].Key != "p:keep" {
		t.Errorf("getPrefix rows %+v, want only p:keep", gp.Rows)
	}
	if g, err := e.c.KVGetKey(e.ctx, e.ns, "p:k"); err != nil || g.Found {
		t.Errorf("GET path route of an expired key: %+v %v, want found:false", g, err)
	}
	// expect:<old version> finds no live key.
	exp := e.kv1(t, queen.KVPut(e.ns, "p:k", json.RawMessage(`"x"`), queen.PutOpts{TTLSeconds: 60, Expect: queen.Int(old.Version)}))
	if exp.Applied || exp.Reason != queen.KVAbsent {
		t.Errorf("put expect:%d on the expired key: %+v, want applied:false reason:absent", old.Version, exp)
	}
	del := e.kv1(t, queen.KVDelete(e.ns, "p:k", queen.DeleteOpts{}))
	if del.Applied || del.Reason != queen.KVAbsent {
		t.Errorf("delete of the expired key: %+v, want applied:false reason:absent", del)
	}
	// putIfAbsent (and expect:0) treat it as absent: a new lineage.
	pia := e.kv1(t, queen.KVPutIfAbsent(e.ns, "p:k", json.RawMessage(`"new"`), queen.PutOpts{TTLSeconds: 60}))
	if !pia.Applied || pia.Version == old.Version {
		t.Errorf("putIfAbsent over the expired key: %+v, want applied with a new version", pia)
	}
}

// §12.7 — one write per key per call; op ceilings.

func TestSemantic07_OneWritePerKeyPerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	_, err := e.c.KV(e.ctx,
		e.incr("k", 1, queen.IncrOpts{TTLSeconds: 60}),
		queen.KVPut(e.ns, "other", json.RawMessage(`1`), queen.PutOpts{TTLSeconds: 60}),
		queen.KVDelete(e.ns, "k", queen.DeleteOpts{}),
	)
	wantBadRequest(t, err, "kv_duplicate_key_in_call")
	e.counter(t, "k", 0)
	if g := e.get(t, "other"); g.Found {
		t.Errorf("a refused (400) call wrote key other")
	}
	// Reads may repeat a key, also next to one write of it.
	r := e.kv(t,
		queen.KVGet(e.ns, "k"), queen.KVGet(e.ns, "k"), queen.KVGetMany(e.ns, "k", "k"),
		e.incr("k", 1, queen.IncrOpts{TTLSeconds: 60}),
	)
	if r.Refusal != nil || !r.Results[3].Applied {
		t.Errorf("repeated reads plus one write: %+v, want accepted and the write applied", r)
	}
}

func TestSemantic07_OpCeilingsAre256PerCallAnd64PerTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	ops := make([]queen.KVOp, 257)
	for i := range ops {
		ops[i] = queen.KVGet(e.ns, fmt.Sprintf("k%d", i))
	}
	if r, err := e.c.KV(e.ctx, ops[:256]...); err != nil || len(r.Results) != 256 {
		t.Fatalf("256 ops: %v, want accepted", err)
	}
	_, err := e.c.KV(e.ctx, ops...)
	wantBadRequest(t, err, "kv_too_many_ops")

	// In a transaction the ceiling is 64 riders. §12.7 says 400
	// kv_too_many_ops (§13.7 leaves the status of rider-era refusals open; we
	// follow §12.7).
	q := e.Queue("out")
	riders := make([]queen.KVOp, 65)
	for i := range riders {
		riders[i] = e.incr(fmt.Sprintf("t%d", i), 1, queen.IncrOpts{TTLSeconds: 60})
	}
	tx := (&queen.Transaction{}).Push(queen.PushItem{Queue: q, Payload: json.RawMessage(msg(1)), TransactionID: "t-64"}).AddKV(riders[:64]...)
	res, err := e.c.Transact(e.ctx, tx)
	if err != nil || !res.Success {
		t.Fatalf("transaction with 64 kv riders: %+v %v, want committed", res, err)
	}
	tx = (&queen.Transaction{}).Push(queen.PushItem{Queue: q, Payload: json.RawMessage(msg(2)), TransactionID: "t-65"}).AddKV(riders...)
	_, err = e.c.Transact(e.ctx, tx)
	// The transaction route's failure envelope takes its reason from a closed
	// set (§7.4), so kv_too_many_ops may arrive as reason bad_request with the
	// KV code in the error text.
	if !queen.IsBadRequest(err) || !strings.Contains(queen.ReasonOf(err)+" "+err.Error(), "kv_too_many_ops") {
		t.Errorf("transaction with 65 kv riders: %v, want HTTP 400 naming kv_too_many_ops", err)
	}
	if got := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("g"), Batch: 10}); !equalInts(numbers(t, got), []int{1}) {
		t.Errorf("queue holds %v, want only the 64-rider bundle's push [1]", numbers(t, got))
	}
}

// §12.24 — 64-bit-safe numbers.

func TestSemantic24_CountersAndVersionsAre64BitExactIntegers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	const big = int64(1)<<53 + 1 // not representable in float64
	body := func(delta int64, maxV int64) string {
		return fmt.Sprintf(`{"operations":[{"op":"incr","ns":%q,"key":"big","delta":%d,"forever":true,"max":%d},{"op":"getMany","ns":%q,"keys":["big"]}]}`, e.ns, delta, maxV, e.ns)
	}
	steps := []struct {
		delta, max int64
		applied    bool
		value      string
	}{
		{big, big + 1, true, "9007199254740993"},
		{1, big + 1, true, "9007199254740994"},
		{1, big + 1, false, "9007199254740994"}, // 2^53+3 > max: a float would have rounded and admitted it
		{-big, big + 1, true, "1"},
		{5, 1 << 62, true, "6"},
	}
	for i, s := range steps {
		v := e.rawJSON(t, http.MethodPost, "/api/v1/kv", body(s.delta, s.max), http.StatusOK)
		res := obj(t, v, "results", 0)
		if obj(t, res, "applied") != s.applied {
			t.Errorf("step %d: incr %d max %d applied=%v, want %v", i, s.delta, s.max, obj(t, res, "applied"), s.applied)
		}
		checkInteger(t, fmt.Sprintf("step %d incr value", i), obj(t, res, "value"), s.value)
		checkInteger(t, fmt.Sprintf("step %d incr version", i), obj(t, res, "version"), "")
		row := obj(t, v, "results", 1, "rows", 0)
		checkInteger(t, fmt.Sprintf("step %d getMany value", i), obj(t, row, "value"), s.value)
		checkInteger(t, fmt.Sprintf("step %d getMany version", i), obj(t, row, "version"), "")
	}
	// The typed client reads the same exact value.
	if g := e.get(t, "big"); intOf(t, g) != 6 {
		t.Errorf("typed get: %s, want 6", g.Value)
	}
	near := int64(1<<63 - 1000)
	r := e.kv1(t, e.incr("max", near, queen.IncrOpts{Forever: true}))
	if intOf(t, r) != near {
		t.Errorf("incr %d: value %s", near, r.Value)
	}
}

// checkInteger asserts a decoded JSON number is written as a plain integer
// (no fraction, no exponent) and, when want is set, equals it exactly.
func checkInteger(t *testing.T, what string, v any, want string) {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Errorf("%s = %v (%T), want a JSON number", what, v, v)
		return
	}
	if strings.ContainsAny(n.String(), ".eE") {
		t.Errorf("%s written as %s, want a plain integer (never 1e3 or 5.0)", what, n)
	}
	if want != "" && n.String() != want {
		t.Errorf("%s = %s, want exactly %s", what, n, want)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The sweeper may delete expired keys only now and then; liveness must not
// depend on it. The steps below make the key expire between two sweeps of a
// broker that sweeps at most once a second (as miniqueen does).
func TestSemantic06_ExpiredKeyIsInvisibleBeforeTheSweeperDeletesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.KV)
	e.get(t, "touch")
	e.elapse(500 * time.Millisecond)
	e.kv1(t, queen.KVPut(e.ns, "k", json.RawMessage(`1`), queen.PutOpts{TTLSeconds: 1}))
	e.kv1(t, e.incr("n", 3, queen.IncrOpts{TTLSeconds: 1}))
	e.elapse(600 * time.Millisecond)
	e.get(t, "touch")
	e.elapse(500 * time.Millisecond)
	r := e.kv(t, queen.KVGet(e.ns, "k"), queen.KVGetMany(e.ns, "k"), queen.KVGetPrefix(e.ns, "k", queen.PrefixOpts{}))
	if r.Results[0].Found || len(r.Results[1].Rows) != 0 || len(r.Results[2].Rows) != 0 {
		t.Errorf("reads of a key expired 100 ms ago: %+v, want it invisible", r.Results)
	}
	if inc := e.kv1(t, e.incr("n", 1, queen.IncrOpts{TTLSeconds: 60})); intOf(t, inc) != 1 {
		t.Errorf("incr on a counter expired 100 ms ago: value %s, want 1 (it reads 0)", inc.Value)
	}
	if pia := e.kv1(t, queen.KVPutIfAbsent(e.ns, "k", json.RawMessage(`2`), queen.PutOpts{TTLSeconds: 60})); !pia.Applied {
		t.Errorf("putIfAbsent over a key expired 100 ms ago: %+v, want applied", pia)
	}
}

// §8.4 with §8.3's required — the compare-and-set gate-api's declares and
// deletes of a graph document rely on (store.PutIf, store.DeleteIf): a put
// or delete with expect:N and required, beside an incr of the change
// signal, applies both at version N, and at any other version (or with no
// live key) applies neither and says why.
func TestSemantic05_ExpectVersionRequiredGuardsAPutOrDeleteAndItsSignal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := e.kv1(t, queen.KVPut(e.ns, "graph:a:g", json.RawMessage(`{"version":1}`), queen.PutOpts{Forever: true}))
	signal := func(ops ...queen.KVOp) queen.KVResponse {
		return e.kv(t, append(ops, e.incr("rev", 1, queen.IncrOpts{Forever: true}))...)
	}
	// A put at the version read applies, with the signal.
	r := signal(queen.KVPut(e.ns, "graph:a:g", json.RawMessage(`{"version":2}`), queen.PutOpts{Forever: true, Expect: queen.Int(doc.Version), Required: true}))
	if r.Refusal != nil || !r.Results[0].Applied || !r.Results[1].Applied {
		t.Fatalf("put expect:%d required at that version: %+v / %+v, want both applied", doc.Version, r.Results, r.Refusal)
	}
	v2 := r.Results[0].Version
	e.counter(t, "rev", 1)
	// A put at the old version loses with kvReason version: nothing applies.
	r = signal(queen.KVPut(e.ns, "graph:a:g", json.RawMessage(`{"version":3}`), queen.PutOpts{Forever: true, Expect: queen.Int(doc.Version), Required: true}))
	if r.Refusal == nil || !r.Refusal.KVPrecondition() || r.Refusal.KVReason != queen.KVVersion || r.Refusal.FailedIndex != 0 {
		t.Fatalf("put expect at a stale version: %+v, want a kv_precondition refusal at index 0 with kvReason version", r.Refusal)
	}
	// A delete at the old version loses the same way.
	r = signal(queen.KVDelete(e.ns, "graph:a:g", queen.DeleteOpts{Expect: queen.Int(doc.Version), Required: true}))
	if r.Refusal == nil || !r.Refusal.KVPrecondition() || r.Refusal.KVReason != queen.KVVersion {
		t.Fatalf("delete expect at a stale version: %+v, want a kv_precondition refusal with kvReason version", r.Refusal)
	}
	e.counter(t, "rev", 1)
	if g := e.get(t, "graph:a:g"); !g.Found || string(g.Value) != `{"version":2}` || g.Version != v2 {
		t.Fatalf("after the lost calls: %+v, want version 2 at row %d untouched", g, v2)
	}
	// A delete at the version read applies, with the signal.
	r = signal(queen.KVDelete(e.ns, "graph:a:g", queen.DeleteOpts{Expect: queen.Int(v2), Required: true}))
	if r.Refusal != nil || !r.Results[0].Applied || !r.Results[1].Applied {
		t.Fatalf("delete expect:%d required at that version: %+v / %+v, want both applied", v2, r.Results, r.Refusal)
	}
	e.counter(t, "rev", 2)
	// With no live key, expect:N loses with kvReason absent, put or delete.
	for _, op := range []queen.KVOp{
		queen.KVDelete(e.ns, "graph:a:g", queen.DeleteOpts{Expect: queen.Int(v2), Required: true}),
		queen.KVPut(e.ns, "graph:a:g", json.RawMessage(`{"version":4}`), queen.PutOpts{Forever: true, Expect: queen.Int(v2), Required: true}),
	} {
		r = signal(op)
		if r.Refusal == nil || !r.Refusal.KVPrecondition() || r.Refusal.KVReason != queen.KVAbsent {
			t.Fatalf("expect:%d on a deleted key: %+v, want a kv_precondition refusal with kvReason absent", v2, r.Refusal)
		}
	}
	e.counter(t, "rev", 2)
	if g := e.get(t, "graph:a:g"); g.Found {
		t.Fatalf("a lost put created the deleted key: %+v", g)
	}
}
