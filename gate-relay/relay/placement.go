package relay

import (
	"context"
	"slices"
	"time"
)

// Placement: with Config.ReplicasPerGraph = k > 0, each graph runs on the
// k live replicas that score highest for it (rendezvous hashing of the
// replica id and the graph's name over the replicas whose status header
// is live). Every replica computes the same owners from the same members,
// a replica that joins or leaves moves only the graphs it gains or loses,
// and a dead replica's graphs move once its header expires (three status
// periods). Budgets are kv counters, so two replicas running one graph
// for a moment (a hand-over) admit exactly what one would.
//
// The owners are ordered: the first is the graph's primary, the others
// its standbys (with k ≤ 0 the same order runs over every member). On
// the primary every stage runs as ever; on a standby the graph's ingress
// stages doze once quiet, checking their source every DozeCheck
// (stage.Config.Standby), so the broker holds about one parked poll per
// graph whatever k. When the members change, each running graph takes its
// new role without restarting a stage: a promotion wakes every stage of
// it (what a dead primary left is claimed at once), a demotion lets them
// doze once quiet.

// FNV-1a's 64-bit offset basis and prime (hash/fnv's New64a, written out
// so a score allocates nothing: an idle pass checks ownership of every
// stored graph).
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

// fnvString adds s's bytes to the FNV-1a hash h.
func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// score is the rendezvous weight of replica for graph app/graph: FNV-1a
// of the replica id, a zero byte and the graph's key ("app/graph"),
// finished with a 64-bit mixer.
func score(replica, app, graph string) uint64 {
	h := fnvString(fnvOffset, replica)
	h = (h ^ 0) * fnvPrime
	h = fnvString(h, app)
	h = (h ^ '/') * fnvPrime
	x := fnvString(h, graph)
	// fnv's low bits mix poorly over similar inputs: finish with a
	// 64-bit mixer (splitmix64's).
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Owners returns the replicas of members that run graph app/graph when
// each graph runs on k replicas (all of them when k ≤ 0 or there are no
// more than k), highest score first.
func Owners(members []string, k int, app, graph string) []string {
	out := slices.Clone(members)
	slices.SortFunc(out, func(a, b string) int {
		sa, sb := score(a, app, graph), score(b, app, graph)
		switch {
		case outranks(a, sa, b, sb):
			return -1
		case outranks(b, sb, a, sa):
			return 1
		}
		return 0
	})
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out
}

// Owns reports whether replica is one of Owners(members, k, app, graph)
// without building that list: it counts the members ranked ahead of
// replica (a higher score, or an equal one and a smaller id) and stops at
// k. An idle relay asks it of every stored graph on every pass.
func Owns(members []string, k int, replica, app, graph string) bool {
	if !slices.Contains(members, replica) {
		return false
	}
	if k <= 0 || len(members) <= k {
		return true
	}
	mine := score(replica, app, graph)
	ahead := 0
	for _, m := range members {
		if m == replica {
			continue
		}
		if outranks(m, score(m, app, graph), replica, mine) {
			if ahead++; ahead >= k {
				return false
			}
		}
	}
	return true
}

// Primary is the first of Owners (the replica of members that scores
// highest for app/graph, whatever k), or "" when members is empty.
func Primary(members []string, app, graph string) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		sc := score(m, app, graph)
		if best == "" || outranks(m, sc, best, bestScore) {
			best, bestScore = m, sc
		}
	}
	return best
}

// standby reports whether this replica runs app/graph as a standby: the
// graph's primary under the current members is another replica. Before
// the members are first read, or with this replica alone, it is the
// primary. Safe from any goroutine (it reads the members' snapshot).
func (r *Relay) standby(app, graph string) bool {
	members := r.liveMembers()
	if len(members) < 2 {
		return false
	}
	primary := Primary(members, app, graph)
	return primary != "" && primary != r.cfg.Replica
}

// liveMembers is the live replicas as last read (nil: none known).
func (r *Relay) liveMembers() []string {
	if p := r.members.Load(); p != nil {
		return *p
	}
	return nil
}

// setMembers records the live replicas (nil: none known; the slice is
// kept, never changed after) and gives every running graph its role
// under them.
func (r *Relay) setMembers(ids []string) {
	r.members.Store(&ids)
	r.applyRoles()
}

// applyRoles gives every running graph its role under the current
// members (see runtime.setStandby) and logs how many changed.
func (r *Relay) applyRoles() {
	promoted, demoted := 0, 0
	r.mu.Lock()
	for _, rt := range r.graphs {
		switch rt.setStandby(r.standby(rt.app, rt.graph)) {
		case roleDemoted:
			demoted++
		case rolePromoted:
			promoted++
		}
	}
	r.mu.Unlock()
	if promoted+demoted > 0 {
		r.log.Info("graph roles changed with the members: promoted graphs wake their stages, demoted ones doze once quiet", "promoted", promoted, "demoted", demoted, "members", len(r.liveMembers()))
	}
}

// outranks is placement's one order: replica a (score sa) comes before
// replica b (score sb) for a graph when its score is higher, or equal and
// its id smaller. Owners sorts by it, Owns counts and Primary picks by it.
func outranks(a string, sa uint64, b string, sb uint64) bool {
	return sa > sb || (sa == sb && a < b)
}

// owns reports whether this replica runs app/graph under the current
// members.
func (r *Relay) owns(app, graph string) bool {
	k := r.cfg.ReplicasPerGraph
	members := r.liveMembers()
	if k <= 0 || len(members) <= k {
		return true
	}
	return Owns(members, k, r.cfg.Replica, app, graph)
}

// refreshMembers re-reads the live replicas (this one always counts, even
// before its first header is written), gives every running graph its role
// when they changed, and reports whether placement changed (never with
// k ≤ 0: every replica runs every graph, only the roles move). With k > 0
// a broker that does not answer for a lease gives every graph up (their
// claims' leases would lapse anyway, and another replica takes them); the
// next answer places them again.
func (r *Relay) refreshMembers(ctx context.Context) (changed bool) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ids, err := r.store.LiveReplicas(cctx)
	cancel()
	if err != nil {
		if r.cfg.ReplicasPerGraph <= 0 || !unanswered(err) || ctx.Err() != nil {
			return false
		}
		now := r.cfg.Clock.Now()
		if r.unreachableSince.IsZero() {
			r.unreachableSince = now
		}
		if !r.gaveUp && now.Sub(r.unreachableSince) >= r.cfg.Lease {
			r.log.Warn("the broker has not answered for a lease; giving every graph up until it does", "error", err)
			r.gaveUp = true
			r.stopAllGraphs()
			r.setMembers(nil)
			r.signalChanged()
		}
		return false
	}
	r.unreachableSince = time.Time{}
	if !slices.Contains(ids, r.cfg.Replica) {
		ids = append(ids, r.cfg.Replica)
		slices.Sort(ids)
	}
	if r.gaveUp {
		r.gaveUp = false
		r.setMembers(ids)
		return true
	}
	if slices.Equal(ids, r.liveMembers()) {
		return false
	}
	r.setMembers(ids)
	return r.cfg.ReplicasPerGraph > 0
}

// stopAllGraphs stops every graph this replica runs and forgets them (the
// relay keeps running).
func (r *Relay) stopAllGraphs() {
	r.mu.Lock()
	all := r.graphs
	r.graphs = map[string]*runtime{}
	r.mu.Unlock()
	for _, rt := range all {
		rt.cancelStages()
	}
	for _, rt := range all {
		r.stop(rt)
	}
}
