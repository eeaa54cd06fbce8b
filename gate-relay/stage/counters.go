package stage

import (
	"sync/atomic"

	"github.com/queen-mq/gate/libs/store"
)

// counters are a stage's lifetime counters on this replica.
type counters struct {
	popped, admitted, deferred, parked, released, forwarded, commits,
	duplicates, foreign, deadlettered, leaked, wedged, cost, ambiguous atomic.Int64
}

func (c *counters) snapshot() store.Counters {
	return store.Counters{
		Popped: c.popped.Load(), Admitted: c.admitted.Load(), Deferred: c.deferred.Load(),
		Parked: c.parked.Load(), Released: c.released.Load(), Forwarded: c.forwarded.Load(),
		Commits: c.commits.Load(), Duplicates: c.duplicates.Load(), Foreign: c.foreign.Load(),
		Deadlettered: c.deadlettered.Load(), Leaked: c.leaked.Load(), Wedged: c.wedged.Load(),
		CostAdmitted: c.cost.Load(), Ambiguous: c.ambiguous.Load(),
	}
}
