package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// KVOpType names a KV operation.
type KVOpType string

// The seven KV operations; incr, putIfAbsent and getPrefix exist only in
// the POST /api/v1/kv batch (and, except getPrefix, in transactions).
const (
	OpGet         KVOpType = "get"
	OpGetMany     KVOpType = "getMany"
	OpGetPrefix   KVOpType = "getPrefix"
	OpPut         KVOpType = "put"
	OpPutIfAbsent KVOpType = "putIfAbsent"
	OpDelete      KVOpType = "delete"
	OpIncr        KVOpType = "incr"
)

// KVOp is one KV operation, for POST /api/v1/kv or as a transaction rider.
// Build it with KVGet, KVGetMany, KVGetPrefix, KVPut, KVPutIfAbsent, KVIncr
// or KVDelete; the fields are exported so a test can send any shape. Only
// the fields of the op's own wire shape are sent; a zero optional field is
// not sent.
type KVOp struct {
	Op KVOpType
	// NS is the namespace (^[a-z0-9][a-z0-9._-]{0,63}$).
	NS string
	// Key is the key of single-key ops (≤ 512 bytes, may contain "/").
	Key string
	// Keys are getMany's keys.
	Keys []string
	// Prefix, After, Limit and KeysOnly are getPrefix's listing controls
	// (Limit 0 = the broker's 100).
	Prefix   string
	After    string
	Limit    int
	KeysOnly bool
	// Value is put/putIfAbsent's value (nil is sent as null, which is a
	// legal value).
	Value json.RawMessage
	// Delta is incr's increment (always sent for incr).
	Delta int64
	// TTLSeconds (> 0) or Forever is the mandatory expiry of every write;
	// TTLSeconds 0 is not sent.
	TTLSeconds int64
	Forever    bool
	// Min and Max guard incr's resulting value (refuse, never clamp).
	Min OptInt
	Max OptInt
	// Expect is put/delete's version precondition (Int(0) = must be absent).
	Expect OptInt
	// Required escalates a lost precondition into a rollback of the whole
	// call (or transaction).
	Required bool
}

// IncrOpts are the options of KVIncr.
type IncrOpts struct {
	// TTLSeconds (> 0) or Forever is mandatory; it only takes effect when the
	// incr creates the key (TTL is create-only: a live counter keeps its
	// expiry), but the broker wants it on every incr.
	TTLSeconds int64
	Forever    bool
	// Min and Max guard the resulting value: an incr that would leave the
	// counter outside them does not apply at all (applied:false,
	// reason "limit") and reports the current value. Absent = unbounded.
	Min OptInt
	Max OptInt
	// Required turns a refusal into a rollback of the whole call.
	Required bool
}

// PutOpts are the options of KVPut and KVPutIfAbsent.
type PutOpts struct {
	// TTLSeconds (> 0) or Forever is mandatory; put replaces value AND
	// expiry.
	TTLSeconds int64
	Forever    bool
	// Expect is a version precondition: Int(0) writes only if no live key,
	// Int(N) only if the live version is N. Absent = unconditional (put).
	Expect OptInt
	// Required turns a lost precondition into a rollback of the whole call.
	Required bool
}

// DeleteOpts are the options of KVDelete.
type DeleteOpts struct {
	// Expect: Int(0) applies only if absent, Int(N) only at version N.
	Expect OptInt
	// Required turns a lost precondition into a rollback of the whole call.
	Required bool
}

// PrefixOpts are the options of KVGetPrefix.
type PrefixOpts struct {
	// After is the exclusive keyset cursor (the previous page's NextAfter).
	After string
	// Limit is the page size (0 = the broker's 100; clamped 1–1000).
	Limit int
	// KeysOnly omits values.
	KeysOnly bool
}

// ValidNamespace reports whether ns is a namespace the broker accepts for
// KV: 1 to 64 bytes of [a-z0-9._-], the first a lowercase letter or a digit
// (^[a-z0-9][a-z0-9._-]{0,63}$). The empty namespace is not valid.
func ValidNamespace(ns string) bool {
	if ns == "" || len(ns) > 64 {
		return false
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// KVGet reads one key.
func KVGet(ns, key string) KVOp { return KVOp{Op: OpGet, NS: ns, Key: key} }

// KVGetMany reads many keys of one namespace; rows come back sorted by key
// in byte order, misses in input order.
func KVGetMany(ns string, keys ...string) KVOp { return KVOp{Op: OpGetMany, NS: ns, Keys: keys} }

// KVGetPrefix lists keys starting with prefix, in byte order (only on POST
// /api/v1/kv, never in a transaction).
func KVGetPrefix(ns, prefix string, o PrefixOpts) KVOp {
	return KVOp{Op: OpGetPrefix, NS: ns, Prefix: prefix, After: o.After, Limit: o.Limit, KeysOnly: o.KeysOnly}
}

// KVPut writes key = value with the given expiry and optional precondition.
func KVPut(ns, key string, value json.RawMessage, o PutOpts) KVOp {
	return KVOp{Op: OpPut, NS: ns, Key: key, Value: value, TTLSeconds: o.TTLSeconds, Forever: o.Forever, Expect: o.Expect, Required: o.Required}
}

// KVPutIfAbsent writes key = value only if no live key exists; the loser
// gets reason "exists" and the winner's value and version.
func KVPutIfAbsent(ns, key string, value json.RawMessage, o PutOpts) KVOp {
	return KVOp{Op: OpPutIfAbsent, NS: ns, Key: key, Value: value, TTLSeconds: o.TTLSeconds, Forever: o.Forever, Expect: o.Expect, Required: o.Required}
}

// KVIncr adds delta to a numeric key — the limiter primitive: with Max set,
// Applied on the result IS the admission decision.
func KVIncr(ns, key string, delta int64, o IncrOpts) KVOp {
	return KVOp{Op: OpIncr, NS: ns, Key: key, Delta: delta, TTLSeconds: o.TTLSeconds, Forever: o.Forever, Min: o.Min, Max: o.Max, Required: o.Required}
}

// KVDelete removes a key; without Expect it applies iff a live key existed.
func KVDelete(ns, key string, o DeleteOpts) KVOp {
	return KVOp{Op: OpDelete, NS: ns, Key: key, Expect: o.Expect, Required: o.Required}
}

// MaxKVKeyBytes is the broker's longest kv key in UTF-8 bytes (queen-wire
// §8.1); a longer key is refused with 413 kv_key_too_large, forever.
const MaxKVKeyBytes = 512

// KVReason is why a KV write did not apply.
type KVReason string

const (
	// KVLimit: an incr would have crossed min/max.
	KVLimit KVReason = "limit"
	// KVExists: putIfAbsent (or expect 0) found a live key.
	KVExists KVReason = "exists"
	// KVAbsent: expect N on a missing key, or delete of a missing key.
	KVAbsent KVReason = "absent"
	// KVVersion: expect N did not match the live version.
	KVVersion KVReason = "version"
	// KVType: incr on a live non-numeric value.
	KVType KVReason = "type"
)

// KVRow is one row of a getMany or getPrefix result.
type KVRow struct {
	Key string `json:"key"`
	// Value is the row's value as the broker sent it: always one complete,
	// valid JSON value, since the client refuses an answer any byte of
	// which encoding/json would refuse (empty when the row carried none,
	// as in a keysOnly listing).
	Value   json.RawMessage `json:"value"`
	Version int64           `json:"version"`
	// ExpiresAt is "" for a key that lives forever.
	ExpiresAt Timestamp `json:"expiresAt"`
	UpdatedAt Timestamp `json:"updatedAt"`
}

// KVResult is the broker's answer for one KV op.
type KVResult struct {
	// Index is the op's position in the request.
	Index int `json:"index"`
	// Op echoes the op type.
	Op KVOpType `json:"op"`
	// Key is the op's key (single-key ops).
	Key string `json:"key"`
	// Applied is the write verdict of put/putIfAbsent/delete/incr. For incr
	// with a Max this is the admission decision.
	Applied bool `json:"applied"`
	// Found is get's verdict.
	Found bool `json:"found"`
	// Reason says why a write did not apply.
	Reason KVReason `json:"reason"`
	// Value and Version are the state after the op when applied, and the
	// CURRENT (winner's) state when not (0/null when the key is absent).
	Value   json.RawMessage `json:"value"`
	Version int64           `json:"version"`
	// ExpiresAt and UpdatedAt come with a found get ("" = forever); an incr
	// result never carries an expiry — read it with a getMany.
	ExpiresAt Timestamp `json:"expiresAt"`
	UpdatedAt Timestamp `json:"updatedAt"`
	// Rows, Missing and Truncated are getMany/getPrefix results; keys cut by
	// the read budget are in neither list and Truncated is set.
	Rows      []KVRow  `json:"rows"`
	Missing   []string `json:"missing"`
	Truncated bool     `json:"truncated"`
	// NextAfter is getPrefix's cursor for the next page (set only when
	// truncated).
	NextAfter string `json:"nextAfter"`
}

// Int64 reads Value as an integer (a counter); null or absent reads 0. It
// fails for a non-numeric value or one outside int64.
func (r *KVResult) Int64() (int64, error) { return numberValue(r.Value) }

// Int64 reads the row's Value as an integer; null reads 0.
func (r *KVRow) Int64() (int64, error) { return numberValue(r.Value) }

func numberValue(v json.RawMessage) (int64, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, fmt.Errorf("queen: kv value %.40s is not a number", v)
	}
	if f != math.Trunc(f) || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, fmt.Errorf("queen: kv value %.40s is not an int64", v)
	}
	return int64(f), nil
}

// RefusalReason is the closed set of reasons a KV call or a transaction was
// rolled back as a whole.
type RefusalReason string

const (
	// ReasonKVPrecondition: a required KV op lost its precondition.
	ReasonKVPrecondition RefusalReason = "kv_precondition"
	// ReasonDuplicate: a pushed transactionId already existed (QDUP).
	ReasonDuplicate RefusalReason = "duplicate"
	// ReasonAckRejected: an ack was refused (QTXN: expired/invalid lease,
	// position beyond the batch, unknown transactionId, foreign partition).
	ReasonAckRejected RefusalReason = "ack_rejected"
	// ReasonBadRequest is the transaction wire's "bad_request" rollback.
	ReasonBadRequest RefusalReason = "bad_request"
	// ReasonTimerHorizon is the transaction wire's "timer_horizon_exceeded"
	// rollback.
	ReasonTimerHorizon RefusalReason = "timer_horizon_exceeded"
	// ReasonPayloadTooLarge is the transaction wire's "payload_too_large"
	// rollback.
	ReasonPayloadTooLarge RefusalReason = "payload_too_large"
	// ReasonMisaligned is the transaction wire's "misaligned" rollback.
	ReasonMisaligned RefusalReason = "misaligned"
	// ReasonDBError is the transaction wire's "db_error" rollback: the
	// database failed and nothing was applied.
	ReasonDBError RefusalReason = "db_error"
)

// Refusal is an HTTP 200 verdict that rolled back a whole KV call or
// transaction: nothing was applied. It is a result the caller must look at;
// it also implements error for callers that want to return it.
type Refusal struct {
	// Reason is the stable reason; "" on brokers older than the riders (then
	// match Error's QDUP/QTXN prefix, as Duplicate and AckRejected do).
	Reason RefusalReason
	// Message is the body's "error" text (e.g. "kv_precondition_failed",
	// "QDUP duplicate messages in queue …"); it never names the colliding id.
	Message string
	// FailedIndex is the failing op's position (flat over operations, then
	// kv, then timers, on a transaction); -1 when the broker did not say.
	FailedIndex int
	// KVReason, Value and Version describe a lost KV precondition: the
	// key's CURRENT (winner's) state. There is never an expiry here.
	KVReason KVReason
	Value    json.RawMessage
	Version  int64
}

// Duplicate reports a rollback caused by a pushed transactionId that was
// already stored (reason "duplicate" or a "QDUP" error).
func (r *Refusal) Duplicate() bool {
	return r.Reason == ReasonDuplicate || strings.Contains(r.Message, "QDUP")
}

// AckRejected reports a rollback caused by a refused ack (reason
// "ack_rejected" or a "QTXN" error).
func (r *Refusal) AckRejected() bool {
	return r.Reason == ReasonAckRejected || strings.HasPrefix(r.Message, "QTXN")
}

// KVPrecondition reports a rollback caused by a required KV op.
func (r *Refusal) KVPrecondition() bool {
	return r.Reason == ReasonKVPrecondition || r.KVReason != ""
}

// Int64 reads Value as an integer: for a lost incr gate, the counter's
// current value.
func (r *Refusal) Int64() (int64, error) { return numberValue(r.Value) }

// String describes the refusal for logs.
func (r *Refusal) String() string {
	s := "queen: refused"
	if r.Reason != "" {
		s += " (" + string(r.Reason) + ")"
	}
	if r.KVReason != "" {
		s += " kvReason=" + string(r.KVReason)
	}
	if r.FailedIndex >= 0 {
		s += " failedIndex=" + strconv.Itoa(r.FailedIndex)
	}
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s
}

// Error makes a Refusal usable as an error (see KVResponse.Err and
// TxnResult.Err).
func (r *Refusal) Error() string { return r.String() }

// refusalWire is the union of the refusal envelopes.
type refusalWire struct {
	OK          *bool           `json:"ok"`
	Success     *bool           `json:"success"`
	Reason      string          `json:"reason"`
	Error       json.RawMessage `json:"error"`
	FailedIndex *int            `json:"failedIndex"`
	KVReason    string          `json:"kvReason"`
	Version     int64           `json:"version"`
	Value       json.RawMessage `json:"value"`
}

func (w *refusalWire) refusal() *Refusal {
	r := &Refusal{Reason: RefusalReason(w.Reason), FailedIndex: -1, KVReason: KVReason(w.KVReason), Version: w.Version, Value: w.Value}
	if w.FailedIndex != nil {
		r.FailedIndex = *w.FailedIndex
	}
	if len(w.Error) > 0 && w.Error[0] == '"' {
		_ = json.Unmarshal(w.Error, &r.Message)
	}
	return r
}

// KVResponse is the answer to a KV batch. Exactly one of Results and
// Refusal is meaningful: Refusal is non-nil when a required op lost its
// precondition and the whole call was rolled back (no results).
type KVResponse struct {
	// Results are index-aligned to the ops sent.
	Results []KVResult
	// Refusal is the rollback verdict, or nil.
	Refusal *Refusal
}

// Refused reports whether the call was rolled back as a whole.
func (r *KVResponse) Refused() bool { return r.Refusal != nil }

// Err returns the Refusal as an error, or nil when the call applied.
func (r *KVResponse) Err() error {
	if r.Refusal == nil {
		return nil
	}
	return r.Refusal
}

// kvWire is the decoded batch answer.
type kvWire struct {
	Results []KVResult `json:"results"`
	refusalWire
}

// KV runs a batch of KV ops in one call (POST /api/v1/kv). Ops are applied
// independently unless Required; a lost Required op rolls everything back
// and comes back as KVResponse.Refusal (HTTP 200, not an error). A KV call
// (which may carry an incr) is never retried by the client.
func (c *Client) KV(ctx context.Context, ops ...KVOp) (KVResponse, error) {
	const path = "/api/v1/kv"
	b := make([]byte, 0, 32+len(ops)*128)
	b = append(b, `{"operations":[`...)
	for i := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendKVOp(b, &ops[i], "kv: operations["+strconv.Itoa(i)+"]"); err != nil {
			return KVResponse{}, fmt.Errorf("queen: %w", err)
		}
	}
	b = append(b, "]}"...)
	for i := range ops {
		if ops[i].Op == OpIncr {
			c.calls.kvIncr.Add(1)
			break
		}
	}
	var res KVResponse
	err := c.call(ctx, http.MethodPost, path, "", b, func(_ int, body []byte) error {
		var err error
		res, err = decodeKV(body, len(ops))
		return err
	})
	if err != nil {
		return KVResponse{}, err
	}
	return res, nil
}

// decodeKV reads a KV batch answer of n ops: index-aligned results, or the
// refusal envelope of a lost required op.
func decodeKV(b []byte, n int) (KVResponse, error) {
	var w kvWire
	if err := decodeKVFast(b, &w); err != nil {
		return KVResponse{}, err
	}
	if w.OK != nil && !*w.OK {
		return KVResponse{Refusal: w.refusal()}, nil
	}
	if len(w.Results) != n {
		return KVResponse{}, fmt.Errorf("the broker answered %d results for %d ops", len(w.Results), n)
	}
	return KVResponse{Results: w.Results}, nil
}

// kvPath is the single-key route of (ns, key), both percent-escaped.
func kvPath(call, ns, key string) (string, error) {
	if err := need(call, "namespace", ns); err != nil {
		return "", err
	}
	if err := need(call, "key", key); err != nil {
		return "", err
	}
	return "/api/v1/kv/" + escape(ns) + "/" + escape(key), nil
}

// kvElement decodes a single-key route answer: the op's element, or the
// refusal envelope of a lost required precondition folded into a result
// with Applied false.
func kvElement(op KVOpType, key string) (*KVResult, func(int, []byte) error) {
	r := &KVResult{Op: op, Key: key}
	return r, func(_ int, b []byte) error {
		var w refusalWire
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		if w.OK != nil && !*w.OK {
			rf := w.refusal()
			*r = KVResult{Op: op, Key: key, Applied: false, Reason: rf.KVReason, Value: rf.Value, Version: rf.Version}
			return nil
		}
		if err := json.Unmarshal(b, r); err != nil {
			return err
		}
		if r.Op == "" {
			r.Op = op
		}
		if r.Key == "" {
			r.Key = key
		}
		return nil
	}
}

// KVGetKey reads one key on the path route (GET /api/v1/kv/:ns/*key). A
// miss is Found false, not an error.
func (c *Client) KVGetKey(ctx context.Context, ns, key string) (KVResult, error) {
	path, err := kvPath("kv get", ns, key)
	if err != nil {
		return KVResult{}, err
	}
	r, dec := kvElement(OpGet, key)
	if err := c.call(ctx, http.MethodGet, path, "", nil, dec); err != nil {
		return KVResult{}, err
	}
	return *r, nil
}

// KVPutKey writes one key on the path route (PUT /api/v1/kv/:ns/*key). A
// lost precondition is Applied false with Reason, not an error.
func (c *Client) KVPutKey(ctx context.Context, ns, key string, value json.RawMessage, o PutOpts) (KVResult, error) {
	path, err := kvPath("kv put", ns, key)
	if err != nil {
		return KVResult{}, err
	}
	b := []byte{'{'}
	if value == nil {
		value = jsonNull
	}
	if b, err = rawField(b, "value", value, "kv put: value"); err != nil {
		return KVResult{}, fmt.Errorf("queen: %w", err)
	}
	if o.TTLSeconds != 0 {
		b = intField(b, "ttlSeconds", o.TTLSeconds)
	}
	if o.Forever {
		b = boolField(b, "forever", true)
	}
	if o.Expect.Set {
		b = intField(b, "expect", o.Expect.Value)
	}
	if o.Required {
		b = boolField(b, "required", true)
	}
	b = append(b, '}')
	r, dec := kvElement(OpPut, key)
	if err := c.call(ctx, http.MethodPut, path, "", b, dec); err != nil {
		return KVResult{}, err
	}
	return *r, nil
}

// KVDeleteKey deletes one key on the path route (DELETE
// /api/v1/kv/:ns/*key); with zero opts no body is sent. Deleting a missing
// key is Applied false with Reason "absent", not an error.
func (c *Client) KVDeleteKey(ctx context.Context, ns, key string, o DeleteOpts) (KVResult, error) {
	path, err := kvPath("kv delete", ns, key)
	if err != nil {
		return KVResult{}, err
	}
	var b []byte
	if o.Expect.Set || o.Required {
		b = []byte{'{'}
		if o.Expect.Set {
			b = intField(b, "expect", o.Expect.Value)
		}
		if o.Required {
			b = boolField(b, "required", true)
		}
		b = append(b, '}')
	}
	r, dec := kvElement(OpDelete, key)
	if err := c.call(ctx, http.MethodDelete, path, "", b, dec); err != nil {
		return KVResult{}, err
	}
	return *r, nil
}
