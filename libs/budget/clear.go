package budget

import (
	"math"
	"time"

	"github.com/queen-mq/gate/libs/plan"
)

// ClearsIn is how long after now the counter of budget b needs before want
// more cost units of path have fitted under the path's ceiling, at the
// refill schedule the plan declares (gate-runtime §3.7): the headroom the
// reading leaves takes the first units at once; the rest wait for fresh
// windows of one ceiling each, the first opening when the live window ends
// (ResetsIn: at once when the counter is absent or its window is over) and
// one more every b.WindowSubSeconds. The wait is when the last window
// needed opens: a bound no earlier than which the units can be admitted,
// never a promise. A reading that holds no number counts as spent 0, as an
// absent one. A wait past the longest time.Duration (about 292 years) is
// that longest Duration.
//
// ok is false when the path's ceiling is 0 or less: a path with no share of
// the counter never fits anything under it, so no wait can be said.
func (r Reading) ClearsIn(want int64, b *plan.Budget, path string, now time.Time) (wait time.Duration, ok bool) {
	ceiling := b.Ceiling(path)
	if ceiling <= 0 {
		return 0, false
	}
	head := Headroom(r.Value, ceiling)
	if want <= head {
		return 0, true
	}
	// Windows needed: the units beyond the headroom, one ceiling per
	// window, rounded up (at least one, since want > head).
	windows := (want - head) / ceiling
	if (want-head)%ceiling != 0 {
		windows++
	}
	return after(r.ResetsIn(now), windows-1, b.WindowSubSeconds), true
}

// after is first plus n windows of secs seconds each, saturating at the
// longest Duration.
func after(first time.Duration, n, secs int64) time.Duration {
	if n <= 0 || secs <= 0 {
		return first
	}
	room := int64((time.Duration(math.MaxInt64) - first) / time.Second)
	if n > room/secs {
		return time.Duration(math.MaxInt64)
	}
	return first + time.Duration(n*secs)*time.Second
}
