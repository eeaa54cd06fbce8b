package shadow

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/plan"
)

const oneNode = `{
  "application": "demo", "graph": "calls", "version": 1,
  "nodes": {
    "call": { "ingress": true, "budgets": [ { "id": "call-1s", "count": 100, "timeMs": 1000 } ],
              "egress": { "queue": "demo.calls.out", "group": "workers" } }
  },
  "paths": [ { "name": "main", "nodes": ["call"] } ]
}`

func compileCandidate(t *testing.T, doc, cand string) (*plan.Plan, Candidate) {
	t.Helper()
	c, err := ParseCandidate([]byte(cand), []string{"call"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compile("demo", "calls", []byte(doc), c, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Accepted() {
		t.Fatalf("candidate refused: %v", res.Errors())
	}
	return res.Plan, c
}

// oracleMinute is what a FIFO server admitting `rate` items per second
// makes of `arrive` items per second for `seconds` seconds, computed item
// by item: item k arrives at second k/arrive and leaves at second k/rate.
type oracleMinute struct{ arrived, admitted, delayed, backlog, p50, most int64 }

func oracle(arrive, rate, seconds, minutes int64) []oracleMinute {
	out := make([]oracleMinute, minutes)
	total := arrive * seconds
	perMinute := make([][]int64, minutes) // delays (s) of items admitted in each minute
	for k := int64(0); k < total; k++ {
		a, s := k/arrive, k/rate
		out[a/60].arrived++
		if s/60 < minutes {
			perMinute[s/60] = append(perMinute[s/60], s-a)
		}
	}
	for m := range out {
		d := perMinute[m]
		out[m].admitted = int64(len(d))
		for _, v := range d {
			if v > 0 {
				out[m].delayed++
			}
			out[m].most = max(out[m].most, v*1000)
		}
		if len(d) > 0 {
			// d is in admission order, and delays grow with k: the median
			// item is the ceil(n/2)-th.
			sorted := append([]int64(nil), d...)
			for i := 1; i < len(sorted); i++ {
				for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
					sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
				}
			}
			out[m].p50 = sorted[(len(sorted)+1)/2-1] * 1000
		}
		end := int64(m+1) * 60
		arrivedBy := min(total, arrive*end)
		admittedBy := min(total, rate*end)
		out[m].backlog = arrivedBy - admittedBy
	}
	return out
}

// A candidate at half the arrival rate (5/s against 10/s for 90 s)
// delays what an item-by-item FIFO oracle says, minute by minute, with the
// backlog carried across minutes and across a State round trip.
func TestHalfRateMatchesOracle(t *testing.T) {
	p, c := compileCandidate(t, oneNode, `{"nodes":{"call":{"budgets":[{"id":"call-1s","count":5,"timeMs":1000}]}}}`)
	start := int64(1_800_000_000_000) // a minute boundary
	if start%60000 != 0 {
		t.Fatal("start is not a minute boundary")
	}
	const arrive, rate, seconds, minutes = 10, 5, 90, 4
	arr := map[NodePath][]Second{}
	for s := int64(0); s < seconds; s++ {
		arr[NodePath{"call", "main"}] = append(arr[NodePath{"call", "main"}], Second{T: start + s*1000, Items: arrive, Cost: arrive})
	}
	var got []Minute
	st := State{Through: start}
	for m := int64(1); m <= minutes; m++ {
		e, err := NewEvaluator(p, c.NodeNames(), st)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Run(start+m*60000, arr)...)
		// Carry the state through JSON, as the recorder stores it.
		b, _ := json.Marshal(e.State())
		st = State{}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
	}
	want := oracle(arrive, rate, seconds, minutes)
	if len(got) != minutes {
		t.Fatalf("got %d minutes, want %d", len(got), minutes)
	}
	var delayed int64
	for i, g := range got {
		w := want[i]
		if g.Minute != start+int64(i)*60000 || g.Arrived != w.arrived || g.Admitted != w.admitted || g.Delayed != w.delayed ||
			g.Backlog != w.backlog || g.DelayP50Ms != w.p50 || g.DelayMaxMs != w.most {
			t.Errorf("minute %d: got %+v, oracle %+v", i, g, w)
		}
		delayed += g.Delayed
	}
	if delayed == 0 || got[minutes-1].Backlog != 0 {
		t.Fatalf("the half-rate candidate must delay items and drain by the end: %+v", got)
	}
	// 900 items at 5/s: the last (arrived at second 89) leaves at second 179.
	if got[2].DelayMaxMs != 90000 {
		t.Fatalf("longest delay %d ms, want 90000", got[2].DelayMaxMs)
	}
}

// A candidate as wide as the traffic delays nothing.
func TestWideCandidateDelaysNothing(t *testing.T) {
	p, c := compileCandidate(t, oneNode, `{"nodes":{"call":{"budgets":[{"id":"call-1s","count":50,"timeMs":1000}]}}}`)
	start := int64(1_800_000_000_000)
	arr := map[NodePath][]Second{{"call", "main"}: {{T: start, Items: 50, Cost: 50}, {T: start + 1000, Items: 50, Cost: 50}}}
	e, err := NewEvaluator(p, c.NodeNames(), State{Through: start})
	if err != nil {
		t.Fatal(err)
	}
	got := e.Run(start+60000, arr)
	if len(got) != 1 || got[0].Arrived != 100 || got[0].Admitted != 100 || got[0].Delayed != 0 || got[0].Backlog != 0 || got[0].DelayMaxMs != 0 {
		t.Fatalf("got %+v", got)
	}
}

// Candidates that do not compile are refused naming the document field;
// malformed candidates name the candidate's field.
func TestCandidateRefusals(t *testing.T) {
	c, err := ParseCandidate([]byte(`{"nodes":{"call":{"budgets":[{"id":"x","count":0,"timeMs":1000}]}}}`), []string{"call"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compile("demo", "calls", []byte(oneNode), c, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted() {
		t.Fatal("a budget of count 0 compiled")
	}
	at := ""
	for _, f := range res.Findings.Errors() {
		at += f.At + " "
	}
	if !strings.Contains(at, "/nodes/call/budgets/0") {
		t.Fatalf("refusal names %q, want /nodes/call/budgets/0…", at)
	}
	for body, field := range map[string]string{
		`[]`:                                     "body",
		`{"nodes":{}}`:                           "nodes",
		`{"nodez":{}}`:                           "nodez",
		`{"nodes":{"nope":{"budgets":[]}}}`:      "nodes.nope",
		`{"nodes":{"call":{"budget":[]}}}`:       "nodes.call.budget",
		`{"nodes":{"call":{}}}`:                  "nodes.call.budgets",
		`{"nodes":{"call":{"budgets":{}}}}`:      "nodes.call.budgets",
		`{"nodes":{"call":{"budgets":null}}}`:    "nodes.call.budgets",
		`{"nodes":"call"}`:                       "nodes",
		`{"nodes":{"call":{"budgets":[]}}} junk`: "body",
	} {
		_, err := ParseCandidate([]byte(body), []string{"call"})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field || !errors.Is(err, ErrCandidate) {
			t.Errorf("%s: got %v, want a refusal of field %s", body, err, field)
		}
	}
}

// A backlog past MaxGroups is carried in at most MaxGroups groups with
// every item kept, and a folded item's arrival is never later than its own
// (its delay is never under-reported).
func TestStateFoldsAHugeBacklog(t *testing.T) {
	p, c := compileCandidate(t, oneNode, `{"nodes":{"call":{"budgets":[{"id":"call-1s","count":1,"timeMs":1000}]}}}`)
	start := int64(1_800_000_000_000)
	const seconds = MaxGroups + 6000
	var secs []Second
	for s := int64(0); s < seconds; s++ {
		secs = append(secs, Second{T: start + s*1000, Items: 10, Cost: 10})
	}
	e, err := NewEvaluator(p, c.NodeNames(), State{Through: start})
	if err != nil {
		t.Fatal(err)
	}
	e.Run(start+(seconds/60+1)*60000, map[NodePath][]Second{{"call", "main"}: secs})
	st := e.State()
	if len(st.Queues) != 1 {
		t.Fatalf("queues %d", len(st.Queues))
	}
	var items int64
	last := int64(0)
	for _, g := range st.Queues[0].Groups {
		items += g[1]
		if g[0] < last {
			t.Fatal("groups out of arrival order")
		}
		last = g[0]
	}
	admitted := int64(seconds/60+1) * 60
	if n := len(st.Queues[0].Groups); n > MaxGroups {
		t.Fatalf("%d groups carried, at most %d", n, MaxGroups)
	}
	if want := int64(seconds)*10 - admitted; items != want {
		t.Fatalf("%d items carried, want %d", items, want)
	}
}
