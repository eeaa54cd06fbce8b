package status

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// BenchmarkIdlePeriod measures one status period of a replica whose
// graphs are all idle (nothing changed since the last period), as the
// publisher runs it: the status rows (only the header is due) and the NATS
// fan-out of every graph's counters. 6,700 two-node graphs is one replica's
// share of 10,000 graphs on three replicas, each graph on two. The figure
// is ns (and bytes, allocations) per period; at GATE_STATUS_SECONDS=1 a
// period's ns per 10^7 is the percent of a core it costs.
func BenchmarkIdlePeriod(b *testing.B) {
	for _, n := range []int{1000, 6700} {
		b.Run(fmt.Sprintf("graphs=%d", n), func(b *testing.B) {
			mini := miniqueen.RunT(b)
			c, err := queen.New(mini.URL())
			if err != nil {
				b.Fatal(err)
			}
			nt := gatetest.NewNATS(b)
			st := store.New(c, "gate")
			p := New(Config{Store: st, Source: &relay{clk: clock.Real()}, NATS: nt.Conn, Period: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			snap := func(at int64) store.RelayStatus {
				rs := store.RelayStatus{Replica: "bench", At: at}
				for i := range n {
					g := store.GraphStatus{App: "bench", Graph: fmt.Sprintf("fleet-%d", i), Version: 1, Running: true, Started: 1}
					for _, node := range []string{"in", "out"} {
						g.Stages = append(g.Stages, store.StageStatus{Path: "main", Node: node, Source: "gate.bench.fleet." + node, Group: "gate.bench.fleet.main." + node,
							Counters: store.Counters{Popped: 10, Admitted: 10, Forwarded: 10, Commits: 2}})
					}
					rs.Graphs = append(rs.Graphs, g)
				}
				return rs
			}
			w := st.NewStatusWriter("bench")
			fan := &fanCache{graphs: map[string]fanGraph{}}
			now := time.Unix(1000, 0)
			period := func(i int) {
				rs := snap(int64(i))
				if _, err := w.Write(b.Context(), rs, 3*time.Second, now.Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
				p.fanOut(rs, 0, fan, p.cfg.Logger)
			}
			period(0)
			b.ReportAllocs()
			b.ResetTimer()
			i := 1
			for b.Loop() {
				period(i)
				i++
			}
		})
	}
}
