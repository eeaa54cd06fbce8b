// Package console is gate-console's server: the public plane. It mounts the
// application plane's handler package (gate-api/server) behind a session on
// every route, adds sign-in, GET /api/me, the live stream and the embedded
// web app, and refuses cross-site writes around the whole mux.
package console

import (
	"context"
	"crypto/rand"
	"errors"
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
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

// Options are what a test (or an embedding program) changes; the zero
// value is production: os.Getenv, time.Now, the embedded web app.
type Options struct {
	// Getenv reads GATE_ADMIN_EMAILS on every request (nil: os.Getenv).
	Getenv func(string) string
	// Now is the clock of sessions and sign-in state (nil: time.Now).
	Now func() time.Time
	// WebApp is the web app's files (nil: the embedded webapp.FS()).
	WebApp fs.FS
	// HTTPClient reaches the sign-in provider (nil: a client with a 10 s
	// timeout).
	HTTPClient *http.Client
	// Live tunes the live stream (zero: the defaults).
	Live LiveOptions
	// ReadTimeout is the HTTP server's request read timeout (0: 1 min);
	// the live stream clears it for itself.
	ReadTimeout time.Duration
}

// Server is one gate-console process. Build it with New; Start its
// background work; serve Handler.
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
	now    func() time.Time
	// history is the history database (nil when none is configured).
	history *history.DB

	handler     http.Handler
	readTimeout time.Duration
}

// New builds the console for cfg (which must pass cfg.Check). It does not
// touch the network.
func New(cfg config.Config, log *slog.Logger, opt Options) (*Server, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.WebApp == nil {
		opt.WebApp = webapp.FS()
	}
	if opt.HTTPClient == nil {
		opt.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	api, err := apiserver.New(cfg.API, log)
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
		signer: token.NewSigner(secret, opt.Now),
		static: newStatic(opt.WebApp),
		getenv: opt.Getenv, now: opt.Now,
	}
	if opt.ReadTimeout <= 0 {
		opt.ReadTimeout = time.Minute
	}
	s.readTimeout = opt.ReadTimeout
	s.signin = newSignin(s, opt.HTTPClient)
	s.live = newLiveHub(cfg.NATSURL, log, opt.Live)
	s.live.now = opt.Now
	s.handler = s.routes()
	return s, nil
}

// Handler is the public plane.
func (s *Server) Handler() http.Handler { return s.handler }

// routes is the public mux: sign-in and /health open, the static shell
// open, everything else behind guard, all of it behind the cross-origin
// check and the security headers.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+config.LoginPath, s.signin.login)
	mux.HandleFunc("GET "+config.CallbackPath, s.signin.callback)
	mux.HandleFunc("POST "+config.LogoutPath, s.logout)
	mux.HandleFunc("/api/auth/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no sign-in route "+r.Method+" "+r.URL.Path+": sign in with GET "+config.LoginPath+", sign out with POST "+config.LogoutPath, "")
	})
	mux.Handle("GET /api/me", s.guard(http.HandlerFunc(s.me)))
	mux.Handle("GET /api/live", s.guard(http.HandlerFunc(s.live.serve)))
	app := s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.app.ServeHTTP(w, r) }))
	mux.Handle("/api/", app)
	mux.Handle("/v1/", app)
	mux.Handle("/version", app)
	mux.Handle("/metrics", app)
	mux.Handle("/health", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.app.ServeHTTP(w, r) }))
	mux.Handle("/", s.static)
	return s.crossOrigin(s.secure(mux))
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
	writeJSON(w, http.StatusOK, m)
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

// Start runs the background work until ctx ends: the application plane's
// catalogue refresh and the live hub's NATS subscriptions.
func (s *Server) Start(ctx context.Context) {
	s.api.Start(ctx)
	s.live.start(ctx)
}

// Boot is New plus what must answer before the console listens: the
// history database when one is configured (an unreachable one refuses the
// boot with one line naming PG_HOST or PG_URL).
func Boot(ctx context.Context, cfg config.Config, log *slog.Logger, opt Options) (*Server, error) {
	s, err := New(cfg, log, opt)
	if err != nil {
		return nil, err
	}
	db, err := history.Open(ctx, cfg.History, history.Options{Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.history = db
	if db != nil {
		s.log.Info("history database open", "where", cfg.History.Describe(), "schema", db.Schema())
	}
	return s, nil
}

// Close releases what Boot opened.
func (s *Server) Close() {
	if s.history != nil {
		s.history.Close()
	}
	s.live.close()
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

// Serve is Run on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	if s.cfg.DevEmail != "" {
		s.log.Warn("!!! SIGN-IN IS BYPASSED: GATE_DEV_EMAIL is set, every request to the console is "+s.cfg.DevEmail+" — for a local run only; unset it and configure GOOGLE_CLIENT_ID before anyone else can reach "+ln.Addr().String()+" !!!",
			"GATE_DEV_EMAIL", s.cfg.DevEmail, "admin", s.admin(s.cfg.DevEmail))
	}
	s.Start(bg)
	srv := s.httpServer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("gate-console serving", "bind", ln.Addr().String(), "publicURL", s.cfg.PublicURL, "queen", s.cfg.API.QueenURL, "signIn", s.cfg.SignIn(), "issuer", s.cfg.Issuer, "nats", s.cfg.NATSURL != "")
	select {
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.log.Info("gate-console shutting down", "timeout", s.cfg.API.ShutdownTimeout.String())
	s.live.close()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.API.ShutdownTimeout)
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
