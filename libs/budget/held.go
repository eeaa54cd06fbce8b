package budget

import "time"

// The arithmetic of a held claim (a claim whose head's window does not
// open within a second, kept leased by its stage while the stage's workers
// go on popping): which keys to read for it, whether its head fits the
// counters as one read shows them, and why a counter refused.

// ItemKeys appends the kv keys of the counters item i touches to dst.
func (b *Batch) ItemKeys(i int, dst []string) []string {
	if i < 0 || i >= len(b.Items) {
		return dst
	}
	for _, k := range b.Items[i].Counters {
		dst = append(dst, b.Counters[k].Key)
	}
	return dst
}

// Opens judges item i against its counters as live shows them at now:
// fits reports whether an incr of its cost with max = each counter's
// ceiling would apply on every one of them (an absent or expired counter
// is empty; one holding something other than a number never takes an
// incr), and at is the latest window end among the counters that have no
// room, the earliest instant the item can fit (zero when a full counter's
// end is unknown). A fit is a reason to try again, never an admission:
// only the charge decides.
func (b *Batch) Opens(i int, live map[string]Reading, now time.Time) (fits bool, at time.Time) {
	if i < 0 || i >= len(b.Items) {
		return true, time.Time{}
	}
	it := &b.Items[i]
	fits = true
	for _, k := range it.Counters {
		c := &b.Counters[k]
		r, ok := live[c.Key]
		if !ok || !r.Found || (!r.ExpiresAt.IsZero() && !r.ExpiresAt.After(now)) {
			continue
		}
		if !r.NotANumber && Fits(r.Value, it.Cost, c.Max) {
			continue
		}
		fits = false
		if r.ExpiresAt.After(at) {
			at = r.ExpiresAt
		}
	}
	if fits {
		at = time.Time{}
	}
	return fits, at
}

// Denial reasons: why a counter refused a window, the label of the relay's
// gate_relay_denials_total.
const (
	// ReasonCeiling: the sub-window is full at the budget's widest ceiling
	// (every path at the node is refused until it turns).
	ReasonCeiling = "ceiling"
	// ReasonShare: this path's share of the sub-window is spent while the
	// budget's widest ceiling still has room (a path with a larger share
	// may still charge it: the reserve holding).
	ReasonShare = "share"
	// ReasonBackoff: the counter's window ends later than one sub-window
	// from now, which only a backoff (a put with the vendor's Retry-After)
	// does; it admits nothing until then or a lift.
	ReasonBackoff = "backoff"
)

// Reason says why counter k of b refused, from the state a refused charge
// read (State) at now: a window that outlives its sub-window is a backoff;
// otherwise a value below the counter's widest ceiling (Counter.Widest;
// zero = the path's own) is the path's share, else the ceiling.
func (b *Batch) Reason(c *Charge, k int, now time.Time) string {
	if k < 0 || k >= len(b.Counters) {
		return ReasonCeiling
	}
	ct := &b.Counters[k]
	if k < len(c.State) {
		st := c.State[k]
		ttl := time.Duration(max(ct.TTLSeconds, 1)) * time.Second
		// A second of slack: a sub-window read at its very start ends a
		// whole TTL after a charge a moment earlier.
		if st.Known && !st.ExpiresAt.IsZero() && st.ExpiresAt.Sub(now) > ttl+time.Second {
			return ReasonBackoff
		}
		if st.Known && ct.Widest > ct.Max && st.Value < ct.Widest {
			return ReasonShare
		}
	}
	return ReasonCeiling
}
