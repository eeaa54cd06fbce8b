package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/ai"
	"github.com/queen-mq/gate/gate-api/internal/declare"
	"github.com/queen-mq/gate/gate-api/internal/insight"
	"github.com/queen-mq/gate/gate-api/internal/live"
	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/gate-api/internal/push"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/service"
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

// Server is one gate-api process: the route families on one router, and
// the background work that keeps the picture of what is declared and what
// runs fresh (Start and Stop, the service shape). Build it with New; it is
// safe for concurrent use.
type Server struct {
	service.Base
	p       *plane.Plane
	declare *declare.Declarer
	handler *httpapi.Router
}

// WithActor marks a request's context as made by the console identity who
// (an e-mail): the change history records it as the one who stored or
// deleted a graph. gate-console calls it after its session check; a request
// without it is the application plane's ("api").
func WithActor(ctx context.Context, who string) context.Context { return plane.WithActor(ctx, who) }

// Option changes what New builds.
type Option func(*plane.Options)

// WithClock makes c the server's clock (tests give a clock.Virtual); the
// default is the wall clock.
func WithClock(c clock.Clock) Option { return func(o *plane.Options) { o.Clock = c } }

// New builds a server for cfg, logging to log (nil: slog.Default()). It does
// not touch the network; Start (or Run) loads the declared graphs.
func New(cfg config.Config, log *slog.Logger, opts ...Option) (*Server, error) {
	o := plane.Options{Log: log}
	for _, opt := range opts {
		opt(&o)
	}
	p, err := plane.New(cfg, o)
	if err != nil {
		return nil, err
	}
	a, err := ai.New(context.Background(), p)
	if err != nil {
		return nil, err
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gate_api_requests_total",
		Help: "HTTP requests answered, by route and status code.",
	}, []string{"route", "method", "status"})
	p.Registry.MustRegister(requests, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s := &Server{p: p, declare: declare.New(p)}
	s.handler = s.routes(requests, push.New(p), live.New(p), insight.New(p), a)
	return s, nil
}

// Handler is the application plane's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes lists every route of the application plane, sorted, so a plane
// that mounts this handler (gate-console) can prove each one is guarded.
func (s *Server) Routes() []Route { return s.handler.Routes() }

// IsRead reports whether r changes nothing: a GET or HEAD, or a route
// that only reads although its method is POST (the candidate simulation).
// gate-console lets viewers make these.
func (s *Server) IsRead(r *http.Request) bool { return s.handler.IsRead(r) }

// Route is one registered route: its method and path template (gorilla
// syntax, e.g. /v1/apps/{app}/graphs/{name}).
type Route = httpapi.RouteInfo

// Plane is the state the route families share, for gate-api's own tests
// (gate-api/internal/apitest); code outside gate-api cannot name its type.
func (s *Server) Plane() *plane.Plane { return s.p }

// UseHistory gives the server its PostgreSQL history (nil: none). Call it
// before serving; Run does it from the PG_ knobs.
func (s *Server) UseHistory(db *history.DB) { s.p.UseHistory(db) }

// History is the server's history database, nil without PG_HOST.
func (s *Server) History() *history.DB { return s.p.History() }

// Start re-saves stored v1 documents in v2 shape (once; see
// declare.Declarer.ResaveV1), loads the declared graphs and the relays'
// status once (a failure is logged, not fatal: the broker may come up
// later; the re-save is then retried every refresh interval until the
// store can be listed) and keeps them fresh until Stop or the end of ctx.
// It never fails; starting a running server does nothing.
func (s *Server) Start(ctx context.Context) error {
	ctx, ok := s.StartInit(ctx)
	if !ok {
		return nil
	}
	if err := s.declare.ResaveV1(ctx); err != nil {
		s.p.Log.Warn("stored v1 documents could not be re-saved in v2 shape at start; retrying every refresh interval", "error", err)
		s.Go(func() { s.declare.ResaveUntilDone(ctx, s.p.Cfg.Refresh) })
	}
	if err := s.p.Cat.SyncDocuments(ctx, true); err != nil {
		s.p.Log.Warn("the declared graphs could not be read at start; retrying every refresh interval", "error", err)
	}
	_ = s.p.Cat.SyncStatus(ctx)
	// What Gate needs of the broker, probed now so a broker that lacks it
	// is said at start (once, at ERROR), not at the first declaration.
	s.Go(func() { s.p.Capabilities(ctx) })
	s.Go(func() { s.p.Cat.Run(ctx) })
	s.Ready()
	return nil
}

// Run serves the application plane on cfg.Bind until ctx ends, then stops
// accepting connections and waits up to cfg.ShutdownTimeout for requests in
// flight.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	s, err := New(cfg, log)
	if err != nil {
		return err
	}
	db, err := openHistory(ctx, cfg, s.p.Log)
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

// Serve is Run on a listener the caller opened: the background work runs
// until the drain is over.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	defer s.Stop()
	cfg := s.p.Cfg
	plane := &service.HTTP{
		Name:     "gate-api",
		Listener: jsonErrorListener{ln},
		Server: &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       time.Minute,
			WriteTimeout:      time.Minute + cfg.DeclareWait, // a PUT may wait for a relay
			IdleTimeout:       120 * time.Second,
		},
		Drain: cfg.ShutdownTimeout,
		Log:   s.p.Log,
		Attrs: []any{"queen", cfg.QueenURL, "kvNamespace", cfg.KVNamespace, "version", buildVersion()},
		// A declare waiting for a relay answers at once: the drain waits
		// for no relay.
		Stopping: s.declare.Close,
	}
	return plane.Serve(ctx)
}

// openHistory opens the history the PG_ knobs name (nil without PG_HOST)
// and says plainly which way gate-api runs.
func openHistory(ctx context.Context, cfg config.Config, log *slog.Logger) (*history.DB, error) {
	db, err := history.Open(ctx, cfg.History, history.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	if db == nil {
		log.Info("no PostgreSQL history: PG_HOST is not set; Gate limits exactly as well, Watch is refused (rule watch-history) and the history routes answer 503 or empty")
		return nil, nil
	}
	log.Info("PostgreSQL history open", "history", cfg.History.Describe(), "schema", db.Schema())
	return db, nil
}
