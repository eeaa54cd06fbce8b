package window

import "testing"

// reads returns samples of one window that ends at end, read every 100 ms
// from start to just before end, with the value values[i] at read i.
func reads(start, end int64, values ...int64) []Sample {
	var out []Sample
	at := start
	for i := 0; at < end; i++ {
		v := values[min(i, len(values)-1)]
		out = append(out, Sample{AtMs: at, Value: v, ExpiresAtMs: end})
		at += 100
	}
	return out
}

func stampsAt(at int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = at
	}
	return out
}

func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestAccountJudgesEveryWindow(t *testing.T) {
	t.Parallel()
	params := AccountParams{TTLMs: 1000, Ceiling: 50, JudgeFromMs: 0, JudgeToMs: 100_000}
	for _, tc := range []struct {
		name                         string
		samples                      []Sample
		stamps                       []int64
		wantJudged, wantExact        int
		wantUncharged, wantLost      int64
		wantOver                     int
		wantShifted                  int64
		wantBreaker, wantCut, unsure int
	}{
		{
			name:       "two full windows, exact",
			samples:    concat(reads(1000, 2000, 50), reads(2010, 3010, 50)),
			stamps:     concat(stampsAt(1003, 50), stampsAt(2015, 50)),
			wantJudged: 2, wantExact: 2,
		},
		{
			name:       "items stamped in the gap after expiry belong to the expired window",
			samples:    concat(reads(1000, 2000, 50), reads(2400, 3400, 20)),
			stamps:     concat(stampsAt(1003, 40), stampsAt(2100, 10), stampsAt(2405, 20)),
			wantJudged: 2, wantExact: 2,
		},
		{
			name:       "a late stamp after the next window opened is moved back",
			samples:    concat(reads(1000, 2000, 50), reads(2000, 3000, 30)),
			stamps:     concat(stampsAt(1003, 48), stampsAt(2004, 32)),
			wantJudged: 2, wantExact: 2, wantShifted: 2,
		},
		{
			name:       "a stamp far into the next window is not moved: uncharged and lost",
			samples:    concat(reads(1000, 2000, 50), reads(2000, 3000, 30)),
			stamps:     concat(stampsAt(1003, 48), stampsAt(2600, 30), stampsAt(2700, 2)),
			wantJudged: 2, wantExact: 0, wantUncharged: 2, wantLost: 2,
		},
		{
			name:       "a stamp taken before the commit that opened the next window is moved forward",
			samples:    concat(reads(1000, 2000, 50), reads(2000, 3000, 30)),
			stamps:     concat(stampsAt(1003, 50), stampsAt(1990, 2), stampsAt(2004, 28)),
			wantJudged: 2, wantExact: 2, wantShifted: 2,
		},
		{
			name:       "a stamp long before the next window is not moved forward: uncharged, over and lost",
			samples:    concat(reads(1000, 2000, 50), reads(2000, 3000, 30)),
			stamps:     concat(stampsAt(1003, 50), stampsAt(1200, 2), stampsAt(2004, 28)),
			wantJudged: 2, wantExact: 0, wantUncharged: 2, wantLost: 2, wantOver: 1,
		},
		{
			name:       "charged but never forwarded is lost",
			samples:    reads(1000, 2000, 50),
			stamps:     stampsAt(1003, 45),
			wantJudged: 1, wantLost: 5,
		},
		{
			name:       "forwarded beyond the counter is uncharged and over the ceiling",
			samples:    reads(1000, 2000, 50),
			stamps:     stampsAt(1003, 53),
			wantJudged: 1, wantUncharged: 3, wantOver: 1,
		},
		{
			name: "a surplus stamped after the last read is unsure, not judged",
			// The last read is at 1900; a charge between it and the expiry
			// could be missing from Final.
			samples: reads(1000, 2000, 10),
			stamps:  concat(stampsAt(1003, 10), stampsAt(1950, 1)),
			unsure:  1,
		},
		{
			name: "a backoff row is a breaker window; the window it replaced is cut",
			samples: concat(reads(1000, 2000, 20)[:3],
				reads(1300, 6300, 50)),
			stamps:      stampsAt(1003, 20),
			wantBreaker: 1, wantCut: 1,
		},
		{
			name:    "windows outside the judged span are skipped",
			samples: reads(200_000, 201_000, 50),
			stamps:  stampsAt(200_001, 50),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			acc := Account(tc.samples, tc.stamps, params)
			if acc.Judged != tc.wantJudged || acc.Exact != tc.wantExact || acc.Uncharged != tc.wantUncharged ||
				acc.Lost != tc.wantLost || acc.OverCeiling != tc.wantOver || acc.Shifted != tc.wantShifted {
				t.Fatalf("judged %d exact %d uncharged %d lost %d over %d shifted %d; want %d %d %d %d %d %d\nwindows: %+v",
					acc.Judged, acc.Exact, acc.Uncharged, acc.Lost, acc.OverCeiling, acc.Shifted,
					tc.wantJudged, tc.wantExact, tc.wantUncharged, tc.wantLost, tc.wantOver, tc.wantShifted, acc.Windows)
			}
			var br, cut, uns int
			for _, w := range acc.Windows {
				if w.Breaker {
					br++
				}
				if w.Cut {
					cut++
				}
				if w.Unsure {
					uns++
				}
			}
			if br != tc.wantBreaker || cut != tc.wantCut || uns != tc.unsure {
				t.Fatalf("breaker %d cut %d unsure %d; want %d %d %d\nwindows: %+v", br, cut, uns, tc.wantBreaker, tc.wantCut, tc.unsure, acc.Windows)
			}
		})
	}
}

func TestAccountCountsStampsBeforeTheFirstWindow(t *testing.T) {
	t.Parallel()
	acc := Account(reads(1000, 2000, 5), concat(stampsAt(500, 2), stampsAt(1001, 5)), AccountParams{TTLMs: 1000, Ceiling: 50, JudgeToMs: 10_000})
	if acc.Unattributed != 2 || acc.Exact != 1 {
		t.Fatalf("unattributed %d exact %d, want 2 and 1", acc.Unattributed, acc.Exact)
	}
}

func TestWindowsIgnoreAbsentKeysAndExpiredReads(t *testing.T) {
	t.Parallel()
	ws := Windows([]Sample{
		{AtMs: 10, Value: 0, ExpiresAtMs: 0},
		{AtMs: 2500, Value: 9, ExpiresAtMs: 2000},
		{AtMs: 1500, Value: 3, ExpiresAtMs: 2000},
		{AtMs: 1200, Value: 1, ExpiresAtMs: 2000},
	}, 1000, 250)
	if len(ws) != 1 || ws[0].Final != 3 || ws[0].Samples != 2 || ws[0].StartMs != 1000 {
		t.Fatalf("Windows = %+v, want one window 1000–2000 with final 3 from 2 reads", ws)
	}
}
