package plan

import "github.com/queen-mq/gate/libs/wire"

// The declare answer's shapes live in libs/wire (one definition for gate-api,
// gate-console, the Go client and the web app).
// Trust is the fixed sentence every 200 declare response carries.
const Trust = wire.Trust

type (
	Response            = wire.PlanResponse
	Resolved            = wire.Resolved
	ResolvedQueue       = wire.ResolvedQueue
	ResolvedNode        = wire.ResolvedNode
	ResolvedBudget      = wire.ResolvedBudget
	ResolvedStage       = wire.ResolvedStage
	ResolvedDestination = wire.ResolvedDestination
)

// NewResponse renders p as the 200 body. warnings are "[rule] detail"
// strings; migration is included (with migrated true) only when v1 is true.
func NewResponse(p *Plan, warnings, migration []string, v1 bool) Response {
	if warnings == nil {
		warnings = []string{}
	}
	r := Response{
		OK: true, Application: p.Application, Graph: p.Graph, Version: p.Version,
		Warnings: warnings, Trust: Trust,
		Resolved: Resolved{
			Namespace: p.Namespace,
			Queues:    make([]ResolvedQueue, 0, len(p.Queues)),
			Nodes:     make([]ResolvedNode, 0, len(p.Nodes)),
			Stages:    make([]ResolvedStage, 0, len(p.Stages)),
		},
	}
	if v1 {
		r.Migrated = true
		r.Migration = migration
		if r.Migration == nil {
			r.Migration = []string{}
		}
	}
	if p.CountersWindowSeconds > 0 {
		w := p.CountersWindowSeconds
		r.Resolved.Counters = &w
	}
	for _, q := range p.Queues {
		rq := ResolvedQueue{Name: q.Name, Kind: q.Kind, OwnedByGate: q.OwnedByGate}
		if q.Partitions > 0 {
			n := q.Partitions
			rq.Partitions = &n
		}
		r.Resolved.Queues = append(r.Resolved.Queues, rq)
	}
	for _, n := range p.Nodes {
		rn := ResolvedNode{
			Node: n.Name, IngressQueue: optional(n.IngressQueue), HTTPPush: n.HTTPPush,
			EgressQueue: optional(n.EgressQueue), EgressGroup: optional(n.EgressGroup),
			BreakerKey: n.BreakerKey, Shares: n.Shares,
			Budgets: make([]ResolvedBudget, 0, len(n.Budgets)),
		}
		for _, b := range n.Budgets {
			rb := ResolvedBudget{
				ID: b.ID, Key: b.Key, ScopeBy: optional(b.ScopeBy), Count: b.Count, TimeMs: b.TimeMs,
				SubWindows: b.SubWindows, CountSub: b.CountSub, WindowSubSeconds: b.WindowSubSeconds,
				Ceilings: b.Ceilings, Keys: b.Keys,
			}
			if b.Shared {
				k := b.SharedKey
				rb.SharedKey = &k
			}
			rn.Budgets = append(rn.Budgets, rb)
		}
		r.Resolved.Nodes = append(r.Resolved.Nodes, rn)
	}
	for _, s := range p.Stages {
		rs := ResolvedStage{
			Path: s.Path, Node: s.Node, Hop: s.Hop, Priority: s.Priority, Share: s.Share,
			Source: s.Source, Group: s.Group, Batch: s.Batch, Concurrency: s.Concurrency,
			ChecksForeign: s.ChecksForeign,
			Destinations:  make([]ResolvedDestination, 0, len(s.Destinations)),
		}
		for _, d := range s.Destinations {
			rs.Destinations = append(rs.Destinations, ResolvedDestination{
				Node: d.Node, Queue: d.Queue, DerivesTransactionID: d.DerivesTransactionID, Terminal: d.Terminal,
			})
		}
		r.Resolved.Stages = append(r.Resolved.Stages, rs)
	}
	return r
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
