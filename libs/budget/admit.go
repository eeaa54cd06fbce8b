package budget

import "time"

// The admission loop: the one sequence that decides how much of a window
// is admitted — charge the window, and on a refusal cut to the prefix that
// fits and charge that, at most PrefixAttempts times — and, when nothing
// more fits, whether the claim parks, goes to the stage's hold or is
// handed back. The relay's stage runs it against the broker (a kv call or
// the settle transaction's riders) and the simulation against a Table, so
// a replay is the relay's own arithmetic.

// PrefixAttempts is how many times the admission loop charges a shrinking
// prefix after a refusal of the whole window, before the claim waits.
const PrefixAttempts = 3

// Try is one charge of the admission loop: charge the first n items of the
// window. It returns the refused charge — nothing of it left applied, the
// state of its counters read, so Prefix can judge it — or nil when the
// attempt ended the window (the n items were admitted, or the claim was
// given up: a failed call, a release). err is a refusal of the request
// itself that no retry changes (nothing applied); the caller narrows.
type Try func(n int) (refused *Charge, err error)

// Round is what one round of the admission loop came to.
type Round struct {
	// N is how many leading items the last try was asked to charge.
	N int
	// Refused is the last refused charge when the round ended waiting for
	// a window (nil when the last try ended the window or failed).
	Refused *Charge
	// Prefixed reports that the round cut the window to a prefix at least
	// once (the relay's "deferred").
	Prefixed bool
	// Err is the request refused for good by the last try.
	Err error
}

// Waits reports that the round ended on a refusal: nothing more of the
// window fits now.
func (r Round) Waits() bool { return r.Refused != nil && r.Err == nil }

// AdmitRound runs one round of the admission loop over the first want
// items of b: try them; on a refusal try the prefix that fits the
// refusal's reading (never more than the previous try), at most
// PrefixAttempts times. onRefusal, when not nil, sees every refused charge
// in order (the relay records each as a denial). The round ends at the
// first try that ends the window, fails for good, or when no prefix is
// left to try.
func AdmitRound(b *Batch, want int, try Try, onRefusal func(*Charge)) Round {
	return admitRound(want, try, func(ch *Charge) int { return Prefix(b, ch) }, onRefusal)
}

// admitRound is AdmitRound with the prefix that fits a refusal given by
// prefix (Prefix over a batch's items, or prefixRuns over runs).
func admitRound(want int, try Try, prefix func(*Charge) int, onRefusal func(*Charge)) Round {
	r := Round{N: want}
	attempts := 0
	for {
		ch, err := try(r.N)
		if err != nil {
			r.Err, r.Refused = err, nil
			return r
		}
		if ch == nil {
			r.Refused = nil
			return r
		}
		r.Refused = ch
		if onRefusal != nil {
			onRefusal(ch)
		}
		n := min(prefix(ch), r.N)
		if n <= 0 || attempts >= PrefixAttempts {
			return r
		}
		attempts++
		r.Prefixed = true
		r.N = n
	}
}

// Verdict is what a refused claim does next.
type Verdict int

const (
	// Release: let the claim go now (no park budget, or the wait cannot be
	// taken): its lease brings it back.
	Release Verdict = iota
	// HandBack: the claim waited its whole park budget and still does not
	// fit; it is handed back with a retry ack of its head.
	HandBack
	// Park: sleep on the claim (Decision.Sleep) and try again.
	Park
	// Hold: pass the claim to the stage's hold until Decision.Opens.
	Hold
	// Requeue: a claim already in the hold stays there until Opens.
	Requeue
)

// Waiting is a claim's waiting so far, the input of Decide.
type Waiting struct {
	// MaxPark is GATE_MAX_PARK_MS: the longest a claim waits in all.
	MaxPark time.Duration
	// Recheck is how long a handler parks on its own claim in all; a
	// longer wait goes to the hold.
	Recheck time.Duration
	// Waited is the time since the claim's first refusal.
	Waited time.Duration
	// Parked is the time parked on the claim by its handler so far.
	Parked time.Duration
	// Held reports that the claim is in the stage's hold already.
	Held bool
}

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	// Wait is how long until every refused counter opens a new window.
	Wait time.Duration
	// Opens is the instant the window opens (zero when unknown).
	Opens time.Time
}

// Decide says what a claim refused by ch at now does (gate-runtime §2.7):
// without a park budget it is released; once it waited the whole budget
// it is handed back; a claim already held stays held until its window
// opens; a window that turns within Recheck of the handler's parking in
// all is parked on; a longer wait (a scoped key spent for an hour, a
// backoff) goes to the hold, so the worker pops other partitions.
func Decide(ch *Charge, now time.Time, w Waiting) Decision {
	d := Decision{Wait: Wait(ch, now)}
	if d.Wait > 0 {
		d.Opens = now.Add(d.Wait)
	}
	switch {
	case w.MaxPark <= 0:
		d.Verdict = Release
	case w.Waited >= w.MaxPark:
		d.Verdict = HandBack
	case w.Held:
		d.Verdict = Requeue
	case w.Parked+d.Wait <= w.Recheck:
		d.Verdict = Park
	default:
		d.Verdict = Hold
	}
	return d
}
