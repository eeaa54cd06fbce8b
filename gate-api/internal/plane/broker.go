package plane

import (
	"context"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// healthProbe caches the broker's health for a short time, so a load
// balancer polling /health does not become broker load.
type healthProbe struct {
	mu  sync.Mutex
	at  time.Time
	ok  bool
	ver string
	err string
}

// healthTTL is how long one probe of the broker's health is reused.
const healthTTL = time.Second

// healthProbeTimeout bounds one probe.
const healthProbeTimeout = time.Second

// BrokerHealth probes the broker (1 s timeout), cached for a second.
func (p *Plane) BrokerHealth(ctx context.Context) (ok bool, version, problem string) {
	h := &p.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.at.IsZero() && p.Clock.Since(h.at) < healthTTL {
		return h.ok, h.ver, h.err
	}
	pctx, cancel := context.WithTimeout(ctx, healthProbeTimeout)
	defer cancel()
	res, err := p.Client.Health(pctx)
	h.at, h.ver = p.Clock.Now(), res.Version
	switch {
	case err != nil:
		h.ok, h.err = false, err.Error()
	case !res.Healthy():
		h.ok, h.err = false, "the broker reports status "+res.Status+" (database "+res.Database+")"
	default:
		h.ok, h.err = true, ""
	}
	p.brokerAnswered(h.ok)
	return h.ok, h.ver, h.err
}

// depthCache keeps broker depth reads for a short time (views and ETAs
// read the same groups again and again).
type depthCache struct {
	mu sync.Mutex
	m  map[[2]string]depthEntry
}

type depthEntry struct {
	at      time.Time
	pending int64
	ok      bool
}

// depthTTL is how long one depth read is reused.
const depthTTL = 2 * time.Second

// Pending is the backlog of queue for group ("" = the worst cursor): the
// depth route, a queue-level fallback when the group is unknown, the last
// cached value when the broker fails. ok is false when nothing is known.
func (p *Plane) Pending(ctx context.Context, queue, group string) (int64, bool) {
	c := &p.depth
	k := [2]string{queue, group}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[[2]string]depthEntry{}
	}
	cur, have := c.m[k]
	c.mu.Unlock()
	if have && p.Clock.Since(cur.at) < depthTTL {
		return cur.pending, cur.ok
	}
	n, ok := p.readDepth(ctx, queue, group)
	if !ok && have {
		return cur.pending, cur.ok
	}
	c.mu.Lock()
	c.m[k] = depthEntry{at: p.Clock.Now(), pending: n, ok: ok}
	c.mu.Unlock()
	return n, ok
}

func (p *Plane) readDepth(ctx context.Context, queue, group string) (int64, bool) {
	d, err := p.Client.Depth(ctx, queue, group)
	if err == nil {
		return d.Pending, true
	}
	if !queen.IsNotFound(err) {
		return 0, false
	}
	if group != "" {
		if d, err := p.Client.Depth(ctx, queue, ""); err == nil {
			return d.Pending, true
		}
	}
	qi, err := p.Client.Queue(ctx, queue)
	if err != nil {
		if queen.IsNotFound(err) {
			return 0, true
		}
		return 0, false
	}
	var n int64
	for _, p := range qi.Partitions {
		n += p.Pending
	}
	return n, true
}

// NodeWaiting is what waits for budget at a node: the backlog of its
// stages' groups on their source queues, each source queue counted once.
// Several paths crossing one node on one queue (an interior queue every
// path pushes into, an ingress shared by paths) each have a group there,
// and each group's backlog holds every path's items behind its cursor:
// summing the groups would count the same items once per path, so a
// queue's figure is its largest group backlog (the items not yet passed by
// the furthest-behind path). ok is false when no backlog could be read.
func (p *Plane) NodeWaiting(ctx context.Context, pl *plan.Plan, node string) (int64, bool) {
	perQueue := map[string]int64{}
	var order []string
	any := false
	for _, st := range pl.Stages {
		if st.Node != node {
			continue
		}
		n, ok := p.Pending(ctx, st.Source, st.Group)
		if !ok {
			continue
		}
		any = true
		cur, seen := perQueue[st.Source]
		if !seen {
			order = append(order, st.Source)
		}
		perQueue[st.Source] = max(cur, n)
	}
	var total int64
	for _, q := range order {
		total += perQueue[q]
	}
	return total, any
}

// SharedSource lists the other paths whose stage at st's node reads st's
// source queue too (their items are in st's group backlog).
func SharedSource(pl *plan.Plan, st *plan.Stage) []string {
	var out []string
	for _, o := range pl.Stages {
		if o.Node == st.Node && o.Source == st.Source && o.Path != st.Path {
			out = append(out, o.Path)
		}
	}
	return out
}

// Breakers is the live breaker records of pl's nodes, by BreakerKey; a
// failed read shows none (the view and the metrics answer without them).
func (p *Plane) Breakers(ctx context.Context, pl *plan.Plan) map[string]store.Breaker {
	out, _ := p.Store.Breakers(ctx, pl)
	return out
}
