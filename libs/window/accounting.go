package window

import (
	"math"
	"slices"
)

// Sample is one read of a budget counter (a kv getMany row).
type Sample struct {
	// AtMs is when the read was answered, epoch milliseconds.
	AtMs int64
	// Value is the counter's value.
	Value int64
	// ExpiresAtMs is the row's expiry, epoch milliseconds; 0 means the key
	// was absent (no live window), and such samples are ignored.
	ExpiresAtMs int64
}

// Window is one kv sub-window of a counter as the samples saw it, with the
// items attributed to it.
type Window struct {
	// StartMs and EndMs bound the window: EndMs is the row's expiry and
	// StartMs is EndMs minus the sub-window TTL (or the first sighting for
	// a breaker window).
	StartMs, EndMs int64
	// Final is the last value read while the window was live.
	Final int64
	// FirstSeenMs and LastSeenMs are the first and last reads of it.
	FirstSeenMs, LastSeenMs int64
	// Samples is how many reads saw it.
	Samples int
	// Forwarded is how many items were attributed to it.
	Forwarded int64
	// Shifted is how many of those the boundary reconciliation moved here:
	// stamped just after this window ended (a charge before the stamp), or
	// just before it opened (a stamp before the charging commit).
	Shifted int64
	// Breaker is set when the row lived longer than one sub-window: a
	// backoff wrote it (value and expiry), not an admission.
	Breaker bool
	// Cut is set when the next row appeared before this one's expiry (a
	// backoff or a delete replaced it mid-window).
	Cut bool
	// Judged is set when the window lies inside the judged span and is
	// neither Breaker, Cut nor Unsure.
	Judged bool
	// Unsure is set when items stamped after the last read could have been
	// charged after it, so Final may be stale and a surplus proves nothing.
	Unsure bool
	// Unseen is set for a window no read saw: items were stamped after the
	// window before them had ended and before the next one seen opened,
	// so a charge opened a window that a backoff's put replaced (or that
	// expired) between two reads. StartMs is its first stamp, Final is
	// unknown (0); only its Forwarded is judged, against the ceiling.
	Unseen bool

	stamps []int64
}

// Exact reports whether the items forwarded in the window equal its final
// counter value.
func (w *Window) Exact() bool { return w.Forwarded == w.Final }

// AccountParams configures Account.
type AccountParams struct {
	// TTLMs is the sub-window length (window_sub_seconds × 1000).
	TTLMs int64
	// Ceiling is the most one sub-window may admit (count_sub × the widest
	// share, i.e. count_sub).
	Ceiling int64
	// JudgeFromMs and JudgeToMs bound the span whose windows are judged:
	// windows must start at or after From and end at or before To.
	JudgeFromMs, JudgeToMs int64
	// SlackMs bounds the boundary reconciliation: an item stamped less than
	// SlackMs after a window opened may be moved back to the previous window
	// when that window is short by as many items (0 = 500 ms).
	SlackMs int64
	// BreakerSlackMs is how much longer than TTLMs a row may be seen live
	// before it counts as written by a backoff (0 = 250 ms).
	BreakerSlackMs int64
}

// Accounting is the per-sub-window verdict.
type Accounting struct {
	// Windows are every window the samples saw, in time order.
	Windows []Window
	// Judged and Exact count judged windows and those where forwarded ==
	// final.
	Judged, Exact int
	// Uncharged is Σ(forwarded − final) over judged windows where more
	// items left than the counter recorded: admission without a charge.
	Uncharged int64
	// Lost is Σ(final − forwarded) over judged windows where the counter
	// recorded more than left: a charge without a delivery (over-counting,
	// safe for the vendor but lost capacity).
	Lost int64
	// OverCeiling counts windows (judged or not, breaker excepted) whose
	// final value or forwarded count exceeds the ceiling.
	OverCeiling int
	// MaxFinal and MaxForwarded are the largest final value and forwarded
	// count of any non-breaker window.
	MaxFinal, MaxForwarded int64
	// Shifted is how many items the boundary reconciliation moved back.
	Shifted int64
	// Unattributed counts stamps before the first window.
	Unattributed int
	// Unseen counts windows no read saw (Window.Unseen) that items were
	// attributed to.
	Unseen int
	// Skipped counts windows not judged (outside the span, breaker, cut,
	// or unsure).
	Skipped int
}

// Account groups counter samples into windows (one per distinct expiry),
// attributes every commit stamp to the last window that opened at or before
// it — or, for a stamp after that window ended and before the next one
// opened, to a window no read saw (Window.Unseen: one per sub-window of
// such stamps) —, moves items stamped just after a boundary back to a
// window short by as many (a charge before the stamp: the separate kv
// call) and items stamped just before a boundary forward to a window short
// by as many (a stamp before the charging commit: kv riders), and judges
// every window inside the span: forwarded must equal the final counter
// value, and neither may exceed the ceiling (an unseen window's forwarded
// is judged against the ceiling only).
func Account(samples []Sample, stamps []int64, p AccountParams) Accounting {
	if p.SlackMs <= 0 {
		p.SlackMs = 500
	}
	if p.BreakerSlackMs <= 0 {
		p.BreakerSlackMs = 250
	}
	var acc Accounting
	ws := attribute(Windows(samples, p.TTLMs, p.BreakerSlackMs), stamps, p.TTLMs, &acc)
	// Boundary reconciliation: the relay stamps after it charges, so an item
	// charged at the very end of window i can be stamped after window i+1
	// opened. Move at most the shortfall of i, and only stamps within SlackMs
	// of i+1's start.
	for i := 0; i+1 < len(ws); i++ {
		a, b := &ws[i], &ws[i+1]
		if a.Breaker || b.Breaker {
			continue
		}
		short, extra := a.Final-a.Forwarded, b.Forwarded-b.Final
		if short <= 0 || extra <= 0 {
			continue
		}
		k := min(short, extra)
		moved := int64(0)
		for moved < k && moved < int64(len(b.stamps)) && b.stamps[moved] < b.StartMs+p.SlackMs {
			moved++
		}
		if moved == 0 {
			continue
		}
		a.stamps = append(a.stamps, b.stamps[:moved]...)
		b.stamps = b.stamps[moved:]
		a.Forwarded += moved
		b.Forwarded -= moved
		if b.Unseen {
			// Stamped in the gap after a ended, charged in it: a's own
			// items, not a move across a boundary another window opened.
			continue
		}
		a.Shifted += moved
		acc.Shifted += moved
	}
	// And the mirror: a relay that charges inside its settle transaction
	// (kv riders) stamps while building it, before the commit that charges,
	// so an item stamped at the very end of window i can be charged to
	// window i+1, which its own commit opened. Move at most the surplus of
	// i into a short i+1, and only stamps within SlackMs before i+1's start.
	for i := 0; i+1 < len(ws); i++ {
		a, b := &ws[i], &ws[i+1]
		if a.Breaker || b.Breaker {
			continue
		}
		extra, short := a.Forwarded-a.Final, b.Final-b.Forwarded
		if short <= 0 || extra <= 0 {
			continue
		}
		k := min(short, extra)
		moved := int64(0)
		for n := int64(len(a.stamps)); moved < k && moved < n && a.stamps[n-1-moved] >= b.StartMs-p.SlackMs; {
			moved++
		}
		if moved == 0 {
			continue
		}
		cut := int64(len(a.stamps)) - moved
		b.stamps = append(slices.Clone(a.stamps[cut:]), b.stamps...)
		a.stamps = a.stamps[:cut]
		a.Forwarded -= moved
		b.Forwarded += moved
		b.Shifted += moved
		acc.Shifted += moved
	}
	ws = slices.DeleteFunc(ws, func(w Window) bool { return w.Unseen && w.Forwarded == 0 })
	for i := range ws {
		w := &ws[i]
		if w.Unseen {
			acc.Unseen++
		}
		if !w.Breaker {
			acc.MaxFinal = max(acc.MaxFinal, w.Final)
			acc.MaxForwarded = max(acc.MaxForwarded, w.Forwarded)
			if p.Ceiling > 0 && (w.Final > p.Ceiling || w.Forwarded > p.Ceiling) {
				acc.OverCeiling++
			}
		}
		if w.Forwarded > w.Final && len(w.stamps) > 0 && w.stamps[len(w.stamps)-1] > w.LastSeenMs {
			w.Unsure = true
		}
		inSpan := w.StartMs >= p.JudgeFromMs && w.EndMs <= p.JudgeToMs
		w.Judged = inSpan && !w.Breaker && !w.Cut && !w.Unsure && !w.Unseen
		if !w.Judged {
			acc.Skipped++
			continue
		}
		acc.Judged++
		switch {
		case w.Forwarded == w.Final:
			acc.Exact++
		case w.Forwarded > w.Final:
			acc.Uncharged += w.Forwarded - w.Final
		default:
			acc.Lost += w.Final - w.Forwarded
		}
	}
	for i := range ws {
		ws[i].stamps = nil
	}
	acc.Windows = ws
	return acc
}

// attribute gives every stamp its window: the last window that opened at
// or before it, unless the stamp is at or after that window's end and
// before the next window opened. Such gap stamps belong to a window no
// read saw: each run of them is cut into unseen windows of one sub-window
// (ttlMs) from their first stamp, inserted in time order. Stamps before
// the first window are counted in acc.Unattributed. Forwarded is set.
func attribute(seen []Window, stamps []int64, ttlMs int64, acc *Accounting) []Window {
	sorted := slices.Clone(stamps)
	slices.Sort(sorted)
	out := make([]Window, 0, len(seen))
	k := 0
	for ; k < len(sorted) && (len(seen) == 0 || sorted[k] < seen[0].StartMs); k++ {
		acc.Unattributed++
	}
	for i := range seen {
		w := seen[i]
		next := int64(math.MaxInt64)
		if i+1 < len(seen) {
			next = seen[i+1].StartMs
		}
		for ; k < len(sorted) && sorted[k] < next && sorted[k] < w.EndMs; k++ {
			w.stamps = append(w.stamps, sorted[k])
		}
		out = append(out, w)
		// What is left before the next window opened was stamped after
		// this one ended: windows no read saw.
		for k < len(sorted) && sorted[k] < next {
			u := Window{StartMs: sorted[k], Unseen: true}
			u.EndMs = min(u.StartMs+max(ttlMs, 1), next)
			for ; k < len(sorted) && sorted[k] < u.EndMs; k++ {
				u.stamps = append(u.stamps, sorted[k])
			}
			out = append(out, u)
		}
	}
	for i := range out {
		out[i].Forwarded = int64(len(out[i].stamps))
	}
	return out
}

// Windows groups samples by expiry into windows in time order. A row seen
// live more than ttlMs + breakerSlackMs before its expiry is a breaker
// window; a window whose successor opened before its expiry is cut.
func Windows(samples []Sample, ttlMs, breakerSlackMs int64) []Window {
	byEnd := map[int64]*Window{}
	for _, s := range samples {
		if s.ExpiresAtMs <= 0 || s.AtMs >= s.ExpiresAtMs {
			continue
		}
		w, ok := byEnd[s.ExpiresAtMs]
		if !ok {
			w = &Window{EndMs: s.ExpiresAtMs, FirstSeenMs: s.AtMs, LastSeenMs: s.AtMs, Final: s.Value}
			byEnd[s.ExpiresAtMs] = w
		}
		w.Samples++
		if s.AtMs < w.FirstSeenMs {
			w.FirstSeenMs = s.AtMs
		}
		if s.AtMs >= w.LastSeenMs {
			w.LastSeenMs = s.AtMs
			w.Final = s.Value
		}
	}
	out := make([]Window, 0, len(byEnd))
	for _, w := range byEnd {
		w.StartMs = w.EndMs - ttlMs
		if w.FirstSeenMs < w.StartMs-breakerSlackMs {
			w.Breaker = true
			w.StartMs = w.FirstSeenMs
		}
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Window) int {
		if a.StartMs != b.StartMs {
			if a.StartMs < b.StartMs {
				return -1
			}
			return 1
		}
		if a.EndMs < b.EndMs {
			return -1
		}
		if a.EndMs > b.EndMs {
			return 1
		}
		return 0
	})
	for i := 0; i+1 < len(out); i++ {
		if out[i+1].StartMs < out[i].EndMs-breakerSlackMs || out[i+1].Breaker {
			out[i].Cut = true
		}
	}
	return out
}
