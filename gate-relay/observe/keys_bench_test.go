package observe

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/shadow"
)

// BenchmarkKeyedRecording is what a relay pays to record one node's
// items per scope value for a per-account shadow candidate: 10,000 items
// a second in claims of 100, spread over 1, 100 or 10,000 distinct
// accounts (the cap raised to 10,000), against the same settles with no
// keyed candidate. Reported per second of traffic: the handover rows and
// their JSON bytes (each becomes one PostgreSQL row per entry), and the
// cost of Observe per item.
func BenchmarkKeyedRecording(b *testing.B) {
	const perSecond, claim = 10_000, 100
	for _, values := range []int{0, 1, 100, 10_000} {
		name := fmt.Sprintf("values=%d", values)
		if values == 0 {
			name = "unkeyed"
		}
		b.Run(name, func(b *testing.B) {
			payloads := make([][]byte, perSecond)
			for i := range payloads {
				payloads[i] = fmt.Appendf(nil, `{"account":"acct-%06d","n":%d,"op":"charge"}`, i%max(values, 1), i)
			}
			clk := clock.NewVirtual(t0)
			h := New(Config{Namespace: ns, Replica: "r", Source: SourceFunc(func() []Runtime {
				return []Runtime{{App: "a", Graph: "g", Started: t0, Stages: []StageInfo{{Path: "main", Node: "n"}}}}
			}), Clock: clk, KeysPerSecond: 10_000})
			h.shadows = map[graphKey]int64{{"a", "g"}: t0.UnixMilli()}
			if values > 0 {
				h.needs = map[graphKey]map[string]shadow.Need{{"a", "g"}: {"n": {Fields: []string{"payload.account"}}}}
			}
			h.sync(t0.UnixMilli())
			var rows, bytes, entries int
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				sec := t0.Add(time.Duration(i) * time.Second)
				clk.Set(sec)
				for c := 0; c < perSecond; c += claim {
					batch := payloads[c : c+claim]
					h.Observe(stage.Settled{App: "a", Graph: "g", Path: "main", Node: "n", Items: claim, Cost: claim, At: sec,
						Forwarded: func(yield func([]byte, int64) bool) {
							for _, p := range batch {
								if !yield(p, 1) {
									return
								}
							}
						}})
				}
				b.StopTimer()
				// Hand the second over and forget it, as a committed flush does.
				out := h.rows(sec.Add(time.Second).UnixMilli())
				for _, r := range out {
					body, _ := json.Marshal(r)
					rows++
					bytes += len(body)
					if r.Keys != nil {
						entries += len(r.Keys.Entries)
					}
					h.forget(r, sec.Add(time.Second).UnixMilli())
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perSecond), "ns/item")
			b.ReportMetric(float64(rows)/float64(b.N), "rows/s")
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/s")
			b.ReportMetric(float64(entries)/float64(b.N), "pgrows/s")
		})
	}
}
