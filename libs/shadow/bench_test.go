package shadow

import (
	"fmt"
	"testing"

	"github.com/queen-mq/gate/libs/plan"
)

func planOptions() plan.Options { return plan.Options{} }

const twoPaths = `{
  "application": "demo", "graph": "calls", "version": 1,
  "nodes": {
    "a": { "ingress": true, "budgets": [ { "id": "a", "count": 100000, "timeMs": 1000 } ] },
    "b": { "ingress": true, "budgets": [ { "id": "b", "count": 100000, "timeMs": 1000 } ] },
    "call": { "budgets": [ { "id": "call-1s", "count": 1000, "timeMs": 1000 } ], "egress": { "queue": "demo.calls.out", "group": "workers" } }
  },
  "paths": [ { "name": "p1", "nodes": ["a", "call"] }, { "name": "p2", "nodes": ["b", "call"] } ]
}`

// BenchmarkEvaluateDay: a day of recorded seconds (two paths at 50 and 40
// items a second through one node, bursts of 400 every 10 minutes) judged
// against a candidate of 95 per second (each burst waits a few seconds), evaluated minute by minute as
// gate-recorder does (a State carried across each minute, not JSON).
func BenchmarkEvaluateDay(b *testing.B) {
	c, err := ParseCandidate([]byte(`{"nodes":{"call":{"budgets":[{"id":"call-1s","count":95,"timeMs":1000}]}}}`), []string{"a", "b", "call"})
	if err != nil {
		b.Fatal(err)
	}
	res, err := Compile("demo", "calls", []byte(twoPaths), c, planOptions())
	if err != nil || !res.Accepted() {
		b.Fatalf("%v %v", err, res.Errors())
	}
	start := int64(1_800_000_000_000)
	const day = 86400
	p1 := make([]Second, 0, day)
	p2 := make([]Second, 0, day)
	for s := int64(0); s < day; s++ {
		n := int64(50)
		if s%600 == 0 {
			n = 400
		}
		p1 = append(p1, Second{T: start + s*1000, Items: n, Cost: n})
		p2 = append(p2, Second{T: start + s*1000, Items: 40, Cost: 40})
	}
	b.ReportAllocs()
	b.ResetTimer()
	var delayed int64
	for range b.N {
		st := State{Through: start}
		delayed = 0
		for m := int64(0); m < day/60; m++ {
			lo, hi := m*60, (m+1)*60
			arr := map[NodePath][]Second{{"call", "p1"}: p1[lo:hi], {"call", "p2"}: p2[lo:hi]}
			e, err := NewEvaluator(res.Plan, c.NodeNames(), st)
			if err != nil {
				b.Fatal(err)
			}
			for _, mm := range e.Run(start+hi*1000, arr) {
				delayed += mm.Delayed
			}
			st = e.State()
		}
	}
	if delayed == 0 {
		b.Fatal("the candidate delayed nothing: the benchmark measures nothing")
	}
	b.ReportMetric(float64(delayed), "delayed/day")
}

// BenchmarkEvaluateKeyedMinute is gate-recorder's work per minute for a
// per-account candidate (5 a second per account beside a wide global
// budget) over one node's minute of 10,000 items a second spread over 1,
// 100 or 10,000 recorded accounts, as it runs each minute (a State
// carried from the previous one).
func BenchmarkEvaluateKeyedMinute(b *testing.B) {
	c, err := ParseCandidate([]byte(`{"nodes":{"call":{"budgets":[{"id":"all","count":100000,"timeMs":1000},{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"payload.account"}]}}}`), []string{"a", "b", "call"})
	if err != nil {
		b.Fatal(err)
	}
	res, err := Compile("demo", "calls", []byte(twoPaths), c, planOptions())
	if err != nil || !res.Accepted() {
		b.Fatalf("%v %v", err, res.Errors())
	}
	const perSecond = 10_000
	for _, values := range []int{1, 100, 10_000} {
		b.Run(fmt.Sprintf("values=%d", values), func(b *testing.B) {
			start := int64(1_800_000_000_000)
			scopes := make([]string, values)
			for v := range scopes {
				sc, _ := AppendScope(nil, Need{Fields: []string{"payload.account"}}, fmt.Appendf(nil, `{"account":"acct-%06d"}`, v))
				scopes[v] = string(sc)
			}
			minute := func(m int64) map[NodePath][]Second {
				secs := make([]Second, 0, 60)
				for s := int64(0); s < 60; s++ {
					sec := Second{T: start + m*60000 + s*1000, Items: perSecond, Cost: perSecond}
					for v := range values {
						n := int64(perSecond / values)
						sec.Keys = append(sec.Keys, KeyCount{Scope: scopes[v], Items: n, Cost: n})
					}
					secs = append(secs, sec)
				}
				return map[NodePath][]Second{{"call", "p1"}: secs}
			}
			arr := minute(0)
			st := State{Through: start}
			var delayed int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				for k, secs := range arr {
					for j := range secs {
						secs[j].T = start + int64(i)*60000 + int64(j)*1000
					}
					arr[k] = secs
				}
				b.StartTimer()
				e, err := NewEvaluator(res.Plan, c.NodeNames(), st)
				if err != nil {
					b.Fatal(err)
				}
				for _, mm := range e.Run(start+int64(i+1)*60000, arr) {
					delayed += mm.Delayed
				}
				st = e.State()
			}
			if values < perSecond/5 && delayed == 0 {
				b.Fatal("the candidate delayed nothing: the benchmark measures nothing")
			}
			b.ReportMetric(float64(len(st.Queues)), "lanes-carried")
		})
	}
}
