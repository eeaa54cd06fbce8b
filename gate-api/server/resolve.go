package server

import (
	"net/http"
	"strings"
)

// resolve finds the declared graph a request names: {app}/{graph} on an
// application route; on a flat route the one application that declares
// {graph} (none → 404, several → 409 naming them).
func (s *Server) resolve(q *req, nameVar string) (*entry, *apiError) {
	name := q.vars[nameVar]
	if e := checkName("graph", name); e != nil {
		return nil, e
	}
	ctx := q.r.Context()
	var e *entry
	if !q.flat {
		app := q.vars["app"]
		if bad := checkName("app", app); bad != nil {
			return nil, bad
		}
		if e = s.cat.get(ctx, app, name); e == nil {
			return nil, fail(http.StatusNotFound, "no graph '%s/%s': declare it with PUT /v1/apps/%s/graphs/%s first", app, name, app, name).field("graph")
		}
	} else {
		apps := s.cat.apps(ctx, name)
		switch len(apps) {
		case 0:
			return nil, fail(http.StatusNotFound, "no graph '%s': declare it with PUT /v1/graphs/%s first", name, name).field("graph")
		case 1:
			e = s.cat.lookup(apps[0], name)
		default:
			return nil, fail(http.StatusConflict, "graph '%s' is declared by several applications (%s): use the route /v1/apps/{app}/… that names one", name, strings.Join(apps, ", ")).with("applications", apps)
		}
		if e == nil {
			return nil, fail(http.StatusNotFound, "no graph '%s'", name).field("graph")
		}
	}
	if e.plan == nil {
		return nil, fail(http.StatusConflict, "the stored document of '%s/%s' does not compile (%s): PUT a corrected document", e.app, e.graph, e.problem)
	}
	return e, nil
}

// resolveRunning resolves the route's graph (the "graph" variable) and
// refuses with 503 when no relay replica runs it: the routes that move work
// (push, re-enter, ETA) need a running graph.
func (s *Server) resolveRunning(q *req) (*entry, *apiError) {
	e, bad := s.resolve(q, "graph")
	if bad != nil {
		return nil, bad
	}
	if s.cat.running(q.r.Context(), e.app, e.graph) {
		return e, nil
	}
	return nil, fail(http.StatusServiceUnavailable, "graph '%s/%s' is declared but no gate-relay replica runs it right now: nothing would move what you send; start gate-relay against the same broker and GATE_KV_NAMESPACE (relays pick declarations up within GATE_RECONCILE_SECONDS, default %d s) and retry", e.app, e.graph, s.cfg.ReconcileSeconds).retryAfter(1)
}
