package relay_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/gatetest"
)

// Owners is a stable rule: the same members give the same k distinct
// owners in any order, and a replica that joins takes graphs only from
// the old owners' places it wins (no graph moves between two replicas that
// both stay), about 1/n of them.
func TestOwnersAreStableAndAJoinMovesOnlyWhatTheNewReplicaWins(t *testing.T) {
	t.Parallel()
	three := []string{"r-a", "r-b", "r-c"}
	four := append(slices.Clone(three), "r-d")
	moved, perReplica := 0, map[string]int{}
	const graphs = 3000
	for i := 0; i < graphs; i++ {
		g := fmt.Sprintf("g%d", i)
		before := relay.Owners(three, 2, "app", g)
		if len(before) != 2 || before[0] == before[1] {
			t.Fatalf("%s: owners %v, want 2 distinct", g, before)
		}
		if again := relay.Owners([]string{"r-c", "r-a", "r-b"}, 2, "app", g); !slices.Equal(before, again) {
			t.Fatalf("%s: owners %v then %v for the same members", g, before, again)
		}
		after := relay.Owners(four, 2, "app", g)
		for _, o := range after {
			perReplica[o]++
			if o != "r-d" && !slices.Contains(before, o) {
				t.Fatalf("%s moved to %s, which is not the new replica (before %v, after %v)", g, o, before, after)
			}
		}
		if !slices.Equal(before, after) {
			moved++
		}
	}
	for _, r := range four {
		if n := perReplica[r]; n < graphs*2/4*8/10 || n > graphs*2/4*12/10 {
			t.Errorf("%s owns %d graph places of %d, want about a quarter", r, n, graphs*2)
		}
	}
	t.Logf("a fourth replica moved %d of %d graphs", moved, graphs)
	if all := relay.Owners(three, 0, "app", "g"); len(all) != 3 {
		t.Errorf("k = 0 places on %v, want every replica", all)
	}
}

// Three relays with one replica per graph: every graph runs on exactly the
// replica the rule names, and when one stops its graphs run on the others
// within a few status periods.
func TestGraphsSpreadOverReplicasAndMoveWhenOneLeaves(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const graphs = 30
	doc := fmt.Sprintf(`{"version":1,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":%q}},"paths":[{"name":"main","nodes":["n"]}]}`, e.egressQueue())
	for i := 0; i < graphs; i++ {
		e.declare(fmt.Sprintf("g%d", i), doc)
	}
	stops := map[string]func(){}
	for _, id := range []string{"place-a", "place-b", "place-c"} {
		cfg := config.Default()
		cfg.QueenURL, cfg.KVNamespace, cfg.Bind, cfg.Replica = e.b.URL, e.store.Namespace(), freeAddr(t), id
		cfg.PollTimeout, cfg.Lease, cfg.StatusPeriod, cfg.SignalPoll = time.Second, 2*time.Second, time.Second, 100*time.Millisecond
		cfg.ReplicasPerGraph = 1
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- relay.Run(ctx, cfg, relay.WithLogger(testLogger(t))) }()
		var once sync.Once
		stops[id] = func() { once.Do(func() { cancel(); <-done }) }
		t.Cleanup(stops[id])
	}
	placed := func(members []string) error {
		all, err := e.store.Statuses(context.Background())
		if err != nil {
			return err
		}
		runs := map[string][]string{}
		for _, st := range all {
			for _, g := range st.Graphs {
				if g.Running && g.App == e.app {
					runs[g.Graph] = append(runs[g.Graph], st.Replica)
				}
			}
		}
		for i := 0; i < graphs; i++ {
			g := fmt.Sprintf("g%d", i)
			want := relay.Owners(members, 1, e.app, g)
			if !slices.Equal(runs[g], want) {
				return fmt.Errorf("%s runs on %v, want %v", g, runs[g], want)
			}
		}
		return nil
	}
	gatetest.EventuallyErr(t, 20*time.Second, func() error { return placed([]string{"place-a", "place-b", "place-c"}) })
	stops["place-b"]()
	start := time.Now()
	gatetest.EventuallyErr(t, 20*time.Second, func() error { return placed([]string{"place-a", "place-c"}) })
	t.Logf("place-b's graphs ran elsewhere %v after it stopped", time.Since(start).Round(time.Millisecond))
}

// refOwners is placement as it was first written, the oracle Owners and
// Owns must keep agreeing with: hash/fnv's FNV-1a of replica, a zero byte
// and "app/graph", splitmix64's finisher, highest score first (ties by
// id), the first k.
func refOwners(members []string, k int, app, graph string) []string {
	weight := func(replica string) uint64 {
		h := fnv.New64a()
		_, _ = h.Write([]byte(replica))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(app + "/" + graph))
		x := h.Sum64()
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		x ^= x >> 31
		return x
	}
	out := slices.Clone(members)
	sort.SliceStable(out, func(i, j int) bool {
		wi, wj := weight(out[i]), weight(out[j])
		if wi != wj {
			return wi > wj
		}
		return out[i] < out[j]
	})
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out
}

// Placement is unchanged by how it is computed: over random members, k
// and graphs, Owners lists what the first placement listed, Primary is its
// first, and Owns (the relay's check, without a sort) says yes for exactly
// the owners.
func TestOwnsAndOwnersAgreeWithTheFirstPlacement(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(24, 10000))
	for i := 0; i < 2000; i++ {
		n := 1 + rnd.IntN(6)
		members := make([]string, 0, n)
		for len(members) < n {
			if m := fmt.Sprintf("relay-%d", rnd.IntN(50)); !slices.Contains(members, m) {
				members = append(members, m)
			}
		}
		k := rnd.IntN(n+2) - 1
		app, graph := fmt.Sprintf("app%d", rnd.IntN(20)), fmt.Sprintf("g-%d", rnd.IntN(100000))
		want := refOwners(members, k, app, graph)
		if got := relay.Owners(members, k, app, graph); !slices.Equal(got, want) {
			t.Fatalf("Owners(%v, %d, %s/%s) = %v, want %v", members, k, app, graph, got, want)
		}
		if p := relay.Primary(members, app, graph); p != want[0] {
			t.Fatalf("Primary(%v, %s/%s) = %q, want %q", members, app, graph, p, want[0])
		}
		for _, m := range append(slices.Clone(members), "relay-absent") {
			if got := relay.Owns(members, k, m, app, graph); got != slices.Contains(want, m) {
				t.Fatalf("Owns(%v, %d, %s, %s/%s) = %v; owners %v", members, k, m, app, graph, got, want)
			}
		}
	}
}
