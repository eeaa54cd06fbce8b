package miniqueen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DefaultVersion is the broker version /health reports unless WithVersion
// says otherwise.
const DefaultVersion = "1.0.5"

// Server is an in-memory Queen-compatible broker. The zero value is not
// usable; build one with NewServer, Run, RunAddr or RunT. All methods are
// safe for concurrent use.
type Server struct {
	// mu guards every field below it: one coarse lock, the only lock the
	// broker state has (faults is an atomic copy-on-write map).
	mu        sync.Mutex
	queues    map[string]*queue
	partByID  map[string]*partition
	leases    map[string][]*cursor
	kv        map[string]map[string]*kvEntry
	kvVersion int64
	kvSwept   time.Time
	dlq       []deadLetter
	ids       idGen
	rnd       *rand.Rand
	scratch   []*partition
	anyNotify chan struct{}
	pushCall  uint64
	j         *journal // non-nil while a transaction or KV batch may still roll back
	frozen    bool
	fixed     time.Time     // the clock when frozen
	offset    time.Duration // added to the real clock when not frozen

	version     string
	keepDone    bool
	defaultMode string
	logger      *slog.Logger

	faults atomic.Pointer[map[string]int]
	// hung are the routes SetHang holds (hang.go).
	hung   hangs
	parked atomic.Int32 // long-polls currently parked (tests use it to sync)
	// kvOff and ridersOff are the test switches of switch.go.
	kvOff, ridersOff atomic.Bool

	httpSrv  *http.Server
	listener net.Listener
	done     chan struct{}
	served   chan struct{}
	closing  sync.Once
	started  atomic.Bool
}

// Option configures a Server built by NewServer.
type Option func(*Server)

// WithVersion sets the version string /health reports (default "1.0.5").
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// WithDefaultSubscriptionMode sets the subscription mode a new consumer group
// gets when its first pop sends none: "new" (the newest broker's default and
// this server's default) or "all".
func WithDefaultSubscriptionMode(mode string) Option {
	return func(s *Server) { s.defaultMode = normMode(mode) }
}

// WithRetainCompleted keeps completed messages while retention is disabled,
// as the real broker does (memory then grows with every message pushed). By
// default a message is reclaimed once every consumer group registered on its
// queue has passed it, so a group that registers later, or a group deleted
// and re-created with mode "all", does not see it.
func WithRetainCompleted() Option { return func(s *Server) { s.keepDone = true } }

// WithLogger sets the logger for lifecycle messages (default: discard).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.logger = l } }

// WithSeed seeds the random source that orders wildcard pops.
func WithSeed(seed int64) Option { return func(s *Server) { s.Seed(seed) } }

// NewServer builds a Server that is not yet listening; call Start.
func NewServer(opts ...Option) *Server {
	s := &Server{
		queues:      map[string]*queue{},
		partByID:    map[string]*partition{},
		leases:      map[string][]*cursor{},
		kv:          map[string]map[string]*kvEntry{},
		version:     DefaultVersion,
		defaultMode: "new",
		logger:      slog.New(slog.DiscardHandler),
		done:        make(chan struct{}),
		served:      make(chan struct{}),
	}
	seed := time.Now().UnixNano()
	s.rnd = rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	s.ids.seq = s.rnd.Uint64() >> 8
	s.kvVersion = int64(s.rnd.Uint32())
	for _, o := range opts {
		o(s)
	}
	empty := map[string]int{}
	s.faults.Store(&empty)
	return s
}

// Run starts a Server on a free 127.0.0.1 port.
func Run(opts ...Option) (*Server, error) {
	return RunAddr("127.0.0.1:0", opts...)
}

// RunAddr starts a Server listening on addr ("host:port"; port 0 picks a
// free one).
func RunAddr(addr string, opts ...Option) (*Server, error) {
	s := NewServer(opts...)
	if err := s.Start(addr); err != nil {
		return nil, err
	}
	return s, nil
}

// RunT starts a Server on a free loopback port, fails t if it cannot, and
// closes it when the test ends.
func RunT(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Run(opts...)
	if err != nil {
		t.Fatalf("miniqueen: starting the broker: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start listens on addr and serves in the background until Close.
func (s *Server) Start(addr string) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("miniqueen: server already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("miniqueen: listening on %s: %w", addr, err)
	}
	s.listener = ln
	s.httpSrv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(s.served)
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("miniqueen: serve", "err", err)
		}
	}()
	s.logger.Info("miniqueen listening", "addr", ln.Addr().String(), "url", s.URL())
	return nil
}

// Addr is the host:port the server listens on ("" before Start).
func (s *Server) Addr() string {
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// URL is the base URL clients use, e.g. http://127.0.0.1:6632.
func (s *Server) URL() string {
	return "http://" + s.Addr()
}

// Close shuts the server down: parked long-polls answer at once, in-flight
// requests finish, and no goroutine is left behind. Close is idempotent.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.done)
		if s.httpSrv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			_ = s.httpSrv.Close()
		}
		<-s.served
	})
}

// Done is closed when Close starts.
func (s *Server) Done() <-chan struct{} { return s.done }

// now is the injected clock. Callers hold s.mu or accept a racy read of
// the offset (guarded by mu: always call with mu held).
func (s *Server) now() time.Time {
	if s.frozen {
		return s.fixed
	}
	return time.Now().Add(s.offset)
}

// Now returns the server's current clock reading.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now()
}

// SetTime freezes the server clock at t: from now on time only moves with
// SetTime and FastForward. TTLs, lease expiry, retention, dedup windows and
// long-poll deadlines (the earlier of the real timeout and the clock
// deadline) follow it. Parked long-polls re-check at once.
func (s *Server) SetTime(t time.Time) {
	s.mu.Lock()
	s.frozen = true
	s.fixed = t
	s.wakeAll()
	s.mu.Unlock()
}

// FastForward moves the server clock forward by d (frozen or not) and lets
// parked long-polls re-check at once.
func (s *Server) FastForward(d time.Duration) {
	s.mu.Lock()
	if s.frozen {
		s.fixed = s.fixed.Add(d)
	} else {
		s.offset += d
	}
	s.wakeAll()
	s.mu.Unlock()
}

// RealTime returns the clock to the real time (undoing SetTime and
// FastForward).
func (s *Server) RealTime() {
	s.mu.Lock()
	s.frozen = false
	s.offset = 0
	s.wakeAll()
	s.mu.Unlock()
}

func (s *Server) wakeAll() {
	if s.anyNotify != nil {
		close(s.anyNotify)
		s.anyNotify = nil
	}
	for _, q := range s.queues {
		if q.notify != nil {
			close(q.notify)
			q.notify = nil
		}
	}
}

// Seed reseeds the random source that orders the partitions a wildcard pop
// tries, so a test can reproduce an order.
func (s *Server) Seed(seed int64) {
	s.mu.Lock()
	s.rnd = rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	s.mu.Unlock()
}

// Route names accepted by SetError and ClearError.
const (
	RouteHealth         = "health"          // GET /health, /status, /metrics
	RouteConfigure      = "configure"       // POST /api/v1/configure
	RoutePush           = "push"            // POST /api/v1/push
	RoutePop            = "pop"             // GET /api/v1/pop…
	RouteAck            = "ack"             // POST /api/v1/ack, /api/v1/ack/batch
	RouteLease          = "lease"           // POST /api/v1/lease/:id/extend
	RouteTransaction    = "transaction"     // POST /api/v1/transaction
	RouteKV             = "kv"              // POST /api/v1/kv and GET/PUT/DELETE /api/v1/kv/:ns/*key
	RouteQueues         = "queues"          // /api/v1/resources/queues… except depth
	RouteDepth          = "depth"           // GET /api/v1/resources/queues/:q/depth
	RouteConsumerGroups = "consumer-groups" // /api/v1/consumer-groups…
	RouteDLQ            = "dlq"             // GET /api/v1/dlq
)

// SetError makes every request to route answer status with a JSON error
// body until ClearError (429 and 503 also carry Retry-After: 1). Route is
// one of the Route* names.
func (s *Server) SetError(route string, status int) {
	for {
		old := s.faults.Load()
		m := make(map[string]int, len(*old)+1)
		for k, v := range *old {
			m[k] = v
		}
		m[route] = status
		if s.faults.CompareAndSwap(old, &m) {
			return
		}
	}
}

// ClearError removes a fault set by SetError.
func (s *Server) ClearError(route string) {
	for {
		old := s.faults.Load()
		m := make(map[string]int, len(*old))
		for k, v := range *old {
			if k != route {
				m[k] = v
			}
		}
		if s.faults.CompareAndSwap(old, &m) {
			return
		}
	}
}
