package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queen-mq/gate/gate-api/internal/ai"
	"github.com/queen-mq/gate/gate-api/internal/insight"
	"github.com/queen-mq/gate/gate-api/internal/live"
	"github.com/queen-mq/gate/gate-api/internal/push"
	"github.com/queen-mq/gate/gate-api/internal/shadowlimits"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// routes is the application plane: every family registers its routes on
// one router, the push door first (the router tries routes in order, and
// nearly every request is a push), then the process's own (health,
// version, metrics) and the answers for unknown routes.
func (s *Server) routes(requests *prometheus.CounterVec, door *push.Door, lv *live.Live, in *insight.Insight, a *ai.AI) *httpapi.Router {
	cfg := s.p.Cfg
	r := httpapi.NewRouter(httpapi.Config{
		Name: "gate-api", Log: s.p.Log, Clock: s.p.Clock, Requests: requests,
		Broker: cfg.QueenURL, BrokerTimeout: cfg.BrokerTimeout,
	})
	door.Routes(r)
	s.declare.Routes(r)
	lv.Routes(r)
	in.Routes(r)
	shadowlimits.New(s.p).Routes(r)
	small := cfg.BodyBytes
	get := func(name, path string, h httpapi.Handler) {
		r.Handle(httpapi.Route{Name: name, Method: http.MethodGet, Path: path, Limit: small, Flat: true}, h)
	}
	get("health", "/health", s.healthz)
	get("version", "/version", s.version)
	get("version", "/api/version", s.version)
	a.Routes(r)
	r.HandleHTTP("/metrics", promhttp.HandlerFor(s.p.Registry, promhttp.HandlerOpts{}), http.MethodGet)
	unknown := httpapi.Route{Name: "unknown", Limit: small, Flat: true}
	r.NotFound(unknown, func(q *httpapi.Request) *httpapi.Refusal {
		return httpapi.Refuse(http.StatusNotFound, wire.CodeRouteNotFound, "no route %s %s: see the README for the routes of gate-api", q.R.Method, q.R.URL.EscapedPath())
	})
	r.MethodNotAllowed(unknown, func(q *httpapi.Request) *httpapi.Refusal {
		return httpapi.Refuse(http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, "%s is not allowed on %s: see the README for the methods of this route", q.R.Method, q.R.URL.EscapedPath())
	})
	return r
}

// healthz is GET /health: 200 with the broker reachable and healthy, 503
// otherwise, saying which.
func (s *Server) healthz(q *httpapi.Request) *httpapi.Refusal {
	ok, ver, problem := s.p.BrokerHealth(q.Context())
	queenState := wire.QueenState{URL: s.p.Cfg.QueenURL, Reachable: ok, Version: ver}
	if !ok {
		return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeBrokerUnhealthy, "the broker at %s is not usable: %s; gate-api cannot declare or push until it is", s.p.Cfg.QueenURL, problem).
			Unhealthy(queenState)
	}
	if rep, known := s.p.Capabilities(q.Context()); known {
		queenState.Needs = rep.Wire()
		if lacks := rep.Problem(); lacks != "" {
			return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeBrokerLacks, "%s; gate-api refuses declarations until it has it", lacks).
				Unhealthy(queenState)
		}
	}
	httpapi.WriteJSON(q.W, http.StatusOK, wire.Health{Status: "healthy", Queen: queenState})
	return nil
}

// version is GET /version: gate-api's build and the broker's.
func (s *Server) version(q *httpapi.Request) *httpapi.Refusal {
	ok, ver, _ := s.p.BrokerHealth(q.Context())
	httpapi.WriteJSON(q.W, http.StatusOK, wire.Version{
		Gate:  buildVersion(),
		Queen: wire.QueenState{URL: s.p.Cfg.QueenURL, Reachable: ok, Version: ver},
	})
	return nil
}
