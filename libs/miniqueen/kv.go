package miniqueen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KV limits (§8.1).
const (
	kvMaxValueBytes   = 65536
	kvMaxKeyBytes     = 512
	kvMaxOpsHTTP      = 256
	kvMaxOpsTxn       = 64
	kvMaxKeysHTTP     = 1024
	kvMaxKeysTxn      = 256
	kvMaxReadBytes    = 4 << 20
	kvDefaultPrefixN  = 100
	kvMaxPrefixN      = 1000
	kvVerdictMaxBytes = 4096
)

var nsPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

type kvKey struct{ ns, key string }

// kvEntry is one stored key. Entries are immutable: every write stores a new
// one, so a journal only has to remember the old pointer.
type kvEntry struct {
	raw     []byte // the JSON value
	isInt   bool
	n       int64
	version int64
	exp     time.Time // zero = forever
	updated time.Time
}

func (e *kvEntry) live(now time.Time) bool {
	return e != nil && (e.exp.IsZero() || now.Before(e.exp))
}

// kvError is a refusal of the whole call before anything ran (§8.7).
type kvError struct {
	status int
	code   string
	reason string
	detail string
}

func (e *kvError) Error() string { return e.reason + ": " + e.detail }

func kvBad(reason, format string, args ...any) *kvError {
	return &kvError{status: http.StatusBadRequest, code: "kv_bad_request", reason: reason, detail: fmt.Sprintf(format, args...)}
}

func kvTooLarge(reason, format string, args ...any) *kvError {
	return &kvError{status: http.StatusRequestEntityTooLarge, code: "payload_too_large", reason: reason, detail: fmt.Sprintf(format, args...)}
}

// kvOpWire is one operation as sent by a client.
type kvOpWire struct {
	Op       string          `json:"op"`
	NS       string          `json:"ns"`
	Key      string          `json:"key"`
	Keys     []string        `json:"keys"`
	Prefix   string          `json:"prefix"`
	After    string          `json:"after"`
	Limit    json.RawMessage `json:"limit"`
	KeysOnly bool            `json:"keysOnly"`
	Value    json.RawMessage `json:"value"`
	TTL      json.RawMessage `json:"ttlSeconds"`
	Forever  json.RawMessage `json:"forever"`
	Expect   json.RawMessage `json:"expect"`
	Required bool            `json:"required"`
	Delta    json.RawMessage `json:"delta"`
	Min      json.RawMessage `json:"min"`
	Max      json.RawMessage `json:"max"`
	Tenant   json.RawMessage `json:"tenant"`
	TenantID json.RawMessage `json:"tenantId"`
	TenantU  json.RawMessage `json:"_tenant"`
}

// kvCmd is a validated operation.
type kvCmd struct {
	idx       int
	op        string
	ns, key   string
	keys      []string
	prefix    string
	after     string
	limit     int
	keysOnly  bool
	value     []byte
	ttl       int64
	forever   bool
	hasExpect bool
	expect    int64
	required  bool
	delta     int64
	hasMin    bool
	min       int64
	hasMax    bool
	max       int64
}

func (c *kvCmd) write() bool {
	switch c.op {
	case "put", "putIfAbsent", "delete", "incr":
		return true
	}
	return false
}

func isNull(r json.RawMessage) bool {
	return len(r) == 0 || string(bytes.TrimSpace(r)) == "null"
}

// parseInt reads a JSON number that must be an integer.
func parseInt(r json.RawMessage) (int64, bool) {
	s := string(bytes.TrimSpace(r))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	// Accept integral numbers written with a fraction or exponent (5.0, 1e3).
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) || f > 1<<62 || f < -(1<<62) {
		return 0, false
	}
	return int64(f), true
}

// intValue reports whether a stored JSON value is an integer counter.
func intValue(raw []byte) (int64, bool) {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	return n, err == nil
}

func validKey(field, key string) *kvError {
	if key == "" {
		return kvBad("kv_bad_key", "%s: key must be a non-empty string", field)
	}
	if len(key) > kvMaxKeyBytes {
		return kvTooLarge("kv_key_too_large", "%s: key is %d bytes, the limit is %d bytes", field, len(key), kvMaxKeyBytes)
	}
	return nil
}

func validNS(field, ns string) *kvError {
	if !nsPattern.MatchString(ns) {
		return kvBad("kv_bad_namespace", "%s: namespace %q must match ^[a-z0-9][a-z0-9._-]{0,63}$ (lowercase)", field, ns)
	}
	return nil
}

// validateKV checks a whole batch before anything runs.
func validateKV(ops []kvOpWire, inTxn bool, field string) ([]kvCmd, *kvError) {
	maxOps, maxKeys := kvMaxOpsHTTP, kvMaxKeysHTTP
	if inTxn {
		maxOps, maxKeys = kvMaxOpsTxn, kvMaxKeysTxn
	}
	if len(ops) > maxOps {
		return nil, kvBad("kv_too_many_ops", "%s carries %d operations, the limit is %d per call", field, len(ops), maxOps)
	}
	cmds := make([]kvCmd, len(ops))
	keys := 0
	var written map[kvKey]int
	for i := range ops {
		w := &ops[i]
		f := fmt.Sprintf("%s[%d]", field, i)
		if !isNull(w.Tenant) || !isNull(w.TenantID) || !isNull(w.TenantU) {
			return nil, kvBad("kv_tenant_not_an_input", "%s: the tenant comes from the tenancy header, remove tenant/tenantId/_tenant", f)
		}
		c := kvCmd{idx: i, op: w.Op, ns: w.NS, key: w.Key, required: w.Required}
		switch w.Op {
		case "get", "getMany", "getPrefix", "put", "putIfAbsent", "delete", "incr":
		default:
			return nil, kvBad("kv_unknown_op", "%s.op %q is not one of get, getMany, getPrefix, put, putIfAbsent, delete, incr", f, w.Op)
		}
		if e := validNS(f+".ns", w.NS); e != nil {
			return nil, e
		}
		switch w.Op {
		case "get", "put", "putIfAbsent", "delete", "incr":
			if e := validKey(f+".key", w.Key); e != nil {
				return nil, e
			}
			keys++
		case "getMany":
			for k, key := range w.Keys {
				if e := validKey(fmt.Sprintf("%s.keys[%d]", f, k), key); e != nil {
					return nil, e
				}
			}
			c.keys = w.Keys
			keys += len(w.Keys)
		case "getPrefix":
			if inTxn {
				return nil, kvBad("kv_get_prefix_not_allowed_in_transaction", "%s: getPrefix is not allowed inside a transaction; list with POST /api/v1/kv", f)
			}
			if w.Prefix == "" {
				return nil, kvBad("kv_prefix_required", "%s.prefix must be a non-empty string", f)
			}
			c.prefix, c.after, c.keysOnly = w.Prefix, w.After, w.KeysOnly
			c.limit = kvDefaultPrefixN
			if !isNull(w.Limit) {
				n, ok := parseInt(w.Limit)
				if !ok {
					return nil, kvBad("kv_bad_body", "%s.limit must be an integer", f)
				}
				c.limit = int(max(1, min(n, kvMaxPrefixN)))
			}
			keys += c.limit
		}
		if c.write() {
			if written == nil {
				written = map[kvKey]int{}
			}
			k := kvKey{w.NS, w.Key}
			if prev, dup := written[k]; dup {
				return nil, kvBad("kv_duplicate_key_in_call", "%s: key %q in namespace %q is already written by %s[%d]; a key may be written once per call", f, w.Key, w.NS, field, prev)
			}
			written[k] = i
		}
		// Expiry: mandatory on put, putIfAbsent and incr.
		if w.Op == "put" || w.Op == "putIfAbsent" || w.Op == "incr" {
			forever := false
			if !isNull(w.Forever) {
				if err := json.Unmarshal(w.Forever, &forever); err != nil {
					return nil, kvBad("kv_bad_body", "%s.forever must be a boolean", f)
				}
			}
			hasTTL := !isNull(w.TTL)
			if hasTTL == forever {
				return nil, kvBad("kv_expiry_not_specified", "%s: give exactly one of ttlSeconds (whole seconds >= 1) or forever:true", f)
			}
			if hasTTL {
				n, err := strconv.ParseInt(string(bytes.TrimSpace(w.TTL)), 10, 64)
				if err != nil || n <= 0 {
					return nil, kvBad("kv_bad_ttl", "%s.ttlSeconds must be a whole number of seconds >= 1, got %s", f, string(w.TTL))
				}
				c.ttl = n
			}
			c.forever = forever
		}
		switch w.Op {
		case "put", "putIfAbsent":
			if len(w.Value) == 0 {
				return nil, kvBad("kv_bad_body", "%s.value is required (send null for an empty value)", f)
			}
			if len(w.Value) > kvMaxValueBytes {
				return nil, kvTooLarge("kv_value_too_large", "%s.value is %d bytes of JSON, the limit is %d", f, len(w.Value), kvMaxValueBytes)
			}
			c.value = compactJSON(w.Value)
		}
		if !isNull(w.Expect) {
			n, ok := parseInt(w.Expect)
			switch {
			case w.Op == "incr":
				return nil, kvBad("kv_bad_expect", "%s: incr takes no expect; use min/max as guards", f)
			case w.Op == "get" || w.Op == "getMany" || w.Op == "getPrefix":
			case !ok || n < 0:
				return nil, kvBad("kv_bad_expect", "%s.expect must be an integer >= 0 (0 = must be absent, N = version)", f)
			case w.Op == "putIfAbsent" && n != 0:
				return nil, kvBad("kv_bad_expect", "%s: putIfAbsent only accepts expect 0", f)
			default:
				c.hasExpect, c.expect = true, n
			}
		}
		if w.Op == "putIfAbsent" {
			c.hasExpect, c.expect = true, 0
		}
		if w.Op == "incr" {
			if isNull(w.Delta) {
				return nil, kvBad("kv_bad_body", "%s.delta is required (an integer)", f)
			}
			n, ok := parseInt(w.Delta)
			if !ok {
				return nil, kvBad("kv_bad_body", "%s.delta must be an integer (miniqueen supports integer counters only)", f)
			}
			c.delta = n
			if !isNull(w.Min) {
				if c.min, ok = parseInt(w.Min); !ok {
					return nil, kvBad("kv_bad_body", "%s.min must be an integer", f)
				}
				c.hasMin = true
			}
			if !isNull(w.Max) {
				if c.max, ok = parseInt(w.Max); !ok {
					return nil, kvBad("kv_bad_body", "%s.max must be an integer", f)
				}
				c.hasMax = true
			}
		}
		cmds[i] = c
	}
	if keys > maxKeys {
		return nil, kvBad("kv_too_many_keys", "%s touches %d keys, the limit is %d per call", field, keys, maxKeys)
	}
	return cmds, nil
}

func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append([]byte(nil), raw...)
	}
	return b.Bytes()
}

// kvRow is one row of getMany/getPrefix.
type kvRow struct {
	key string
	e   *kvEntry
}

// kvRes is the result of one operation.
type kvRes struct {
	op        string
	key       string
	found     bool
	applied   bool
	reason    string
	value     []byte // nil renders null (or 0 for incr)
	version   int64
	e         *kvEntry // get: the row
	rows      []kvRow
	missing   []string
	truncated bool
	nextAfter string
	keysOnly  bool
}

// kvVerdict is a lost required gate.
type kvVerdict struct {
	index   int // input index of the op
	reason  string
	value   []byte
	version int64
	isIncr  bool
}

func (s *Server) kvGet(ns, key string) *kvEntry {
	if m := s.kv[ns]; m != nil {
		return m.entries[key]
	}
	return nil
}

// kvSet writes (ns, key), recording the old entry in j when j is not nil.
func (s *Server) kvSet(ns, key string, e *kvEntry, j *journal) {
	if j != nil {
		k := kvKey{ns, key}
		if j.kv == nil {
			j.kv = map[kvKey]kvSaved{}
		}
		if _, ok := j.kv[k]; !ok {
			old := s.kvGet(ns, key)
			j.kv[k] = kvSaved{e: old, had: old != nil}
		}
	}
	s.kvPut(ns, key, e)
}

// kvPut stores e under ns/key (nil deletes it), creating the namespace on
// its first key and dropping it with its last. What the store keeps of ns
// and key is its own bytes, not a slice of the request that brought them
// (keepArena): a new namespace's name, and a key the space or the expiry
// index keeps.
func (s *Server) kvPut(ns, key string, e *kvEntry) {
	m := s.kv[ns]
	if e == nil {
		if m != nil {
			m.set(key, nil)
			if len(m.entries) == 0 {
				delete(s.kv, ns)
			}
		}
		return
	}
	if m == nil {
		m = newKVSpace(strings.Clone(ns))
		s.kv[m.ns] = m
	}
	old := m.entries[key]
	if old == nil || expiryChanged(old, e) {
		key = strings.Clone(key)
	}
	s.kvExp.note(m.ns, key, old, e)
	m.set(key, e)
}

func (s *Server) newEntry(raw []byte, c *kvCmd, now time.Time) *kvEntry {
	s.kvVersion++
	e := &kvEntry{raw: raw, version: s.kvVersion, updated: now}
	e.n, e.isInt = intValue(raw)
	if !c.forever {
		e.exp = now.Add(time.Duration(c.ttl) * time.Second)
	}
	return e
}

// execKV runs validated ops: single-key ops in (ns, key) byte order with
// input order as tiebreak, then the multi-key reads. The first lost
// required gate stops the run and is returned; the caller rolls back j.
func (s *Server) execKV(cmds []kvCmd, res []kvRes, now time.Time, j *journal) *kvVerdict {
	order := make([]int, 0, len(cmds))
	var reads []int
	for i := range cmds {
		if cmds[i].op == "getMany" || cmds[i].op == "getPrefix" {
			reads = append(reads, i)
		} else {
			order = append(order, i)
		}
	}
	if len(order) > 1 {
		sort.SliceStable(order, func(a, b int) bool {
			ca, cb := &cmds[order[a]], &cmds[order[b]]
			if ca.ns != cb.ns {
				return ca.ns < cb.ns
			}
			return ca.key < cb.key
		})
	}
	for _, i := range append(order, reads...) {
		c := &cmds[i]
		r := &res[i]
		r.op, r.key = c.op, c.key
		cur := s.kvGet(c.ns, c.key)
		if !cur.live(now) {
			cur = nil
		}
		switch c.op {
		case "get":
			if cur != nil {
				r.found, r.e = true, cur
			}
		case "getMany":
			s.kvGetMany(c, r, now)
		case "getPrefix":
			s.kvGetPrefix(c, r, now)
		case "put", "putIfAbsent":
			switch {
			case c.hasExpect && c.expect == 0 && cur != nil:
				r.reason = "exists"
			case c.hasExpect && c.expect > 0 && cur == nil:
				r.reason = "absent"
			case c.hasExpect && c.expect > 0 && cur.version != c.expect:
				r.reason = "version"
			default:
				e := s.newEntry(bytes.Clone(c.value), c, now) // its own bytes (keepArena)
				s.kvSet(c.ns, c.key, e, j)
				r.applied, r.value, r.version = true, e.raw, e.version
			}
		case "delete":
			switch {
			case !c.hasExpect && cur == nil:
				r.reason = "absent"
			case c.hasExpect && c.expect == 0:
				if cur != nil {
					r.reason = "exists"
				} else {
					r.applied = true
				}
			case c.hasExpect && cur == nil:
				r.reason = "absent"
			case c.hasExpect && cur.version != c.expect:
				r.reason = "version"
			default:
				s.kvSet(c.ns, c.key, nil, j)
				r.applied, r.value, r.version = true, cur.raw, cur.version
			}
		case "incr":
			var base int64
			switch {
			case cur == nil:
			case !cur.isInt:
				r.reason = "type"
				r.value, r.version = []byte("0"), cur.version
			default:
				base = cur.n
			}
			if r.reason == "" {
				sum := base + c.delta
				overflow := (c.delta > 0 && sum < base) || (c.delta < 0 && sum > base)
				if overflow || c.hasMin && sum < c.min || c.hasMax && sum > c.max {
					r.reason = "limit"
					r.value = strconv.AppendInt(nil, base, 10)
					if cur != nil {
						r.version = cur.version
					}
				} else {
					var e *kvEntry
					if cur == nil {
						e = s.newEntry(strconv.AppendInt(nil, sum, 10), c, now)
					} else {
						// TTL is create-only: a live counter keeps its expiry.
						s.kvVersion++
						e = &kvEntry{raw: strconv.AppendInt(nil, sum, 10), isInt: true, n: sum, version: s.kvVersion, exp: cur.exp, updated: now}
					}
					e.isInt, e.n = true, sum
					s.kvSet(c.ns, c.key, e, j)
					r.applied, r.value, r.version = true, e.raw, e.version
				}
			}
		}
		if c.write() && !r.applied && r.reason != "" {
			if r.value == nil && cur != nil && c.op != "incr" {
				r.value, r.version = cur.raw, cur.version
			}
			if c.required {
				return &kvVerdict{index: i, reason: r.reason, value: r.value, version: r.version, isIncr: c.op == "incr"}
			}
		}
	}
	return nil
}

func (s *Server) kvGetMany(c *kvCmd, r *kvRes, now time.Time) {
	budget := kvMaxReadBytes
	seen := map[string]bool{}
	for _, k := range c.keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		e := s.kvGet(c.ns, k)
		if !e.live(now) {
			r.missing = append(r.missing, k)
			continue
		}
		budget -= len(e.raw) + len(k)
		if budget < 0 {
			r.truncated = true
			continue
		}
		r.rows = append(r.rows, kvRow{key: k, e: e})
	}
	sort.Slice(r.rows, func(a, b int) bool { return r.rows[a].key < r.rows[b].key })
}

func (s *Server) kvGetPrefix(c *kvCmd, r *kvRes, now time.Time) {
	r.keysOnly = c.keysOnly
	m := s.kv[c.ns]
	if m == nil {
		return
	}
	budget := kvMaxReadBytes
	for _, k := range m.from(c.prefix, c.after) {
		e := m.entries[k]
		if !e.live(now) {
			continue
		}
		if len(r.rows) == c.limit {
			r.truncated = true
			break
		}
		budget -= len(k)
		if !c.keysOnly {
			budget -= len(e.raw)
		}
		if budget < 0 && len(r.rows) > 0 {
			r.truncated = true
			break
		}
		r.rows = append(r.rows, kvRow{key: k, e: e})
	}
	if r.truncated && len(r.rows) > 0 {
		r.nextAfter = r.rows[len(r.rows)-1].key
	}
}

// sweepKV deletes expired keys at most once per clock second (never
// inside a unit that may roll back: call it before one), popping the
// expiry index (kvexpiry.go) up to now.
func (s *Server) sweepKV(now time.Time) {
	if now.Sub(s.kvSwept) < time.Second {
		return
	}
	s.kvSwept = now
	s.kvExp.due(now, func(ns, key string) {
		if e := s.kvGet(ns, key); e != nil && !e.live(now) {
			s.kvPut(ns, key, nil)
		}
	})
}

// writeKVRes renders one result body (without the opening brace's index
// prefix, which the caller writes).
func writeKVRes(w *jw, r *kvRes) {
	w.key("op")
	w.str(r.op)
	switch r.op {
	case "get":
		w.raw(`,"found":`)
		w.bool(r.found)
		w.raw(`,"key":`)
		w.str(r.key)
		if r.found {
			writeRowTail(w, r.e, false)
		}
	case "getMany", "getPrefix":
		w.raw(`,"rows":[`)
		for i, row := range r.rows {
			if i > 0 {
				w.comma()
			}
			w.raw(`{"key":`)
			w.str(row.key)
			writeRowTail(w, row.e, r.keysOnly)
			w.raw("}")
		}
		w.raw("]")
		if r.op == "getMany" {
			w.raw(`,"missing":[`)
			for i, k := range r.missing {
				if i > 0 {
					w.comma()
				}
				w.str(k)
			}
			w.raw("]")
		}
		w.raw(`,"truncated":`)
		w.bool(r.truncated)
		if r.nextAfter != "" {
			w.raw(`,"nextAfter":`)
			w.str(r.nextAfter)
		}
	default:
		w.raw(`,"applied":`)
		w.bool(r.applied)
		if !r.applied && r.reason != "" {
			w.raw(`,"reason":`)
			w.str(r.reason)
		}
		w.raw(`,"key":`)
		w.str(r.key)
		w.raw(`,"value":`)
		if r.value == nil && r.op == "incr" {
			w.raw("0")
		} else {
			w.json(r.value)
		}
		w.raw(`,"version":`)
		w.int(r.version)
	}
}

func writeRowTail(w *jw, e *kvEntry, keysOnly bool) {
	if !keysOnly {
		w.raw(`,"value":`)
		w.json(e.raw)
	}
	w.raw(`,"version":`)
	w.int(e.version)
	w.raw(`,"expiresAt":`)
	if e.exp.IsZero() {
		w.raw("null")
	} else {
		w.pgTime(e.exp)
	}
	w.raw(`,"updatedAt":`)
	w.pgTime(e.updated)
}

// writeVerdictFields writes the kv_precondition fields (without braces).
func writeVerdictFields(w *jw, v *kvVerdict, failedIndex int) {
	start := len(w.b)
	w.raw(`"ok":false,"reason":"kv_precondition"`)
	cut := len(w.b)
	w.raw(`,"failedIndex":`)
	w.int(int64(failedIndex))
	w.raw(`,"kvReason":`)
	w.str(v.reason)
	w.raw(`,"version":`)
	w.int(v.version)
	w.raw(`,"value":`)
	if v.value == nil && v.isIncr {
		w.raw("0")
	} else {
		w.json(v.value)
	}
	if len(w.b)-start > kvVerdictMaxBytes {
		w.b = w.b[:cut]
	}
}
