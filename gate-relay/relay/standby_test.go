package relay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
)

// settledBy counts, per replica, the items each graph's nodes settled
// there.
type settledBy struct {
	mu sync.Mutex
	n  map[settledAt]int
}

type settledAt struct{ replica, graph, node string }

func (s *settledBy) observer(replica string) stage.Observer {
	return func(st stage.Settled) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.n == nil {
			s.n = map[settledAt]int{}
		}
		s.n[settledAt{replica, st.Graph, st.Node}] += st.Items
	}
}

// count is the items graph's egress node settled on replica.
func (s *settledBy) count(replica, graph string) int { return s.at(replica, graph, "out") }

func (s *settledBy) at(replica, graph, node string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[settledAt{replica, graph, node}]
}

// reported waits until every replica reported each graph's settles of
// want items at both nodes. A stage wakes the stage it pushed into before
// it reports the settle, and the broker shows the settle's items a moment
// before the stage has read its answer: a test that moves the clock once
// the egress shows the items could have that wake land after the move,
// stamping the woken stage's last activity at the new time, so it stays
// awake (and parked) for another DozeAfter the clock never reaches.
func (s *settledBy) reported(t *testing.T, want map[string]map[string]int) {
	t.Helper()
	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		for replica, graphs := range want {
			for g, n := range graphs {
				for _, node := range []string{"in", "out"} {
					if got := s.at(replica, g, node); got != n {
						return fmt.Errorf("%s reported %d settled items of %s at %s, want %d", replica, got, g, node, n)
					}
				}
			}
		}
		return nil
	})
}

// Two relays on one broker, two replicas per graph, every graph running
// on both: an idle graph holds exactly one parked poll across them (its
// primary's ingress stage; the standby's stages and the interior stages
// doze), and a push goes through at once on the primary. When the primary
// dies, an item pushed before the standby is promoted goes through by the
// standby's check, no later than one DozeCheck (five poll timeouts
// here, as the default 120 s is four of the default 30 s); once the dead
// primary's header expires the standby is promoted, and a new item goes
// through at once. Every item leaves exactly once. With k = 0 (every
// replica runs every graph) the same order makes one primary per graph.
func TestAStandbyDozesUntilItsPrimaryDiesThenTakesItsGraphsOver(t *testing.T) {
	t.Parallel()
	for _, k := range []int{2, 0} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			t.Parallel()
			standbyTakesOver(t, k)
		})
	}
}

func standbyTakesOver(t *testing.T, k int) {
	e := newEnv(t)
	const graphs = 4
	names := make([]string, graphs)
	for i := range names {
		names[i] = fmt.Sprintf("sb%d", i)
		e.declare(names[i], fmt.Sprintf(`{"version":1,"nodes":{"in":{"ingress":true,"budgets":[{"count":100,"timeMs":1000}]},
			"out":{"budgets":[{"count":50,"timeMs":1000}],"egress":%q}},"paths":[{"name":"main","nodes":["in","out"]}]}`, e.egressQueue()))
	}
	ctx := context.Background()
	ids := []string{"sb-a", "sb-b"}
	const headerTTL = 30 * time.Second
	for _, id := range ids {
		if err := e.store.PutStatus(ctx, store.RelayStatus{Replica: id, At: time.Now().UnixMilli()}, headerTTL); err != nil {
			t.Fatal(err)
		}
	}
	v := clock.NewVirtual(time.Now().Truncate(time.Second))
	const poll, signal, check = 2 * time.Second, 500 * time.Millisecond, 10 * time.Second
	by := &settledBy{}
	relays, stops := map[string]*relay.Relay{}, map[string]func(){}
	for _, id := range ids {
		r, err := relay.New(relay.Config{
			Client: e.client, Store: e.store, Replica: id, Lease: 2 * time.Second, PollTimeout: poll, DozeCheck: check,
			Reconcile: time.Hour, SignalPoll: signal, Clock: v, Logger: testLogger(t),
			ReplicasPerGraph: k, Observer: by.observer(id),
		})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		if err := r.Start(rctx); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		stops[id] = func() { once.Do(func() { cancel(); <-r.Stopped() }) }
		t.Cleanup(stops[id])
		relays[id] = r
	}
	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		for _, id := range ids {
			st := relays[id].Snapshot()
			for _, g := range names {
				if gs, ok := st.Graph(e.app, g); !ok || !gs.Running {
					return fmt.Errorf("%s does not run %s", id, g)
				}
			}
		}
		return nil
	})
	primaries := map[string][]string{}
	for _, g := range names {
		p := relay.Primary(ids, e.app, g)
		primaries[p] = append(primaries[p], g)
	}
	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		for _, id := range ids {
			if n, _ := relays[id].Roles(); n != graphs-len(primaries[id]) {
				return fmt.Errorf("%s runs %d graphs as a standby, want %d", id, n, graphs-len(primaries[id]))
			}
		}
		return nil
	})
	// One parked poll per idle graph across both replicas.
	parkedAre(t, e, relays, graphs)
	consistently(t, 300*time.Millisecond, func() bool { return e.mini.Parked() == graphs })

	// A push goes through at once, on the graph's primary.
	at := v.Now()
	want := map[string][]int{}
	for i, g := range names {
		part := g + "-first"
		e.push(plan.IngressQueue(e.app, g, "in"), item{Seq: i, Part: part})
		want[part] = []int{i}
	}
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.egressCount(e.egressQueue()) == graphs })
	if !v.Now().Equal(at) {
		t.Fatalf("the relays' clock moved %s", v.Now().Sub(at))
	}
	// A stage reports a settle once the broker's answer is read, which can
	// trail the egress showing the items: each item went through its
	// graph's primary, at both nodes.
	settled := map[string]map[string]int{}
	for _, id := range ids {
		settled[id] = map[string]int{}
	}
	for p, gs := range primaries {
		for _, g := range gs {
			settled[p][g] = 1
		}
	}
	by.reported(t, settled)

	// Quiet for DozeAfter, the woken interior stages doze again.
	v.Advance(4 * time.Second)
	parkedAre(t, e, relays, graphs)

	// The primary of most graphs dies (stops; its header stays live until
	// it expires). An item pushed now waits for the standby's check.
	dead, alive := ids[0], ids[1]
	if len(primaries[ids[1]]) > len(primaries[ids[0]]) {
		dead, alive = ids[1], ids[0]
	}
	if len(primaries[dead]) == 0 {
		t.Fatalf("no graph has %s as its primary; the test proves nothing (primaries %v)", dead, primaries)
	}
	stops[dead]()
	// Its parked polls are gone from the broker (as a dead process's
	// connections are closed), so none of them takes the next items.
	parkedAre(t, e, relays, len(primaries[alive]))
	orphans := primaries[dead]
	for i, g := range orphans {
		part := g + "-before"
		e.push(plan.IngressQueue(e.app, g, "in"), item{Seq: i, Part: part})
		want[part] = []int{i}
	}
	time.Sleep(100 * time.Millisecond)
	if n := e.egressCount(e.egressQueue()); n != graphs {
		t.Fatalf("%d items left before the standby's check, want %d", n, graphs)
	}
	v.Advance(check)
	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		if n := e.egressCount(e.egressQueue()); n != graphs+len(orphans) {
			return fmt.Errorf("%d items on the egress, want %d; %s's snapshot %+v", n, graphs+len(orphans), alive, relays[alive].Snapshot())
		}
		return nil
	})
	// The standby settled each orphan's item by its check, and nothing of
	// them went through the dead primary.
	for _, g := range orphans {
		settled[alive][g] = 1
	}
	by.reported(t, settled)
	for _, g := range orphans {
		if n := by.count(dead, g); n != 1 {
			t.Fatalf("the dead primary %s settled %d items of %s, want the 1 from before it died", dead, n, g)
		}
	}
	if n, _ := relays[alive].Roles(); n != graphs-len(primaries[alive]) {
		t.Fatalf("%s was promoted (%d standby graphs) while the dead primary's header was live", alive, n)
	}

	// Quiet for DozeAfter, the standby's stages doze again (its checks
	// meanwhile find nothing): only its own primaries' polls are parked.
	v.Advance(4 * time.Second)
	parkedAre(t, e, relays, len(primaries[alive]))

	// The dead primary's header expires; the standby's next member read
	// (sooner than any check is due) promotes it, which wakes the stages:
	// a new item goes through at once.
	e.mini.FastForward(headerTTL + time.Second)
	if err := e.store.PutStatus(ctx, store.RelayStatus{Replica: alive, At: time.Now().UnixMilli()}, time.Hour); err != nil {
		t.Fatal(err)
	}
	v.Advance(signal)
	gatetest.Eventually(t, 10*time.Second, func() bool { n, _ := relays[alive].Roles(); return n == 0 })
	at = v.Now()
	for i, g := range orphans {
		part := g + "-after"
		e.push(plan.IngressQueue(e.app, g, "in"), item{Seq: i, Part: part})
		want[part] = []int{i}
	}
	gatetest.Eventually(t, 10*time.Second, func() bool { return e.egressCount(e.egressQueue()) == graphs+2*len(orphans) })
	if !v.Now().Equal(at) {
		t.Fatalf("the relays' clock moved %s", v.Now().Sub(at))
	}
	for _, g := range orphans {
		settled[alive][g] = 2
	}
	by.reported(t, settled)
	// Quiet for DozeAfter, the promoted replica parks one poll per graph.
	v.Advance(4 * time.Second)
	parkedAre(t, e, relays, graphs)
	checkOnceInOrder(t, e.egress(e.egressQueue()), want)
}

// parkedAre waits until want long-polls are parked on the broker, and
// says on failure what each relay's stages were doing.
func parkedAre(t *testing.T, e *env, relays map[string]*relay.Relay, want int) {
	t.Helper()
	gatetest.EventuallyErr(t, 10*time.Second, func() error {
		if n := e.mini.Parked(); n != want {
			roles := ""
			for id, r := range relays {
				standby, dozing := r.Roles()
				roles += fmt.Sprintf("; %s: %d graphs standby, %d stages dozing", id, standby, dozing)
			}
			return fmt.Errorf("%d long-polls parked, want %d%s", n, want, roles)
		}
		return nil
	})
}
