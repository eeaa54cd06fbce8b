package budget_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/plan"
)

// Hand-worked waits of gate-runtime §3.7: the headroom first, then one
// ceiling per fresh window from the end of the live one.
func TestClearsInWaitsForTheLastWindowTheBacklogNeeds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	live := func(v int64, endsIn time.Duration) budget.Reading {
		return budget.Reading{Value: v, ExpiresAt: now.Add(endsIn), Found: true}
	}
	for _, tc := range []struct {
		name    string
		r       budget.Reading
		want    int64
		ceiling int64
		window  time.Duration
		wait    time.Duration
	}{
		{"nothing waits", live(100, time.Second), 0, 100, time.Second, 0},
		// 100 − 30 = 70 left in this window.
		{"the headroom takes it all", live(30, 400*time.Millisecond), 70, 100, time.Second, 0},
		// 70 now, the 71st when this window ends.
		{"one unit past the headroom", live(30, 400*time.Millisecond), 71, 100, time.Second, 400 * time.Millisecond},
		// A backoff spent the window for 42 s: 100 at 42 s, 100 at 43 s, the
		// last 50 at 44 s.
		{"a held window, three to go", live(100, 42*time.Second), 250, 100, time.Second, 44 * time.Second},
		// A wider path took 120: no headroom, the 100 fit the next window.
		{"over the ceiling", live(120, 300*time.Millisecond), 100, 100, 10 * time.Second, 300 * time.Millisecond},
		// 300 per 60 s sub-window: 300 at 20 s, 300 at 80 s, the 601st at 140 s.
		{"minute sub-windows", live(300, 20*time.Second), 601, 300, time.Minute, 140 * time.Second},
		// No live window: the whole ceiling is headroom and the next window
		// counts from now (the spec's resetsIn of 0 when absent), so 100
		// now and 150 in one more window.
		{"an absent counter", budget.Reading{}, 250, 100, time.Second, time.Second},
		{"an absent counter within its ceiling", budget.Reading{}, 100, 100, time.Second, 0},
		// The window ended before now: it resets at once.
		{"a window already over", live(100, -time.Second), 100, 100, time.Second, 0},
		// A row that holds no number counts as spent 0.
		{"not a number", budget.Reading{Found: true, NotANumber: true, ExpiresAt: now.Add(5 * time.Second)}, 15, 10, time.Second, 5 * time.Second},
	} {
		b := &plan.Budget{ID: "b", Ceilings: map[string]int64{"p": tc.ceiling}, WindowSubSeconds: int64(tc.window / time.Second)}
		wait, ok := tc.r.ClearsIn(tc.want, b, "p", now)
		if !ok || wait != tc.wait {
			t.Errorf("%s: clears in %s (ok %v), want %s", tc.name, wait, ok, tc.wait)
		}
	}
	b := &plan.Budget{ID: "b", Ceilings: map[string]int64{"wide": 100, "none": 0, "neg": -5}, WindowSubSeconds: 1}
	for _, path := range []string{"none", "neg", "absent"} {
		if wait, ok := live(0, time.Second).ClearsIn(1, b, path, now); ok || wait != 0 {
			t.Errorf("path %s: clears in %s (ok %v), want no answer: nothing ever fits under a ceiling of 0", path, wait, ok)
		}
	}
	// 2^62 units at 1 per hour is far past what a Duration holds.
	huge := &plan.Budget{ID: "h", Ceilings: map[string]int64{"p": 1}, WindowSubSeconds: 3600}
	if wait, ok := live(1, time.Second).ClearsIn(1<<62, huge, "p", now); !ok || wait != time.Duration(math.MaxInt64) {
		t.Errorf("a wait of 2^62 hours clears in %s (ok %v), want the longest Duration", wait, ok)
	}
	// Just inside (about 239 years): 1 s to the window's end plus 2^21 windows of an hour.
	if wait, ok := live(1, time.Second).ClearsIn(1<<21+1, huge, "p", now); !ok || wait != time.Second+time.Duration(1<<21)*time.Hour {
		t.Errorf("2^21+1 units at 1 per hour clear in %s (ok %v), want 1 s + 2^21 h", wait, ok)
	}
}

// clearsByWindows is the wait walked one window at a time: take the
// headroom now, then a ceiling at the end of the live window and at every
// window after it until nothing is left.
func clearsByWindows(value, want, ceiling int64, resetsIn, window time.Duration) time.Duration {
	left := want
	if ceiling > value {
		left -= ceiling - value
	}
	at := resetsIn
	for left > 0 {
		left -= ceiling
		if left <= 0 {
			return at
		}
		at += window
	}
	return 0
}

func TestClearsInAgreesWithAWindowByWindowWalk(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(7, 11))
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 20000; i++ {
		ceiling := 1 + rnd.Int64N(50)
		value := rnd.Int64N(3 * ceiling)
		want := rnd.Int64N(20*ceiling + 1)
		window := time.Duration(1+rnd.Int64N(60)) * time.Second
		r := budget.Reading{Value: value, Found: true, ExpiresAt: now.Add(time.Duration(rnd.Int64N(6000)-1000) * time.Millisecond)}
		if rnd.IntN(5) == 0 {
			r = budget.Reading{}
		}
		resetsIn := time.Duration(0)
		if r.Found && r.ExpiresAt.After(now) {
			resetsIn = r.ExpiresAt.Sub(now)
		}
		b := &plan.Budget{ID: "b", Ceilings: map[string]int64{"p": ceiling}, WindowSubSeconds: int64(window / time.Second)}
		got, ok := r.ClearsIn(want, b, "p", now)
		if exp := clearsByWindows(r.Value, want, ceiling, resetsIn, window); !ok || got != exp {
			t.Fatalf("%+v want %d ceiling %d window %s: clears in %s (ok %v), the walk says %s", r, want, ceiling, window, got, ok, exp)
		}
	}
}

func TestUtilisationOfAZeroCeilingIsNone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value, ceiling int64
		want           float64
	}{
		{0, 100, 0},
		{25, 100, 0.25},
		{100, 100, 1},
		{150, 100, 1.5},
		// No path has a share of the counter: none of it is used, whatever
		// it holds (another spender of a shared key, a spent window).
		{0, 0, 0},
		{7, 0, 0},
		{7, -3, 0},
	} {
		if got := budget.Utilisation(tc.value, tc.ceiling); got != tc.want {
			t.Errorf("utilisation of %d under %d = %v, want %v", tc.value, tc.ceiling, got, tc.want)
		}
	}
	// The worst of two counters is the filling one, never the one nobody
	// may charge.
	if budget.Utilisation(1_000_000, 0) >= budget.Utilisation(1, 100) {
		t.Error("a zero ceiling ranks above a counter that is filling")
	}
}
