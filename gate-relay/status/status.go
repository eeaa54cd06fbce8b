package status

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/queen-mq/gate/gate-relay/denial"
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

// Publisher writes the status document and the NATS fan-out. Build it
// with the fields set and call Run.
type Publisher struct {
	// Store receives the status document.
	Store *store.Store
	// Source is the relay.
	Source Source
	// Period is how often to publish (default 5 s); the document's TTL is
	// three periods.
	Period time.Duration
	// NATS, when non-nil, receives the fan-out.
	NATS *nats.Conn
	// Changed, when non-nil, asks for one publish now, besides the period
	// (the relay signals it when what runs changed, so a new version is
	// visible at once); nil publishes on the period only.
	Changed <-chan struct{}
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Run publishes until ctx ends, then withdraws the status document.
func (p *Publisher) Run(ctx context.Context) {
	period := p.Period
	if period <= 0 {
		period = 5 * time.Second
	}
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	var cursor uint64
	failing := false
	publish := func() {
		st := p.Source.Snapshot()
		cctx, cancel := context.WithTimeout(ctx, period)
		err := p.Store.PutStatus(cctx, st, 3*period)
		cancel()
		switch {
		case err != nil && !failing:
			log.Warn("writing the relay status failed", "err", err)
			failing = true
		case err == nil && failing:
			log.Info("writing the relay status works again")
			failing = false
		}
		if p.NATS != nil {
			cursor = p.fanOut(st, cursor, log)
		}
	}
	publish()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = p.Store.DeleteStatus(cctx, p.Source.Snapshot().Replica)
			cancel()
			return
		case <-t.C:
			publish()
		case <-p.Changed:
			publish()
		}
	}
}

// fanOut publishes one counters snapshot per graph and the denials added
// since cursor, grouped by graph; it returns the new cursor.
func (p *Publisher) fanOut(st store.RelayStatus, cursor uint64, log *slog.Logger) uint64 {
	for _, g := range st.Graphs {
		b, err := json.Marshal(GraphSnapshot{Replica: st.Replica, At: st.At, Graph: g})
		if err == nil {
			err = p.NATS.Publish(CountersSubjectFor(g.App, g.Graph), b)
		}
		if err != nil {
			log.Debug("nats publish failed", "err", err)
		}
	}
	fresh, next := p.Source.Denials().Since(cursor)
	byGraph := map[string][]store.Denial{}
	for _, d := range fresh {
		k := DenialsSubjectFor(d.Application, d.Graph)
		byGraph[k] = append(byGraph[k], d)
	}
	for subject, ds := range byGraph {
		b, err := json.Marshal(ds)
		if err == nil {
			err = p.NATS.Publish(subject, b)
		}
		if err != nil {
			log.Debug("nats publish failed", "err", err)
		}
	}
	return next
}
