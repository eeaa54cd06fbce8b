package shadow

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

const accountsDoc = `{
  "application": "demo", "graph": "calls", "version": 1,
  "nodes": {
    "call": { "ingress": true, "budgets": [ { "id": "call-1s", "count": 1000, "timeMs": 1000 } ],
              "egress": { "queue": "demo.calls.out", "group": "workers" } }
  },
  "paths": [ { "name": "main", "nodes": ["call"] } ]
}`

func scope(field, value string) string {
	b, ok := AppendScope(nil, Need{Fields: []string{field}}, []byte(`{"`+field[len("payload."):]+`":"`+value+`"}`))
	if !ok {
		panic("value too long")
	}
	return string(b)
}

func runKeyed(t *testing.T, cand string, secs []Second, minutes int64, maxLanes int) []Minute {
	t.Helper()
	p, c := compileCandidate(t, accountsDoc, cand)
	start := int64(1_800_000_000_000)
	for i := range secs {
		secs[i].T += start
	}
	arr := map[NodePath][]Second{{"call", "main"}: secs}
	var got []Minute
	st := State{Through: start}
	for m := int64(1); m <= minutes; m++ {
		e, err := NewEvaluator(p, c.NodeNames(), st)
		if err != nil {
			t.Fatal(err)
		}
		if maxLanes > 0 {
			e.maxLanes = maxLanes
		}
		got = append(got, e.Run(start+m*60000, arr)...)
		b, _ := json.Marshal(e.State())
		st = State{}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
	}
	for i := range got {
		got[i].Minute -= start
	}
	return got
}

// A per-account candidate of 5 a second over two accounts: "a" arrives at
// 15 a second (3× its limit) for 30 s, "b" at 3 a second. Counted by
// hand: a's item k (0..449) arrives at second k/15 and leaves at k/5, so
// minute 0 lets a's first 300 through (the last of them, k=299, arrived
// at 19 s and left at 59 s: 40 s), of which only k=0..4 left in the
// second they arrived; 150 wait into minute 1 and leave by second 89 (the
// last, k=449, arrived at 29 s: 60 s). b's 90 items are never delayed.
func TestPerAccountCandidateDelaysOnlyTheAccountOverItsLimit(t *testing.T) {
	cand := `{"nodes":{"call":{"budgets":[{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"payload.account"},{"id":"wide","count":100000,"timeMs":1000}]}}}`
	var secs []Second
	for s := int64(0); s < 30; s++ {
		secs = append(secs, Second{T: s * 1000, Items: 18, Cost: 18, Keys: []KeyCount{
			{Scope: scope("payload.account", "a"), Items: 15, Cost: 15},
			{Scope: scope("payload.account", "b"), Items: 3, Cost: 3},
		}})
	}
	got := runKeyed(t, cand, secs, 2, 0)
	// The median of minute 0's 390 admitted delays: b's 90 zeros and a's
	// k/5 - k/15 seconds for k < 300, counted item by item.
	var delays []int64
	for range 90 {
		delays = append(delays, 0)
	}
	for k := int64(0); k < 300; k++ {
		delays = append(delays, k/5-k/15)
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	p50 := delays[(len(delays)+1)/2-1] * 1000
	want := []Minute{
		{Node: "call", Minute: 0, Arrived: 540, Admitted: 390, Delayed: 295, Backlog: 150, DelayP50Ms: p50, DelayMaxMs: 40000, OldestWaitingMs: 40000},
		{Node: "call", Minute: 60000, Arrived: 0, Admitted: 150, Delayed: 150, Backlog: 0, DelayP50Ms: 50000, DelayMaxMs: 60000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// The oldest item waiting at minute 0's end is a's k=300, arrived at
	// 20 s: 40 s. Minute 1's median: k=300..449 wait (k/5 - k/15) s, 40
	// to 60: the 75th of them (k=374) waits 74-24 = 50 s.
}

// The document's per-key counts apply to a candidate as on the relay: a
// "vip" account with keys {"vip": 20} is not delayed at 15 a second while
// an ordinary account at the same rate is.
func TestPerKeyCountsOfTheCandidateApply(t *testing.T) {
	cand := `{"nodes":{"call":{"budgets":[{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"payload.account","keys":{"vip":20}},{"id":"wide","count":100000,"timeMs":1000}]}}}`
	var secs []Second
	for s := int64(0); s < 10; s++ {
		secs = append(secs, Second{T: s * 1000, Items: 30, Cost: 30, Keys: []KeyCount{
			{Scope: scope("payload.account", "plain"), Items: 15, Cost: 15},
			{Scope: scope("payload.account", "vip"), Items: 15, Cost: 15},
		}})
	}
	got := runKeyed(t, cand, secs, 1, 0)
	// plain: 150 items at 5/s leave by second 29, k=0..4 at once; vip: none.
	if len(got) != 1 || got[0].Arrived != 300 || got[0].Admitted != 300 || got[0].Delayed != 145 || got[0].Backlog != 0 || got[0].DelayMaxMs != 20000 {
		t.Fatalf("got %+v, want 300 admitted, 145 delayed (plain only), up to 20 s", got)
	}
}

// An op-filtered candidate delays only its op: deletes at 4 a second
// under 2 a second for 10 s (item k leaves at k/2: 38 of 40 delayed, the
// last by 10 s), reads at 10 a second untouched.
func TestOpCandidateDelaysOnlyItsOp(t *testing.T) {
	cand := `{"nodes":{"call":{"budgets":[{"id":"deletes","count":2,"timeMs":1000,"whenOp":["photo.delete"]},{"id":"wide","count":100000,"timeMs":1000}]}}}`
	var secs []Second
	for s := int64(0); s < 10; s++ {
		secs = append(secs, Second{T: s * 1000, Items: 14, Cost: 14, Keys: []KeyCount{
			{Scope: "", Op: "photo.delete", Items: 4, Cost: 4},
			{Scope: "", Op: "photo.get", Items: 10, Cost: 10},
		}})
	}
	got := runKeyed(t, cand, secs, 1, 0)
	if len(got) != 1 || got[0].Arrived != 140 || got[0].Admitted != 140 || got[0].Delayed != 38 || got[0].Backlog != 0 || got[0].DelayMaxMs != 10000 || got[0].Approximate != 0 {
		t.Fatalf("got %+v, want 140 admitted, 38 delayed, up to 10 s, none approximate", got)
	}
}

// The items a second's keys do not hold (the relay's overflow past its
// cap) are reported as approximate and charge only the budgets that
// charge every item: with a global 50/s beside the per-account 5/s, the
// 40 unknown items a second pass the per-account budget but count on the
// global one.
func TestOverflowIsReportedAsApproximate(t *testing.T) {
	cand := `{"nodes":{"call":{"budgets":[{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"payload.account"},{"id":"all","count":50,"timeMs":1000}]}}}`
	secs := []Second{{T: 0, Items: 50, Cost: 50, Keys: []KeyCount{{Scope: scope("payload.account", "a"), Items: 10, Cost: 10}}}}
	got := runKeyed(t, cand, secs, 1, 0)
	// a: 10 items at 5/s: 5 delayed by 1 s. Unknown: 40, admitted at once.
	if len(got) != 1 || got[0].Arrived != 50 || got[0].Approximate != 40 || got[0].Delayed != 5 || got[0].DelayMaxMs != 1000 {
		t.Fatalf("got %+v, want 40 approximate and a's 5 delayed by 1 s", got)
	}
	// Over the global budget the unknown items wait too: 100 a second of
	// which 90 unknown, 50/s global.
	secs = []Second{{T: 0, Items: 100, Cost: 100, Keys: []KeyCount{{Scope: scope("payload.account", "a"), Items: 10, Cost: 10}}}}
	got = runKeyed(t, cand, secs, 1, 0)
	if got[0].Approximate != 90 || got[0].Delayed != 50 {
		t.Fatalf("got %+v, want 90 approximate and 50 delayed by the global budget", got[0])
	}
}

// Items recorded with no value at a scoped budget's field are not charged
// by it (as on the relay) and are counted per budget, so the answer can
// say the field is wrong.
func TestItemsWithoutTheFieldAreCountedMissing(t *testing.T) {
	cand := `{"nodes":{"call":{"budgets":[{"id":"per-account","count":1,"timeMs":1000,"scopeBy":"payload.acount"},{"id":"wide","count":100000,"timeMs":1000}]}}}`
	sc, _ := AppendScope(nil, Need{Fields: []string{"payload.acount"}}, []byte(`{"account":"a"}`))
	secs := []Second{{T: 0, Items: 30, Cost: 30, Keys: []KeyCount{{Scope: string(sc), Items: 30, Cost: 30}}}}
	got := runKeyed(t, cand, secs, 1, 0)
	if len(got) != 1 || got[0].Delayed != 0 || got[0].Missing["per-account"] != 30 || got[0].Approximate != 0 {
		t.Fatalf("got %+v, want nothing delayed and 30 missing on per-account", got)
	}
}

// Trimming lanes and ended windows at every minute changes nothing: 60
// accounts a second, each new, over 3 minutes, judged with the lanes
// trimmed at every minute's end and without.
func TestTrimmingLanesChangesNothing(t *testing.T) {
	cand := `{"nodes":{"call":{"budgets":[{"id":"per-account","count":2,"timeMs":10000,"subWindows":1,"scopeBy":"payload.account"},{"id":"all","count":300,"timeMs":1000}]}}}`
	mk := func() []Second {
		var secs []Second
		for s := int64(0); s < 150; s++ {
			sec := Second{T: s * 1000}
			for a := int64(0); a < 60; a++ {
				n := 1 + (a+s)%4
				sec.Keys = append(sec.Keys, KeyCount{Scope: scope("payload.account", string(rune('A'+a%26))+string(rune('a'+(a/26+s)%26))), Items: n, Cost: n})
				sec.Items += n
				sec.Cost += n
			}
			secs = append(secs, sec)
		}
		return secs
	}
	a := runKeyed(t, cand, mk(), 4, 0)
	b := runKeyed(t, cand, mk(), 4, 1)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("trimmed %+v\nkept    %+v", b, a)
	}
	var delayed int64
	for _, m := range a {
		delayed += m.Delayed
	}
	if delayed == 0 {
		t.Fatal("nothing was delayed: the comparison proves nothing")
	}
}

// Needs names the fields and ops a candidate's keyed budgets read, per
// node; an unkeyed candidate needs nothing.
func TestNeeds(t *testing.T) {
	c, err := ParseCandidate([]byte(`{"nodes":{"call":{"budgets":[{"id":"a","count":1,"timeMs":1000,"scopeBy":"payload.b"},{"id":"b","count":1,"timeMs":1000,"scopeBy":"payload.a","whenOp":["x"]},{"id":"c","count":1,"timeMs":1000,"scopeBy":"payload.a"}]},"ip":{"budgets":[{"id":"d","count":1,"timeMs":1000,"whenOp":["*"]}]}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := Needs(c)
	want := map[string]Need{"call": {Fields: []string{"payload.a", "payload.b"}, Ops: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	sc, ok := AppendScope(nil, got["call"], []byte(`{"a":7,"c":"x"}`))
	if !ok || string(sc) != `{"payload.a":"7","payload.b":null}` {
		t.Fatalf("scope %s %v", sc, ok)
	}
	long := make([]byte, 2000)
	for i := range long {
		long[i] = 'x'
	}
	if _, ok := AppendScope(nil, got["call"], []byte(`{"a":"`+string(long)+`"}`)); ok {
		t.Fatal("a value longer than any key was recorded")
	}
}
