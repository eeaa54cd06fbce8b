package miniqueen

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendPGWritesWhatTimeFormatWrites checks the kv instants' renderer
// against time.Format with pgLayout, the oracle, over instants in and out
// of UTC, at every digit's edge and at random.
func TestAppendPGWritesWhatTimeFormatWrites(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		{},
		time.Date(2026, 12, 3, 15, 4, 5, 123456789, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2027, 1, 1, 4, 0, 0, 1000, east),
		time.Date(1999, 9, 9, 9, 9, 9, 9, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
	}
	rnd := rand.New(rand.NewPCG(7, 24))
	for range 2000 {
		times = append(times, time.Unix(rnd.Int64N(1<<36)-1<<35, rnd.Int64N(1e9)).In(east))
	}
	for _, at := range times {
		if got, want := string(appendPG([]byte("x"), at)), "x"+at.UTC().Format(pgLayout); got != want {
			t.Fatalf("appendPG(%v) = %q, time.Format gives %q", at, got, want)
		}
	}
}
