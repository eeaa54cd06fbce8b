package plane

import (
	"net/http"
	"strings"

	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// Resolve finds the declared graph a request names: {app}/{nameVar} on an
// application route; on a flat route the one application that declares
// {nameVar} (none → 404, several → 409 naming them).
func (p *Plane) Resolve(q *httpapi.Request, nameVar string) (*Entry, *httpapi.Refusal) {
	name := q.Vars[nameVar]
	if e := CheckName("graph", name); e != nil {
		return nil, e
	}
	ctx := q.Context()
	var e *Entry
	if !q.Flat {
		app := q.Vars["app"]
		if bad := CheckName("app", app); bad != nil {
			return nil, bad
		}
		if e = p.Cat.Get(ctx, app, name); e == nil {
			return nil, httpapi.Refuse(http.StatusNotFound, wire.CodeGraphNotFound, "no graph '%s/%s': declare it with PUT /v1/apps/%s/graphs/%s first", app, name, app, name).Field("graph")
		}
	} else {
		apps := p.Cat.Apps(ctx, name)
		switch len(apps) {
		case 0:
			return nil, httpapi.Refuse(http.StatusNotFound, wire.CodeGraphNotFound, "no graph '%s': declare it with PUT /v1/graphs/%s first", name, name).Field("graph")
		case 1:
			e = p.Cat.Lookup(apps[0], name)
		default:
			return nil, httpapi.Refuse(http.StatusConflict, wire.CodeAmbiguousGraph, "graph '%s' is declared by several applications (%s): use the route /v1/apps/{app}/… that names one", name, strings.Join(apps, ", ")).Applications(apps)
		}
		if e == nil {
			return nil, httpapi.Refuse(http.StatusNotFound, wire.CodeGraphNotFound, "no graph '%s'", name).Field("graph")
		}
	}
	if e.Plan == nil {
		return nil, httpapi.Refuse(http.StatusConflict, wire.CodeStoredDocumentInvalid, "the stored document of '%s/%s' does not compile (%s): PUT a corrected document", e.App, e.Graph, e.Problem)
	}
	return e, nil
}

// RelayState is whether some gate-relay replica ran e at the catalogue's
// last read of the relays' status (at most GATE_API_REFRESH_MS old), and
// wire.NoRelayNote when none did. It never reads kv: work is queued
// whether or not a relay runs the graph (the ingress queue is a durable
// buffer), so the state only informs the answer and must not hold it up.
func (p *Plane) RelayState(e *Entry) (running bool, note string) {
	if len(p.Cat.Runners(e.App, e.Graph)) > 0 {
		return true, ""
	}
	return false, wire.NoRelayNote
}

// SetRelayHeader writes the Gate-Relay header of a push or re-entry
// answer: running, or none when no relay runs the graph right now.
func SetRelayHeader(w http.ResponseWriter, running bool) {
	v := wire.RelayNone
	if running {
		v = wire.RelayRunning
	}
	w.Header().Set(wire.RelayHeader, v)
}

// ResolveRunning resolves the route's graph (the "graph" variable) and
// refuses with 503 when no relay replica runs it: the ETA, which bounds
// how long the relay takes, needs a running graph. Push and re-entry never
// do (RelayState).
func (p *Plane) ResolveRunning(q *httpapi.Request) (*Entry, *httpapi.Refusal) {
	e, bad := p.Resolve(q, "graph")
	if bad != nil {
		return nil, bad
	}
	if p.Cat.Running(q.Context(), e.App, e.Graph) {
		return e, nil
	}
	return nil, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeNotRunning, "graph '%s/%s' is declared but no gate-relay replica runs it right now: nothing would move what you send; start gate-relay against the same broker and GATE_KV_NAMESPACE (relays pick declarations up within GATE_RECONCILE_SECONDS, default %d s) and retry", e.App, e.Graph, p.Cfg.ReconcileSeconds).RetryAfter(1)
}

// NodeOf is the node a route names in its {node} variable, refused by
// name (400) or as unknown (404, naming the graph's nodes).
func NodeOf(q *httpapi.Request, e *Entry) (*plan.Node, *httpapi.Refusal) {
	name := q.Vars["node"]
	if bad := CheckName("node", name); bad != nil {
		return nil, bad
	}
	n := e.Plan.Node(name)
	if n == nil {
		return nil, httpapi.Refuse(http.StatusNotFound, wire.CodeNodeNotFound, "no node '%s' in graph '%s/%s': its nodes are %s", name, e.App, e.Graph, strings.Join(NodeNames(e.Plan), ", ")).Field("node")
	}
	return n, nil
}

// NodeStage is the stage of node n that a per-node read (the ETA, explain)
// answers for: the named path's, or the highest-priority path through the
// node when path is "". A path that does not cross the node, or a node no
// path crosses, is a 404 path-not-found naming the paths through it.
func NodeStage(e *Entry, n *plan.Node, path string) (*plan.Stage, *httpapi.Refusal) {
	var stage *plan.Stage
	var through []string
	for i := range e.Plan.Stages {
		st := &e.Plan.Stages[i]
		if st.Node != n.Name {
			continue
		}
		through = append(through, st.Path)
		switch {
		case path != "" && st.Path == path && stage == nil:
			stage = st
		case path == "" && (stage == nil || st.Priority < stage.Priority):
			stage = st
		}
	}
	if stage != nil {
		return stage, nil
	}
	if path == "" {
		return nil, httpapi.Refuse(http.StatusNotFound, wire.CodePathNotFound, "no path crosses node '%s' of graph '%s/%s': nothing waits there", n.Name, e.App, e.Graph).Field("node")
	}
	return nil, httpapi.Refuse(http.StatusNotFound, wire.CodePathNotFound, "path '%.60s' does not cross node '%s': the paths through it are %s", path, n.Name, strings.Join(through, ", ")).Field("path").Paths(through)
}
