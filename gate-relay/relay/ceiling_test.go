package relay_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

// A node at 500 per 10 s in ten 1 s sub-windows (50 per window) drains a
// backlog of 1,000 items over 8 partitions: every kv window forwards
// exactly what its counter finally reads and never more than 50, the worst
// sliding 10 s of egress commits holds at most 550, the admitted rate over
// the backlog is at least 95% of 50/s, and every partition keeps its order.
//
// It does not run in parallel with the package's other tests: the rate is
// wall-clock, and the gap between windows is scheduling latency that
// neighbours on a 2-core machine inflate. The ceiling assertions are exact
// whatever the load.
func TestCeilingHoldsPerWindowAndSlidingSpan(t *testing.T) {
	slow(t)
	e := newEnv(t)
	const graph, partitions, perPartition = "ceiling", 8, 125
	e.declare(graph, fmt.Sprintf(`{"version":1,"nodes":{"limit":{"ingress":true,"concurrency":8,
		"budgets":[{"id":"b0","count":500,"timeMs":10000,"subWindows":10}],"egress":%q}},
		"paths":[{"name":"main","nodes":["limit"]}]}`, e.egressQueue()))
	ingress := plan.IngressQueue(e.app, graph, "limit")
	want := map[string][]int{}
	var items []item
	for s := 0; s < perPartition; s++ {
		for p := 0; p < partitions; p++ {
			part := fmt.Sprintf("p%d", p)
			items = append(items, item{Seq: s, Part: part})
			want[part] = append(want[part], s)
		}
	}
	e.push(ingress, items...)
	e.startRelay(defaultKnobs())
	gatetest.Eventually(t, 60*time.Second, func() bool {
		return e.egressCount(e.egressQueue()) >= len(items) && e.rec.settledAt(graph, "limit") >= len(items)
	})

	got := e.egress(e.egressQueue())
	checkOnceInOrder(t, got, want)

	key := plan.BudgetKey(e.app, graph, "limit", "b0")
	writes, settles := e.rec.snapshot()
	final := map[time.Time]int64{}
	for _, w := range writes {
		if w.Key != key {
			t.Fatalf("unexpected counter %s written", w.Key)
		}
		if w.ExpiresAt.IsZero() {
			t.Fatalf("a charge reported no window end: %+v", w)
		}
		if w.Post > 50 {
			t.Fatalf("counter read %d in window ending %s: above the ceiling 50", w.Post, w.ExpiresAt)
		}
		final[w.ExpiresAt] += w.Delta
	}
	forwarded := map[time.Time]int64{}
	total := 0
	for _, s := range settles {
		if len(s.Windows) != 1 || s.Windows[0].Key != key {
			t.Fatalf("a settle was not charged to the node's counter: %+v", s)
		}
		forwarded[s.Windows[0].ExpiresAt] += int64(s.Items)
		total += s.Items
	}
	if total != len(items) {
		t.Fatalf("settles forwarded %d items, egress holds %d", total, len(items))
	}
	var windows []time.Time
	for w, v := range final {
		if v > 50 {
			t.Errorf("window ending %s: counter final value %d exceeds 50", w.Format(time.StampMilli), v)
		}
		if forwarded[w] != v {
			t.Errorf("window ending %s: forwarded %d items but the counter finally read %d", w.Format(time.StampMilli), forwarded[w], v)
		}
		if v > 0 {
			windows = append(windows, w)
		}
	}
	for w, n := range forwarded {
		if _, ok := final[w]; !ok {
			t.Errorf("window ending %s forwarded %d items that no counter write charged", w, n)
		}
	}
	if entry, ok := e.mini.KV(e.b.Namespace(), key); ok {
		for w, v := range final {
			if w.Sub(entry.ExpiresAt).Abs() < time.Millisecond && v != entry.Int {
				t.Errorf("the live counter reads %d, the charges of its window sum to %d", entry.Int, v)
			}
		}
	}

	var commits []time.Time
	for _, o := range got {
		commits = append(commits, o.Created)
	}
	worst := worstSpan(commits, 10*time.Second)
	if worst > 550 {
		t.Errorf("worst sliding 10 s of egress commits holds %d items, above the (N+1)/N bound 550", worst)
	}

	sort.Slice(windows, func(i, j int) bool { return windows[i].Before(windows[j]) })
	full := int64(0)
	for _, w := range windows[:len(windows)-1] {
		full += final[w]
	}
	var gaps []string
	for i := 1; i < len(windows); i++ {
		gaps = append(gaps, (windows[i].Sub(windows[i-1]) - time.Second).Round(time.Millisecond).String())
	}
	t.Logf("gaps between windows: %v", gaps)
	span := windows[len(windows)-1].Sub(windows[0])
	rate := float64(full) / span.Seconds()
	t.Logf("ceiling: %d windows, worst sliding 10 s = %d items (bound 550), admitted rate over the backlog = %.2f/s (%.1f%% of 50/s)",
		len(windows), worst, rate, rate/50*100)
	if rate < 0.95*50 {
		t.Errorf("admitted rate %.2f/s is below 95%% of 50/s", rate)
	}
}
