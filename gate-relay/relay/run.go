package relay

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

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
	// The stages' calls (pops, settles, charges) go over the synchronous
	// transport: each call is written and answered on the stage's own
	// goroutine, with no reader and writer goroutine per connection
	// (queen.SyncTransport says why).
	client, err := queen.New(cfg.QueenURL, queen.WithHTTPClient(&http.Client{Transport: queen.NewSyncTransport(queen.NewTransport())}))
	if err != nil {
		return fmt.Errorf("QUEEN_URL: %w", err)
	}
	// The store (documents, members, status rows) talks to the broker
	// over a connection pool of its own. The stages' long polls hold one
	// connection each, and a cold start of thousands of graphs opens them
	// all at once: a status write or a member read that had to dial
	// behind them waited seconds (the broker's listen queue full, SYNs
	// dropped and resent), let the replica's header expire and moved its
	// graphs to the other replicas. On its own pool its few connections
	// stay open.
	control, err := queen.New(cfg.QueenURL, queen.WithHTTPClient(&http.Client{Transport: queen.NewTransport()}))
	if err != nil {
		return fmt.Errorf("QUEEN_URL: %w", err)
	}
	st := store.New(control, cfg.KVNamespace)
	var r *Relay
	hand := observe.New(observe.Config{
		Client: client, Namespace: cfg.KVNamespace, Replica: cfg.Replica, Logger: log,
		KeysPerSecond: cfg.ShadowKeysPerSecond,
		Source:        observe.SourceFunc(func() []observe.Runtime { return r.Runtimes() }),
	})
	r, err = New(Config{
		Client: client, Store: st, Replica: cfg.Replica,
		StageBatch: cfg.StageBatch, StageConcurrency: cfg.StageConcurrency, LaneCapacity: cfg.LaneCapacity,
		Lease: cfg.Lease, PollTimeout: cfg.PollTimeout, MaxPark: cfg.MaxPark, DozeCheck: cfg.DozeCheck,
		InteriorSeedSkew: cfg.InteriorSeedSkew, RetryLimit: cfg.RetryLimit,
		Reconcile: cfg.Reconcile, SignalPoll: cfg.SignalPoll, Logger: log,
		Admission: cfg.Admission, Linger: cfg.Linger, ReplicasPerGraph: cfg.ReplicasPerGraph,
		Observer: hand.Observe,
	})
	if err != nil {
		return err
	}
	// The history handover (Watch samples, roll-up counts, denials) goes
	// to gate-recorder through kv; it never waits on PostgreSQL.
	hand.SetDenials(r.Denials())
	srv := ops.NewServer(cfg.Bind, r, log, ops.WithProfiles(cfg.Profiles))
	var nc *nats.Conn
	if cfg.NATSURL != "" {
		nc, err = connectNATS(cfg.NATSURL, cfg.Replica, log)
		if err != nil {
			return err
		}
		defer nc.Close()
	} else {
		log.Info("GATE_NATS_URL is not set: no live fan-out; status is shared through kv only")
	}
	pub := status.New(status.Config{Store: st, Source: r, Period: cfg.StatusPeriod, NATS: nc, Logger: log, Changed: r.Changed(), Written: r.StatusWritten})

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

// connectNATS returns a connection to url that keeps trying: a NATS that
// is down when the relay starts (or goes down later) is connected to as
// soon as it answers, and the fan-out resumes by itself. A dead NATS is
// never the relay's failure: only an unusable URL is an error. While
// disconnected, publishes are dropped (live counters are not worth
// replaying late); the status document in kv is unaffected.
func connectNATS(url, replica string, log *slog.Logger) (*nats.Conn, error) {
	subjects := status.CountersSubject + ".{app}.{graph}, " + status.DenialsSubject + ".{app}.{graph}"
	var once sync.Once
	connected := func() {
		once.Do(func() { log.Info("publishing counters and denials on NATS", "url", url, "subjects", subjects) })
	}
	nc, err := nats.Connect(url, nats.Name("gate-relay "+replica),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.ReconnectBufSize(-1),
		nats.ConnectHandler(func(*nats.Conn) { connected() }),
		nats.ReconnectHandler(func(*nats.Conn) {
			log.Info("NATS is back; publishing counters and denials again", "url", url)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("NATS connection lost; the relay keeps running and reconnects by itself (status still goes to kv)", "url", url, "error", err)
		}))
	if err != nil {
		return nil, fmt.Errorf("GATE_NATS_URL %q: %w", url, err)
	}
	if nc.IsConnected() {
		connected()
	} else {
		log.Warn("NATS is unreachable; the relay runs without live fan-out until it answers (status still goes to kv)", "url", url)
	}
	return nc, nil
}
