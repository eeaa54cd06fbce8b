package recorder

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the Prometheus series gate-recorder exposes on GET /metrics,
// beside the Go runtime and process collectors.
type Metrics struct {
	reg *prometheus.Registry

	drains      *prometheus.CounterVec
	rows        *prometheus.CounterVec
	lastSuccess prometheus.Gauge
	failing     prometheus.Gauge

	mu   sync.Mutex
	lost *prometheus.GaugeVec
}

// NewMetrics registers every series on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		drains: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gate_recorder_drains_total",
			Help: "Handover drains by outcome (ok: committed to PostgreSQL; error: nothing written, the rows stay in kv)."}, []string{"outcome"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gate_recorder_rows_written_total",
			Help: "History rows written by kind (samples, rollups, traces, keys: a keyed shadow candidate's per-value counts)."}, []string{"kind"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gate_recorder_last_drain_success_timestamp_seconds",
			Help: "Unix time of the last drain that committed; time() minus this is the recorder's lag."}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gate_recorder_drain_failures_consecutive",
			Help: "Drains failed in a row since the last one that committed."}),
		lost: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gate_recorder_watch_lost_items",
			Help: "Items a relay's Watch recorder dropped (its buffer was full), as last handed over, per recorder session."}, []string{"app", "graph", "node"}),
	}
	// Every outcome and kind exists from the start, so rate() and the
	// alert rules see a 0 rather than no series.
	for _, o := range []string{"ok", "error"} {
		m.drains.WithLabelValues(o)
	}
	for _, k := range []string{"samples", "rollups", "traces"} {
		m.rows.WithLabelValues(k)
	}
	m.reg.MustRegister(m.drains, m.rows, m.lastSuccess, m.failing, m.lost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

func (m *Metrics) drained(d Drained, at float64) {
	m.drains.WithLabelValues("ok").Inc()
	m.rows.WithLabelValues("samples").Add(float64(d.Samples))
	m.rows.WithLabelValues("rollups").Add(float64(d.Rollups))
	m.rows.WithLabelValues("traces").Add(float64(d.Traces))
	m.rows.WithLabelValues("keys").Add(float64(d.KeySamples))
	m.lastSuccess.Set(at)
	m.failing.Set(0)
}

func (m *Metrics) drainFailed(failing int) {
	m.drains.WithLabelValues("error").Inc()
	m.failing.Set(float64(failing))
}

func (m *Metrics) watchLost(app, graph, node string, lost int64) {
	m.lost.WithLabelValues(app, graph, node).Set(float64(lost))
}
