package relay

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/provision"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// runtime is one running graph.
type runtime struct {
	app, graph string
	body       []byte
	legacy     bool
	plan       *plan.Plan
	stages     []*stage.Stage
	cancel     context.CancelFunc
	started    time.Time
	running    atomic.Bool
	err        atomic.Pointer[string]
	// standby is the graph's role here: true on a standby owner, false on
	// its primary (placement.go).
	standby atomic.Bool
}

// roleChange is what setStandby did.
type roleChange int

const (
	roleKept roleChange = iota
	rolePromoted
	roleDemoted
)

// setStandby gives rt and every stage of it the role standby: a
// promotion wakes every stage at once, a demotion lets them doze once
// quiet (stage.SetStandby).
func (rt *runtime) setStandby(standby bool) roleChange {
	if rt.standby.Swap(standby) == standby {
		return roleKept
	}
	for _, s := range rt.stages {
		s.SetStandby(standby)
	}
	if standby {
		return roleDemoted
	}
	return rolePromoted
}

// setErr records why the runtime's document is not (or not fully) running.
func (rt *runtime) setErr(text string) { rt.err.Store(&text) }

func (rt *runtime) errText() string {
	if p := rt.err.Load(); p != nil {
		return *p
	}
	return ""
}

// compile compiles a stored document with this replica's knobs, probing
// application-owned ingress queues for their partition count.
func (r *Relay) compile(ctx context.Context, doc store.Document) (*plan.Plan, error) {
	opts := plan.Options{StageBatch: r.cfg.StageBatch, StageConcurrency: r.cfg.StageConcurrency, LaneCapacity: r.cfg.LaneCapacity}
	in := declare.Input{App: doc.App, Name: doc.Graph, Body: doc.Body, Target: doc.Legacy, Options: opts}
	res, err := declare.Compile(in)
	if err != nil {
		return nil, fmt.Errorf("document %s is unreadable: %w", doc.Key, err)
	}
	if res.Plan == nil {
		return nil, fmt.Errorf("document %s is refused by the compiler: %v", doc.Key, res.Errors())
	}
	observed := map[string]uint32{}
	for _, q := range res.Plan.Queues {
		if q.Kind != plan.KindIngressYours {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := r.client.Queue(cctx, q.Name)
		cancel()
		if err == nil && len(info.Partitions) > 0 {
			observed[q.Name] = uint32(len(info.Partitions))
		}
	}
	if len(observed) == 0 {
		return res.Plan, nil
	}
	in.Options.ObservedPartitions = observed
	res, err = declare.Compile(in)
	if err != nil || res.Plan == nil {
		return nil, fmt.Errorf("document %s: recompiling with observed partitions failed: %v %v", doc.Key, err, res.Errors())
	}
	return res.Plan, nil
}

// provision configures Gate-owned queues (lease, retry limit, retention)
// and creates absent egress queues; application-owned ingress queues are
// never touched. See package provision.
func (r *Relay) provision(ctx context.Context, p *plan.Plan) error {
	o := provision.Options{LeaseSeconds: int(queen.CeilSeconds(r.cfg.Lease)), RetryLimit: r.cfg.RetryLimit, Logger: r.log}
	return provision.Queues(ctx, r.client, p, o)
}

// launch provisions and spawns every stage of a compiled document. The
// runtime's start instant is taken before provisioning; interior groups
// are seeded at it minus the skew.
func (r *Relay) launch(ctx context.Context, doc store.Document, p *plan.Plan) (*runtime, error) {
	rt := &runtime{app: doc.App, graph: doc.Graph, body: bytes.Clone(doc.Body), legacy: doc.Legacy, started: r.cfg.Clock.Now(), plan: p}
	if err := r.provision(ctx, p); err != nil {
		rt.setErr(err.Error())
		return rt, err
	}
	seed := rt.started.Add(-r.cfg.InteriorSeedSkew)
	// fed are the queues this graph's stages push into short of the
	// egress: only they write an interior queue, and this replica runs
	// every stage of the graph, so a stage on one is woken by its
	// upstream here and may doze while quiet (stage.Config.Fed).
	fed := map[string]bool{}
	for _, st := range p.Stages {
		for _, d := range st.Destinations {
			if !d.Terminal {
				fed[d.Queue] = true
			}
		}
	}
	signer := r.stampSigner(ctx)
	// The role as of now: a standby's stages start quiet (no parked poll);
	// put sets it again under the graphs' lock.
	standby := r.standby(p.Application, p.Graph)
	rt.standby.Store(standby)
	var stages []*stage.Stage
	for i := range p.Stages {
		st := p.Stages[i]
		s, err := stage.New(stage.Config{
			Fed: st.SourceIsInterior && fed[st.Source],
			App: p.Application, Graph: p.Graph, Stage: st, Node: p.Node(st.Node),
			Client: r.client, Limiter: r.limiter, Lease: r.cfg.Lease, PollTimeout: r.cfg.PollTimeout,
			MaxPark: r.cfg.MaxPark, SeedFrom: seed, Clock: r.cfg.Clock, Logger: r.log,
			Denials: r.denials, Observer: r.cfg.Observer, Admission: r.admit, Linger: r.cfg.Linger,
			Signer: signer, Standby: standby, DozeCheck: r.cfg.DozeCheck,
		})
		if err != nil {
			rt.setErr(err.Error())
			return rt, err
		}
		stages = append(stages, s)
	}
	for i, st := range p.Stages {
		for _, d := range st.Destinations {
			if d.Terminal {
				continue
			}
			for j, next := range p.Stages {
				if next.Source == d.Queue && !slices.Contains(stages[i].FeedsTo(), stages[j]) {
					stages[i].Feeds(stages[j])
				}
			}
		}
	}
	// The stages run until the runtime cancels them (a swap, a removal,
	// the relay's stop), not until the reconcile pass that launched them
	// ends.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	for i, s := range stages {
		if err := s.Start(sctx); err != nil {
			cancel()
			for _, started := range stages[:i] {
				started.Stop()
			}
			rt.setErr(err.Error())
			return rt, err
		}
	}
	rt.stages, rt.cancel = stages, cancel
	rt.running.Store(true)
	r.log.Info("graph running", "app", p.Application, "graph", p.Graph, "version", p.Version, "stages", len(stages), "workers", p.TotalWorkers())
	return rt, nil
}

// cancelStages signals every stage of rt to stop (no new pops; parks end
// and release their claims; calls in flight finish).
func (rt *runtime) cancelStages() {
	if rt.cancel != nil {
		rt.cancel()
	}
}

// await waits for every stage to return, at most timeout in total on c
// (stragglers are detached and logged by the caller).
func (rt *runtime) await(c clock.Clock, timeout time.Duration) bool {
	deadline := c.NewTimer(timeout)
	defer deadline.Stop()
	for _, s := range rt.stages {
		select {
		case <-s.Stopped():
		case <-deadline.C():
			return false
		}
	}
	return true
}

// status renders rt for the replica's status document.
func (rt *runtime) status() store.GraphStatus {
	g := store.GraphStatus{App: rt.app, Graph: rt.graph, Running: rt.running.Load(), Error: rt.errText(), Started: rt.started.UnixMilli()}
	if rt.plan != nil {
		g.Version = int64(rt.plan.Version)
	}
	for _, s := range rt.stages {
		g.Stages = append(g.Stages, s.Status())
	}
	return g
}

// stampSigner returns the fleet's stamp signer, reading (or creating) the
// key once. A failed read is logged and the graph runs without charge
// records (its items cannot be settled) until a later launch reads it.
func (r *Relay) stampSigner(ctx context.Context) *cost.Signer {
	if sg := r.signer.Load(); sg != nil {
		return sg
	}
	sg, err := r.store.StampSigner(ctx)
	if err != nil {
		r.log.Warn("reading the fleet's stamp key failed; this graph's items carry no charge records and cannot be settled until it is read", "error", err)
		return nil
	}
	r.signer.Store(sg)
	return sg
}
