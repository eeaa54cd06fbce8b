package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Reading is one kv key as a counter read shows it now.
type Reading struct {
	// Value is the counter (0 when absent, or when the key holds something
	// that is not a whole number, such as a breaker record read in the same
	// call).
	Value int64
	// ExpiresAt is the end of the counter's window (zero when absent or
	// without expiry).
	ExpiresAt time.Time
	// Found says the key exists, whatever it holds.
	Found bool
	// NotANumber says the key exists and holds something other than a
	// whole number (a breaker record read in the same call, a row another
	// writer put): Value reads 0 but is no count, so nothing judges it as
	// one.
	NotANumber bool
}

// WindowEnd is the window end in epoch milliseconds, when the key exists
// and expires.
func (r Reading) WindowEnd() (ms int64, ok bool) {
	if !r.Found || r.ExpiresAt.IsZero() {
		return 0, false
	}
	return r.ExpiresAt.UnixMilli(), true
}

// ResetsIn is how long until the window ends, seen at now: 0 when absent,
// without expiry or already past.
func (r Reading) ResetsIn(now time.Time) time.Duration {
	if !r.Found || r.ExpiresAt.IsZero() {
		return 0
	}
	return max(r.ExpiresAt.Sub(now), 0)
}

// Spent reports whether the counter stands at or above ceiling in a window
// still live at now (nothing more fits until it ends). A ceiling of 0 or
// less is never spent: there is no ceiling to judge against.
func (r Reading) Spent(ceiling int64, now time.Time) bool {
	return ceiling > 0 && r.Found && Utilisation(r.Value, ceiling) >= 1 && r.ExpiresAt.After(now)
}

// ReadCounters reads keys of namespace ns (deduplicated) in one getMany,
// without writing anything. A key absent from the answer is absent from the
// map (its zero Reading says value 0, no window). No keys make no call. A
// failed, refused or malformed answer is an error wrapping ErrCall.
func ReadCounters(ctx context.Context, kv KV, ns string, keys []string) (map[string]Reading, error) {
	keys = dedupe(keys)
	out := make(map[string]Reading, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := getMany(ctx, kv, ns, keys)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %d counters: %w", ErrCall, len(keys), err)
	}
	for _, row := range rows {
		rd := Reading{Found: true}
		if v, err := row.Int64(); err == nil {
			rd.Value = v
		} else {
			rd.NotANumber = true
		}
		if t, err := row.ExpiresAt.Time(); err == nil {
			rd.ExpiresAt = t
		}
		out[row.Key] = rd
	}
	return out, nil
}

// getMany reads keys of namespace ns in one getMany and returns the rows
// present: a failed or refused call, or an answer without exactly one
// result, is an error (the caller wraps it with what it was reading).
func getMany(ctx context.Context, kv KV, ns string, keys []string) ([]queen.KVRow, error) {
	res, err := kv.KV(ctx, queen.KVGetMany(ns, keys...))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err == nil && len(res.Results) != 1 {
		err = fmt.Errorf("the broker answered %d results for one getMany", len(res.Results))
	}
	if err != nil {
		return nil, err
	}
	return res.Results[0].Rows, nil
}

// ReadKeys is ReadCounters in the limiter's namespace.
func (l *Limiter) ReadKeys(ctx context.Context, keys []string) (map[string]Reading, error) {
	return ReadCounters(ctx, l.KV, l.NS, keys)
}

// ReadNodes reads the live counters of nodes, every distinct unscoped
// counter of each (Unscoped), and the extra keys (a breaker record, a
// shared budget's key) in one getMany of namespace ns, writing nothing.
// It is the one read behind every view of a graph's live counters: the
// graph view, the console's lists and shared budgets, the product metrics,
// the diagnostics and the ETA. The map and the error are ReadCounters':
// a Reading per key found, none for an absent key, no call without keys.
func ReadNodes(ctx context.Context, kv KV, ns string, nodes []plan.Node, extra ...string) (map[string]Reading, error) {
	var keys []string
	for i := range nodes {
		for _, c := range Unscoped(&nodes[i]) {
			keys = append(keys, c.Key)
		}
	}
	return ReadCounters(ctx, kv, ns, append(keys, extra...))
}

// ReadNodes is the package's ReadNodes in the limiter's namespace.
func (l *Limiter) ReadNodes(ctx context.Context, nodes []plan.Node, extra ...string) (map[string]Reading, error) {
	return ReadNodes(ctx, l.KV, l.NS, nodes, extra...)
}

// Full reads a node's unscoped counters (cs as Unscoped gives them, each at
// the plan's widest ceiling) and reports whether not one of them has room
// for an item of cost, and wait, the whole seconds (at least 1) until the
// last of their windows ends, seen at now. It is a front door's shedding
// check, so what cannot be judged never sheds: no counters, an absent key
// or one holding something other than a number answer not full, and so
// does a failed read, with its error (wrapping ErrCall).
func (l *Limiter) Full(ctx context.Context, cs []NodeCounter, cost int64, now time.Time) (wait int64, full bool, err error) {
	if len(cs) == 0 {
		return 0, false, nil
	}
	live, err := l.ReadKeys(ctx, Keys(cs))
	if err != nil {
		return 0, false, err
	}
	wait = 1
	for _, c := range cs {
		r := live[c.Key]
		if !r.Found || r.NotANumber || Fits(r.Value, cost, c.Ceiling) {
			return 0, false, nil
		}
		wait = max(wait, wholeSeconds(r.ResetsIn(now)))
	}
	return wait, true, nil
}

// wholeSeconds is d rounded up to whole seconds.
func wholeSeconds(d time.Duration) int64 {
	return (d.Milliseconds() + 999) / 1000
}
