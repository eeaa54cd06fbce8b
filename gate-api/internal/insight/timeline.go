package insight

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// Timeline bounds (gate-runtime §6.2).
const (
	timelineDefaultMinutes = 60
	timelineMinMinutes     = 5
	timelineMaxMinutes     = 1440
	timelineMaxEvents      = 200
	minuteMs               = 60_000
)

// timeline is GET …/timeline?minutes=: per node per minute the queue
// snapshots the sampler stored, the relayed items of the minute roll-ups,
// the incoming estimate where it can be attributed, and the configuration
// annotations newest first. Missing minutes stay missing.
func (in *Insight) timeline(q *httpapi.Request) *httpapi.Refusal {
	e, bad := in.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	minutes, bad := httpapi.QueryClamped[int64](q.Query(), "minutes", timelineDefaultMinutes, timelineMinMinutes, timelineMaxMinutes)
	if bad != nil {
		return bad
	}
	db := in.p.History()
	if db == nil {
		return noHistory("Traffic over time")
	}
	ctx, cancel := in.p.HistoryContext(q)
	defer cancel()
	until := in.p.Clock.Now().UnixMilli()/minuteMs*minuteMs + minuteMs
	since := until - minutes*minuteMs
	snaps, err := db.Snapshots(ctx, e.App, e.Graph, since)
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	events, err := db.ConfigEvents(ctx, e.App, e.Graph, since, timelineMaxEvents)
	if err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	out := wire.Timeline{Since: since, Until: until, Minutes: int(minutes), Samples: []wire.TimelineSample{}, Events: []wire.TimelineEvent{},
		Relayed: map[string][]wire.RollupMinute{}, Incoming: map[string]wire.IncomingSeries{},
		Enabled: e.Plan.CountersWindowSeconds > 0, ResolutionSeconds: 60}
	byNode := map[string][]history.Snapshot{}
	for _, sn := range snaps {
		if sn.Minute >= until || e.Plan.Node(sn.Node) == nil {
			continue
		}
		body := sn.Body
		if len(body) == 0 {
			body = json.RawMessage(`{"available":false}`)
		}
		out.Samples = append(out.Samples, wire.TimelineSample{Node: sn.Node, T: sn.Minute, At: sn.At, Value: body})
		byNode[sn.Node] = append(byNode[sn.Node], sn)
	}
	for _, ev := range events {
		out.Events = append(out.Events, wire.TimelineEvent{At: ev.At, Change: wire.ConfigChange{Label: ev.Change.Label, Version: int64(ev.Change.Version), Mode: ev.Change.Mode,
			Node: ev.Change.Node, By: ev.Change.By, Reason: ev.Change.Reason, Seconds: ev.Change.Seconds}})
	}
	for i := range e.Plan.Nodes {
		n := &e.Plan.Nodes[i]
		rows, err := db.Rollups(ctx, e.App, e.Graph+"."+n.Name, since, until)
		if err != nil {
			return in.p.HistoryRefusal(ctx, err)
		}
		out.Relayed[n.Name] = rollupMinutes(rows)
		out.Incoming[n.Name] = incoming(e.Plan, n, byNode[n.Name])
	}
	if out.Vendor, err = vendorSpans(ctx, db, e, "", since, until, in.p.Clock.Now().UnixMilli()); err != nil {
		return in.p.HistoryRefusal(ctx, err)
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// incoming estimates, per sampled minute, the items that arrived at a
// node: the change of its summed consumer positions since the previous
// minute's snapshot. Only a node with an ingress queue read by exactly one
// stage can be attributed (a shared queue's positions include frames of
// other paths); a minute without a previous snapshot, without positions,
// with a different set of partitions' cursors that moved back, is unknown.
func incoming(p *plan.Plan, n *plan.Node, snaps []history.Snapshot) wire.IncomingSeries {
	stages := 0
	for _, st := range p.Stages {
		if st.Node == n.Name {
			stages++
		}
	}
	out := wire.IncomingSeries{Attributable: n.IngressQueue != "" && stages == 1, Points: []wire.IncomingPoint{}}
	switch {
	case n.IngressQueue == "":
		out.Reason = fmt.Sprintf("node %s has no ingress queue: what reaches it comes through shared interior queues whose positions cannot be attributed", n.Name)
	case stages != 1:
		out.Reason = fmt.Sprintf("node %s is read by %d stages: the queue's positions mix the paths' frames", n.Name, stages)
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].Minute < snaps[j].Minute })
	var prev map[string]int64
	prevMinute := int64(-1)
	for _, sn := range snaps {
		pt := wire.IncomingPoint{T: sn.Minute}
		var body wire.Snapshot
		ok := json.Unmarshal(sn.Body, &body) == nil && body.Positions != nil
		if out.Attributable && ok && prev != nil && prevMinute == sn.Minute-minuteMs {
			var sum int64
			valid := true
			for k, v := range body.Positions {
				before, had := prev[k]
				if !had {
					before = 0 // a new partition: everything it holds arrived now
				}
				if v < before {
					valid = false
					break
				}
				sum += v - before
			}
			if valid {
				pt.Items = &sum
			}
		}
		out.Points = append(out.Points, pt)
		if ok {
			prev, prevMinute = body.Positions, sn.Minute
		} else {
			prev, prevMinute = nil, -1
		}
	}
	return out
}
