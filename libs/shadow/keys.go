package shadow

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/queen-mq/gate/internal/jsonkit"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
)

// DefaultKeysPerSecond is how many distinct (scope values, op) one node
// records per second while a keyed candidate is set (the relay's
// GATE_SHADOW_KEYS_PER_SECOND); the items of any further ones are counted
// in the second's overflow, judged without their values and reported as
// approximate.
const DefaultKeysPerSecond = 1000

// Need is what the recording must keep of one node's items for a keyed
// candidate to be judged: the scope value at each of Fields (every
// scopeBy its budgets name, sorted) and, when Ops, the item's op (some
// budget charges only some ops).
type Need struct {
	Fields []string
	Ops    bool
}

// Keyed reports whether the recording must keep anything per item.
func (n Need) Keyed() bool { return len(n.Fields) > 0 || n.Ops }

// restricts reports whether a budget's whenOp leaves some op uncharged
// (nil charges every item, and so does any list holding "*").
func restricts(whenOp []string) bool {
	return whenOp != nil && !slices.Contains(whenOp, "*")
}

// keyed reports whether b needs the recording's values: a scoped budget,
// or one limited to some ops.
func keyed(b *plan.Budget) bool { return b.ScopeBy != "" || restricts(b.WhenOp) }

// Needs is what the recording must keep per node for c: only the nodes
// whose candidate budgets are scoped or limited to some ops. The budgets
// are read loosely (a candidate is validated by Compile; here only
// scopeBy and whenOp are looked at, and a list that does not read needs
// nothing).
func Needs(c Candidate) map[string]Need {
	out := map[string]Need{}
	for name, raw := range c.Nodes {
		var budgets []struct {
			ScopeBy string   `json:"scopeBy"`
			WhenOp  []string `json:"whenOp"`
		}
		if json.Unmarshal(raw, &budgets) != nil {
			continue
		}
		var n Need
		for _, b := range budgets {
			if b.ScopeBy != "" && !slices.Contains(n.Fields, b.ScopeBy) {
				n.Fields = append(n.Fields, b.ScopeBy)
			}
			n.Ops = n.Ops || restricts(b.WhenOp)
		}
		sort.Strings(n.Fields)
		if n.Keyed() {
			out[name] = n
		}
	}
	return out
}

// AppendScope appends the recorded scope of one item to dst: a JSON
// object with one member per field of need, in order, each the value
// cost.Scope reads at that payload path (the relay's own derivation of a
// scoped counter's key) or null when the item has none there. A value
// longer than the broker's key (plan.MaxKVKeyBytes) can never be a
// counter key, and one that is not UTF-8 cannot be recorded exactly: ok
// is false and the item belongs in the overflow.
func AppendScope(dst []byte, need Need, data []byte) (out []byte, ok bool) {
	dst = append(dst, '{')
	for i, f := range need.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonkit.AppendString(dst, f)
		dst = append(dst, ':')
		v, has := cost.Scope(data, f)
		switch {
		case !has:
			dst = append(dst, "null"...)
		case len(v) > plan.MaxKVKeyBytes || !utf8.ValidString(v):
			// No key can hold it, or JSON cannot carry it byte for byte
			// (the push door refuses such payloads; a direct push may
			// not).
			return dst, false
		default:
			dst = jsonkit.AppendString(dst, v)
		}
	}
	return append(dst, '}'), true
}

// scopeOf reads a recorded scope (AppendScope's object): each field's
// value, nil when the item had none; a field missing from the object was
// not recorded.
func scopeOf(s string) (map[string]*string, error) {
	var m map[string]*string
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, fmt.Errorf("a recorded scope %q is not a JSON object of strings and nulls: %w", s, err)
	}
	return m, nil
}
