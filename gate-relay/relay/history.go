package relay

import (
	"github.com/queen-mq/gate/gate-relay/observe"
	"github.com/queen-mq/gate/libs/graph"
)

// Runtimes lists the graphs running on this replica for the history
// handover (package observe): which have roll-ups on, which are in Watch
// (with the server-stamped session and its end) and every stage's counters.
func (r *Relay) Runtimes() []observe.Runtime {
	r.mu.Lock()
	all := make([]*runtime, 0, len(r.graphs))
	for _, rt := range r.graphs {
		all = append(all, rt)
	}
	r.mu.Unlock()
	out := make([]observe.Runtime, 0, len(all))
	for _, rt := range all {
		if rt.plan == nil || !rt.running.Load() {
			continue
		}
		o := observe.Runtime{App: rt.app, Graph: rt.graph, Started: rt.started, Counters: rt.plan.CountersWindowSeconds > 0}
		if rt.plan.Watching && !rt.legacy {
			if d, err := graph.Parse(rt.body); err == nil && d.Watch != nil && d.Watch.StartedAt != nil {
				o.Watch = &observe.WatchInfo{Session: *d.Watch.StartedAt, Until: *d.Watch.StartedAt + d.Watch.DurationSeconds*1000}
			}
		}
		index := map[string]int{}
		for _, st := range rt.plan.Stages {
			if _, ok := index[st.Path]; !ok {
				index[st.Path] = len(index)
			}
		}
		for i, s := range rt.stages {
			st := rt.plan.Stages[i]
			o.Stages = append(o.Stages, observe.StageInfo{Path: st.Path, Node: st.Node, PathIndex: index[st.Path], Counters: s.Counters()})
		}
		out = append(out, o)
	}
	return out
}
