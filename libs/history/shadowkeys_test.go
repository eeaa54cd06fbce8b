package history_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/history"
)

// A keyed shadow's counts: written twice they are the same rows; read
// back they are summed over relay recorders per second, node, path, scope
// and op, the overflow left out (the totals hold it); the retention
// deletes them after KeySampleRetention.
func TestShadowKeySamplesRoundTrip(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	ctx := t.Context()
	s := t0.UnixMilli()
	ks := func(rec, scope string, second, items int64, overflow bool) history.KeySample {
		return history.KeySample{App: "a", Graph: "g", Node: "n", Path: "main", Session: s, Recorder: rec, Second: second, Scope: scope, Overflow: overflow, Items: items, Cost: items}
	}
	b := history.Batch{KeySamples: []history.KeySample{
		ks("r1", `{"payload.account":"a"}`, s, 4, false), ks("r2", `{"payload.account":"a"}`, s, 3, false),
		ks("r1", `{"payload.account":"b"}`, s, 1, false), ks("r1", "", s, 9, true),
		ks("r1", `{"payload.account":"a"}`, s+1000, 2, false),
	}}
	for range 2 {
		if err := db.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.ShadowKeyArrivals(ctx, "a", "g", []int64{s}, s, s+60000)
	if err != nil {
		t.Fatal(err)
	}
	want := []history.ShadowKeySecond{
		{Node: "n", Path: "main", Second: s, Scope: `{"payload.account":"a"}`, Items: 7, Cost: 7},
		{Node: "n", Path: "main", Second: s, Scope: `{"payload.account":"b"}`, Items: 1, Cost: 1},
		{Node: "n", Path: "main", Second: s + 1000, Scope: `{"payload.account":"a"}`, Items: 2, Cost: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v\nwant %+v", got, want)
	}
	if n, err := db.PruneShadow(ctx, t0.Add(history.KeySampleRetention+2*time.Second)); err != nil || n != 5 {
		t.Fatalf("retention deleted %d rows (%v), want the 5 written", n, err)
	}
}
