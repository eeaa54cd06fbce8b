package budget

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
)

// The arithmetic of an explanation: which counters one item (a scope value
// and an op at a node, on a path) would charge, how a read shows each, and
// which one holds it back and until when. gate-api's explain route reads
// the counters and answers with this; nothing here writes a counter.

// Counter kinds of an explanation.
const (
	// KindUnscoped: one counter for every item of the node.
	KindUnscoped = "unscoped"
	// KindScoped: one counter per scope value.
	KindScoped = "scoped"
	// KindShared: a key other nodes or graphs charge too.
	KindShared = "shared"
)

// ItemCounter is one counter an item would charge, as a read showed it.
type ItemCounter struct {
	// Budget is the budget's id; Kind one of the Kind constants.
	Budget, Kind string
	// Key is the kv key (for a scoped budget, with the scope value).
	Key string
	// Value is the counter now (0 when absent or its window is over).
	Value int64
	// Ceiling is what the item's path may charge the counter to; Widest
	// the widest ceiling of any path through the node; Shares every
	// path's ceiling by path name.
	Ceiling, Widest int64
	Shares          map[string]int64
	// WindowSeconds is the sub-window (the counter's TTL).
	WindowSeconds int64
	// FreesAt is the end of the live window (zero when none is live).
	FreesAt time.Time
	// Fits reports whether an incr of the item's cost would apply now;
	// Reason says why not (ReasonCeiling, ReasonShare, ReasonBackoff).
	Fits   bool
	Reason string
	// KeyCount is, for a scoped counter, what its scope value counts per
	// the budget's timeMs, and KeySource where that comes from: "runtime"
	// (a key limit row, ItemKeyLimits), "document" (the budget's keys) or
	// "budget" (its own count). Zero and "" for other kinds.
	KeyCount  int64
	KeySource string
}

// ScopeTooLongError is a scope value that makes a budget's kv key longer
// than the broker takes (the push door refuses such an item).
type ScopeTooLongError struct {
	Budget, Key string
	// Room is the longest value the key has room for; Bytes the value's.
	Room, Bytes int
}

func (e *ScopeTooLongError) Error() string {
	return fmt.Sprintf("budget '%s' counts per scope value, and a value of %d bytes makes its counter key %s:… pass the broker's %d-byte limit, which leaves %d bytes for the value", e.Budget, e.Bytes, e.Key, plan.MaxKVKeyBytes, max(e.Room, 0))
}

// ItemCounters lists the counters an item with op and scope value would
// charge at node n on path, in the node's budget order, as the relay's
// stage builds them: a budget limited to other ops is skipped, a scoped
// budget charges key:scope. Without a scope value (hasScope false) the
// scoped budgets are not judged and are returned as unjudged ids. A value
// too long for a budget's key is a *ScopeTooLongError.
func ItemCounters(n *plan.Node, path, op, scope string, hasScope bool) (out []ItemCounter, unjudged []string, err error) {
	for i := range n.Budgets {
		b := &n.Budgets[i]
		if !cost.Applies(b.WhenOp, op) {
			continue
		}
		kind := KindUnscoped
		key := b.Key
		switch {
		case b.ScopeBy != "":
			if !hasScope {
				unjudged = append(unjudged, b.ID)
				continue
			}
			if room := plan.ScopeRoom(b.Key); len(scope) > room {
				return nil, nil, &ScopeTooLongError{Budget: b.ID, Key: b.Key, Room: room, Bytes: len(scope)}
			}
			kind, key = KindScoped, plan.ScopedKey(b.Key, scope)
		case b.Shared:
			kind = KindShared
		}
		c := ItemCounter{Budget: b.ID, Kind: kind, Key: key, Ceiling: b.Ceiling(path), Widest: b.WidestCeiling(),
			Shares: make(map[string]int64, len(b.Ceilings)), WindowSeconds: b.WindowSubSeconds}
		for p, v := range b.Ceilings {
			c.Shares[p] = v
		}
		if kind == KindScoped {
			count, declared := b.KeyCount(scope)
			source := "budget"
			if declared {
				source = "document"
			}
			c.keyCount(n, b, path, count, source)
		}
		out = append(out, c)
	}
	return out, unjudged, nil
}

// keyCount sets a scoped counter's ceilings to those of its value's count
// (the relay's arithmetic: plan.Node.KeyCeiling on every path).
func (c *ItemCounter) keyCount(n *plan.Node, b *plan.Budget, path string, count int64, source string) {
	c.KeyCount, c.KeySource = count, source
	c.Ceiling = n.KeyCeiling(b, path, count)
	c.Widest = 0
	for p := range b.Ceilings {
		c.Shares[p] = n.KeyCeiling(b, p, count)
		c.Widest = max(c.Widest, c.Shares[p])
	}
}

// ItemKeyLimits gives the scoped counters of cs (ItemCounters of scope
// value scope at node n on path) the value's runtime key limits, read in
// one getMany: a row wins over the document's count, as on the relay.
func (l *Limiter) ItemKeyLimits(ctx context.Context, n *plan.Node, path, scope string, cs []ItemCounter) error {
	var keys []string
	at := map[string]*plan.Budget{}
	for i := range cs {
		if cs[i].Kind != KindScoped {
			continue
		}
		b := scopedBudget(n, cs[i].Budget)
		if b == nil || len(scope) > plan.KeyLimitRoom(b.Key) {
			continue
		}
		rk := plan.KeyLimitKey(b.Key, scope)
		keys = append(keys, rk)
		at[rk] = b
	}
	if len(keys) == 0 {
		return nil
	}
	rows, err := getMany(ctx, l.KV, l.NS, dedupe(keys))
	if err != nil {
		return fmt.Errorf("%w: reading %d key limit rows: %w", ErrCall, len(keys), err)
	}
	for _, r := range rows {
		kr, ok := decodeKeyRow(r.Value)
		b := at[r.Key]
		if !ok || b == nil {
			continue
		}
		for i := range cs {
			if cs[i].Kind == KindScoped && cs[i].Budget == b.ID {
				cs[i].keyCount(n, b, path, kr.Count, "runtime")
			}
		}
	}
	return nil
}

// ClearsAt is when want units have passed the counter at its path's
// ceiling, one ceiling per window from the live one's end (the ETA's
// arithmetic); ok is false when the ceiling is 0.
func (c *ItemCounter) ClearsAt(want int64, now time.Time) (time.Time, bool) {
	return clearsAt(c, want, now)
}

// Judgement is what the counters of one item come to.
type Judgement struct {
	Counters []ItemCounter
	// Binding is the index of the counter that holds the item longest
	// (-1 when every counter has room).
	Binding int
	// Earliest is the earliest instant the item can be admitted, a bound
	// (no earlier than): every refusing counter's window over, and the
	// items ahead of it through the unscoped counters at one ceiling per
	// window. It is now when nothing holds the item.
	Earliest time.Time
}

// JudgeItem reads each counter of cs in live at now (an item of cost,
// ahead items before it in its partition, each of the same cost): its
// value and window end, whether the item fits and why not, the counter
// that binds and the earliest admission. A counter the read does not show
// is empty. until, when after now, is a backoff's deadline: nothing is
// admitted before it.
func JudgeItem(cs []ItemCounter, itemCost, ahead int64, live map[string]Reading, until, now time.Time) Judgement {
	j := Judgement{Counters: cs, Binding: -1, Earliest: now}
	if until.After(j.Earliest) {
		j.Earliest = until
	}
	var bindAt time.Time
	for i := range cs {
		c := &cs[i]
		r := live[c.Key]
		if r.Found && !r.NotANumber && (r.ExpiresAt.IsZero() || r.ExpiresAt.After(now)) {
			c.Value = r.Value
			c.FreesAt = r.ExpiresAt
		}
		c.Fits = !r.NotANumber && Fits(c.Value, itemCost, c.Ceiling)
		at := now
		if !c.Fits {
			c.Reason = c.reason(now)
			if !c.FreesAt.IsZero() {
				at = c.FreesAt
			}
		}
		// The items ahead pass through the unscoped counters first (a
		// scoped counter is charged only by items of this value).
		if c.Kind != KindScoped {
			if w, ok := clearsAt(c, (ahead+1)*itemCost, now); ok && w.After(at) {
				at = w
			}
		}
		if at.After(j.Earliest) {
			j.Earliest = at
		}
		if !c.Fits && (j.Binding < 0 || at.After(bindAt)) {
			j.Binding, bindAt = i, at
		}
	}
	return j
}

// clearsAt is when want units have passed counter c at its path's ceiling
// (ClearsIn's arithmetic); ok is false when the ceiling is 0.
func clearsAt(c *ItemCounter, want int64, now time.Time) (time.Time, bool) {
	if c.Ceiling <= 0 {
		return time.Time{}, false
	}
	head := Headroom(c.Value, c.Ceiling)
	if want <= head {
		return now, true
	}
	windows := (want - head + c.Ceiling - 1) / c.Ceiling
	first := time.Duration(0)
	if !c.FreesAt.IsZero() {
		first = max(c.FreesAt.Sub(now), 0)
	}
	return now.Add(after(first, windows-1, c.WindowSeconds)), true
}

// reason says why c refuses at now: a window that outlives its sub-window
// is a backoff; a value under the widest ceiling is the path's share;
// otherwise the ceiling (Batch.Reason's rule).
func (c *ItemCounter) reason(now time.Time) string {
	ttl := time.Duration(max(c.WindowSeconds, 1)) * time.Second
	if !c.FreesAt.IsZero() && c.FreesAt.Sub(now) > ttl+time.Second {
		return ReasonBackoff
	}
	if c.Widest > c.Ceiling && c.Value < c.Widest {
		return ReasonShare
	}
	return ReasonCeiling
}

// SortedShares is c's per-path ceilings in path order.
func (c *ItemCounter) SortedShares() []string {
	out := make([]string, 0, len(c.Shares))
	for p := range c.Shares {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
