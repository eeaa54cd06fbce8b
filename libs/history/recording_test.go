package history_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/history"
)

// A PathRecording hands over, piece by piece, the seconds PathSeconds
// reads — its unsealed hours read by another goroutine while the sealed
// ones are handed over, or by Next itself when nothing read them first —
// and a failed read of the unsealed hours is the error of the Next that
// reaches them.
func TestPathRecordingIsPathSeconds(t *testing.T) {
	t.Parallel()
	start := t0.Truncate(time.Hour)
	db, _ := open(t, start)
	ms := start.UnixMilli()
	var b history.Batch
	for s := int64(0); s < 4*3600; s++ {
		if s%7 == 3 {
			continue
		}
		for _, rec := range []string{"r1", "r2"} {
			b.Samples = append(b.Samples, history.Sample{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: rec,
				Second: ms + s*1000, Items: 1 + s%5, Cost: 2 + s%3})
		}
	}
	if err := db.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if n, err := db.SealSeries(t.Context(), start.Add(2*time.Hour+history.SealAfter)); err != nil || n < 2 {
		t.Fatalf("sealed %d hours (%v), want the first two", n, err)
	}
	since, until := ms+1800_000, ms+4*3600_000-2500
	want, err := db.PathSeconds(t.Context(), "a", "g", "n", "p", 5, since, until)
	if err != nil || len(want) < 10000 {
		t.Fatalf("PathSeconds: %d seconds (%v)", len(want), err)
	}
	readAll := func(rec *history.PathRecording) ([]history.SecondTraffic, error) {
		var got []history.SecondTraffic
		for {
			more, err := rec.Next(t.Context(), func(s history.SecondTraffic) { got = append(got, s) })
			if err != nil || !more {
				return got, err
			}
		}
	}
	for _, ahead := range []bool{true, false} {
		rec, err := db.OpenPath(t.Context(), "a", "g", "n", "p", 5, since, until)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Seconds() < len(want) {
			t.Fatalf("Seconds %d, below the %d handed over", rec.Seconds(), len(want))
		}
		done := make(chan error, 1)
		if ahead {
			go func() { done <- rec.ReadRest(t.Context()) }()
		} else {
			done <- nil
		}
		got, err := readAll(rec)
		if err != nil || !reflect.DeepEqual(got, want) || <-done != nil {
			t.Fatalf("read ahead %v: %d seconds (%v), want PathSeconds' %d", ahead, len(got), err, len(want))
		}
	}
	rec, err := db.OpenPath(t.Context(), "a", "g", "n", "p", 5, since, until)
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if err := rec.ReadRest(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadRest with a canceled context: %v", err)
	}
	if got, err := readAll(rec); !errors.Is(err, context.Canceled) || len(got) == 0 {
		t.Fatalf("after a failed read: %d seconds, %v; want the sealed hours, then the read's error", len(got), err)
	}
}
