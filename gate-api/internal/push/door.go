// Package push is gate-api's push door: the front door that stamps an item
// and queues it on its node's ingress (coalescing concurrent pushes into
// shared broker calls, bounded by the bytes in flight), the re-entry of one
// item at the start of its own path, and the routes that are gone (the pop
// and the leases), each answered with what replaces it.
package push

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/queen"
)

// Door is the push family. Build it with New; it is safe for concurrent
// use.
type Door struct {
	p *plane.Plane
	// bytes bounds the bytes buffered across in-flight pushes.
	bytes inflight
	// batch carries the front door's items to the broker.
	batch *pushBatcher
	// records carries the records of items pushed with a txn (explain by
	// transaction id) to kv.
	records *recordBatcher
	// rr names round-robin partitions of Gate-owned ingress queues.
	rr atomic.Uint64
	// duration is gate_api_push_duration_seconds.
	duration prometheus.Histogram
	// brokerCall is gate_api_push_broker_call_seconds: the broker's
	// share of duration.
	brokerCall prometheus.Histogram
}

// New builds the push door on p and registers its series on p.Registry.
func New(p *plane.Plane) *Door {
	d := &Door{
		p:       p,
		bytes:   inflight{limit: p.Cfg.PushInflightBytes},
		records: &recordBatcher{put: p.Store.PutItems},
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gate_api_push_duration_seconds",
			Help:    "Latency of the push front door, from request to answer, every outcome included.",
			Buckets: doorBuckets,
		}),
		brokerCall: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gate_api_push_broker_call_seconds",
			Help:    "Latency of the push front door's broker push calls (one call carries the pushes coalesced into it), every outcome included: the broker's share of gate_api_push_duration_seconds.",
			Buckets: doorBuckets,
		}),
	}
	d.batch = &pushBatcher{push: d.timedPush, maxItems: p.Cfg.PushBatch, maxBytes: int(p.Cfg.MaxPushBodyBytes)}
	p.Registry.MustRegister(d.duration, d.brokerCall,
		// The door's broker calls and the items they carried; their ratio
		// is how many pushes one broker call coalesced.
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gate_api_push_broker_calls_total",
			Help: "Broker push calls made by the push front door (GATE_PUSH_BATCH pushes at most per call).",
		}, func() float64 { return float64(d.batch.calls.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gate_api_push_broker_items_total",
			Help: "Items the push front door's broker calls carried: divided by gate_api_push_broker_calls_total, the pushes per call.",
		}, func() float64 { return float64(d.batch.items.Load()) }),
	)
	return d
}

// doorBuckets are the bounds of the door's two latency histograms.
var doorBuckets = []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5}

// timedPush is the broker client's Push, timed into brokerCall.
func (d *Door) timedPush(ctx context.Context, items []queen.PushItem) ([]queen.PushResult, error) {
	start := d.p.Clock.Now()
	defer func() { d.brokerCall.Observe(d.p.Clock.Since(start).Seconds()) }()
	return d.p.Client.Push(ctx, items)
}

// Routes registers the push routes (first: the router tries routes in
// order, and nearly every request is a push), re-entry and the gone
// routes.
func (d *Door) Routes(r *httpapi.Router) {
	small, push := d.p.Cfg.BodyBytes, d.p.Cfg.MaxPushBodyBytes
	plane.Both(r, "push", http.MethodPost, "/graphs/{graph}/nodes/{node}/push", push, d.push)
	plane.Both(r, "target-push", http.MethodPost, "/targets/{graph}/lanes/{lane}/push", push, d.push)
	plane.Both(r, "reenter", http.MethodPost, "/graphs/{graph}/reenter", small, d.reenter)
	plane.Both(r, "gone-next", http.MethodGet, "/graphs/{graph}/nodes/{node}/next", small, d.goneNext)
	plane.Both(r, "gone-target-next", http.MethodGet, "/targets/{graph}/lanes/{lane}/next", small, d.goneNext)
	r.Handle(httpapi.Route{Name: "gone-leases", Method: http.MethodPost, Path: "/v1/leases/{op:ack|nack|renew}", Limit: small, Flat: true}, d.goneLease)
}
