// Package console is gate-console's server: the public plane. It mounts the
// application plane's handler package (gate-api/server) behind a session on
// every route, adds sign-in, GET /api/me, the live stream and the embedded
// web app, and refuses cross-site writes around the whole mux.
package console

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	apiserver "github.com/queen-mq/gate/gate-api/server"
	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/gate-console/internal/token"
	"github.com/queen-mq/gate/gate-console/webapp"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/wire"
)

// Options are what a test (or an embedding program) changes; the zero
// value is production: os.Getenv, the wall clock, the embedded web app.
type Options struct {
	// Getenv reads GATE_ADMIN_EMAILS on every request (nil: os.Getenv).
	Getenv func(string) string
	// Clock is the clock of sessions, sign-in state and the live stream,
	// and the application plane's (nil: the wall clock).
	Clock clock.Clock
	// WebApp is the web app's files (nil: the embedded webapp.FS()).
	WebApp fs.FS
	// HTTPClient reaches the sign-in provider (nil: a client with a 10 s
	// timeout).
	HTTPClient *http.Client
	// Live tunes the live stream (zero: the defaults).
	Live LiveOptions
	// ReadTimeout is the HTTP server's request read timeout (0 or less:
	// 1 min); the live stream clears it for itself.
	ReadTimeout time.Duration
}

// Option defaults.
const (
	// defaultProviderTimeout bounds one call to the sign-in provider.
	defaultProviderTimeout = 10 * time.Second
	// defaultReadTimeout is the HTTP server's request read timeout.
	defaultReadTimeout = time.Minute
)

// WithDefaults fills the fields left unset with production's.
func (o Options) WithDefaults() Options {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	o.Clock = clock.Or(o.Clock)
	o.WebApp = cmp.Or(o.WebApp, webapp.FS())
	o.HTTPClient = cmp.Or(o.HTTPClient, &http.Client{Timeout: defaultProviderTimeout})
	o.ReadTimeout = positive(o.ReadTimeout, defaultReadTimeout)
	o.Live = o.Live.WithDefaults()
	return o
}

// positive is v, or def when v is zero or negative.
func positive[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Server is one gate-console process. Build it with New; Start its
// background work (the application plane's refresh and the live hub),
// Stop it; serve Handler.
type Server struct {
	cfg    config.Config
	log    *slog.Logger
	api    *apiserver.Server
	app    http.Handler
	signer *token.Signer
	signin *signin
	static *static
	live   *liveHub
	getenv func(string) string
	clock  clock.Clock
	// history is the history database (nil when none is configured).
	history *history.DB

	handler     http.Handler
	readTimeout time.Duration
}

// New builds the console for cfg (which must pass cfg.Check). It does not
// touch the network.
func New(cfg config.Config, log *slog.Logger, opt Options) (*Server, error) {
	// One spelling of the public origin for every use of it (the trusted
	// origin, the redirect URI), however the configuration was built.
	cfg.PublicURL = knob.CanonicalOrigin(cfg.PublicURL)
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	opt = opt.WithDefaults()
	api, err := apiserver.New(cfg.API, log, apiserver.WithClock(opt.Clock))
	if err != nil {
		return nil, err
	}
	secret := []byte(cfg.SessionSecret)
	if len(secret) == 0 {
		// Dev bypass only (Check allows no secret then): nothing is signed
		// that must outlive the process.
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("generating a per-boot session key: %w", err)
		}
	}
	s := &Server{
		cfg: cfg, log: log, api: api, app: api.Handler(),
		signer: token.NewSigner(secret, opt.Clock),
		static: newStatic(opt.WebApp),
		getenv: opt.Getenv, clock: opt.Clock,
		readTimeout: opt.ReadTimeout,
	}
	s.signin = newSignin(s, opt.HTTPClient)
	s.live = newLiveHub(cfg.NATSURL, log, opt.Clock, opt.Live)
	s.handler = s.routes()
	return s, nil
}

// Handler is the public plane.
func (s *Server) Handler() http.Handler { return s.handler }

// routes is the public router: sign-in and /health open, the static shell
// open, everything else behind guard, all of it behind the security
// headers and, inside them, the cross-origin check. Routes are tried in order, the most
// specific first; a path that is not clean is redirected to its clean form
// as net/http's ServeMux did.
func (s *Server) routes() http.Handler {
	r := httpapi.NewRouter(httpapi.Config{Name: "gate-console", Log: s.log, Clock: s.clock, Clean: true})
	r.HandleHTTP(config.LoginPath, http.HandlerFunc(s.signin.login), http.MethodGet, http.MethodHead)
	r.HandleHTTP(config.CallbackPath, http.HandlerFunc(s.signin.callback), http.MethodGet, http.MethodHead)
	r.HandleHTTP(config.LogoutPath, http.HandlerFunc(s.logout), http.MethodPost)
	r.HandlePrefix("/api/auth/", http.HandlerFunc(noSignInRoute))
	r.HandleHTTP("/api/me", s.guard(http.HandlerFunc(s.me)), http.MethodGet, http.MethodHead)
	r.HandleHTTP("/api/live", s.guard(http.HandlerFunc(s.live.serve)), http.MethodGet, http.MethodHead)
	// s.app is read per request: a test wraps it after New. A request the
	// guard let through carries its identity to the application plane, so
	// the change history records who made a change.
	plane := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := identityFrom(r.Context()); ok {
			r = r.WithContext(apiserver.WithActor(r.Context(), id.Email))
		}
		s.app.ServeHTTP(w, r)
	})
	app := s.guard(plane)
	r.HandlePrefix("/api/", app)
	r.HandlePrefix("/v1/", app)
	r.HandleHTTP("/version", app)
	r.HandleHTTP("/metrics", app)
	r.HandleHTTP("/health", plane)
	r.HandlePrefix("/", s.static)
	// The security headers go on first, so the cross-site refusal, which
	// answers before any route runs, carries them like every other answer.
	return s.secure(s.crossOrigin(r))
}

// noSignInRoute answers a path under /api/auth/ that is no sign-in route.
func noSignInRoute(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteRefusal(w, httpapi.Refuse(http.StatusNotFound, wire.CodeRouteNotFound, "no sign-in route %s %s: sign in with GET %s, sign out with POST %s", r.Method, r.URL.Path, config.LoginPath, config.LogoutPath))
}

// me is GET /api/me.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	id, _ := identityFrom(r.Context())
	email := id.Email
	m := wire.Me{Actor: id.Actor, Email: &email, Role: s.role(id.Email), DevBypass: id.Actor == "dev"}
	if !id.Expires.IsZero() {
		ms := id.Expires.UnixMilli()
		m.ExpiresAt = &ms
	}
	httpapi.WriteJSON(w, http.StatusOK, m)
}

// logout is POST /api/auth/logout: the session cookie is cleared and the
// browser sent to /.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	s.clearSession(w)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// httpServer is the console's HTTP server: a read timeout against slow
// request senders, no write timeout (the live stream is long-lived and
// sets a deadline per write; other routes are bounded by their handlers).
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: min(10*time.Second, s.readTimeout),
		ReadTimeout:       s.readTimeout,
		IdleTimeout:       2 * s.readTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Start runs the background work until Stop or the end of ctx: the
// application plane's catalogue refresh and the live hub's NATS
// subscriptions.
func (s *Server) Start(ctx context.Context) error {
	return service.StartAll(ctx, s.api, s.live)
}

// Stop ends the background work and waits for every goroutine of it.
func (s *Server) Stop() { service.StopAll(s.api, s.live) }

// Boot is New plus what must answer before the console listens: the
// history database when one is configured (an unreachable one refuses the
// boot with one line naming PG_HOST or PG_URL).
func Boot(ctx context.Context, cfg config.Config, log *slog.Logger, opt Options) (*Server, error) {
	s, err := New(cfg, log, opt)
	if err != nil {
		return nil, err
	}
	db, err := history.Open(ctx, cfg.API.History, history.Options{Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.history = db
	if db != nil {
		// The mounted history routes (traces, flow, rollups, watch) read it.
		s.api.UseHistory(db)
		s.log.Info("history database open", "history", cfg.API.History.Describe(), "schema", db.Schema())
	}
	return s, nil
}

// Close releases what Boot opened, and stops the background work.
func (s *Server) Close() {
	s.Stop()
	if s.history != nil {
		s.history.Close()
	}
}

// Run serves the console on cfg.PublicBind until ctx ends.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	s, err := Boot(ctx, cfg, log, Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.PublicBind)
	if err != nil {
		return fmt.Errorf("GATE_PUBLIC_BIND=%s: %w", cfg.PublicBind, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened: the background work runs
// until the drain is over.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.cfg.DevEmail != "" {
		s.log.Warn("!!! SIGN-IN IS BYPASSED: GATE_DEV_EMAIL is set, every request to the console is "+s.cfg.DevEmail+" — for a local run only; unset it and configure GOOGLE_CLIENT_ID before anyone else can reach "+ln.Addr().String()+" !!!",
			"devEmail", s.cfg.DevEmail, "admin", s.admin(s.cfg.DevEmail))
	}
	if err := s.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	defer s.Stop()
	plane := &service.HTTP{
		Name:     "gate-console",
		Listener: ln,
		Server:   s.httpServer(),
		Drain:    s.cfg.API.ShutdownTimeout,
		Log:      s.log,
		Attrs:    []any{"publicURL", s.cfg.PublicURL, "queen", s.cfg.API.QueenURL, "signIn", s.cfg.SignIn(), "issuer", s.cfg.Issuer, "nats", s.cfg.NATSURL != ""},
		// The live streams end before the drain, which would otherwise
		// wait for every open stream.
		Stopping: s.live.Stop,
	}
	return plane.Serve(ctx)
}
