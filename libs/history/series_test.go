package history_test

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/history"
)

// Sealing packs samples without changing a read: three hours of random
// samples (two paths, two recorders on one of them, costs uniform and
// mixed, a row with items and no cost) read the same by SecondsAtCost and
// PathSeconds before sealing, after sealing the first two hours, and over
// ranges starting and ending mid-hour; another session and node are left
// alone; a second pass seals nothing; retention removes the sealed hours
// with their day.
func TestSealSeriesKeepsEveryRead(t *testing.T) {
	t.Parallel()
	start := t0.Truncate(time.Hour)
	db, _ := open(t, start)
	ms := start.UnixMilli()
	rnd := rand.New(rand.NewPCG(7, 11))
	var b history.Batch
	for s := int64(0); s < 3*3600; s++ {
		sec := ms + s*1000
		if rnd.IntN(5) == 0 {
			continue
		}
		n := int64(rnd.IntN(9))
		cost := 2 * n
		switch rnd.IntN(50) {
		case 0:
			cost++ // a cost not items × 2
		case 1:
			n, cost = 0, 3 // a cost without items
		}
		b.Samples = append(b.Samples,
			history.Sample{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: "r1", Second: sec, Items: n, Cost: cost},
			history.Sample{App: "a", Graph: "g", Node: "n", Path: "q", Session: 5, Recorder: "r2", Second: sec + 1000*(s%2), Items: 1, Cost: 2},
			history.Sample{App: "a", Graph: "g", Node: "m", Path: "p", Session: 5, Recorder: "r3", Second: sec, Items: 4, Cost: 4},
			history.Sample{App: "a", Graph: "g", Node: "n", Path: "p", Session: 6, Recorder: "r4", Second: sec, Items: 1, Cost: 1})
		if s%3 == 0 {
			b.Samples = append(b.Samples, history.Sample{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: "r5", Second: sec, Items: 2, Cost: 4})
		}
		if len(b.Samples) > 5000 {
			if err := db.Write(t.Context(), b); err != nil {
				t.Fatal(err)
			}
			b = history.Batch{}
		}
	}
	if err := db.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	type read struct {
		name string
		get  func(since, until int64) ([]history.SecondTraffic, error)
	}
	reads := []read{
		{"node n at cost 2", func(s, u int64) ([]history.SecondTraffic, error) {
			return db.SecondsAtCost(t.Context(), "a", "g", "n", 5, s, u, 2)
		}},
		{"path p", func(s, u int64) ([]history.SecondTraffic, error) {
			return db.PathSeconds(t.Context(), "a", "g", "n", "p", 5, s, u)
		}},
		{"path q", func(s, u int64) ([]history.SecondTraffic, error) {
			return db.PathSeconds(t.Context(), "a", "g", "n", "q", 5, s, u)
		}},
		{"node m at cost 4", func(s, u int64) ([]history.SecondTraffic, error) {
			return db.SecondsAtCost(t.Context(), "a", "g", "m", 5, s, u, 4)
		}},
		{"session 6", func(s, u int64) ([]history.SecondTraffic, error) {
			return db.SecondsAtCost(t.Context(), "a", "g", "n", 6, s, u, 1)
		}},
	}
	ranges := [][2]int64{{ms, ms + 3*3600_000}, {ms + 1234_000, ms + 2*3600_000 + 5000}, {ms + 3600_000, ms + 2*3600_000}, {ms - 3600_000, ms + 4*3600_000}}
	before := map[[3]int64][]history.SecondTraffic{}
	for ri, r := range ranges {
		for i, rd := range reads {
			got, err := rd.get(r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatalf("%s over range %d: nothing read", rd.name, ri)
			}
			before[[3]int64{int64(ri), int64(i)}] = got
		}
	}
	// The hours from the partition's day start to start + 2 h are
	// SealAfter old at start + 2 h + SealAfter.
	n, err := db.SealSeries(t.Context(), start.Add(2*time.Hour+history.SealAfter))
	if want := int((ms + 2*3600_000 - history.DayStart(ms)) / 3600_000); err != nil || n != want {
		t.Fatalf("sealed %d hours (%v), want %d", n, err, want)
	}
	var packed int
	if err := db.Pool().QueryRow(t.Context(), "SELECT count(*) FROM watch_series").Scan(&packed); err != nil || packed != 2*4 {
		t.Fatalf("%d packed rows (%v), want 2 hours × 4 series (n/p, n/q, m/p, session 6)", packed, err)
	}
	// The sealed hours are read from the packs alone: their samples may go.
	if _, err := db.Pool().Exec(t.Context(), "DELETE FROM watch_samples WHERE second < $1", ms+2*3600_000); err != nil {
		t.Fatal(err)
	}
	for ri, r := range ranges {
		for i, rd := range reads {
			got, err := rd.get(r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			if want := before[[3]int64{int64(ri), int64(i)}]; !reflect.DeepEqual(got, want) {
				for k := range min(len(got), len(want)) {
					if got[k] != want[k] {
						t.Fatalf("%s over range %d after sealing: second %d reads %+v, before %+v", rd.name, ri, k, got[k], want[k])
					}
				}
				t.Fatalf("%s over range %d after sealing: %d seconds, before %d", rd.name, ri, len(got), len(want))
			}
		}
	}
	if n, err := db.SealSeries(t.Context(), start.Add(2*time.Hour+history.SealAfter)); err != nil || n != 0 {
		t.Fatalf("a second pass sealed %d (%v), want 0", n, err)
	}
	p, err := db.Prune(t.Context(), start.Add(history.WatchRetention+48*time.Hour))
	if err != nil || p.Series != 8 {
		t.Fatalf("retention removed %d sealed rows (%v), want 8", p.Series, err)
	}
}
