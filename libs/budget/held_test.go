package budget

import (
	"testing"
	"time"
)

func TestOpensJudgesTheHeadAgainstOneRead(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	var b Batch
	all := b.Counter("all", 100, 1, "all")
	key := b.Counter("k:A", 1, 3600, "per-key")
	b.Add(1, []int{all, key})
	b.Add(1, []int{all})
	hour := now.Add(time.Hour)
	for _, tc := range []struct {
		name string
		live map[string]Reading
		fits bool
		at   time.Time
	}{
		{"nothing read: empty counters", map[string]Reading{}, true, time.Time{}},
		{"the key spent for an hour", map[string]Reading{"k:A": {Value: 1, ExpiresAt: hour, Found: true}}, false, hour},
		{"the key's window over", map[string]Reading{"k:A": {Value: 1, ExpiresAt: now, Found: true}}, true, time.Time{}},
		{"room on both", map[string]Reading{"all": {Value: 99, ExpiresAt: now.Add(time.Second), Found: true}}, true, time.Time{}},
		{"both full: the later end", map[string]Reading{
			"all": {Value: 100, ExpiresAt: now.Add(time.Second), Found: true},
			"k:A": {Value: 1, ExpiresAt: hour, Found: true}}, false, hour},
		{"not a number never takes an incr", map[string]Reading{"all": {NotANumber: true, ExpiresAt: now.Add(time.Minute), Found: true}}, false, now.Add(time.Minute)},
	} {
		fits, at := b.Opens(0, tc.live, now)
		if fits != tc.fits || !at.Equal(tc.at) {
			t.Errorf("%s: Opens = %v, %v; want %v, %v", tc.name, fits, at, tc.fits, tc.at)
		}
	}
	if got := b.ItemKeys(0, nil); len(got) != 2 || got[0] != "all" || got[1] != "k:A" {
		t.Errorf("ItemKeys(0) = %v, want [all k:A]", got)
	}
}

func TestReasonTellsCeilingShareAndBackoffApart(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	var b Batch
	k := b.Counter("ip", 25, 1, "ip-1s")
	b.Counters[k].Widest = 50
	for _, tc := range []struct {
		name string
		st   State
		want string
	}{
		{"the path's half of a sub-window", State{Value: 25, ExpiresAt: now.Add(600 * time.Millisecond), Known: true}, ReasonShare},
		{"the whole sub-window", State{Value: 50, ExpiresAt: now.Add(600 * time.Millisecond), Known: true}, ReasonCeiling},
		{"a backoff's two minutes", State{Value: 50, ExpiresAt: now.Add(2 * time.Minute), Known: true}, ReasonBackoff},
		{"nothing read", State{}, ReasonCeiling},
	} {
		c := &Charge{Delta: []int64{1}, Applied: []bool{false}, State: []State{tc.st}}
		if got := b.Reason(c, k, now); got != tc.want {
			t.Errorf("%s: Reason = %q, want %q", tc.name, got, tc.want)
		}
	}
}
