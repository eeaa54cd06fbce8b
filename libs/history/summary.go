package history

import (
	"context"
	"sort"

	"github.com/queen-mq/gate/libs/wire"
)

// MaxWatchSeconds is the longest Watch (30 days).
const MaxWatchSeconds = 2_592_000

// WatchSummary computes the Watch summary of gate-runtime §5.4 for the
// nodes of app/graph: over the complete minutes in [ceil(startedAt),
// floor(min(now, endsAt, startedAt + 30 days))), per node the items and
// cost relayed (minute roll-ups summed across paths and replicas), cost /
// (minutes × 60) and the peak minute's cost (null, not zero, when no
// minute is covered). Idle minutes count in the average.
func (db *DB) WatchSummary(ctx context.Context, app, graph string, nodes []string, startedAt, durationSeconds, nowMs int64) (wire.WatchSummary, error) {
	end := startedAt + durationSeconds*1000
	since := ceilMinute(startedAt)
	until := floorMinute(min(nowMs, end, startedAt+MaxWatchSeconds*1000))
	until = max(until, since)
	minutes := (until - since) / 60000
	out := wire.WatchSummary{StartedAt: startedAt, EndsAt: end, Ready: nowMs >= end, Minutes: minutes, Nodes: []wire.WatchNode{}, ResolutionSeconds: 60}
	names := append([]string(nil), nodes...)
	sort.Strings(names)
	targets := make([]string, len(names))
	for i, n := range names {
		targets[i] = graph + "." + n
	}
	traffic, err := db.WatchTraffic(ctx, app, targets, since, until)
	if err != nil {
		return out, err
	}
	for i, n := range names {
		t := traffic[targets[i]]
		wt := wire.WatchTraffic{Admitted: t.Admitted, Cost: t.Cost, RecordedMinutes: t.RecordedMinutes}
		if minutes > 0 {
			avg := t.Cost / float64(minutes*60)
			peak := t.PeakMinuteCost
			wt.AverageCostPerSecond, wt.PeakCostPerMinute = &avg, &peak
		}
		out.Nodes = append(out.Nodes, wire.WatchNode{Node: n, Traffic: wt})
	}
	return out, nil
}

func floorMinute(ms int64) int64 { return ms - ((ms%60000)+60000)%60000 }

func ceilMinute(ms int64) int64 {
	f := floorMinute(ms)
	if f == ms {
		return f
	}
	return f + 60000
}
