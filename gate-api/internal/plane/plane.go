package plane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Plane is the state gate-api's route families share. Build it with New;
// it is safe for concurrent use.
type Plane struct {
	// Cfg is gate-api's configuration.
	Cfg config.Config
	// Log is the process's logger.
	Log *slog.Logger
	// Clock is every family's time: the wall clock outside tests.
	Clock clock.Clock
	// Client is the broker client (every call bounded by
	// GATE_BROKER_TIMEOUT_MS).
	Client *queen.Client
	// Store is the declarations, relay status and breaker records in kv.
	Store *store.Store
	// Cat is the cached picture of what is declared and what runs.
	Cat *Catalog
	// Registry is the Prometheus registry GET /metrics serves; each family
	// registers its own series on it.
	Registry *prometheus.Registry

	// hist is the PostgreSQL history; nil without PG_HOST.
	hist   atomic.Pointer[history.DB]
	health healthProbe
	depth  depthCache
	caps   capabilities
	// owner names this process's capability probe runs (their scratch
	// partition and keys).
	owner string
	// signer verifies the stamps' charge records (StampSigner).
	signer atomic.Pointer[cost.Signer]
}

// StampSigner is the fleet's stamp signer: the key in kv, read (or
// created) on first use and kept.
func (p *Plane) StampSigner(ctx context.Context) (*cost.Signer, error) {
	if sg := p.signer.Load(); sg != nil {
		return sg, nil
	}
	sg, err := p.Store.StampSigner(ctx)
	if err != nil {
		return nil, err
	}
	p.signer.Store(sg)
	return sg, nil
}

// Options are what New takes besides the configuration. The zero value is
// production.
type Options struct {
	// Log is the logger; nil means slog.Default().
	Log *slog.Logger
	// Clock is the families' clock; nil means the wall clock.
	Clock clock.Clock
}

// WithDefaults fills the zero fields that have a default.
func (o Options) WithDefaults() Options {
	o.Log = cmp.Or(o.Log, slog.Default())
	o.Clock = clock.Or(o.Clock)
	return o
}

// New builds the plane for cfg (which must pass cfg.Validate). It does not
// touch the network.
func New(cfg config.Config, opt Options) (*Plane, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opt = opt.WithDefaults()
	var qopts []queen.Option
	if cfg.BrokerTimeout > 0 {
		qopts = append(qopts, queen.WithCallTimeout(cfg.BrokerTimeout))
	}
	c, err := queen.New(cfg.QueenURL, qopts...)
	if err != nil {
		return nil, fmt.Errorf("QUEEN_URL: %w", err)
	}
	st := store.New(c, cfg.KVNamespace)
	host, _ := os.Hostname()
	return &Plane{
		owner: fmt.Sprintf("api-%s-%d", host, os.Getpid()),
		Cfg:   cfg, Log: opt.Log, Clock: opt.Clock, Client: c, Store: st,
		Cat:      NewCatalog(CatalogConfig{Store: st, Options: cfg.PlanOptions(), Log: opt.Log, Clock: opt.Clock, Refresh: cfg.Refresh}),
		Registry: prometheus.NewRegistry(),
	}, nil
}

// Limiter is the counter protocol on the plane's broker and namespace.
func (p *Plane) Limiter() *budget.Limiter {
	return &budget.Limiter{KV: p.Client, NS: p.Cfg.KVNamespace}
}

// UseHistory gives the plane its PostgreSQL history (nil: none).
func (p *Plane) UseHistory(db *history.DB) { p.hist.Store(db) }

// History is the history database, nil without PG_HOST.
func (p *Plane) History() *history.DB { return p.hist.Load() }

// HistoryReadTimeout bounds one history read of a request. It runs on the
// request's own context, never under the broker deadline: a PostgreSQL
// that does not answer is not the broker.
const HistoryReadTimeout = 8 * time.Second

// HistoryContext is the context of a request's history reads: the
// request's context without the broker deadline (q.Outer), bounded by
// HistoryReadTimeout.
func (p *Plane) HistoryContext(q *httpapi.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(q.Outer, HistoryReadTimeout)
}

// HistoryName names the history database for a message: PostgreSQL and
// the knobs that point at it (without the password).
func (p *Plane) HistoryName() string {
	if h := p.Cfg.History; h.Enabled() {
		return "PostgreSQL (the history database, " + h.Describe() + ")"
	}
	return "PostgreSQL (the history database, PG_HOST or PG_URL)"
}

// HistoryRefusal is the answer to a failed history read made under ctx
// (HistoryContext): 504 history-timeout naming PostgreSQL and its knob
// when it did not answer in time, else 502 history-failed naming it.
// Either way the broker deadline does not relabel it as the broker's.
func (p *Plane) HistoryRefusal(ctx context.Context, err error) *httpapi.Refusal {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		knobName := "PG_HOST or PG_URL"
		if h := p.Cfg.History; h.Enabled() {
			knobName = h.Knob()
		}
		return httpapi.Refuse(http.StatusGatewayTimeout, wire.CodeHistoryTimeout, "%s did not answer within %d ms: the broker is not involved; check that the database answers (%s), then retry", p.HistoryName(), HistoryReadTimeout.Milliseconds(), knobName).
			RetryAfter(1).NotBroker()
	}
	return httpapi.Refuse(http.StatusBadGateway, wire.CodeHistoryFailed, "reading %s failed: %v", p.HistoryName(), err).NotBroker()
}

// HasHistory is the declare rule watch-history's fact.
func (p *Plane) HasHistory() *bool {
	v := p.History() != nil
	return &v
}

// Both registers an application route and its flat twin (the same suffix
// under /v1 without /apps/{app}, named "flat-"+name).
func Both(r *httpapi.Router, name, method, suffix string, limit int64, h httpapi.Handler) {
	r.Handle(httpapi.Route{Name: name, Method: method, Path: "/v1/apps/{app}" + suffix, Limit: limit}, h)
	r.Handle(httpapi.Route{Name: "flat-" + name, Method: method, Path: "/v1" + suffix, Limit: limit, Flat: true}, h)
}

// App is the route's application: {app}, or "default" on a flat route
// (callers that resolve flat names across applications do so themselves).
func App(q *httpapi.Request) string {
	if q.Flat {
		return plan.DefaultApplication
	}
	return q.Vars["app"]
}
