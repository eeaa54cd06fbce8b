package history_test

import (
	"testing"

	"github.com/queen-mq/gate/libs/history"
)

// SecondsAtCost sums a node's seconds over recorders and paths and flags
// a second with a row whose cost is not items × the node's cost.
func TestSecondsAtCost(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	sec := t0.UnixMilli()
	b := history.Batch{Samples: []history.Sample{
		{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: "r1", Second: sec, Items: 3, Cost: 6},
		{App: "a", Graph: "g", Node: "n", Path: "q", Session: 5, Recorder: "r2", Second: sec, Items: 1, Cost: 2},
		{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: "r1", Second: sec + 1000, Items: 2, Cost: 5},
		{App: "a", Graph: "g", Node: "n", Path: "p", Session: 6, Recorder: "r3", Second: sec + 2000, Items: 9, Cost: 18},
		{App: "a", Graph: "g", Node: "m", Path: "p", Session: 5, Recorder: "r4", Second: sec + 2000, Items: 9, Cost: 18},
	}}
	if err := db.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	got, err := db.SecondsAtCost(t.Context(), "a", "g", "n", 5, sec, sec+10000, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Items != 4 || got[0].Cost != 8 || !got[0].Uniform || got[0].Rows != 2 || got[1].Uniform {
		t.Fatalf("seconds %+v: the first sums two recorders at cost 2, the second has 2 items costing 5", got)
	}
}

func TestPathSeconds(t *testing.T) {
	t.Parallel()
	db, _ := open(t, t0)
	sec := t0.UnixMilli()
	b := history.Batch{Samples: []history.Sample{
		{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: "r1", Second: sec, Items: 3, Cost: 7},
		{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: "r2", Second: sec, Items: 1, Cost: 2},
		{App: "a", Graph: "g", Node: "n", Path: "q", Session: 5, Recorder: "r1", Second: sec, Items: 9, Cost: 9},
		{App: "a", Graph: "g", Node: "n", Path: "p", Session: 5, Recorder: "r1", Second: sec + 1000, Items: 2, Cost: 5},
	}}
	if err := db.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	got, err := db.PathSeconds(t.Context(), "a", "g", "n", "p", 5, sec, sec+10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Items != 4 || got[0].Cost != 9 || got[0].Rows != 2 || got[1].Items != 2 {
		t.Fatalf("path p seconds %+v", got)
	}
}
