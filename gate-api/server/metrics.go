package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the Prometheus series gate-api exposes on GET /metrics.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	push     prometheus.Histogram
	declares *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gate_api_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "method", "status"}),
		push: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gate_api_push_duration_seconds",
			Help:    "Latency of the push front door, from request to answer, every outcome included.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}),
		declares: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gate_api_declares_total",
			Help: "Declarations (PUT of a graph or target, and each document of a sync), by outcome: ok, invalid (422), conflict (409), unreadable (400/413/415), provisioning (502), storing (502).",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.requests, m.push, m.declares,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchDoor exposes the push front door's broker calls and the items they
// carried; their ratio is how many pushes one broker call coalesced.
func (m *metrics) watchDoor(b *pushBatcher) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gate_api_push_broker_calls_total",
			Help: "Broker push calls made by the push front door (GATE_PUSH_BATCH pushes at most per call).",
		}, func() float64 { return float64(b.calls.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gate_api_push_broker_items_total",
			Help: "Items the push front door's broker calls carried: divided by gate_api_push_broker_calls_total, the pushes per call.",
		}, func() float64 { return float64(b.items.Load()) }),
	)
}
