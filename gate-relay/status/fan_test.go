package status

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/gate/libs/store"
)

// TestFanOutMessagesAreTheSnapshotsEncoding: a counters message is, byte
// for byte, the JSON encoding of its GraphSnapshot — in the first period,
// in a period where the graph did not change (its encoding reused), after
// it changed (in place, in the caller's memory, too) and for a replica id
// that needs escaping; a graph gone from the status is forgotten.
func TestFanOutMessagesAreTheSnapshotsEncoding(t *testing.T) {
	t.Parallel()
	fan := &fanCache{graphs: map[string]fanGraph{}}
	g := store.GraphStatus{App: "a", Graph: "g", Version: 2, Running: true, Started: 7,
		Stages: []store.StageStatus{{Path: "main", Node: "in", Counters: store.Counters{Forwarded: 3},
			LastRefusal: &store.Refusal{Budget: "b", At: 9}, Denials: []store.DenialCount{{Budget: "b", Reason: "ceiling", Count: 1}}}}}
	h := store.GraphStatus{App: "a", Graph: "h", Version: 1, Running: false, Error: `bad "quote" <tag>`}
	check := func(what, replicaID string, at int64, gs ...store.GraphStatus) {
		t.Helper()
		fan.period++
		replica, _ := json.Marshal(replicaID)
		for _, gr := range gs {
			got, err := fan.snapshot(replica, at, gr)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(GraphSnapshot{Replica: replicaID, At: at, Graph: gr})
			if string(got) != string(want) {
				t.Fatalf("%s, graph %s: the message is\n%s\nwant\n%s", what, gr.Graph, got, want)
			}
		}
	}
	check("first period", "relay-1", 1000, g, h)
	check("unchanged", "relay-1", 2000, g, h)
	g.Stages[0].Counters.Forwarded++
	check("counters changed in place", "relay-1", 3000, g, h)
	g.Stages[0].LastRefusal.At++
	g.Stages[0].Denials[0].Count++
	check("refusal and denials changed in place", "relay-1", 4000, g, h)
	check("a replica id to escape", `r"1<&>`, 5000, g)
	fan.prune()
	if len(fan.graphs) != 1 {
		t.Fatalf("%d graphs kept after a period that sent only g, want 1", len(fan.graphs))
	}
	fan.period++
	fan.prune()
	if len(fan.graphs) != 0 {
		t.Fatalf("%d graphs kept after a period that sent none", len(fan.graphs))
	}
}
