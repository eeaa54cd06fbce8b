package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/queen-mq/gate/libs/wire"
	"net/http"
	"strings"
	"sync"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Declare outcomes, the label of gate_api_declares_total.
const (
	outcomeOK           = "ok"
	outcomeInvalid      = "invalid"
	outcomeConflict     = "conflict"
	outcomeUnreadable   = "unreadable"
	outcomeProvisioning = "provisioning"
	outcomeStoring      = "storing"
)

// putGraph is PUT /v1/apps/{app}/graphs/{name} (and the target and flat
// twins): compile, provision, store under the declare lock; then, without
// the lock, wait (GATE_DECLARE_WAIT_MS) for a relay to run the stored
// version; answer the compiled plan and whether it runs.
func (s *Server) putGraph(q *req, target bool) *apiError {
	body, bad := readBody(q.w, q.r, q.limit)
	if bad != nil {
		s.metrics.declares.WithLabelValues(outcomeUnreadable).Inc()
		return bad
	}
	app, name := q.app(), q.vars["name"]
	unlock := sync.OnceFunc(s.declareMu.Unlock)
	s.declareMu.Lock()
	defer unlock()
	resp, bad := s.declare(q.r.Context(), app, name, body, target)
	unlock()
	if bad != nil {
		return bad
	}
	running, notes := s.awaitRunning(q.r.Context(), app, map[string]uint32{name: resp.Version})
	if !running[name] {
		s.log.Info("declared, but no relay runs it yet", "application", app, "graph", name, "version", resp.Version, "note", notes[name])
	}
	writeJSON(q.w, http.StatusOK, wire.Declared{PlanResponse: *resp, Running: running[name], RunningNote: notes[name]})
	return nil
}

// declare runs the declare pipeline for one document under the declare
// lock and counts its outcome.
func (s *Server) declare(ctx context.Context, app, name string, body []byte, target bool) (*plan.Response, *apiError) {
	resp, outcome, bad := s.declareOne(ctx, app, name, body, target)
	s.metrics.declares.WithLabelValues(outcome).Inc()
	return resp, bad
}

func (s *Server) declareOne(ctx context.Context, app, name string, body []byte, target bool) (*plan.Response, string, *apiError) {
	// The other graphs and the stored copy of this one; a store that cannot
	// be read skips the cross-graph checks (the store write will then say
	// what is wrong).
	var stored []declare.Stored
	var old *entry
	listing, lerr := s.store.List(ctx)
	if lerr != nil {
		s.log.Warn("declare: the store could not be read; cross-graph checks skipped", "application", app, "graph", name, "error", lerr)
	} else {
		stored = make([]declare.Stored, 0, len(listing.Documents))
		for _, d := range listing.Documents {
			stored = append(stored, declare.Stored{App: d.App, Name: d.Graph, Body: d.Body})
		}
		if d, ok := listing.Find(app, name); ok {
			old = compileStored(app, name, d.Body, d.Legacy, s.cfg.PlanOptions())
		}
	}
	res, err := declare.Compile(declare.Input{
		App: app, Name: name, Body: body, Target: target,
		Facts:   brokerFacts{ctx: ctx, c: s.client},
		Stored:  stored,
		Options: s.cfg.PlanOptions(),
	})
	if err != nil {
		msg := err.Error()
		if !errors.Is(err, declare.ErrUnreadable) {
			msg = "the document could not be read: " + msg
		}
		return nil, outcomeInvalid, fail(http.StatusUnprocessableEntity, "%s", msg).with("rule", "document")
	}
	if !res.Accepted() {
		outcome := outcomeInvalid
		if res.Status() == http.StatusConflict {
			outcome = outcomeConflict
		}
		return nil, outcome, refusal(res.Status(), res)
	}
	doc := res.Doc
	if doc.Watch != nil {
		// watch.startedAt belongs to the server: kept across declarations,
		// set on the first one.
		at := s.now().UnixMilli()
		if old != nil && old.doc != nil && old.doc.Watch != nil && old.doc.Watch.StartedAt != nil {
			at = *old.doc.Watch.StartedAt
		}
		doc.Watch.StartedAt = &at
	}
	serving := fmt.Sprintf("nothing was stored, so no relay serves '%s/%s' until a declare succeeds", app, name)
	if old != nil && old.doc != nil {
		serving = fmt.Sprintf("still serving version %d (the stored document is unchanged)", old.doc.Version)
	}
	if err := s.provision(ctx, res.Plan); err != nil {
		return nil, outcomeProvisioning, fail(http.StatusBadGateway, "provisioning failed: %v; %s", err, serving)
	}
	stamped, err := doc.MarshalJSON()
	if err != nil {
		return nil, outcomeStoring, fail(http.StatusInternalServerError, "encoding the document for the store failed: %v", err)
	}
	if err := s.store.Put(ctx, app, name, stamped); err != nil {
		return nil, outcomeStoring, fail(http.StatusBadGateway, "storing the document in kv failed: %v; the queues are provisioned but %s; retry the PUT", err, serving)
	}
	s.cat.put(&entry{app: app, graph: name, body: stamped, doc: doc, plan: res.Plan})
	s.log.Info("declared", "application", app, "graph", name, "version", doc.Version, "v1", res.V1, "warnings", len(res.Findings.Warnings()))
	return res.Response(), outcomeOK, nil
}

// refusal renders a refused declaration: every problem "[rule] detail"
// joined by "; ", the first rule, and the findings with their location.
func refusal(status int, res *declare.Result) *apiError {
	errs := res.Findings.Errors()
	rules := make([]string, 0, len(errs))
	problems := make([]wire.Problem, 0, len(errs))
	for _, f := range errs {
		rules = append(rules, f.Rule)
		problems = append(problems, wire.Problem{Rule: f.Rule, Message: f.Message, At: f.At})
	}
	e := fail(status, "%s", strings.Join(res.Errors(), "; ")).with("rules", rules).with("problems", problems)
	if len(rules) > 0 {
		e.with("rule", rules[0])
	}
	return e
}

// brokerFacts probes application-owned ingress queues for the compiler.
type brokerFacts struct {
	ctx context.Context
	c   *queen.Client
}

func (f brokerFacts) Queue(name string) declare.QueueFacts {
	qi, err := f.c.Queue(f.ctx, name)
	if err != nil {
		return declare.QueueFacts{}
	}
	out := declare.QueueFacts{Exists: true, Partitions: len(qi.Partitions)}
	if qi.RetentionSeconds.Set && qi.RetentionSeconds.Value > 0 {
		out.RetentionSeconds = qi.RetentionSeconds.Value
	}
	return out
}

// deleteGraph is DELETE /v1/apps/{app}/graphs/{name} (and twins): the
// stored document goes first; relays stop the graph on their next
// reconcile; queues, messages, groups, counters and breaker records stay.
func (s *Server) deleteGraph(q *req, target bool) *apiError {
	name := q.vars["name"]
	if bad := checkName("graph", name); bad != nil {
		return bad
	}
	ctx := q.r.Context()
	app := plan.DefaultApplication
	if !q.flat {
		app = q.vars["app"]
		if bad := checkName("app", app); bad != nil {
			return bad
		}
	} else if apps := s.cat.apps(ctx, name); len(apps) == 1 {
		app = apps[0]
	}
	s.declareMu.Lock()
	defer s.declareMu.Unlock()
	known := s.cat.get(ctx, app, name)
	existed, err := s.store.Delete(ctx, app, name)
	if err != nil {
		return fail(http.StatusBadGateway, "deleting the stored document failed: %v; nothing was stopped, retry the DELETE", err)
	}
	s.cat.forget(app, name)
	runners := s.cat.runners(app, name)
	if !existed && known == nil && len(runners) == 0 {
		return fail(http.StatusNotFound, "no graph '%s/%s': nothing is stored or running under that name", app, name).field("graph")
	}
	out := wire.Deleted{
		OK: true, Application: app, Graph: name,
		Deleted:    existed || known != nil,
		Registered: len(runners) > 0,
		Stopping:   nonNil(runners),
		Message: fmt.Sprintf("the document is deleted; relays stop the graph's stages on their next reconcile (within GATE_RECONCILE_SECONDS, %d s); queues and their messages, consumer groups, counters (until their TTL) and breaker records are kept",
			s.cfg.ReconcileSeconds),
	}
	var stages, kept []string
	if known != nil && known.plan != nil {
		for _, st := range known.plan.Stages {
			stages = append(stages, st.Group)
		}
		for _, qu := range known.plan.Queues {
			kept = append(kept, qu.Name)
		}
	}
	out.Stages = nonNil(stages)
	out.KeptQueues = nonNil(kept)
	s.log.Info("deleted", "application", app, "graph", name, "runningOn", runners)
	writeJSON(q.w, http.StatusOK, out)
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// syncTargets is PUT /v1/apps/{app}/targets: declare every document of the
// array as a target, then — only when none was refused — delete this
// application's stored one-node graphs the array does not name.
func (s *Server) syncTargets(q *req) *apiError {
	app := q.app()
	if bad := checkName("app", app); bad != nil {
		return bad
	}
	body, bad := readBody(q.w, q.r, q.limit)
	if bad != nil {
		return bad
	}
	if t := firstByte(body); t != '[' {
		return fail(http.StatusUnprocessableEntity, "the sync body must be a JSON array of target documents, not %s", kindOf(t))
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(body, &docs); err != nil {
		return fail(http.StatusUnprocessableEntity, "the sync body: %v", err)
	}
	ctx := q.r.Context()
	unlock := sync.OnceFunc(s.declareMu.Unlock)
	s.declareMu.Lock()
	defer unlock()
	applied, removed := []string{}, []string{}
	versions := map[string]uint32{}
	type refused = wire.SyncRefusal
	refusedList := []refused{}
	named := map[string]bool{}
	for i, d := range docs {
		var id struct {
			Graph *string `json:"graph"`
			Name  *string `json:"name"`
		}
		_ = json.Unmarshal(d, &id)
		name := ""
		switch {
		case id.Graph != nil && *id.Graph != "":
			name = *id.Graph
		case id.Name != nil && *id.Name != "":
			// A v1 target names itself "a.b.c"; its graph is the last
			// dot-segment, as the v1 mapping names it.
			name = (*id.Name)[strings.LastIndexByte(*id.Name, '.')+1:]
		}
		if name == "" {
			refusedList = append(refusedList, refused{Target: fmt.Sprintf("#%d", i), Error: fmt.Sprintf("document %d names no target: set \"graph\" (or the v1 \"name\")", i)})
			continue
		}
		named[name] = true
		resp, bad := s.declare(ctx, app, name, bytes.Clone(d), true)
		if bad != nil {
			msg := bad.body.Error
			refusedList = append(refusedList, refused{Target: name, Error: msg})
			continue
		}
		applied = append(applied, name)
		versions[name] = resp.Version
	}
	if len(refusedList) == 0 {
		listing, err := s.store.List(ctx)
		switch {
		case err != nil:
			refusedList = append(refusedList, refused{Target: "*", Error: fmt.Sprintf("nothing was reaped: the store could not be read: %v", err)})
		case !listing.Complete:
			refusedList = append(refusedList, refused{Target: "*", Error: "nothing was reaped: the store listing was incomplete"})
		default:
			for _, d := range listing.Documents {
				if d.App != app || named[d.Graph] {
					continue
				}
				e := compileStored(d.App, d.Graph, d.Body, d.Legacy, s.cfg.PlanOptions())
				if e.doc == nil || len(e.doc.Nodes) != 1 {
					continue
				}
				if _, err := s.store.Delete(ctx, app, d.Graph); err != nil {
					refusedList = append(refusedList, refused{Target: d.Graph, Error: fmt.Sprintf("not reaped: %v", err)})
					continue
				}
				s.cat.forget(app, d.Graph)
				removed = append(removed, d.Graph)
			}
		}
	}
	unlock()
	// One wait for every applied document, after the reaping and without
	// the lock: the sync answers once all run or GATE_DECLARE_WAIT_MS passed.
	running, notes := s.awaitRunning(ctx, app, versions)
	out := wire.Synced{
		OK: len(refusedList) == 0, Application: app,
		Applied: applied, Removed: removed, Refused: refusedList,
		Running: running,
	}
	if len(notes) > 0 {
		out.RunningNotes = notes
		s.log.Info("synced, but no relay runs some targets yet", "application", app, "targets", notRunning(running))
	}
	writeJSON(q.w, http.StatusOK, out)
	return nil
}
