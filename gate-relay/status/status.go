package status

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/queen-mq/gate/gate-relay/denial"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/store"
)

// Subject prefixes of the NATS fan-out.
const (
	CountersSubject = "gate.relay.counters"
	DenialsSubject  = "gate.relay.denials"
)

// CountersSubjectFor is the counters subject of app/graph.
func CountersSubjectFor(app, graph string) string { return CountersSubject + "." + app + "." + graph }

// DenialsSubjectFor is the denials subject of app/graph.
func DenialsSubjectFor(app, graph string) string { return DenialsSubject + "." + app + "." + graph }

// GraphSnapshot is one counters message: a graph as one replica runs it.
type GraphSnapshot struct {
	// Replica is the publishing replica's id.
	Replica string `json:"replica"`
	// At is epoch milliseconds of the snapshot.
	At int64 `json:"at"`
	// Graph is the graph's status on that replica.
	Graph store.GraphStatus `json:"graph"`
}

// Source is what the publisher reads every period.
type Source interface {
	// Snapshot returns the replica's current status document.
	Snapshot() store.RelayStatus
	// Denials returns the replica's denial ring.
	Denials() *denial.Ring
}

// Config is what a Publisher runs with. WithDefaults fills what is left
// zero.
type Config struct {
	// Store receives the status document.
	Store *store.Store
	// Source is the relay.
	Source Source
	// Period is how often to publish (GATE_STATUS_SECONDS by default); the
	// document's TTL is three periods.
	Period time.Duration
	// NATS, when non-nil, receives the fan-out.
	NATS *nats.Conn
	// Changed, when non-nil, asks for one publish now, besides the period
	// (the relay signals it when what runs changed, so a new version is
	// visible at once); nil publishes on the period only.
	Changed <-chan struct{}
	// Written, when non-nil, is told the outcome of every status write (nil
	// when every row was stored), so /health and /metrics can say a write
	// the broker refuses.
	Written func(error)
	// Clock times the period (nil is the wall clock); Logger defaults to
	// slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
}

// WithDefaults returns c with its zero fields filled: the knob's status
// period, the wall clock, slog.Default(). A negative period counts as
// zero.
func (c Config) WithDefaults() Config {
	c.Period = cmp.Or(max(c.Period, 0), time.Duration(knob.StatusSeconds.Default)*time.Second)
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Publisher writes the status rows (store.StatusWriter) and the NATS
// fan-out. Build it
// with New; Start publishes at once and then every Period (and on
// Changed) until Stop or the end of Start's context, when it withdraws the
// status document.
type Publisher struct {
	service.Base

	cfg Config
}

// New returns a Publisher for cfg.
func New(cfg Config) *Publisher { return &Publisher{cfg: cfg.WithDefaults()} }

// withdrawTimeout bounds the delete of the status document at stop.
const withdrawTimeout = 2 * time.Second

// Start publishes on its own goroutine until Stop or the end of ctx.
// Starting a running publisher does nothing.
func (p *Publisher) Start(ctx context.Context) error {
	ctx, ok := p.StartInit(ctx)
	if !ok {
		return nil
	}
	t := p.cfg.Clock.NewTicker(p.cfg.Period)
	p.Go(func() {
		defer t.Stop()
		p.loop(ctx, t.C())
	})
	p.Ready()
	return nil
}

func (p *Publisher) loop(ctx context.Context, tick <-chan time.Time) {
	period, log := p.cfg.Period, p.cfg.Logger
	var cursor uint64
	failing := false
	// One writer for the publisher's life: it writes a graph's row only
	// when the graph's status changed (or the row nears its TTL).
	var w *store.StatusWriter
	fan := &fanCache{graphs: map[string]fanGraph{}}
	publish := func() {
		st := p.cfg.Source.Snapshot()
		if w == nil {
			w = p.cfg.Store.NewStatusWriter(st.Replica)
		}
		// A writer's calls are bounded by the period each, so a slow
		// broker delays the next publish by at most a few periods.
		cctx, cancel := context.WithTimeout(ctx, period)
		_, err := w.Write(cctx, st, 3*period, p.cfg.Clock.Now())
		cancel()
		switch {
		case err != nil && !failing:
			log.Warn("writing the relay status failed", "error", err)
			failing = true
		case err == nil && failing:
			log.Info("writing the relay status works again")
			failing = false
		}
		if p.cfg.Written != nil && ctx.Err() == nil {
			p.cfg.Written(err)
		}
		if p.cfg.NATS != nil {
			cursor = p.fanOut(st, cursor, fan, log)
		}
	}
	publish()
	for {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
			_ = w.Withdraw(cctx)
			cancel()
			return
		case <-tick:
			publish()
		case <-p.cfg.Changed:
			publish()
		}
	}
}

// fanCache keeps each graph's encoded status between periods: a graph
// whose status did not change (store.SameGraphStatus) is sent with the
// bytes of the last period instead of being encoded again, which at
// thousands of idle graphs was a third of the publisher's work.
type fanCache struct {
	graphs map[string]fanGraph
	// period counts the fan-outs; a graph not seen in the latest one is
	// dropped.
	period uint64
	buf    []byte
}

type fanGraph struct {
	status store.GraphStatus
	body   []byte
	seen   uint64
}

// snapshot returns the counters message of g at st.At: the encoding of
// GraphSnapshot{st.Replica, st.At, g}, byte for byte, with g's own
// encoding reused when g did not change since the last period. The slice
// is valid until the next call.
func (c *fanCache) snapshot(replica []byte, at int64, g store.GraphStatus) ([]byte, error) {
	k := g.App + "/" + g.Graph
	f, ok := c.graphs[k]
	if !ok || !store.SameGraphStatus(f.status, g) {
		body, err := json.Marshal(g)
		if err != nil {
			return nil, err
		}
		f = fanGraph{status: store.CloneGraphStatus(g), body: body}
	}
	f.seen = c.period
	c.graphs[k] = f
	b := append(c.buf[:0], `{"replica":`...)
	b = append(b, replica...)
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, at, 10)
	b = append(b, `,"graph":`...)
	b = append(b, f.body...)
	b = append(b, '}')
	c.buf = b
	return b, nil
}

// prune forgets the graphs the latest fan-out did not send.
func (c *fanCache) prune() {
	for k, f := range c.graphs {
		if f.seen != c.period {
			delete(c.graphs, k)
		}
	}
}

// fanOut publishes one counters snapshot per graph and the denials added
// since cursor, grouped by graph; it returns the new cursor.
func (p *Publisher) fanOut(st store.RelayStatus, cursor uint64, fan *fanCache, log *slog.Logger) uint64 {
	fan.period++
	defer fan.prune()
	replica, _ := json.Marshal(st.Replica) // a string always encodes
	for _, g := range st.Graphs {
		b, err := fan.snapshot(replica, st.At, g)
		if err == nil {
			// Publish copies b into the connection's buffer.
			err = p.cfg.NATS.Publish(CountersSubjectFor(g.App, g.Graph), b)
		}
		if err != nil {
			log.Debug("nats publish failed", "error", err)
		}
	}
	fresh, next := p.cfg.Source.Denials().Since(cursor)
	byGraph := map[string][]store.Denial{}
	for _, d := range fresh {
		k := DenialsSubjectFor(d.Application, d.Graph)
		byGraph[k] = append(byGraph[k], d)
	}
	for subject, ds := range byGraph {
		b, err := json.Marshal(ds)
		if err == nil {
			err = p.cfg.NATS.Publish(subject, b)
		}
		if err != nil {
			log.Debug("nats publish failed", "error", err)
		}
	}
	return next
}
