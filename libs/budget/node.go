package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// The node-level counter protocol gate-api uses: spending a node's window
// to its ceiling (a backoff), lifting it, reading it and judging it. The
// ceilings come from the plan, never recomputed.

// NodeCounter is one distinct unscoped counter of a node with the highest
// ceiling a visiting path may charge it to.
type NodeCounter struct {
	Key     string
	Ceiling int64
}

// Unscoped returns a node's distinct unscoped counters (two budgets on one
// key count once, at the higher ceiling: the broker refuses a call that
// writes a key twice).
func Unscoped(n *plan.Node) []NodeCounter {
	var out []NodeCounter
	at := map[string]int{}
	for i := range n.Budgets {
		b := &n.Budgets[i]
		if b.ScopeBy != "" {
			continue
		}
		c := b.WidestCeiling()
		if j, ok := at[b.Key]; ok {
			out[j].Ceiling = max(out[j].Ceiling, c)
			continue
		}
		at[b.Key] = len(out)
		out = append(out, NodeCounter{Key: b.Key, Ceiling: c})
	}
	return out
}

// Keys lists the counters' keys.
func Keys(cs []NodeCounter) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key
	}
	return out
}

// Spend writes every counter to its ceiling for seconds (a put moves the
// window's end; an incr cannot), so no path admits until the window ends
// or Lift. refund > 0 first credits that many cost units back (incr with
// min 0, a give-back of calls the vendor refused), best effort: its error
// is returned as refundErr while the spend goes on.
func (l *Limiter) Spend(ctx context.Context, cs []NodeCounter, seconds, refund int64) (refundErr, err error) {
	if refund > 0 {
		ops := make([]queen.KVOp, 0, len(cs))
		for _, c := range cs {
			ops = append(ops, queen.KVIncr(l.NS, c.Key, -refund, queen.IncrOpts{TTLSeconds: seconds, Min: queen.Int(0)}))
		}
		if _, rerr := l.KV.KV(ctx, ops...); rerr != nil {
			refundErr = fmt.Errorf("%w: crediting the refund: %w", ErrCall, rerr)
		}
	}
	ops := make([]queen.KVOp, 0, len(cs))
	for _, c := range cs {
		ops = append(ops, queen.KVPut(l.NS, c.Key, json.RawMessage(strconv.FormatInt(c.Ceiling, 10)), queen.PutOpts{TTLSeconds: seconds}))
	}
	res, err := l.KV.KV(ctx, ops...)
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err != nil {
		return refundErr, fmt.Errorf("%w: spending %d counters: %w", ErrCall, len(cs), err)
	}
	return refundErr, nil
}

// Lift deletes the counters, and the extra keys that go with them (a
// breaker record), in one call: the next admission opens a fresh window.
func (l *Limiter) Lift(ctx context.Context, cs []NodeCounter, extra ...string) error {
	ops := make([]queen.KVOp, 0, len(cs)+len(extra))
	for _, k := range append(Keys(cs), extra...) {
		ops = append(ops, queen.KVDelete(l.NS, k, queen.DeleteOpts{}))
	}
	res, err := l.KV.KV(ctx, ops...)
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err != nil {
		return fmt.Errorf("%w: lifting %d counters: %w", ErrCall, len(cs), err)
	}
	return nil
}

func dedupe(keys []string) []string {
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Fits reports whether an item of cost fits a counter reading value under
// ceiling (what an incr with max = ceiling would decide).
func Fits(value, cost, ceiling int64) bool { return value+cost <= ceiling }

// Utilisation is value over ceiling: how much of what the path may charge
// the counter is used (1 is full, above 1 when a wider path or another
// spender on a shared key took more).
//
// A ceiling of 0 or less is a counter no path has a share of (declare
// refuses a share that rounds to 0, share-rounds-out, so only an edited or
// older plan has one): there is nothing of it to use, so its utilisation is
// 0 — never the value over a stand-in ceiling of 1, which would rank a
// counter nobody may charge as many times over full and name it the worst
// or binding budget ahead of one that is filling. A field that can say "no
// ceiling" (the graph view's and the flow's null) says that instead. Every
// view that reports a utilisation follows this one rule.
func Utilisation(value, ceiling int64) float64 {
	if ceiling <= 0 {
		return 0
	}
	return float64(value) / float64(ceiling)
}

// Headroom is what a counter reading value may still take under ceiling.
func Headroom(value, ceiling int64) int64 { return max(0, ceiling-value) }
