package miniqueen

import (
	"encoding/json"
	"slices"
	"testing"
)

// A plain push over several queues is stored queue by queue (each under
// its own lock), and answers as one call: every item in request order, a
// repeat of an earlier item's transaction id in the same call a duplicate
// carrying the first one's id, and each queue's items in their order.
func TestAPushOverSeveralQueuesAnswersInRequestOrderAndDedupsWithinTheCall(t *testing.T) {
	w := newWire(t)
	res := w.push(
		item("a", "p", map[string]any{"n": 1}, "t1"),
		item("b", "p", map[string]any{"n": 2}, "t1"),
		item("a", "p", map[string]any{"n": 3}, "t3"),
		item("a", "p", map[string]any{"n": 4}, "t1"),
		item("b", "p", map[string]any{"n": 5}, "t5"),
	)
	wantQueue := []string{"a", "b", "a", "a", "b"}
	wantStatus := []string{"queued", "queued", "queued", "duplicate", "queued"}
	ids := make([]string, len(res))
	for i, r := range res {
		if n := num(t, at(t, r, "index")); n != int64(i) {
			t.Errorf("answer %d carries index %d", i, n)
		}
		if q := str(t, at(t, r, "queueName")); q != wantQueue[i] {
			t.Errorf("answer %d: queue %q, want %q", i, q, wantQueue[i])
		}
		if s := str(t, at(t, r, "status")); s != wantStatus[i] {
			t.Errorf("answer %d: status %q, want %q", i, s, wantStatus[i])
		}
		ids[i] = str(t, at(t, r, "message_id"))
	}
	if ids[3] != ids[0] {
		t.Errorf("the repeat of t1 on a/p carries %s, want the first one's %s", ids[3], ids[0])
	}
	if ids[1] == ids[0] {
		t.Error("t1 on b/p read as a duplicate of t1 on a/p: dedup is per partition")
	}
	for q, want := range map[string][]int{"a": {1, 3}, "b": {2, 5}} {
		var got []int
		for _, m := range w.s.Messages(q, "p") {
			var v struct{ N int }
			if err := json.Unmarshal(m.Data, &v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v.N)
		}
		if !slices.Equal(got, want) {
			t.Errorf("queue %s holds %v, want %v", q, got, want)
		}
	}
}
