package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/service"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Source is what the endpoints read.
type Source interface {
	Snapshot() store.RelayStatus
}

// BrokerSource is a Source that can say whether its broker answers;
// /health then answers 503 naming the broker when it does not.
type BrokerSource interface {
	BrokerHealth(ctx context.Context) error
}

// NeedsSource is a Source that probes what Gate needs of its broker
// (libs/capability): /health lists it and answers 503 naming what is
// missing and the fix.
type NeedsSource interface {
	BrokerNeeds() (needs []wire.BrokerNeed, problem string)
}

// AdmissionSource is a Source that reports its admission path.
type AdmissionSource interface {
	Admission() (mode, why string)
}

// CallSource is a Source that counts its broker calls (in its client);
// /metrics then exports them as gate_relay_broker_calls_total{route}.
type CallSource interface {
	BrokerCalls() queen.Calls
}

// StatusWriteSource is a Source that publishes its status to kv: /health
// is degraded naming the cause while the writes fail, and /metrics counts
// them as gate_relay_status_write_failures_total.
type StatusWriteSource interface {
	StatusWrite() (failing *wire.RelayStatusWrite, failures int64)
}

// RoleSource is a Source whose graphs run as primary or standby
// (placement): /metrics then exports gate_relay_graphs_standby and
// gate_relay_stages_dozing.
type RoleSource interface {
	Roles() (standbyGraphs, dozingStages int)
}

// BrokerCheckTimeout bounds the broker check of one /health request.
const BrokerCheckTimeout = 2 * time.Second

// stageCounters lists every stage counter exported, as
// gate_relay_stage_<name>_total (series.go writes them), with its field.
var stageCounters = []struct {
	name string
	of   func(*store.Counters) int64
}{
	{"popped", func(c *store.Counters) int64 { return c.Popped }},
	{"admitted", func(c *store.Counters) int64 { return c.Admitted }},
	{"deferred", func(c *store.Counters) int64 { return c.Deferred }},
	{"parked", func(c *store.Counters) int64 { return c.Parked }},
	{"released", func(c *store.Counters) int64 { return c.Released }},
	{"forwarded", func(c *store.Counters) int64 { return c.Forwarded }},
	{"commits", func(c *store.Counters) int64 { return c.Commits }},
	{"duplicates", func(c *store.Counters) int64 { return c.Duplicates }},
	{"foreign", func(c *store.Counters) int64 { return c.Foreign }},
	{"deadlettered", func(c *store.Counters) int64 { return c.Deadlettered }},
	{"leaked", func(c *store.Counters) int64 { return c.Leaked }},
	{"wedged", func(c *store.Counters) int64 { return c.Wedged }},
	{"cost_admitted", func(c *store.Counters) int64 { return c.CostAdmitted }},
	{"ambiguous", func(c *store.Counters) int64 { return c.Ambiguous }},
	{"held", func(c *store.Counters) int64 { return c.Held }},
}

// collector exports the relay's own gauges and counters at scrape time;
// the per-graph families are written apart (series.go).
type collector struct {
	src     Source
	calls   *prometheus.Desc
	up      *prometheus.Desc
	swFail  *prometheus.Desc
	swOK    *prometheus.Desc
	standby *prometheus.Desc
	dozing  *prometheus.Desc
}

func newCollector(src Source) *collector {
	c := &collector{src: src}
	c.up = prometheus.NewDesc("gate_relay_broker_up", "1 when the broker answered this scrape's health check (bounded by 2 s), 0 when it did not.", nil, nil)
	c.calls = prometheus.NewDesc("gate_relay_broker_calls_total", "Broker calls this replica's client sent, by route (kv_incr: the kv calls that carried an incr; lease: lease renewals).", []string{"route"}, nil)
	c.swFail = prometheus.NewDesc("gate_relay_status_write_failures_total", "Status writes to kv that failed (the broker refused or did not answer); while they fail gate-api cannot see what this replica runs.", nil, nil)
	c.swOK = prometheus.NewDesc("gate_relay_status_write_ok", "1 when the last status write stored every row, 0 when it failed.", nil, nil)
	c.standby = prometheus.NewDesc("gate_relay_graphs_standby", "Graphs this replica runs as a standby: another owner is their primary, and their ingress stages doze once quiet, checking their source every GATE_DOZE_CHECK_SECONDS.", nil, nil)
	c.dozing = prometheus.NewDesc("gate_relay_stages_dozing", "Stages dozing now on this replica (quiet interior stages, and a standby's quiet stages): they hold no parked long-poll on the broker.", nil, nil)
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.calls
	ch <- c.up
	ch <- c.swFail
	ch <- c.swOK
	ch <- c.standby
	ch <- c.dozing
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if bs, ok := c.src.(BrokerSource); ok {
		ctx, cancel := context.WithTimeout(context.Background(), BrokerCheckTimeout)
		up := 1.0
		if bs.BrokerHealth(ctx) != nil {
			up = 0
		}
		cancel()
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	}
	if cs, ok := c.src.(CallSource); ok {
		n := cs.BrokerCalls()
		for _, r := range []struct {
			route string
			v     int64
		}{{"pop", n.Pop}, {"push", n.Push}, {"transaction", n.Txn}, {"kv", n.KV}, {"kv_incr", n.KVIncr}, {"lease", n.Lease}, {"other", n.Other}} {
			ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(r.v), r.route)
		}
	}
	if sw, ok := c.src.(StatusWriteSource); ok {
		failing, n := sw.StatusWrite()
		okv := 1.0
		if failing != nil {
			okv = 0
		}
		ch <- prometheus.MustNewConstMetric(c.swFail, prometheus.CounterValue, float64(n))
		ch <- prometheus.MustNewConstMetric(c.swOK, prometheus.GaugeValue, okv)
	}
	if rs, ok := c.src.(RoleSource); ok {
		standby, dozing := rs.Roles()
		ch <- prometheus.MustNewConstMetric(c.standby, prometheus.GaugeValue, float64(standby))
		ch <- prometheus.MustNewConstMetric(c.dozing, prometheus.GaugeValue, float64(dozing))
	}
}

// Option adjusts Handler and NewServer.
type Option func(*options)

type options struct{ profiles bool }

// WithProfiles also serves Go's runtime profiles (CPU, heap, goroutines,
// allocations, blocking) under /debug/pprof/ on the same listener, for
// GATE_RELAY_PPROF=1. Off by default: a profile costs CPU while it is taken
// and shows the process's internals to whoever reaches GATE_RELAY_BIND.
func WithProfiles(on bool) Option { return func(o *options) { o.profiles = on } }

// Handler returns the mux of /health and /metrics (and /debug/pprof/ when
// WithProfiles is on).
func Handler(src Source, opts ...Option) http.Handler {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	reg := prometheus.NewRegistry()
	// The Go runtime and process collectors: goroutines, GC, heap, fds —
	// how an operator sees a relay leak or stall.
	reg.MustRegister(newCollector(src), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(reg, src))
	if o.profiles {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		st := src.Snapshot()
		out := wire.RelayHealth{Status: "ok", Replica: st.Replica, Graphs: []wire.RelayGraph{}}
		code := http.StatusOK
		if b, ok := src.(BrokerSource); ok {
			ctx, cancel := context.WithTimeout(r.Context(), BrokerCheckTimeout)
			err := b.BrokerHealth(ctx)
			cancel()
			out.Broker = &wire.RelayBroker{Reachable: err == nil}
			if err != nil {
				out.Status = "unavailable"
				out.Broker.Error = "the broker (QUEEN_URL) is unreachable or unhealthy: " + err.Error()
				code = http.StatusServiceUnavailable
			}
		}
		if n, ok := src.(NeedsSource); ok {
			needs, problem := n.BrokerNeeds()
			if out.Broker == nil {
				out.Broker = &wire.RelayBroker{Reachable: true}
			}
			out.Broker.Needs = needs
			if problem != "" && code == http.StatusOK {
				out.Status = "unavailable"
				out.Broker.Error = problem
				code = http.StatusServiceUnavailable
			}
		}
		if sw, ok := src.(StatusWriteSource); ok {
			if failing, _ := sw.StatusWrite(); failing != nil {
				out.StatusWrite = failing
				if code == http.StatusOK {
					out.Status = "degraded"
				}
			}
		}
		if a, ok := src.(AdmissionSource); ok {
			mode, why := a.Admission()
			out.Admission = &wire.RelayAdmission{Path: mode, Why: why}
		}
		for _, g := range st.Graphs {
			out.Graphs = append(out.Graphs, wire.RelayGraph{App: g.App, Graph: g.Graph, Version: g.Version, Running: g.Running, Error: g.Error})
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}

// shutdownGrace bounds how long a stopping Server lets requests in flight
// finish.
const shutdownGrace = time.Second

// Server serves Handler(src) on one address: the relay's /health and
// /metrics. Build it with NewServer; Start binds the address (a busy port
// fails the start, naming GATE_RELAY_BIND) and serves until Stop or the
// end of Start's context, when it shuts down within a second. A server
// whose listener fails stops on its own; Err then says why.
type Server struct {
	service.HTTP
}

// NewServer returns a Server for bind ("host:port"; port 0 picks a free
// one) reading src; log nil is slog.Default().
func NewServer(bind string, src Source, log *slog.Logger, opts ...Option) *Server {
	return &Server{HTTP: service.HTTP{
		Server: &http.Server{Handler: Handler(src, opts...), ReadHeaderTimeout: 5 * time.Second},
		Bind:   bind, Knob: "GATE_RELAY_BIND",
		Name:  "gate-relay ops",
		Drain: shutdownGrace,
		Log:   cmp.Or(log, slog.Default()),
	}}
}
