package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/agent"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// Version is gate-api's build version, reported by GET /version. It is set
// at link time (-ldflags "-X .../server.Version=v1.2.3"); when empty the
// module's build information is used, else "dev".
var Version = ""

func buildVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Server is one gate-api process: the routes, the broker client, the store
// and the cached picture of what is declared and what runs. Build it with
// New; it is safe for concurrent use.
type Server struct {
	cfg     config.Config
	log     *slog.Logger
	client  *queen.Client
	store   *store.Store
	cat     *catalog
	metrics *metrics
	handler http.Handler
	// agent is the AI configuration agent (off without a key).
	agent *agent.Agent

	// declareMu is the declare lock: every PUT, sync and DELETE of this
	// process runs under it (a PUT's or sync's wait for a relay to run what
	// it stored does not: see awaitRunning). Other gate-api processes are
	// not excluded (see the README: concurrent declares of one graph
	// through two processes are last-writer-wins in kv).
	declareMu sync.Mutex
	// closing is closed when Serve starts shutting down; it ends the waits
	// of declares for a relay so the drain is not held up by them.
	closing   chan struct{}
	closeOnce sync.Once
	// pushBytes bounds the bytes buffered across in-flight pushes.
	pushBytes inflight
	// pusher carries the push front door's items to the broker.
	pusher pushBatcher
	// rr names round-robin partitions of Gate-owned ingress queues.
	rr atomic.Uint64

	// hist is the PostgreSQL history; nil without PG_HOST.
	hist atomic.Pointer[history.DB]

	health healthProbe
	depth  depthCache
	// diagSince serves the diagnostics route (diagnostics.go).
	diagSince sinceBook
	// now is the clock (time.Now outside tests).
	now func() time.Time
}

// New builds a server for cfg, logging to log (nil: slog.Default()). It does
// not touch the network; Start (or Run) loads the declared graphs.
func New(cfg config.Config, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	var opts []queen.Option
	if cfg.BrokerTimeout > 0 {
		opts = append(opts, queen.WithCallTimeout(cfg.BrokerTimeout))
	}
	c, err := queen.New(cfg.QueenURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("QUEEN_URL: %w", err)
	}
	st := store.New(c, cfg.KVNamespace)
	ag, err := agent.New(context.Background(), cfg.AI, log)
	if err != nil {
		return nil, err
	}
	log.Info("ai agent", "enabled", ag.Enabled(), "config", cfg.AI.AI)
	s := &Server{
		cfg: cfg, log: log, client: c, store: st,
		cat:     newCatalog(st, cfg.PlanOptions(), log, cfg.Refresh),
		metrics: newMetrics(),
		closing: make(chan struct{}),
		now:     time.Now,
		agent:   ag,
	}
	s.pushBytes.limit = cfg.PushInflightBytes
	s.pusher = pushBatcher{push: c.Push, maxItems: cfg.PushBatch, maxBytes: int(cfg.MaxPushBodyBytes)}
	s.metrics.watchDoor(&s.pusher)
	s.health.ttl = time.Second
	s.depth.ttl = 2 * time.Second
	s.handler = s.routes()
	return s, nil
}

// Handler is the application plane's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Start re-saves stored v1 documents in v2 shape (once; see resaveV1),
// loads the declared graphs and the relays' status once (a failure is
// logged, not fatal: the broker may come up later; the re-save is then
// retried every refresh interval until the store can be listed) and keeps
// them fresh until ctx ends.
func (s *Server) Start(ctx context.Context) {
	if err := s.resaveV1(ctx); err != nil {
		s.log.Warn("stored v1 documents could not be re-saved in v2 shape at start; retrying every refresh interval", "error", err)
		go s.resaveUntilDone(ctx, s.cfg.Refresh)
	}
	if err := s.cat.syncDocuments(ctx, true); err != nil {
		s.log.Warn("the declared graphs could not be read at start; retrying every refresh interval", "error", err)
	}
	_ = s.cat.syncStatus(ctx)
	go s.cat.run(ctx)
}

// Run serves the application plane on cfg.Bind until ctx ends, then stops
// accepting connections and waits up to cfg.ShutdownTimeout for requests in
// flight.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	s, err := New(cfg, log)
	if err != nil {
		return err
	}
	db, err := openHistory(ctx, cfg, s.log)
	if err != nil {
		return err
	}
	if db != nil {
		defer db.Close()
		s.UseHistory(db)
	}
	ln, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return fmt.Errorf("GATE_BIND=%s: %w", cfg.Bind, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	s.Start(bg)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute + s.cfg.DeclareWait, // a PUT may wait for a relay
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(jsonErrorListener{ln}) }()
	s.log.Info("gate-api serving", "bind", ln.Addr().String(), "queen", s.cfg.QueenURL, "kvNamespace", s.cfg.KVNamespace, "version", buildVersion())
	select {
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.log.Info("gate-api shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	s.closeOnce.Do(func() { close(s.closing) })
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
