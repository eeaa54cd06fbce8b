package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Limits per key: a scoped budget keeps one counter per scope value, and
// some values may count their own count per the budget's timeMs instead of
// the budget's — a few in the document (plan.Budget.Keys), many at runtime
// as one small kv row per value (plan.KeyLimitKey), written by gate-api and
// read by every relay through KeyLimits. For one value the runtime row
// wins over the document; without either the value counts the budget's
// count. The window (sub-windows and their TTL) stays the budget's: only
// the ceiling of the value's counter changes, and only here and in plan is
// it computed.

// KeyRefresh is how old a relay's copy of a key limit may be: a change
// (a PUT, a DELETE) reaches every relay's next claim within it, so within
// one sub-window (a sub-window is at least a second).
const KeyRefresh = time.Second

// DefaultKeyCache is how many scope values a relay's KeyLimits remembers
// (found or absent). A value past it is read again, never wrong.
const DefaultKeyCache = 100_000

// maxGetMany is the most keys one getMany reads (the broker's per-call cap
// on keys touched).
const maxGetMany = 256

// KeyRow is a runtime key limit row as kv stores it.
type KeyRow struct {
	// Count is the value's count per the budget's timeMs (1..plan.MaxKeyCount).
	Count int64 `json:"count"`
	// At is when the row was written, epoch ms.
	At int64 `json:"at"`
}

// KeyLimit is one runtime key limit as the API lists it.
type KeyLimit struct {
	// Value is the scope value; Row its row.
	Value string
	Row   KeyRow
}

// ValidateKeyLimit says why value and count cannot be a key limit of b (a
// scoped budget of node n), as a sentence naming the field and the fix, or
// "" when they can; field is "budget", "value" or "count".
func ValidateKeyLimit(n *plan.Node, b *plan.Budget, value string, count int64) (field, why string) {
	if b.ScopeBy == "" {
		return "budget", fmt.Sprintf("budget %q of node %q has no scopeBy: it keeps one counter for every item, so no value can have its own count; give limits per key to a scoped budget", b.ID, n.Name)
	}
	if value == "" {
		return "value", "the scope value is empty: an item without the scope field is not counted per key; name a value"
	}
	if room := plan.KeyLimitRoom(b.Key); len(value) > room {
		return "value", fmt.Sprintf("the scope value is %d bytes, over the %d this budget's kv keys leave for it; shorten the value (or the budget id and names)", len(value), room)
	}
	if count < 1 || count > plan.MaxKeyCount {
		return "count", fmt.Sprintf("count %d is outside 1..%d: below 1 nothing is ever admitted, above it nothing is limited; give the value's count per %dms (the budget's own is %d)", count, int64(plan.MaxKeyCount), b.TimeMs, b.Count)
	}
	if mc := max(n.Cost.Max, 1); max(1, count/max(b.SubWindows, 1)) < mc {
		return "count", fmt.Sprintf("count %d is %d per sub-window, below the node's largest item cost %d: that value's large items could never be admitted; give at least %d", count, max(1, count/max(b.SubWindows, 1)), mc, mc*max(b.SubWindows, 1))
	}
	return "", ""
}

// PutKeyLimit writes the runtime key limit of value on the scoped budget b
// (the caller validated it with ValidateKeyLimit); the row lives until it
// is deleted.
func PutKeyLimit(ctx context.Context, kv KV, ns string, b *plan.Budget, value string, count int64, now time.Time) (KeyRow, error) {
	row := KeyRow{Count: count, At: now.UnixMilli()}
	raw, err := json.Marshal(row)
	if err != nil {
		return row, fmt.Errorf("encoding the key limit: %w", err)
	}
	res, err := kv.KV(ctx, queen.KVPut(ns, plan.KeyLimitKey(b.Key, value), raw, queen.PutOpts{Forever: true}))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err != nil {
		return row, fmt.Errorf("%w: writing the key limit of budget %q: %w", ErrCall, b.ID, err)
	}
	return row, nil
}

// DeleteKeyLimit deletes the runtime key limit of value on b; found says a
// row was there.
func DeleteKeyLimit(ctx context.Context, kv KV, ns string, b *plan.Budget, value string) (found bool, err error) {
	res, err := kv.KV(ctx, queen.KVDelete(ns, plan.KeyLimitKey(b.Key, value), queen.DeleteOpts{}))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err == nil && len(res.Results) != 1 {
		err = fmt.Errorf("the broker answered %d results for one delete", len(res.Results))
	}
	if err != nil {
		return false, fmt.Errorf("%w: deleting the key limit of budget %q: %w", ErrCall, b.ID, err)
	}
	return res.Results[0].Applied, nil
}

// GetKeyLimit reads the runtime key limit of value on b; ok is false when
// none is set (or the row is not a key limit).
func GetKeyLimit(ctx context.Context, kv KV, ns string, b *plan.Budget, value string) (row KeyRow, ok bool, err error) {
	rows, err := getMany(ctx, kv, ns, []string{plan.KeyLimitKey(b.Key, value)})
	if err != nil {
		return row, false, fmt.Errorf("%w: reading the key limit of budget %q: %w", ErrCall, b.ID, err)
	}
	for _, r := range rows {
		if kr, ok := decodeKeyRow(r.Value); ok {
			return kr, true, nil
		}
	}
	return row, false, nil
}

// ListKeyLimits pages through b's runtime key limits in byte order of
// their values: at most limit (1..1000) after the value after; next is the
// value to pass as after for the next page, "" on the last.
func ListKeyLimits(ctx context.Context, kv KV, ns string, b *plan.Budget, after string, limit int) (out []KeyLimit, next string, err error) {
	prefix := plan.KeyLimitRows(b.Key)
	o := queen.PrefixOpts{Limit: min(max(limit, 1), 1000)}
	if after != "" {
		o.After = prefix + after
	}
	res, err := kv.KV(ctx, queen.KVGetPrefix(ns, prefix, o))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err == nil && len(res.Results) != 1 {
		err = fmt.Errorf("the broker answered %d results for one getPrefix", len(res.Results))
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: listing the key limits of budget %q: %w", ErrCall, b.ID, err)
	}
	r := res.Results[0]
	for _, row := range r.Rows {
		if kr, ok := decodeKeyRow(row.Value); ok && strings.HasPrefix(row.Key, prefix) {
			out = append(out, KeyLimit{Value: row.Key[len(prefix):], Row: kr})
		}
	}
	if r.Truncated && r.NextAfter != "" && strings.HasPrefix(r.NextAfter, prefix) {
		next = r.NextAfter[len(prefix):]
	}
	return out, next, nil
}

func decodeKeyRow(raw json.RawMessage) (KeyRow, bool) {
	var kr KeyRow
	if json.Unmarshal(raw, &kr) != nil || kr.Count < 1 || kr.Count > plan.MaxKeyCount {
		return kr, false
	}
	return kr, true
}

// KeyLimits is one relay's bounded copy of the runtime key limit rows its
// stages' scoped counters look up: each value's row (or its absence) is
// read at most every KeyRefresh, by the claim that finds it stale, in one
// getMany per 256 stale values of a window. A value without a row costs a
// map lookup once it is remembered, however many rows other values have.
// Safe for concurrent use; build it with NewKeyLimits.
type KeyLimits struct {
	kv    KV
	ns    string
	clock clock.Clock
	every time.Duration
	size  int

	mu      sync.Mutex
	entries map[string]keyEntry
	reads   int64
}

type keyEntry struct {
	count int64 // 0: no row
	read  time.Time
}

// NewKeyLimits returns a relay's key limit cache over kv namespace ns;
// every ≤ 0 is KeyRefresh, size ≤ 0 DefaultKeyCache, a nil clock the wall
// clock.
func NewKeyLimits(kv KV, ns string, c clock.Clock, every time.Duration, size int) *KeyLimits {
	if every <= 0 {
		every = KeyRefresh
	}
	if size <= 0 {
		size = DefaultKeyCache
	}
	return &KeyLimits{kv: kv, ns: ns, clock: clock.Or(c), every: every, size: size, entries: map[string]keyEntry{}}
}

// Reads counts the getMany calls the cache made (a figure for tests and
// benchmarks).
func (k *KeyLimits) Reads() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reads
}

// Counts returns the runtime count of each row key (0: no row), reading
// the stale ones first. A failed read answers 0 for the values it could
// not read and remembers nothing of them, so the next claim asks again; the
// error says why.
func (k *KeyLimits) Counts(ctx context.Context, rowKeys []string) ([]int64, error) {
	out := make([]int64, len(rowKeys))
	now := k.clock.Now()
	var stale []string
	k.mu.Lock()
	for i, rk := range rowKeys {
		e, ok := k.entries[rk]
		if ok && now.Sub(e.read) < k.every {
			out[i] = e.count
			continue
		}
		stale = append(stale, rk)
	}
	k.mu.Unlock()
	if len(stale) == 0 {
		return out, nil
	}
	stale = dedupe(stale)
	read := make(map[string]int64, len(stale))
	var firstErr error
	for start := 0; start < len(stale); start += maxGetMany {
		chunk := stale[start:min(start+maxGetMany, len(stale))]
		res, err := k.kv.KV(ctx, queen.KVGetMany(k.ns, chunk...))
		if err == nil && res.Refused() {
			err = res.Err()
		}
		if err == nil && len(res.Results) != 1 {
			err = fmt.Errorf("the broker answered %d results for one getMany", len(res.Results))
		}
		k.mu.Lock()
		k.reads++
		k.mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: reading %d key limit rows: %w", ErrCall, len(chunk), err)
			}
			continue
		}
		r := res.Results[0]
		for _, row := range r.Rows {
			if kr, ok := decodeKeyRow(row.Value); ok {
				read[row.Key] = kr.Count
			} else {
				read[row.Key] = 0
			}
		}
		for _, m := range r.Missing {
			read[m] = 0
		}
	}
	k.mu.Lock()
	if len(k.entries)+len(read) > k.size {
		k.evict(now, len(read))
	}
	for rk, c := range read {
		k.entries[rk] = keyEntry{count: c, read: now}
	}
	k.mu.Unlock()
	for i, rk := range rowKeys {
		if c, ok := read[rk]; ok {
			out[i] = c
		}
	}
	return out, firstErr
}

// evict makes room for n entries: stale entries first, then any (map
// order), down to size − n. Called with mu held.
func (k *KeyLimits) evict(now time.Time, n int) {
	for rk, e := range k.entries {
		if now.Sub(e.read) >= k.every {
			delete(k.entries, rk)
		}
	}
	for rk := range k.entries {
		if len(k.entries)+n <= k.size {
			return
		}
		delete(k.entries, rk)
	}
}

// KeyCeilings sets the ceiling (Max, and Widest) of every counter of b
// that a scoped budget of node n minted to that scope value's own for
// path: its runtime row's count when one is set, else the document's
// (plan.Budget.Keys), else the budget's — so a deleted row falls back at
// once. Counters of unscoped budgets are left alone. The error is a failed
// read (the document's counts were used for what it could not read).
func (l *Limiter) KeyCeilings(ctx context.Context, n *plan.Node, path string, b *Batch) error {
	type slot struct {
		counter int
		budget  *plan.Budget
		value   string
	}
	var slots []slot
	for i := range b.Counters {
		c := &b.Counters[i]
		bd := scopedBudget(n, c.BudgetID)
		if bd == nil || len(c.Key) <= len(bd.Key) || !strings.HasPrefix(c.Key, bd.Key) || c.Key[len(bd.Key)] != ':' {
			continue
		}
		slots = append(slots, slot{counter: i, budget: bd, value: c.Key[len(bd.Key)+1:]})
	}
	if len(slots) == 0 {
		return nil
	}
	var runtime []int64
	var err error
	if l.Keys != nil {
		// A value that fits its counter key but not a row key (the row's
		// prefix is longer) can have no runtime limit: it is not asked for,
		// or the broker would refuse the whole read.
		rowKeys := make([]string, 0, len(slots))
		at := make([]int, len(slots))
		for j, s := range slots {
			at[j] = -1
			if len(s.value) <= plan.KeyLimitRoom(s.budget.Key) {
				at[j] = len(rowKeys)
				rowKeys = append(rowKeys, plan.KeyLimitKey(s.budget.Key, s.value))
			}
		}
		var counts []int64
		counts, err = l.Keys.Counts(ctx, rowKeys)
		runtime = make([]int64, len(slots))
		for j := range slots {
			if at[j] >= 0 {
				runtime[j] = counts[at[j]]
			}
		}
	}
	for j, s := range slots {
		count, _ := s.budget.KeyCount(s.value)
		if runtime != nil && runtime[j] > 0 {
			count = runtime[j]
		}
		c := &b.Counters[s.counter]
		c.Max = n.KeyCeiling(s.budget, path, count)
		c.Widest = max(c.Max, s.budget.CountCeiling(count, n.WidestShare))
	}
	return err
}

// scopedBudget is the scoped budget of n with id, nil when none.
func scopedBudget(n *plan.Node, id string) *plan.Budget {
	for i := range n.Budgets {
		if n.Budgets[i].ID == id && n.Budgets[i].ScopeBy != "" {
			return &n.Budgets[i]
		}
	}
	return nil
}
