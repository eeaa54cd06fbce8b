package stage

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/queen-mq/gate/libs/store"
)

// counters are a stage's lifetime counters on this replica.
type counters struct {
	popped, admitted, deferred, parked, released, forwarded, commits,
	duplicates, foreign, deadlettered, leaked, wedged, cost, ambiguous, held atomic.Int64
}

func (c *counters) snapshot() store.Counters {
	return store.Counters{
		Popped: c.popped.Load(), Admitted: c.admitted.Load(), Deferred: c.deferred.Load(),
		Parked: c.parked.Load(), Released: c.released.Load(), Forwarded: c.forwarded.Load(),
		Commits: c.commits.Load(), Duplicates: c.duplicates.Load(), Foreign: c.foreign.Load(),
		Deadlettered: c.deadlettered.Load(), Leaked: c.leaked.Load(), Wedged: c.wedged.Load(),
		CostAdmitted: c.cost.Load(), Ambiguous: c.ambiguous.Load(), Held: c.held.Load(),
	}
}

// denials counts a stage's denials by budget and reason on this replica.
type denials struct {
	mu sync.Mutex
	n  map[[2]string]int64
}

func (d *denials) add(budgetID, reason string) {
	d.mu.Lock()
	if d.n == nil {
		d.n = map[[2]string]int64{}
	}
	d.n[[2]string{budgetID, reason}]++
	d.mu.Unlock()
}

// snapshot lists the counts by budget, then reason.
func (d *denials) snapshot() []store.DenialCount {
	d.mu.Lock()
	out := make([]store.DenialCount, 0, len(d.n))
	for k, v := range d.n {
		out = append(out, store.DenialCount{Budget: k[0], Reason: k[1], Count: v})
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b store.DenialCount) int {
		if a.Budget != b.Budget {
			if a.Budget < b.Budget {
				return -1
			}
			return 1
		}
		if a.Reason < b.Reason {
			return -1
		}
		if a.Reason > b.Reason {
			return 1
		}
		return 0
	})
	return out
}
