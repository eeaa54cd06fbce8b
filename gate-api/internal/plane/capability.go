package plane

import (
	"context"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/capability"
)

// capabilities is the last capability probe of the broker (libs/capability)
// and the probe in flight, if any.
type capabilities struct {
	mu  sync.Mutex
	rep *capability.Report
	// running is closed when the probe in flight ends (nil: none).
	running chan struct{}
	// down is set when a health check found the broker unreachable: the
	// next probe-worthy call probes again (it may be another broker).
	down bool
	// problem is the last problem logged, so it is logged once.
	problem string
}

// capabilityRecheck is how old a report that found something missing may
// get before the next caller probes again (the operator may have fixed the
// broker).
const capabilityRecheck = 10 * time.Second

// capabilityTimeout bounds one probe.
const capabilityTimeout = 20 * time.Second

// Capabilities is what the broker was found to have: the last probe that
// finished, probing first (and waiting for it, bounded by ctx) when none
// has yet, when the broker answers again after a health check found it
// unreachable, or when the last one found something missing more than ten
// seconds ago. ok is false when no probe could finish (the broker does not
// answer): nothing is known then.
func (p *Plane) Capabilities(ctx context.Context) (capability.Report, bool) {
	c := &p.caps
	c.mu.Lock()
	rep := c.rep
	stale := rep == nil || c.down || (!rep.OK() && p.Clock.Since(rep.At) > capabilityRecheck)
	if !stale {
		c.mu.Unlock()
		return *rep, true
	}
	if ch := c.running; ch != nil {
		// Another caller probes: wait for its report.
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
	} else {
		// This caller probes, on its own goroutine and within its ctx.
		ch = make(chan struct{})
		c.running = ch
		c.down = false
		c.mu.Unlock()
		p.probeCapabilities(ctx, ch)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rep == nil {
		return capability.Report{}, false
	}
	return *c.rep, true
}

// probeCapabilities runs one probe within ctx and closes done; it says a
// problem once at ERROR, and once at INFO when it is gone. A probe the
// broker did not answer leaves the last report as it was, marked to be
// probed again.
func (p *Plane) probeCapabilities(ctx context.Context, done chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, capabilityTimeout)
	defer cancel()
	rep := capability.Probe(ctx, p.Client, capability.Options{Namespace: p.Cfg.KVNamespace, Owner: p.owner, Now: p.Clock.Now})
	c := &p.caps
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(done)
	c.running = nil
	if rep.Err != nil {
		c.down = true
		return
	}
	c.rep = &rep
	problem := rep.Problem()
	switch {
	case problem != "" && problem != c.problem:
		p.Log.Error("the broker is not the broker Gate needs; gate-api refuses declarations and /health answers 503 until it has it", "error", problem)
	case problem == "" && c.problem != "":
		p.Log.Info("the broker now has everything Gate needs", "queen", p.Cfg.QueenURL)
	}
	c.problem = problem
}

// brokerAnswered notes a health check's verdict: an unreachable broker is
// probed again once it answers.
func (p *Plane) brokerAnswered(ok bool) {
	if ok {
		return
	}
	p.caps.mu.Lock()
	p.caps.down = true
	p.caps.mu.Unlock()
}
