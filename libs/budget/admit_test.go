package budget_test

import (
	"errors"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
)

// The admission loop over a table: a window of 10 against a ceiling of 6
// with 4 already spent admits the prefix of 2, after one refusal of the
// whole window; every refusal is shown to onRefusal; a later window that
// finds nothing left ends waiting without a prefix try.
func TestAdmitRoundChargesThePrefixThatFits(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	var tab budget.Table
	spend := &budget.Batch{}
	k := spend.Counter("k", 6, 1, "per-second")
	spend.AddN(1, []int{k}, 4)
	if a := tab.Admit(spend, now); a.N != 4 {
		t.Fatalf("spending 4 of 6: admitted %d", a.N)
	}
	b := &budget.Batch{}
	k = b.Counter("k", 6, 1, "per-second")
	b.AddN(1, []int{k}, 10)
	var tries []int
	var refusals int
	try := func(n int) (*budget.Charge, error) {
		tries = append(tries, n)
		ch := tab.Charge(b, n, now)
		if ch.OK() {
			return nil, nil
		}
		refunds, _ := ch.Refunds(b, 0)
		tab.Refund(refunds, now)
		return ch, nil
	}
	r := budget.AdmitRound(b, 10, try, func(*budget.Charge) { refusals++ })
	if r.Waits() || r.N != 2 || !r.Prefixed || refusals != 1 || len(tries) != 2 || tries[0] != 10 || tries[1] != 2 {
		t.Fatalf("round %+v after tries %v and %d refusals; want the whole window refused once, then the prefix of 2 admitted", r, tries, refusals)
	}
	if v, _, _ := tab.Value("k", now); v != 6 {
		t.Fatalf("the counter reads %d, want the ceiling 6", v)
	}
	tries, refusals = nil, 0
	r = budget.AdmitRound(b, 10, try, func(*budget.Charge) { refusals++ })
	if !r.Waits() || r.Prefixed || refusals != 1 || len(tries) != 1 || budget.Wait(r.Refused, now) != time.Second {
		t.Fatalf("a full counter: round %+v after tries %v; want one refusal and a wait of the window's second", r, tries)
	}
}

// A try that keeps refusing a shrinking prefix stops after PrefixAttempts
// prefix tries; a permanent error ends the round with the size it was
// asked for, so the caller can narrow.
func TestAdmitRoundBoundsItsPrefixTries(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(5_000)
	var tab budget.Table
	b := &budget.Batch{}
	k := b.Counter("k", 100, 1, "id")
	b.AddN(1, []int{k}, 8)
	tries := 0
	// Another worker takes the room each time: every try is refused with
	// a reading that leaves room for one item less than the previous try.
	r := budget.AdmitRound(b, 8, func(n int) (*budget.Charge, error) {
		tries++
		ch := tab.Charge(b, 0, now)
		ch.N = n
		ch.Delta[0], ch.Applied[0] = int64(n), false
		ch.State[0] = budget.State{Value: 100 - int64(n) + 1, Known: true}
		return ch, nil
	}, nil)
	if tries != 1+budget.PrefixAttempts || !r.Waits() || !r.Prefixed {
		t.Fatalf("%d tries, round %+v; want the window and %d prefixes, then a wait", tries, r, budget.PrefixAttempts)
	}
	bad := errors.New("key too long")
	r = budget.AdmitRound(b, 8, func(int) (*budget.Charge, error) { return nil, bad }, nil)
	if !errors.Is(r.Err, bad) || r.N != 8 || r.Waits() {
		t.Fatalf("a permanent refusal: %+v", r)
	}
}

// Decide: no park budget releases, a spent budget hands back, a held
// claim stays held, a short wait parks and a long one goes to the hold.
func TestDecideParksHoldsOrReleases(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(10_000)
	refusedUntil := func(end time.Time) *budget.Charge {
		var tab budget.Table
		b := &budget.Batch{}
		k := b.Counter("k", 1, 1, "id")
		b.Add(1, []int{k})
		ch := tab.Charge(b, 1, now)
		ch.Applied[0] = false
		ch.State[0] = budget.State{Value: 1, ExpiresAt: end, Known: true}
		return ch
	}
	short, long := refusedUntil(now.Add(400*time.Millisecond)), refusedUntil(now.Add(time.Hour))
	base := budget.Waiting{MaxPark: 30 * time.Second, Recheck: time.Second}
	cases := []struct {
		name string
		ch   *budget.Charge
		w    func(budget.Waiting) budget.Waiting
		want budget.Verdict
	}{
		{"no park budget", short, func(w budget.Waiting) budget.Waiting { w.MaxPark = 0; return w }, budget.Release},
		{"the whole budget waited", short, func(w budget.Waiting) budget.Waiting { w.Waited = 30 * time.Second; return w }, budget.HandBack},
		{"already held", long, func(w budget.Waiting) budget.Waiting { w.Held = true; return w }, budget.Requeue},
		{"a window within the recheck", short, func(w budget.Waiting) budget.Waiting { return w }, budget.Park},
		{"parked nearly a second already", short, func(w budget.Waiting) budget.Waiting { w.Parked = 800 * time.Millisecond; return w }, budget.Hold},
		{"an hour's wait", long, func(w budget.Waiting) budget.Waiting { return w }, budget.Hold},
	}
	for _, c := range cases {
		d := budget.Decide(c.ch, now, c.w(base))
		if d.Verdict != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, d.Verdict, c.want)
		}
		if c.ch == long && !d.Opens.Equal(now.Add(time.Hour)) {
			t.Errorf("%s: opens %s, want in an hour", c.name, d.Opens)
		}
	}
}
