package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/queen-mq/gate/libs/service"
)

// Defaults of the launcher.
const (
	// DefaultQueenURL is where a broker is looked for when QueenURL and
	// $QUEEN_URL are empty.
	DefaultQueenURL = "http://127.0.0.1:6632"
	// DefaultNATSURL is the local NATS server used when it answers.
	DefaultNATSURL = "nats://127.0.0.1:4222"
	// DefaultReconcileSeconds is the GATE_RECONCILE_SECONDS given to the
	// children: short, so a declare reaches every relay quickly.
	DefaultReconcileSeconds = 2
	// DefaultHealthTimeout bounds the wait for one child's /health.
	DefaultHealthTimeout = 60 * time.Second
	// DefaultConsoleEmail is the dev identity of a launched gate-console.
	DefaultConsoleEmail = "dev@localhost"
)

// Config says what to start. The zero value starts everything on free
// loopback ports, reusing a broker at $QUEEN_URL (or DefaultQueenURL) and a
// NATS server at DefaultNATSURL when they answer.
type Config struct {
	// Root is the repository root holding go.work; "" finds it upwards from
	// the working directory.
	Root string
	// QueenURL is the broker to use if its /health answers; "" means
	// $QUEEN_URL, else DefaultQueenURL.
	QueenURL string
	// QueenAddr is where miniqueen listens when it has to be started; ""
	// means the host:port of an explicitly configured QueenURL, else a free
	// loopback port.
	QueenAddr string
	// NoReuse starts miniqueen even when a broker already answers (a bench
	// that must not share a broker with anything else).
	NoReuse bool
	// GateBind is gate-api's GATE_BIND; "" picks a free loopback port.
	GateBind string
	// RelayBind is the first relay's GATE_RELAY_BIND; "" picks a free
	// loopback port. Extra relays always get free ports.
	RelayBind string
	// NATSURL is GATE_NATS_URL; "" means $GATE_NATS_URL, else
	// DefaultNATSURL if it answers, else an embedded nats-server.
	NATSURL string
	// ReconcileSeconds is GATE_RECONCILE_SECONDS for the children (0 =
	// DefaultReconcileSeconds).
	ReconcileSeconds int
	// Relays is how many gate-relay replicas Start runs (0 = 1; negative =
	// none, for a caller that starts its own with StartRelay).
	Relays int
	// RelayCmd, when set, starts each relay with `sh -c RelayCmd` instead of
	// the built gate-relay (GATE_E2E_RELAY_CMD); it receives the same
	// environment.
	RelayCmd string
	// ConsoleBind, when set, also starts gate-console there with the dev
	// sign-in bypass (GATE_DEV_EMAIL=ConsoleEmail, also its only admin) on
	// an http loopback URL: a local run only.
	ConsoleBind string
	// ConsoleEmail is the dev identity ("" = DefaultConsoleEmail).
	ConsoleEmail string
	// Env is added to every child's environment (after the stack's own).
	Env []string
	// BinDir holds the built binaries; "" means Root/.gate-run/bin.
	BinDir string
	// LogDir receives one log file per child; "" means Root/.gate-run/logs.
	LogDir string
	// HealthTimeout bounds each child's health wait (0 =
	// DefaultHealthTimeout).
	HealthTimeout time.Duration
	// Logger receives the launcher's progress; nil discards it.
	Logger *slog.Logger
	// NoHistory runs without PostgreSQL history even when one answers.
	NoHistory bool
}

// Stack is a local stack: the service (package libs/service) whose work is
// its children. Start starts them and waits for their health; Stop (or
// the end of Start's context) stops them in order: gate-console, then the
// relays and gate-recorder, then gate-api, miniqueen and the embedded NATS
// server. Its methods are safe for concurrent use.
type Stack struct {
	service.Base

	cfg      Config
	log      *slog.Logger
	bins     map[string]string
	queenURL string
	gateURL  string
	natsURL  string
	// consoleURL is gate-console's URL ("" when not started).
	consoleURL string
	started    []string

	mu      sync.Mutex
	queen   *Process
	api     *Process
	console *Process
	relays  []*Process
	// children is what the children run under: it ends only when the
	// stack stops them, in order, never all at once.
	children context.Context
	nats     *server.Server
	natsDir  string
	relaySeq int
	stopped  bool
	// history is the PG_ environment of the children ("" entries: none)
	// and recorder the gate-recorder process, when history is on.
	history  []string
	recorder *Process
	// HistoryNote says whether the stack runs with history, for people.
	historyNote string
}

// Start is New and then Start: a stack for cfg, started, or the error
// (with everything it had started stopped).
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// New checks cfg (finding the repository root, creating the log
// directory) and returns a Stack ready to Start.
func New(cfg Config) (*Stack, error) { return prepare(cfg) }

// Start builds what it needs, starts the stack and waits for every child's
// /health; the stack then runs until Stop or the end of ctx. On error
// everything already started is stopped. Starting a running stack does
// nothing; a stopped one does not start again (build another with New).
func (s *Stack) Start(ctx context.Context) error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return errors.New("the stack is stopped; build a new one with New to start again")
	}
	ctx, ok := s.StartInit(ctx)
	if !ok {
		return nil
	}
	s.mu.Lock()
	s.children = context.WithoutCancel(ctx)
	s.mu.Unlock()
	s.Go(func() {
		<-ctx.Done()
		s.stopChildren()
	})
	if err := s.start(ctx); err != nil {
		return s.Fail(err)
	}
	s.Ready()
	return nil
}

// Attach wraps a stack somebody else runs (gate-api at gateURL, the broker
// at cfg.QueenURL or $QUEEN_URL): nothing is started (do not call Start),
// but StartRelay can add relays that Stop will end.
func Attach(cfg Config, gateURL string) (*Stack, error) {
	s, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	s.gateURL = strings.TrimRight(gateURL, "/")
	s.queenURL = s.configuredQueen()
	s.natsURL = s.cfg.NATSURL
	if s.natsURL == "" {
		s.natsURL = os.Getenv("GATE_NATS_URL")
	}
	if s.natsURL == "" {
		s.natsURL = DefaultNATSURL
	}
	return s, nil
}

// WithDefaults returns c with its zero fields filled: the binaries and
// logs under Root's .gate-run (when Root is set), DefaultReconcileSeconds,
// one relay, DefaultHealthTimeout and a logger that discards. A negative
// reconcile period or health timeout counts as zero; negative Relays (none)
// is kept.
func (c Config) WithDefaults() Config {
	if c.Root != "" {
		c.BinDir = cmp.Or(c.BinDir, filepath.Join(c.Root, ".gate-run", "bin"))
		c.LogDir = cmp.Or(c.LogDir, filepath.Join(c.Root, ".gate-run", "logs"))
	}
	c.ReconcileSeconds = cmp.Or(max(c.ReconcileSeconds, 0), DefaultReconcileSeconds)
	c.Relays = cmp.Or(c.Relays, 1)
	c.HealthTimeout = cmp.Or(max(c.HealthTimeout, 0), DefaultHealthTimeout)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

func prepare(cfg Config) (*Stack, error) {
	if cfg.Root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if cfg.Root, err = FindRoot(wd); err != nil {
			return nil, err
		}
	}
	cfg = cfg.WithDefaults()
	log := cfg.Logger
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating log dir: %w", err)
	}
	return &Stack{cfg: cfg, log: log}, nil
}

func (s *Stack) configuredQueen() string {
	u := s.cfg.QueenURL
	if u == "" {
		u = os.Getenv("QUEEN_URL")
	}
	if u == "" {
		u = DefaultQueenURL
	}
	return strings.TrimRight(u, "/")
}

func (s *Stack) start(ctx context.Context) error {
	names := []string{"gate-api"}
	if s.cfg.ConsoleBind != "" {
		names = append(names, "gate-console")
	}
	if s.cfg.RelayCmd == "" {
		names = append(names, "gate-relay")
	}
	s.history, s.historyNote = decideHistory(ctx, s.cfg.NoHistory)
	if s.history != nil {
		names = append(names, "gate-recorder")
	}
	s.log.Info(s.historyNote)
	// Decide on the broker first: building miniqueen is only needed when
	// nothing answers.
	wantQueen := s.configuredQueen()
	hc := &http.Client{Timeout: time.Second}
	reuse := !s.cfg.NoReuse && probeHealth(ctx, hc, wantQueen) == nil
	if !reuse {
		names = append(names, "miniqueen")
	}
	s.log.Info("building", "binaries", names, "into", s.cfg.BinDir)
	t0 := time.Now()
	bins, err := Build(ctx, s.cfg.Root, s.cfg.BinDir, names...)
	if err != nil {
		return err
	}
	s.bins = bins
	s.log.Info("built", "seconds", time.Since(t0).Seconds())

	if reuse {
		s.queenURL = wantQueen
		s.log.Info("using the broker that answers", "url", wantQueen)
	} else if err := s.startQueen(ctx); err != nil {
		return err
	}
	if err := s.startNATS(ctx); err != nil {
		return err
	}
	gateBind := s.cfg.GateBind
	if gateBind == "" {
		if gateBind, err = FreeAddr(); err != nil {
			return err
		}
	}
	s.gateURL = "http://" + dialable(gateBind)
	api := s.newProcess("gate-api", []string{bins["gate-api"]}, s.gateURL, []string{"GATE_BIND=" + gateBind})
	if err := s.launch(ctx, api, func(p *Process) { s.api = p }, "gate-api at "+s.gateURL, slog.LevelInfo, "gate-api healthy"); err != nil {
		return err
	}
	if s.history != nil {
		if err := s.startRecorder(ctx); err != nil {
			return err
		}
	}
	if s.cfg.ConsoleBind != "" {
		if err := s.startConsole(ctx); err != nil {
			return err
		}
	}
	for i := 0; i < s.cfg.Relays; i++ {
		bind := ""
		if i == 0 {
			bind = s.cfg.RelayBind
		}
		if _, err := s.startRelay(ctx, bind, nil); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stack) startQueen(ctx context.Context) error {
	addr := s.cfg.QueenAddr
	if addr == "" {
		if u := firstNonEmpty(s.cfg.QueenURL, os.Getenv("QUEEN_URL")); u != "" {
			if pu, err := url.Parse(u); err == nil && pu.Host != "" && portFree(pu.Host) {
				addr = pu.Host
			}
		}
	}
	if addr == "" {
		var err error
		if addr, err = FreeAddr(); err != nil {
			return err
		}
	}
	s.queenURL = "http://" + dialable(addr)
	p := s.newProcess("miniqueen", []string{s.bins["miniqueen"], "--addr", addr, "--default-subscription-mode", "new"}, s.queenURL, nil)
	return s.launch(ctx, p, func(p *Process) { s.queen = p }, "miniqueen at "+s.queenURL, slog.LevelInfo, "miniqueen healthy")
}

func (s *Stack) startNATS(ctx context.Context) error {
	u := firstNonEmpty(s.cfg.NATSURL, os.Getenv("GATE_NATS_URL"))
	if u != "" {
		s.natsURL = u
		return nil
	}
	if natsAnswers(DefaultNATSURL) {
		s.natsURL = DefaultNATSURL
		s.log.Info("using the local NATS server", "url", s.natsURL)
		return nil
	}
	dir, err := os.MkdirTemp("", "gate-run-nats-")
	if err != nil {
		return err
	}
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: dir, NoSigs: true, NoLog: true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("configuring embedded nats-server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		os.RemoveAll(dir)
		return errors.New("embedded nats-server not ready within 10s")
	}
	s.mu.Lock()
	s.nats, s.natsDir = ns, dir
	s.mu.Unlock()
	s.natsURL = ns.ClientURL()
	s.started = append(s.started, "embedded nats-server at "+s.natsURL)
	s.log.Info("embedded nats-server running", "url", s.natsURL)
	return nil
}

// startConsole starts gate-console on ConsoleBind with the dev bypass on a
// loopback http URL (gate-console itself refuses the bypass on https).
func (s *Stack) startConsole(ctx context.Context) error {
	email := s.cfg.ConsoleEmail
	if email == "" {
		email = DefaultConsoleEmail
	}
	s.consoleURL = "http://" + dialable(s.cfg.ConsoleBind)
	p := s.newProcess("gate-console", []string{s.bins["gate-console"]}, s.consoleURL, []string{
		"GATE_PUBLIC_BIND=" + s.cfg.ConsoleBind, "GATE_PUBLIC_URL=" + s.consoleURL,
		"GATE_DEV_EMAIL=" + email, "GATE_ADMIN_EMAILS=" + email,
	})
	return s.launch(ctx, p, func(p *Process) { s.console = p }, "gate-console at "+s.consoleURL+" (sign-in bypassed as "+email+")",
		slog.LevelWarn, "gate-console healthy with the dev sign-in bypass", "email", email)
}

// ConsoleURL is gate-console's URL ("" when the stack did not start one).
func (s *Stack) ConsoleURL() string { return s.consoleURL }

// Console is gate-console's process (nil when the stack did not start one).
func (s *Stack) Console() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.console
}

// childEnv is the environment every Gate child gets.
func (s *Stack) childEnv(extra []string) []string {
	env := append([]string{}, os.Environ()...)
	env = append(env,
		"QUEEN_URL="+s.queenURL,
		"GATE_NATS_URL="+s.natsURL,
		"GATE_RECONCILE_SECONDS="+strconv.Itoa(s.cfg.ReconcileSeconds),
	)
	env = append(env, s.history...)
	env = append(env, s.cfg.Env...)
	return append(env, extra...)
}

// Grace periods between a child's SIGTERM and its SIGKILL: the data plane
// (relays, gate-recorder) drains claims and flushes; the rest stop at once.
const (
	drainGrace = 10 * time.Second
	shortGrace = 5 * time.Second
)

// newProcess is a child of the stack with a short grace period (the data
// plane's children set drainGrace).
func (s *Stack) newProcess(name string, argv []string, healthURL string, extraEnv []string) *Process {
	return &Process{
		Name:      name,
		HealthURL: healthURL,
		LogPath:   filepath.Join(s.cfg.LogDir, name+".log"),
		Grace:     shortGrace,
		argv:      argv,
		env:       s.childEnv(extraEnv),
		dir:       s.cfg.Root,
	}
}

// childContext is what a child runs under: the started stack's, which
// only its ordered stop ends; a stack that was never started (Attach)
// stops its children itself.
func (s *Stack) childContext() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.children == nil {
		return context.Background()
	}
	return s.children
}

// launch is how the stack starts each child: record keeps p where Stop
// finds it (called under s.mu, before the start, so a child whose start or
// health wait fails is still stopped), then p starts and its /health is
// awaited for HealthTimeout (within ctx). Once healthy, started (unless
// "") joins Started and msg is logged at level with the child's url, pid
// and attrs.
func (s *Stack) launch(ctx context.Context, p *Process, record func(*Process), started string, level slog.Level, msg string, attrs ...any) error {
	s.mu.Lock()
	record(p)
	s.mu.Unlock()
	if err := p.Start(s.childContext()); err != nil {
		return err
	}
	if err := p.waitHealthy(ctx, s.cfg.HealthTimeout); err != nil {
		return err
	}
	if started != "" {
		s.mu.Lock()
		s.started = append(s.started, started)
		s.mu.Unlock()
	}
	s.log.Log(ctx, level, msg, append([]any{"url", p.HealthURL, "pid", p.Pid()}, attrs...)...)
	return nil
}

// StartRelay starts one more gate-relay replica on a free port and waits for
// its /health. env is added to its environment last, so it overrides the
// stack's (e.g. a QUEEN_URL pointing at a counting proxy).
func (s *Stack) StartRelay(ctx context.Context, env ...string) (*Process, error) {
	if s.bins == nil || (s.cfg.RelayCmd == "" && s.bins["gate-relay"] == "") {
		if s.cfg.RelayCmd == "" {
			bins, err := Build(ctx, s.cfg.Root, s.cfg.BinDir, "gate-relay")
			if err != nil {
				return nil, err
			}
			s.mu.Lock()
			if s.bins == nil {
				s.bins = map[string]string{}
			}
			s.bins["gate-relay"] = bins["gate-relay"]
			s.mu.Unlock()
		}
	}
	return s.startRelay(ctx, "", env)
}

func (s *Stack) startRelay(ctx context.Context, bind string, env []string) (*Process, error) {
	var err error
	if bind == "" {
		if bind, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, errors.New("the stack is stopped")
	}
	s.relaySeq++
	name := "gate-relay-" + strconv.Itoa(s.relaySeq)
	s.mu.Unlock()
	argv := []string{s.bins["gate-relay"]}
	if s.cfg.RelayCmd != "" {
		argv = []string{"sh", "-c", s.cfg.RelayCmd}
	}
	p := s.newProcess(name, argv, "http://"+dialable(bind), append([]string{"GATE_RELAY_BIND=" + bind}, env...))
	p.Grace = drainGrace
	// Relays are listed by Relays, not Started.
	if err := s.launch(ctx, p, func(p *Process) { s.relays = append(s.relays, p) }, "", slog.LevelInfo, "relay healthy", "name", name); err != nil {
		return nil, err
	}
	return p, nil
}

// KillRelay ends relay i (0-based, in start order) with SIGKILL: no graceful
// shutdown, its claims come back when their leases lapse.
func (s *Stack) KillRelay(i int) error {
	p, err := s.relay(i)
	if err != nil {
		return err
	}
	p.Kill()
	return nil
}

// RestartRelay starts relay i again (after a kill or stop) on its old port
// and waits for its /health.
func (s *Stack) RestartRelay(ctx context.Context, i int) error {
	p, err := s.relay(i)
	if err != nil {
		return err
	}
	if p.Running() {
		p.Stop()
	}
	if err := p.Start(s.childContext()); err != nil {
		return err
	}
	return p.waitHealthy(ctx, s.cfg.HealthTimeout)
}

func (s *Stack) relay(i int) (*Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.relays) {
		return nil, fmt.Errorf("relay %d: the stack runs %d relays (0-based index)", i, len(s.relays))
	}
	return s.relays[i], nil
}

// Relays returns the relays the stack started, in start order.
func (s *Stack) Relays() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.relays...)
}

// QueenURL is the broker's base URL.
func (s *Stack) QueenURL() string { return s.queenURL }

// Queen is the miniqueen process the stack started, or nil when it uses a
// broker of its own (QUEEN_URL).
func (s *Stack) Queen() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queen
}

// GateURL is gate-api's base URL.
func (s *Stack) GateURL() string { return s.gateURL }

// API is the gate-api process the stack started.
func (s *Stack) API() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api
}

// NATSURL is the NATS server the children use.
func (s *Stack) NATSURL() string { return s.natsURL }

// Started describes what this stack started (miniqueen, embedded NATS,
// gate-api), one line each; relays are listed by Relays.
func (s *Stack) Started() []string { return append([]string(nil), s.started...) }

// Stop ends everything the stack started: gate-console, then the relays
// and gate-recorder (SIGTERM, then SIGKILL after 10 s), then gate-api,
// miniqueen and the embedded NATS server, and returns when they are gone.
// It is idempotent, and ends what a stack that was never started (Attach)
// launched too.
func (s *Stack) Stop() {
	s.Base.Stop()
	s.stopChildren()
}

// stopChildren stops the children in order, once.
func (s *Stack) stopChildren() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	relays := append([]*Process(nil), s.relays...)
	api, console, queen, ns, dir, rec := s.api, s.console, s.queen, s.nats, s.natsDir, s.recorder
	s.mu.Unlock()
	if console != nil {
		console.Stop()
	}
	var wg sync.WaitGroup
	if rec != nil {
		wg.Go(rec.Stop)
	}
	for _, p := range relays {
		wg.Go(p.Stop)
	}
	wg.Wait()
	if api != nil {
		api.Stop()
	}
	if queen != nil {
		queen.Stop()
	}
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		os.RemoveAll(dir)
	}
}

// FreeAddr returns a loopback host:port nobody listens on right now (the
// port is free when it answers; another process may take it before the
// caller listens).
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// portFree reports whether host:port can be listened on.
func portFree(hostport string) bool {
	l, err := net.Listen("tcp", hostport)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// dialable turns a bind address into one a client can dial (0.0.0.0 and
// an empty host become 127.0.0.1).
func dialable(bind string) string {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return bind
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// natsAnswers reports whether a TCP connection to the NATS URL's host opens.
func natsAnswers(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	c, err := net.DialTimeout("tcp", pu.Host, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
