package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// unavailable is the body of a snapshot that could not be taken.
var unavailable = json.RawMessage(`{"available":false}`)

// Sample takes the queue snapshot of every node of every stored graph with
// counters on (or in Watch) and stores it at its minute (gate-runtime §6.2).
// A node that cannot be read in SnapshotTimeout stores {"available":false}.
func (r *Recorder) Sample(ctx context.Context) error {
	listing, err := r.store.List(ctx)
	if err != nil {
		return fmt.Errorf("reading the stored graphs: %w", err)
	}
	now := r.cfg.Clock.Now().UnixMilli()
	minute := now - now%60000
	var out []history.Snapshot
	for _, d := range listing.Documents {
		res, err := declare.Compile(declare.Input{App: d.App, Name: d.Graph, Body: d.Body, Target: d.Legacy})
		if err != nil || res.Plan == nil || res.Plan.CountersWindowSeconds == 0 {
			continue
		}
		p := res.Plan
		gctx, cancel := context.WithTimeout(ctx, SnapshotTimeout)
		for _, n := range p.Nodes {
			body, err := snapshotNode(gctx, r.cfg.Client, p, &n)
			raw := unavailable
			if err == nil {
				raw, _ = json.Marshal(body)
			} else if ctx.Err() == nil {
				r.log.Debug("snapshot unavailable", "app", p.Application, "graph", p.Graph, "node", n.Name, "error", err)
			}
			out = append(out, history.Snapshot{App: p.Application, Graph: p.Graph, Node: n.Name, Minute: minute, At: now, Body: raw})
		}
		cancel()
	}
	return r.cfg.DB.PutSnapshots(ctx, out)
}

// groupPartition is one partition of a consumer group's detail.
type groupPartition struct {
	Partition       string `json:"partition"`
	CommittedOffset int64  `json:"committedOffset"`
	OffsetLag       int64  `json:"offsetLag"`
	TimeLagSeconds  *int64 `json:"timeLagSeconds"`
}

type groupDetail struct {
	Queues []struct {
		QueueName  string           `json:"queueName"`
		Partitions []groupPartition `json:"partitions"`
	} `json:"queues"`
}

// groupOn reads the partitions of group on queue (nil, nil when the group
// has no cursor there yet).
func groupOn(ctx context.Context, c *queen.Client, group, queue string) ([]groupPartition, error) {
	raw, err := c.ConsumerGroupDetail(ctx, group)
	if err != nil {
		if queen.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	var d groupDetail
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("consumer group %s detail: %w", group, err)
	}
	for _, q := range d.Queues {
		if q.QueueName == queue {
			return q.Partitions, nil
		}
	}
	return nil, nil
}

// oldest folds partitions into the oldest pending age; unknown is set when
// some pending partition reports no age.
func oldest(parts []groupPartition, best *int64, unknown *bool) {
	for _, p := range parts {
		if p.OffsetLag <= 0 {
			continue
		}
		if p.TimeLagSeconds == nil {
			*unknown = true
			continue
		}
		*best = max(*best, *p.TimeLagSeconds)
	}
}

// snapshotNode samples one node: the relay backlog of its stage groups,
// the worker backlog on its egress, the oldest pending age and, for a
// single-stage ingress node, the consumer positions.
func snapshotNode(ctx context.Context, c *queen.Client, p *plan.Plan, n *plan.Node) (wire.Snapshot, error) {
	s := wire.Snapshot{Available: true, Version: p.Version}
	var before, age int64
	unknown := false
	var stages []plan.Stage
	for _, st := range p.Stages {
		if st.Node == n.Name {
			stages = append(stages, st)
		}
	}
	single := n.IngressQueue != "" && len(stages) == 1
	if single {
		s.Positions = map[string]int64{}
	}
	for _, st := range stages {
		parts, err := groupOn(ctx, c, st.Group, st.Source)
		if err != nil {
			return s, err
		}
		if parts == nil {
			// No cursor yet: the backlog is the queue's, ages unknown.
			d, err := c.Depth(ctx, st.Source, st.Group)
			if err != nil && !queen.IsNotFound(err) {
				return s, err
			}
			before += d.Pending
			if d.Pending > 0 {
				unknown = true
			}
			continue
		}
		for _, pt := range parts {
			before += pt.OffsetLag
			if single {
				s.Positions[st.Source+"/"+st.Group+"/"+pt.Partition] = pt.CommittedOffset + pt.OffsetLag
			}
		}
		oldest(parts, &age, &unknown)
	}
	s.Before = &before
	if n.EgressQueue != "" {
		d, err := c.Depth(ctx, n.EgressQueue, n.EgressGroup)
		if err != nil && !queen.IsNotFound(err) {
			return s, err
		}
		w := d.Pending
		s.Workers = &w
		if w > 0 {
			if n.EgressGroup == "" {
				unknown = true
			} else {
				parts, err := groupOn(ctx, c, n.EgressGroup, n.EgressQueue)
				if err != nil {
					return s, err
				}
				if parts == nil {
					unknown = true
				}
				oldest(parts, &age, &unknown)
			}
		}
	}
	if !unknown {
		s.OldestSeconds = &age
	}
	return s, ctx.Err()
}

var errNoHistory = errors.New("history is not configured")
