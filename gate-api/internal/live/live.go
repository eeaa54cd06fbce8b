// Package live is gate-api's live reads and the one live write beside
// them: the graph view (the plan with its live counters, breakers, lags
// and the relays' summed stage counters), the ETA of a node's backlog, the
// backoff (spending a node's window when the vendor said 429, and lifting
// it), the product metrics of an application, and the console's read
// routes (overview, lists, topology, breaches, shared budgets).
package live

import (
	"net/http"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/httpapi"
)

// Live is the live-reads family. Build it with New; it is safe for
// concurrent use.
type Live struct {
	p *plane.Plane
	// figures are the overview's fleet figures between computations.
	figures fleetCache
	// enforcing are the plans of graphs in Watch as if they enforced
	// (watchplan.go).
	enforcing enforcingPlans
	// sm are the settle route's series.
	sm *settleMetrics
	// episodes are the backoffs observe has put on the timeline
	// (observe.go): one annotation per episode, not one per 429.
	episodes holdEpisodes
}

// New builds the live-reads family on p and registers its series on
// p.Registry.
func New(p *plane.Plane) *Live { return &Live{p: p, sm: newSettleMetrics(p.Registry)} }

// Routes registers the graph view, the backoff, the ETA, the product
// metrics and the console's read routes.
func (l *Live) Routes(r *httpapi.Router) {
	small := l.p.Cfg.BodyBytes
	plane.Both(r, "graph-get", http.MethodGet, "/graphs/{name}", small, l.getGraph)
	plane.Both(r, "target-get", http.MethodGet, "/targets/{name}", small, l.getGraph)
	plane.Both(r, "backoff", http.MethodPost, "/graphs/{graph}/nodes/{node}/backoff", small, l.backoff)
	plane.Both(r, "observe", http.MethodPost, "/graphs/{graph}/nodes/{node}/observe", observeBodyBytes, l.observe)
	plane.Both(r, "settle", http.MethodPost, "/graphs/{graph}/nodes/{node}/settle", settleBodyBytes, l.settle)
	plane.Both(r, "backoff-lift", http.MethodDelete, "/graphs/{graph}/nodes/{node}/backoff", small, l.liftBackoff)
	plane.Both(r, "eta", http.MethodGet, "/graphs/{graph}/nodes/{node}/eta", small, l.eta)
	plane.Both(r, "target-eta", http.MethodGet, "/targets/{graph}/eta", small, l.eta)
	r.Handle(httpapi.Route{Name: "app-metrics", Method: http.MethodGet, Path: "/v1/apps/{app}/metrics", Limit: small}, l.productMetrics)
	l.keysRoutes(r)
	l.consoleRoutes(r)
}
