package miniqueen

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/service"
)

// DefaultVersion is the broker version /health reports unless WithVersion
// says otherwise.
const DefaultVersion = "1.0.5"

// Server is an in-memory Queen-compatible broker. The zero value is not
// usable; build one with New (then Start), Run or RunT. It has the start
// and stop of every long-running Gate piece (package libs/service): Start
// listens and serves until Stop or the end of Start's context; Stop
// answers parked long-polls at once, lets requests in flight finish, and
// returns when no goroutine of it is left. All methods are safe for
// concurrent use.
type Server struct {
	service.Base

	// mu guards every field below it. A call that touches a known set of
	// queues holds it shared, with those queues' own locks (lock.go);
	// every other call holds it alone and needs no other lock.
	mu        sync.RWMutex
	queues    map[string]*queue
	partByID  map[string]*partition
	leases    map[string][]*cursor
	kv        map[string]*kvSpace
	kvVersion int64
	kvSwept   time.Time
	kvExp     kvExpiry // when stored keys expire (kvexpiry.go)
	dlq       []deadLetter
	ids       idGen
	rnd       *rand.Rand
	anyNotify chan struct{}
	pushCall  atomic.Uint64
	frozen    bool
	fixed     time.Time     // the clock when frozen
	offset    time.Duration // added to the base clock when not frozen

	// Under mu held shared (lock.go): idx guards queues, partByID, leases
	// and anyNotify; kvMu guards kv, kvVersion, kvSwept and kvExp; dlqMu guards
	// dlq; rndMu guards rnd. idx, dlqMu and rndMu are leaves: nothing
	// else is locked while one of them is held.
	idx   sync.RWMutex
	kvMu  sync.Mutex
	dlqMu sync.Mutex
	rndMu sync.Mutex

	// base is the clock the server's time follows when not frozen, and
	// the one a parked long-poll's timeout waits on (WithClock; the wall
	// clock by default).
	base        clock.Clock
	addr        string
	version     string
	keepDone    bool
	defaultMode string
	logger      *slog.Logger

	faults atomic.Pointer[map[string]int]
	// hung are the routes SetHang holds (hang.go).
	hung   hangs
	parked atomic.Int32 // long-polls currently parked (tests use it to sync)
	// calls counts the requests served per route (calls.go).
	calls calls
	// kvOff, ridersOff, kvAbsent, depthAbsent and ackCount are the test
	// switches of switch.go.
	kvOff, ridersOff, kvAbsent, depthAbsent, ackCount atomic.Bool

	// bound is the address the current (or last) start listens on;
	// ending is closed when the current start's work ends, so parked
	// long-polls and hung requests answer.
	bound  atomic.Pointer[string]
	ending atomic.Pointer[<-chan struct{}]
}

// DefaultAddr is where a Server listens unless WithAddr says otherwise: a
// free loopback port.
const DefaultAddr = "127.0.0.1:0"

// Option configures a Server built by New.
type Option func(*Server)

// WithAddr sets the host:port Start listens on (default DefaultAddr; port 0
// picks a free one).
func WithAddr(addr string) Option { return func(s *Server) { s.addr = addr } }

// WithClock sets the clock the server's time follows (TTLs, leases,
// retention, dedup windows, ids) and parked long-polls time out on; the
// default is the wall clock. SetTime and FastForward work on top of it. A
// test that shares one clock.Virtual between the broker and the code under
// test moves both with one Advance.
func WithClock(c clock.Clock) Option { return func(s *Server) { s.base = clock.Or(c) } }

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

// New builds a Server that is not yet listening; call Start.
func New(opts ...Option) *Server {
	s := &Server{
		queues:      map[string]*queue{},
		partByID:    map[string]*partition{},
		leases:      map[string][]*cursor{},
		kv:          map[string]*kvSpace{},
		base:        clock.Real(),
		addr:        DefaultAddr,
		version:     DefaultVersion,
		defaultMode: "new",
		logger:      slog.New(slog.DiscardHandler),
	}
	seed := rand.Uint64()
	s.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s.ids.seq.Store(s.rnd.Uint64() >> 8)
	s.kvVersion = int64(s.rnd.Uint32())
	for _, o := range opts {
		o(s)
	}
	empty := map[string]int{}
	s.faults.Store(&empty)
	return s
}

// Run builds a Server with opts and starts it (on a free 127.0.0.1 port
// unless WithAddr says otherwise); Stop ends it.
func Run(opts ...Option) (*Server, error) {
	s := New(opts...)
	if err := s.Start(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// RunT starts a Server on a free loopback port, fails t if it cannot, and
// stops it when the test ends.
func RunT(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Run(opts...)
	if err != nil {
		t.Fatalf("miniqueen: starting the broker: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// shutdownGrace bounds how long Stop lets requests in flight finish before
// it closes their connections.
const shutdownGrace = 5 * time.Second

// Start listens on the configured address and serves until Stop or the
// end of ctx. A busy or malformed address is an error and nothing runs.
// Starting a running server does nothing; a stopped one starts again with
// its state (queues, kv, clock) intact.
func (s *Server) Start(ctx context.Context) error {
	ctx, ok := s.StartInit(ctx)
	if !ok {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return s.Fail(fmt.Errorf("miniqueen: listening on %s: %w; pick a free host:port (port 0 picks one)", s.addr, err))
	}
	addr := ln.Addr().String()
	ending := ctx.Done()
	s.bound.Store(&addr)
	s.ending.Store(&ending)
	srv := newLeanServer(s.Handler(), s.logger)
	s.Go(func() {
		if err := srv.serve(ln); err != nil {
			s.logger.Error("miniqueen: serve", "error", err)
		}
	})
	s.Go(func() {
		<-ctx.Done()
		// Parked long-polls have answered (they watch ending); requests in
		// flight get shutdownGrace to finish.
		srv.shutdown(ln, shutdownGrace)
	})
	s.logger.Info("miniqueen listening", "addr", addr, "url", s.URL())
	s.Ready()
	return nil
}

// stopping is closed when the current start's work ends (nil, never
// closed, before the first Start: a Handler mounted elsewhere).
func (s *Server) stopping() <-chan struct{} {
	if p := s.ending.Load(); p != nil {
		return *p
	}
	return nil
}

// Addr is the host:port the server listens on ("" before Start; the last
// one after Stop).
func (s *Server) Addr() string {
	if p := s.bound.Load(); p != nil {
		return *p
	}
	return ""
}

// URL is the base URL clients use, e.g. http://127.0.0.1:6632.
func (s *Server) URL() string {
	return "http://" + s.Addr()
}

// now is the injected clock. Callers hold s.mu or accept a racy read of
// the offset (guarded by mu: always call with mu held).
func (s *Server) now() time.Time {
	if s.frozen {
		return s.fixed
	}
	return s.base.Now().Add(s.offset)
}

// Now returns the server's current clock reading.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now()
}

// SetTime freezes the server clock at t: from now on time only moves with
// SetTime and FastForward. TTLs, lease expiry, retention, dedup windows and
// long-poll deadlines (the earlier of the timeout on the base clock and
// the deadline on this one) follow it. Parked long-polls re-check at once.
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

// RealTime returns the clock to its base clock (undoing SetTime and
// FastForward): the wall clock unless WithClock gave another.
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
