package load

import (
	"fmt"
	"slices"

	"github.com/queen-mq/gate/libs/window"
)

// Item is one item seen on the egress.
type Item struct {
	// ID is the producer's id for it ("" for a foreign item).
	ID string
	// Path is _gate.path.
	Path string
	// AtMs is _gate.at: the relay's commit-time stamp, epoch ms.
	AtMs int64
	// RecvMs is when a consumer popped it, epoch ms.
	RecvMs int64
}

// Pushed is one item the producers got a 200 for.
type Pushed struct {
	ID   string
	Path string
	AtMs int64
}

// Event is something the run did to the stack (kill, restart, backoff).
type Event struct {
	AtMs int64  `json:"atMs"`
	What string `json:"what"`
	// UntilMs is the end of what it disturbed (restart done, backoff end).
	UntilMs int64 `json:"untilMs"`
}

// ViewSample is one read of the graph view's ip stages.
type ViewSample struct {
	AtMs int64
	// Refusals and Forwarded are lifetime counters per path at ip, summed
	// across relays.
	Refusals  map[string]int64
	Forwarded map[string]int64
}

// Observation is everything a run saw, in epoch milliseconds.
type Observation struct {
	// StartMs is when pushing began; EndMs is the horizon: nothing stamped
	// at or after it is judged.
	StartMs, EndMs int64
	Pushed         []Pushed
	Items          []Item
	KV             []window.Sample
	Views          []ViewSample
	Events         []Event
	// Backoff is the backoff scenario's report, nil otherwise.
	Backoff *Event
	// ExpectAll says every pushed item must be delivered exactly once.
	ExpectAll bool
	// Admission is every read of the relays' /health admission report
	// (start, after each restart, end). When every read says riders the
	// relays charge inside their settle transaction: a kill cannot separate
	// a charge from its forward, so a lost charge fails even under chaos
	// (ChargeInCommit).
	Admission []AdmissionRead
}

// Params are the declared numbers a run is judged against.
type Params struct {
	Rate, WindowS int
	// Count is the budget's count (rate × window), CountSub its per
	// sub-window count and TTLMs the sub-window length.
	Count, CountSub, TTLMs int64
	// FastCeiling and BulkCeiling are the paths' ceilings on the counter.
	FastCeiling, BulkCeiling int64
	// SkipSeconds are skipped after the first admission (warm-up; 2).
	SkipSeconds int
}

// Gate is one verdict.
type Gate struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// Row is one second of the run.
type Row struct {
	Second int   `json:"second"`
	AtMs   int64 `json:"atMs"`
	Fast   int64 `json:"fast"`
	Bulk   int64 `json:"bulk"`
	Total  int64 `json:"total"`
	// Drained is how many items the consumers popped in the second.
	Drained int64 `json:"drained"`
	// Counter is the last counter value read in the second (-1 none).
	Counter     int64 `json:"counter"`
	FastBacklog int64 `json:"fastBacklog"`
	BulkBacklog int64 `json:"bulkBacklog"`
	// BulkRefused: the counter stood at or above bulk's ceiling while bulk
	// had a backlog.
	BulkRefused bool `json:"bulkRefused"`
	// RelayRefusals is the bulk stage's refusal counter delta (view).
	RelayRefusals int64 `json:"relayRefusals"`
	// Judged says the second counts for throughput and reserve.
	Judged  bool   `json:"judged"`
	Excused string `json:"excused,omitempty"`
}

// Report is the judged run.
type Report struct {
	// Graph is the graph the run declared (with its run suffix).
	Graph  string `json:"graph"`
	Params Params `json:"params"`
	// Events are the disturbances the run caused (kills, the backoff).
	Events []Event `json:"events,omitempty"`
	Rows   []Row   `json:"rows"`
	Gates  []Gate  `json:"gates"`
	Pass   bool    `json:"pass"`
	// Figures.
	PushedTotal   int     `json:"pushed"`
	AdmittedTotal int     `json:"admitted"`
	AdmittedP50   float64 `json:"admittedP50"`
	AdmittedPeak  int64   `json:"admittedPeak"`
	// DrainedP50, DrainedPeak, DrainedMean and DrainedTotal describe what
	// the consumers popped per second (all seconds).
	DrainedP50    float64 `json:"drainedP50"`
	DrainedPeak   int64   `json:"drainedPeak"`
	DrainedMean   float64 `json:"drainedMean"`
	DrainedTotal  int64   `json:"drainedTotal"`
	WorstWindow   int     `json:"worstWindow"`
	WorstWindowAt int64   `json:"worstWindowAtMs"`
	SlidingBound  int64   `json:"slidingBound"`
	// Accounting is the per-sub-window verdict (windows omitted in JSON).
	Accounting               AccountingSummary `json:"accounting"`
	BulkRefusedSeconds       int               `json:"bulkRefusedSeconds"`
	FastAdmittedWhileRefused int               `json:"fastAdmittedWhileRefused"`
	Duplicates               int               `json:"duplicates"`
	Missing                  int               `json:"missing"`
	// Admission is what the relays reported running; ChargeInCommit says
	// the strict rule applied (every read reported riders).
	Admission      []AdmissionRead `json:"admission"`
	ChargeInCommit bool            `json:"chargeInCommit"`
	// Vendor is the vendor scenario's report (nil for the others, whose
	// fields above it leaves zero).
	Vendor *VendorReport `json:"vendor,omitempty"`
	// Settle is the `vendor settle` scenario's report.
	Settle *SettleReport `json:"settle,omitempty"`
}

// AccountingSummary is window.Accounting without the windows.
type AccountingSummary struct {
	Windows      int   `json:"windows"`
	Judged       int   `json:"judged"`
	Exact        int   `json:"exact"`
	Uncharged    int64 `json:"uncharged"`
	Lost         int64 `json:"lost"`
	OverCeiling  int   `json:"overCeiling"`
	MaxFinal     int64 `json:"maxFinal"`
	MaxForwarded int64 `json:"maxForwarded"`
	Shifted      int64 `json:"shifted"`
	Skipped      int   `json:"skipped"`
	// Unseen is the windows no counter read saw (a window a backoff's put
	// replaced between two reads): judged against the ceiling only.
	Unseen int `json:"unseen"`
}

// Judge turns an observation into rows and verdicts.
func Judge(o Observation, p Params) Report {
	if p.SkipSeconds == 0 {
		p.SkipSeconds = 2
	}
	r := Report{Params: p, PushedTotal: len(o.Pushed), Events: append([]Event(nil), o.Events...),
		Admission: append([]AdmissionRead(nil), o.Admission...), ChargeInCommit: ChargeInCommit(o.Admission)}
	if o.Backoff != nil {
		r.Events = append(r.Events, *o.Backoff)
	}
	var stamps, fastStamps, bulkStamps, recv []int64
	for _, it := range o.Items {
		if it.RecvMs > 0 {
			recv = append(recv, it.RecvMs)
		}
		if it.AtMs >= o.EndMs || it.AtMs <= 0 {
			continue
		}
		stamps = append(stamps, it.AtMs)
		switch it.Path {
		case PathFast:
			fastStamps = append(fastStamps, it.AtMs)
		case PathBulk:
			bulkStamps = append(bulkStamps, it.AtMs)
		}
	}
	slices.Sort(stamps)
	r.AdmittedTotal = len(stamps)
	var pushFast, pushBulk []int64
	for _, pu := range o.Pushed {
		if pu.Path == PathFast {
			pushFast = append(pushFast, pu.AtMs)
		} else {
			pushBulk = append(pushBulk, pu.AtMs)
		}
	}
	slices.Sort(pushFast)
	slices.Sort(pushBulk)
	slices.Sort(fastStamps)
	slices.Sort(bulkStamps)

	// Per-second rows from the push start to the horizon.
	n := int((o.EndMs - o.StartMs) / 1000)
	fast := window.Buckets(fastStamps, o.StartMs, 1000, n)
	bulk := window.Buckets(bulkStamps, o.StartMs, 1000, n)
	drained := window.Buckets(recv, o.StartMs, 1000, n)
	var drainedF []float64
	for _, d := range drained {
		drainedF = append(drainedF, float64(d))
		r.DrainedTotal += d
		r.DrainedPeak = max(r.DrainedPeak, d)
	}
	r.DrainedP50 = window.Median(drainedF)
	if n > 0 {
		r.DrainedMean = float64(r.DrainedTotal) / float64(n)
	}
	kv := slices.Clone(o.KV)
	slices.SortFunc(kv, func(a, b window.Sample) int { return int(a.AtMs - b.AtMs) })
	firstAdmit := -1
	ki := 0
	vi := 0
	var lastBulkRef int64 = -1
	for s := 0; s < n; s++ {
		from, to := o.StartMs+int64(s)*1000, o.StartMs+int64(s+1)*1000
		row := Row{Second: s, AtMs: from, Fast: fast[s], Bulk: bulk[s], Total: fast[s] + bulk[s], Drained: drained[s], Counter: -1}
		atBulkCeiling := false
		for ; ki < len(kv) && kv[ki].AtMs < to; ki++ {
			if kv[ki].AtMs < from || kv[ki].ExpiresAtMs <= kv[ki].AtMs {
				continue
			}
			row.Counter = kv[ki].Value
			if kv[ki].Value >= p.BulkCeiling {
				atBulkCeiling = true
			}
		}
		row.FastBacklog = int64(countBefore(pushFast, to) - countBefore(fastStamps, to))
		row.BulkBacklog = int64(countBefore(pushBulk, to) - countBefore(bulkStamps, to))
		row.BulkRefused = atBulkCeiling && row.BulkBacklog > 0
		for ; vi < len(o.Views) && o.Views[vi].AtMs < to; vi++ {
			v := o.Views[vi].Refusals[PathBulk]
			if lastBulkRef >= 0 && v > lastBulkRef {
				// A restarted relay starts its counters at zero: only
				// growth counts.
				row.RelayRefusals += v - lastBulkRef
			}
			lastBulkRef = v
		}
		if firstAdmit < 0 && row.Total > 0 {
			firstAdmit = s
		}
		row.Judged = firstAdmit >= 0 && s >= firstAdmit+p.SkipSeconds
		if reason := excused(o, from, to); reason != "" && row.Judged {
			row.Judged, row.Excused = false, reason
		}
		r.Rows = append(r.Rows, row)
	}

	// Ceiling: the continuous sliding window and the per-sub-window books.
	span := int64(p.WindowS) * 1000
	r.WorstWindow, r.WorstWindowAt = window.WorstSpan(stamps, span)
	r.SlidingBound = window.SlidingBound(p.CountSub, int64(p.WindowS))
	judgeFrom := o.StartMs
	if len(kv) > 0 {
		judgeFrom = kv[0].AtMs
	}
	acc := window.Account(o.KV, stamps, window.AccountParams{
		TTLMs: p.TTLMs, Ceiling: p.CountSub, JudgeFromMs: judgeFrom, JudgeToMs: o.EndMs,
	})
	r.Accounting = AccountingSummary{
		Windows: len(acc.Windows), Judged: acc.Judged, Exact: acc.Exact, Uncharged: acc.Uncharged,
		Lost: acc.Lost, OverCeiling: acc.OverCeiling, MaxFinal: acc.MaxFinal, MaxForwarded: acc.MaxForwarded,
		Shifted: acc.Shifted, Skipped: acc.Skipped, Unseen: acc.Unseen,
	}
	lostOK := acc.Lost == 0 || len(o.Events) > 0 && o.ExpectAll && !r.ChargeInCommit
	ceilingPass := int64(r.WorstWindow) <= r.SlidingBound && acc.OverCeiling == 0 && acc.Judged > 0 && acc.Uncharged == 0 && lostOK
	pct := 100 * float64(r.WorstWindow) / float64(p.Count)
	boundPct := 100 * float64(r.SlidingBound) / float64(p.Count)
	detail := fmt.Sprintf("worst sliding %ds window %d of %d declared (%.1f%%), bound %d (%.0f%% — %d sub-windows of %d can overlap one sliding window, the most fixed sub-windows can allow); "+
		"sub-windows: %d judged, %d exact (forwarded = final counter), uncharged %d, lost %d, over ceiling %d (max final %d, max forwarded %d, ceiling %d), %d moved across a boundary, %d not judged (%d no read saw)",
		p.WindowS, r.WorstWindow, p.Count, pct, r.SlidingBound, boundPct, p.WindowS+1, p.CountSub,
		acc.Judged, acc.Exact, acc.Uncharged, acc.Lost, acc.OverCeiling, acc.MaxFinal, acc.MaxForwarded, p.CountSub, acc.Shifted, acc.Skipped, acc.Unseen)
	if acc.Lost > 0 && lostOK {
		detail += " (lost charges excused: a relay was killed and not every relay reported the riders path, so a charge can precede a commit that never happened: over-counting, never over-admitting)"
	}
	if acc.Judged == 0 {
		detail += "; no sub-window could be judged, so nothing is proven"
	}
	r.Gates = append(r.Gates, gate("ceiling held", ceilingPass, detail))

	// Throughput: seconds in which the 1.0 path still had a backlog.
	var tput []float64
	for _, row := range r.Rows {
		if row.Judged && row.FastBacklog > 0 {
			tput = append(tput, float64(row.Total))
		}
		r.AdmittedPeak = max(r.AdmittedPeak, row.Total)
	}
	r.AdmittedP50 = window.Median(tput)
	want := 0.9 * float64(p.Rate)
	if len(tput) == 0 {
		r.Gates = append(r.Gates, Gate{Name: "throughput reached", Pass: false, Status: "NOT EXERCISED",
			Detail: "the 1.0-share path never had a backlog in a judged second; raise TOTAL or lower RATE"})
	} else {
		r.Gates = append(r.Gates, gate("throughput reached", r.AdmittedP50 >= want,
			fmt.Sprintf("admitted p50 %.0f/s over %d seconds with a 1.0-share backlog, need ≥ %.0f/s (90%% of %d/s)", r.AdmittedP50, len(tput), want, p.Rate)))
	}

	// Reserve: where bulk was refused and fast had work waiting, fast still
	// got through.
	for _, row := range r.Rows {
		if row.Judged && row.BulkRefused && row.FastBacklog+row.Fast > 0 {
			r.BulkRefusedSeconds++
			if row.Fast > 0 {
				r.FastAdmittedWhileRefused++
			}
		}
	}
	if r.BulkRefusedSeconds == 0 {
		r.Gates = append(r.Gates, Gate{Name: "reserve held", Pass: true, Status: "NOT EXERCISED",
			Detail: "the 0.5-share path was never refused in a judged second while the 1.0-share path had work waiting"})
	} else {
		r.Gates = append(r.Gates, gate("reserve held", 2*r.FastAdmittedWhileRefused >= r.BulkRefusedSeconds,
			fmt.Sprintf("seconds bulk refused while fast had work waiting %d, of which fast still admitted %d (need at least half)", r.BulkRefusedSeconds, r.FastAdmittedWhileRefused)))
	}

	if o.ExpectAll {
		seen := map[string]int{}
		for _, it := range o.Items {
			if it.ID != "" {
				seen[it.ID]++
			}
		}
		for _, pu := range o.Pushed {
			switch c := seen[pu.ID]; {
			case c == 0:
				r.Missing++
			case c > 1:
				r.Duplicates += c - 1
			}
		}
		r.Gates = append(r.Gates, gate("delivered exactly once", r.Missing == 0 && r.Duplicates == 0,
			fmt.Sprintf("%d pushed, %d delivered, %d missing, %d duplicates (checked by id)", len(o.Pushed), len(o.Items), r.Missing, r.Duplicates)))
	}
	if b := o.Backoff; b != nil {
		r.Gates = append(r.Gates, judgeBackoff(*b, stamps, r.Rows, p)...)
	}
	r.Pass = allPass(r.Gates)
	return r
}

// backoffGraceMs is how long after the backoff call a commit may still land:
// a claim charged just before the breaker wrote the counter.
const backoffGraceMs = 300

func judgeBackoff(b Event, stamps []int64, rows []Row, p Params) []Gate {
	during := countBefore(stamps, b.UntilMs) - countBefore(stamps, b.AtMs+backoffGraceMs)
	held := gate("backoff held", during == 0,
		fmt.Sprintf("%d items admitted between %d ms after the backoff and its end (%.1f s of Retry-After)", during, backoffGraceMs, float64(b.UntilMs-b.AtMs)/1000))
	first := int64(-1)
	if i := countBefore(stamps, b.UntilMs); i < len(stamps) {
		first = stamps[i] - b.UntilMs
	}
	var after []float64
	for _, r := range rows {
		if r.AtMs >= b.UntilMs+1000 && r.FastBacklog > 0 && r.Excused == "" {
			after = append(after, float64(r.Total))
		}
	}
	p50 := window.Median(after)
	ok := first >= 0 && first <= 2000+p.TTLMs && (len(after) == 0 || p50 >= 0.9*float64(p.Rate))
	detail := fmt.Sprintf("first admission %d ms after Retry-After ended (need ≤ %d), then p50 %.0f/s over %d seconds (need ≥ %.0f/s)", first, 2000+p.TTLMs, p50, len(after), 0.9*float64(p.Rate))
	if first < 0 {
		detail = "nothing was admitted after the backoff ended"
	}
	return []Gate{held, gate("rate recovered", ok, detail)}
}

// excused names the disturbance overlapping [from, to), or "".
func excused(o Observation, from, to int64) string {
	if b := o.Backoff; b != nil && from < b.UntilMs+1000 && to > b.AtMs {
		return "backoff"
	}
	for _, e := range o.Events {
		until := e.UntilMs
		if until < e.AtMs {
			until = e.AtMs
		}
		if from < until+2000 && to > e.AtMs {
			return e.What
		}
	}
	return ""
}

func gate(name string, pass bool, detail string) Gate {
	st := "PASS"
	if !pass {
		st = "FAIL"
	}
	return Gate{Name: name, Pass: pass, Status: st, Detail: detail}
}

// allPass reports whether every gate passed (true for none).
func allPass(gates []Gate) bool {
	for _, g := range gates {
		if !g.Pass {
			return false
		}
	}
	return true
}

// countBefore is the number of sorted values strictly below v.
func countBefore(sorted []int64, v int64) int {
	lo, hi := 0, len(sorted)
	for lo < hi {
		m := (lo + hi) / 2
		if sorted[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
