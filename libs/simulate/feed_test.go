package simulate

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// chunkFeed hands a sorted slice over in chunks of random length, copied
// into one buffer it reuses on every call: a replay that kept a chunk past
// the next call would read overwritten seconds.
type chunkFeed struct {
	rnd  *rand.Rand
	secs []Second
	buf  []Second
	fail error // returned once secs is used up, when set
}

func (f *chunkFeed) Next() ([]Second, error) {
	if len(f.secs) == 0 {
		return nil, f.fail
	}
	n := min(len(f.secs), 1+f.rnd.IntN(7))
	f.buf = append(f.buf[:0], f.secs[:n]...)
	f.secs = f.secs[n:]
	return f.buf, nil
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A replay fed chunk by chunk — chunks of any length, a second's rows
// split across two chunks, seconds before the range and after it — gives
// exactly the answer of the same seconds handed over as whole slices,
// window for window.
func TestGraphFedInChunksIsGraph(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(11, 7))
	delayed := 0
	for round := 0; round < 200; round++ {
		doc, paths := randomDoc(rnd)
		p := compile(t, doc)
		secs := 5 + rnd.IntN(60)
		start := int64(rnd.IntN(3)) * 1000
		end := start + int64(secs)*1000
		arr := map[string][]Second{}
		for _, path := range paths {
			for s := -2; s < secs+3; s++ {
				// Up to three rows per second (recorders), some empty.
				for range rnd.IntN(4) {
					n := int64(rnd.IntN(30))
					arr[path] = append(arr[path], Second{T: start + int64(s)*1000, Items: n, Cost: n * int64(1+rnd.IntN(3))})
				}
			}
		}
		// A recorded path the candidate does not have is read and ignored.
		arr["gone"] = []Second{{T: start, Items: 5, Cost: 5}}
		feeds := map[string]Feed{}
		for path, s := range arr {
			feeds[path] = &chunkFeed{rnd: rnd, secs: append([]Second(nil), s...)}
		}
		in := GraphInput{Trace: true, Plan: p, Start: start, End: end}
		fed, err := GraphFed(in, feeds)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		in.Arrivals = arr
		whole := Graph(in)
		if a, b := asJSON(t, fed), asJSON(t, whole); a != b {
			t.Fatalf("round %d: fed in chunks\n%s\nwhole\n%s\n%s", round, a, b, doc)
		}
		if whole.DelayedItems > 0 {
			delayed++
		}
	}
	if delayed < 50 {
		t.Fatalf("only %d of 200 rounds delayed anything: the comparison is too easy", delayed)
	}
}

// A feed's error stops the replay and is returned naming the path; so is
// a feed whose seconds go back in time.
func TestGraphFedStopsAtAFeedsError(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"id":"sec","count":10,"timeMs":1000}],"egress":"app.out"}},
		"paths":[{"name":"main","nodes":["n"]}]}`)
	broken := errors.New("connection reset")
	secs := []Second{{T: 0, Items: 3, Cost: 3}, {T: 1000, Items: 4, Cost: 4}}
	res, err := GraphFed(GraphInput{Plan: p, Start: 0, End: 5000},
		map[string]Feed{"main": &chunkFeed{rnd: rand.New(rand.NewPCG(1, 1)), secs: secs, fail: broken}})
	if !errors.Is(err, broken) || res != nil || !strings.Contains(err.Error(), "path main") {
		t.Fatalf("got %v, %v: want the feed's error naming path main and no answer", res, err)
	}
	back := []Second{{T: 2000, Items: 1, Cost: 1}, {T: 1000, Items: 1, Cost: 1}}
	res, err = GraphFed(GraphInput{Plan: p, Start: 0, End: 5000}, map[string]Feed{"main": &sliceFeed{secs: back}})
	if err == nil || res != nil || !strings.Contains(err.Error(), "back in time") {
		t.Fatalf("got %v, %v: want a refusal of seconds out of order", res, err)
	}
}
