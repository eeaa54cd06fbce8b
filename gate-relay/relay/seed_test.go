package relay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
)

// A path added to a running graph does not read the frames already on the
// interior queue it shares (its group is seeded at the runtime's start),
// while the re-declare and a later restart leave existing cursors alone:
// nothing is replayed, nothing skipped.
func TestNewPathSeedsAtStartAndRestartKeepsCursors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const graph = "seed"
	node := func(extra string) string {
		return `"budgets":[{"count":100000,"timeMs":1000}]` + extra
	}
	v1 := fmt.Sprintf(`{"version":1,"nodes":{"a":{"ingress":true,%s},"c":{%s}},
		"paths":[{"name":"p1","nodes":["a","c"]}]}`, node(""), node(fmt.Sprintf(`,"egress":%q`, e.egressQueue())))
	v2 := fmt.Sprintf(`{"version":2,"nodes":{"a":{"ingress":true,%s},"b":{"ingress":true,%s},"c":{%s}},
		"paths":[{"name":"p1","nodes":["a","c"]},{"name":"p2","nodes":["b","c"]}]}`, node(""), node(""), node(fmt.Sprintf(`,"egress":%q`, e.egressQueue())))
	e.declare(graph, v1)
	k := defaultKnobs()
	r, stop := e.startStoppableRelay(k)

	ingressA, ingressB := plan.IngressQueue(e.app, graph, "a"), plan.IngressQueue(e.app, graph, "b")
	interior := plan.InteriorQueue(e.app, graph, "c")
	g1, g2 := plan.Group(e.app, graph, "p1", "c"), plan.Group(e.app, graph, "p2", "c")
	seqs := func(from, to int, src string) []item {
		var out []item
		for s := from; s < to; s++ {
			out = append(out, item{Seq: s, Part: "k", Src: src})
		}
		return out
	}
	e.push(ingressA, seqs(0, 20, "a")...)
	gatetest.Eventually(t, 15*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 20 })
	before, ok := e.mini.Cursor(interior, g1, "k")
	if !ok || before.Committed != 19 {
		t.Fatalf("p1/c cursor on the interior queue = %+v (found %v), want committed 19", before, ok)
	}

	e.declare(graph, v2)
	gatetest.Eventually(t, 10*time.Second, func() bool {
		st := r.Snapshot()
		g, ok := st.Graph(e.app, graph)
		return ok && g.Version == 2 && g.Running
	})
	e.push(ingressB, seqs(0, 5, "b")...)
	gatetest.Eventually(t, 15*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 25 })
	p2, _ := stageStatus(r, e.app, graph, "p2", "c")
	if p2.Counters.Popped != 5 || p2.Counters.Foreign != 0 {
		t.Fatalf("the new path's stage popped %d frames (%d foreign); it must read only the 5 frames relayed after it started", p2.Counters.Popped, p2.Counters.Foreign)
	}
	if c, ok := e.mini.Cursor(interior, g2, "k"); !ok || c.Committed < 19 {
		t.Fatalf("p2/c cursor = %+v (found %v): it was not seeded past the frames already on the interior queue", c, ok)
	}
	after, _ := e.mini.Cursor(interior, g1, "k")
	if after.Committed < before.Committed {
		t.Fatalf("re-declaring moved p1/c's cursor back from %d to %d", before.Committed, after.Committed)
	}

	stop()
	e.startRelay(k)
	e.push(ingressA, seqs(20, 25, "a")...)
	gatetest.Eventually(t, 20*time.Second, func() bool { return e.egressCount(e.egressQueue()) >= 30 })
	consistently(t, 500*time.Millisecond, func() bool { return e.egressCount(e.egressQueue()) == 30 })
	per := map[string][]int{}
	for _, o := range e.egress(e.egressQueue()) {
		per[o.Src] = append(per[o.Src], o.Seq)
	}
	if fmt.Sprint(per["a"]) != fmt.Sprint(seqRange(0, 25)) || fmt.Sprint(per["b"]) != fmt.Sprint(seqRange(0, 5)) {
		t.Fatalf("after re-declare and restart egress holds a=%v b=%v: something was replayed or skipped", per["a"], per["b"])
	}
}

func seqRange(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
