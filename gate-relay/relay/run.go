package relay

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/gate-relay/observe"
	"github.com/queen-mq/gate/gate-relay/ops"
	"github.com/queen-mq/gate/gate-relay/status"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/store"
)

// RunOption adjusts Run.
type RunOption func(*runOptions)

type runOptions struct{ log *slog.Logger }

// WithLogger logs through l instead of slog.Default().
func WithLogger(l *slog.Logger) RunOption {
	return func(o *runOptions) {
		if l != nil {
			o.log = l
		}
	}
}

// Run is the whole gate-relay process: it runs every stored graph, writes
// the replica's status, serves /health and /metrics, and fans out to NATS
// when configured, until ctx ends (SIGTERM). Then it stops popping,
// finishes or releases the claims in flight and returns within the poll
// timeout plus two seconds. Its pieces are services (package
// libs/service): the ops server, the relay, the status publisher and the
// history handover start in that order, and all stop together.
func Run(ctx context.Context, cfg config.Config, opts ...RunOption) error {
	o := runOptions{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	log := o.log
	if cfg.Replica == "" {
		return fmt.Errorf("the replica id is empty; set GATE_RELAY_ID or let main derive it")
	}
	client, err := queen.New(cfg.QueenURL)
	if err != nil {
		return fmt.Errorf("QUEEN_URL: %w", err)
	}
	st := store.New(client, cfg.KVNamespace)
	var r *Relay
	hand := observe.New(observe.Config{
		Client: client, Namespace: cfg.KVNamespace, Replica: cfg.Replica, Logger: log,
		Source: observe.SourceFunc(func() []observe.Runtime { return r.Runtimes() }),
	})
	r, err = New(Config{
		Client: client, Store: st, Replica: cfg.Replica,
		StageBatch: cfg.StageBatch, StageConcurrency: cfg.StageConcurrency, LaneCapacity: cfg.LaneCapacity,
		Lease: cfg.Lease, PollTimeout: cfg.PollTimeout, MaxPark: cfg.MaxPark,
		InteriorSeedSkew: cfg.InteriorSeedSkew, RetryLimit: cfg.RetryLimit,
		Reconcile: cfg.Reconcile, SignalPoll: cfg.SignalPoll, Logger: log,
		Admission: cfg.Admission, Linger: cfg.Linger,
		Observer: hand.Observe,
	})
	if err != nil {
		return err
	}
	// The history handover (Watch samples, roll-up counts, denials) goes
	// to gate-recorder through kv; it never waits on PostgreSQL.
	hand.SetDenials(r.Denials())
	srv := ops.NewServer(cfg.Bind, r, log)
	var nc *nats.Conn
	if cfg.NATSURL != "" {
		// A dead NATS is never the relay's failure: its error stays here,
		// out of what Run returns.
		conn, nerr := nats.Connect(cfg.NATSURL, nats.Name("gate-relay "+cfg.Replica), nats.MaxReconnects(-1))
		if nerr != nil {
			log.Warn("NATS is unreachable; the relay runs without live fan-out (status still goes to kv)", "url", cfg.NATSURL, "error", nerr)
		} else {
			nc = conn
			defer nc.Close()
			log.Info("publishing counters and denials on NATS", "url", cfg.NATSURL, "subjects", status.CountersSubject+".{app}.{graph}, "+status.DenialsSubject+".{app}.{graph}")
		}
	} else {
		log.Info("GATE_NATS_URL is not set: no live fan-out; status is shared through kv only")
	}
	pub := status.New(status.Config{Store: st, Source: r, Period: cfg.StatusPeriod, NATS: nc, Logger: log, Changed: r.Changed()})

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := []service.Service{srv, r, pub, hand}
	log.Info("gate-relay starting", "replica", cfg.Replica, "queen", cfg.QueenURL, "namespace", cfg.KVNamespace)
	if err := service.StartAll(runCtx, parts...); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-srv.Stopped():
		err = srv.Err()
	}
	// Every part stops at once, as one process: the stages stop popping
	// and drain, the status document is withdrawn and the handover
	// flushes a last time; StopAll then waits for each.
	cancel()
	service.StopAll(parts...)
	log.Info("gate-relay stopped", "replica", cfg.Replica)
	return err
}
