package wire

import (
	"encoding/json"
	"testing"
)

func TestHopRoundTrip(t *testing.T) {
	in := []Hop{{Names: []string{"a"}}, {Names: []string{"b", "c"}, Fanout: true}}
	b, err := json.Marshal(in)
	if err != nil || string(b) != `["a",["b","c"]]` {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	var out []Hop
	if err := json.Unmarshal(b, &out); err != nil || len(out) != 2 || out[0].Fanout || !out[1].Fanout || out[1].Names[1] != "c" {
		t.Fatalf("unmarshal = %+v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`[3]`), &out); err == nil {
		t.Fatal("a number hop was accepted")
	}
}

func TestCountersSumAndRefusals(t *testing.T) {
	var c Counters
	c.Add(Counters{Deferred: 1, Parked: 2, Released: 3, Forwarded: 8, Commits: 2})
	if c.Refusals() != 6 || *c.ItemsPerCommit() != 4 {
		t.Fatalf("counters %+v", c)
	}
}
