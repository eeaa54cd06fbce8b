package budget

import (
	"math"
	"math/rand/v2"
	"time"
)

// Prefix returns how many leading items of b fit the counters as the
// charge c read them: per counter, remaining = max(0, Max − (value − own
// applied delta)); items are walked in order and the prefix ends before the
// first item that would push any of its counters past its remaining.
// Counters the charge did not read are unlimited. Prefix, never subset: a
// later item that would fit is never admitted past an earlier one that
// does not.
func Prefix(b *Batch, c *Charge) int {
	remaining := remainingInto(make([]int64, len(b.Counters)), b, c)
	acc := make([]int64, len(b.Counters))
	// A run of identical items (AddN's) is judged at once: as many of it
	// fit as the tightest of its counters has room for.
	for n := 0; n < len(b.Items); {
		end := b.runEnd(n, len(b.Items))
		it := &b.Items[n]
		fit := fitRun(remaining, acc, it.Cost, it.Counters, int64(end-n))
		if fit < int64(end-n) {
			return n + int(fit)
		}
		n = end
	}
	return len(b.Items)
}

// remainingInto fills remaining (one per counter of b) with what each
// counter has room for as the charge c read it: max(0, Max − (value − own
// applied delta)), math.MaxInt64 for a counter c did not read.
func remainingInto(remaining []int64, b *Batch, c *Charge) []int64 {
	for i := range b.Counters {
		if i >= len(c.State) || !c.State[i].Known {
			remaining[i] = math.MaxInt64
			continue
		}
		used := c.State[i].Value
		if c.Applied[i] {
			used -= c.Delta[i]
		}
		remaining[i] = max(0, b.Counters[i].Max-used)
	}
	return remaining
}

// fitRun is how many of a run of n items of cost touching counters fit
// after acc (the cost the earlier items put on each counter) against
// remaining; it adds the fitting items' cost to acc.
func fitRun(remaining, acc []int64, cost int64, counters []int, n int64) int64 {
	fit := n
	if cost > 0 {
		for _, k := range counters {
			if remaining[k] == math.MaxInt64 {
				continue
			}
			fit = min(fit, max(remaining[k]-acc[k], 0)/cost)
		}
	}
	for _, k := range counters {
		acc[k] += cost * fit
	}
	return fit
}

// Wait is how long until every refused counter of c opens a new window:
// the maximum over refused counters of their window end minus now (max,
// not min — the window only fits when all of them have rotated). A refused
// counter with no known end contributes 0, "retry now".
func Wait(c *Charge, now time.Time) time.Duration { return waitFor(c, c.Refused(), now) }

// waitFor is Wait over the refused counters already listed.
func waitFor(c *Charge, refused []int, now time.Time) time.Duration {
	var w time.Duration
	for _, i := range refused {
		if exp := c.State[i].ExpiresAt; !exp.IsZero() {
			w = max(w, exp.Sub(now))
		}
	}
	return max(w, 0)
}

// Park constants: the floor of one park sleep and the jitter span bounds.
const (
	MinParkSleep = 50 * time.Millisecond
	maxJitterMs  = 200
)

// ParkSleep is the sleep of one park for wait: max(wait + jitter, 50 ms),
// jitter uniform in [0, clamp(floor(wait_ms/4) + 20, 1, 200)) ms, so
// workers refused by one window do not all wake at its edge. rnd nil uses
// the global source.
func ParkSleep(wait time.Duration, rnd *rand.Rand) time.Duration {
	span := min(max(wait.Milliseconds()/4+20, 1), maxJitterMs)
	var j int64
	if rnd != nil {
		j = rnd.Int64N(span)
	} else {
		j = rand.Int64N(span)
	}
	return max(wait+time.Duration(j)*time.Millisecond, MinParkSleep)
}

// Parking is one handler invocation's park budget: the claim is held while
// parked time plus the next wait fits MaxPark, and released otherwise. The
// zero value has no budget (every wait releases).
type Parking struct {
	// MaxPark is GATE_MAX_PARK_MS.
	MaxPark time.Duration
	// Total is the time parked so far.
	Total time.Duration
}

// Fits reports whether a park of wait may be taken.
func (p *Parking) Fits(wait time.Duration) bool { return p.Total+wait <= p.MaxPark }

// Spent records a park sleep.
func (p *Parking) Spent(d time.Duration) { p.Total += d }

// Exhausted reports whether the whole budget was held (a release then
// deserves a warning: the claim waited all it could and still did not fit).
func (p *Parking) Exhausted() bool { return p.Total >= p.MaxPark }
