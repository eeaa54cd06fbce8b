package declare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	libdeclare "github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/provision"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Declarer is the declare family. Build it with New; it is safe for
// concurrent use.
type Declarer struct {
	p *plane.Plane
	// mu is the declare lock: every PUT, sync and DELETE of this process
	// runs under it (a PUT's or sync's wait for a relay to run what it
	// stored does not: see awaitRunning), and so does the boot re-save.
	// Other gate-api processes are not excluded (see the README:
	// concurrent declares of one graph through two processes are
	// last-writer-wins in kv).
	mu sync.Mutex
	// closing is closed when gate-api starts shutting down; it ends the
	// waits of declares for a relay so the drain is not held up by them.
	closing   chan struct{}
	closeOnce sync.Once
	// declares is gate_api_declares_total.
	declares *prometheus.CounterVec
}

// New builds the declare family on p and registers its series on
// p.Registry.
func New(p *plane.Plane) *Declarer {
	d := &Declarer{
		p:       p,
		closing: make(chan struct{}),
		declares: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gate_api_declares_total",
			Help: "Declarations (PUT of a graph or target, and each document of a sync), by outcome: ok, invalid (422), conflict (409), unreadable (400/413/415), provisioning (502), storing (502).",
		}, []string{"outcome"}),
	}
	p.Registry.MustRegister(d.declares)
	return d
}

// Routes registers PUT, DELETE and the sync of graphs and targets (and
// their flat twins).
func (d *Declarer) Routes(r *httpapi.Router) {
	small := d.p.Cfg.BodyBytes
	plane.Both(r, "graph-put", http.MethodPut, "/graphs/{name}", small, func(q *httpapi.Request) *httpapi.Refusal { return d.putGraph(q, false) })
	plane.Both(r, "graph-delete", http.MethodDelete, "/graphs/{name}", small, func(q *httpapi.Request) *httpapi.Refusal { return d.deleteGraph(q, false) })
	plane.Both(r, "target-put", http.MethodPut, "/targets/{name}", small, func(q *httpapi.Request) *httpapi.Refusal { return d.putGraph(q, true) })
	plane.Both(r, "target-delete", http.MethodDelete, "/targets/{name}", small, func(q *httpapi.Request) *httpapi.Refusal { return d.deleteGraph(q, true) })
	plane.Both(r, "targets-sync", http.MethodPut, "/targets", small, d.syncTargets)
}

// Close ends the declares' waits for a relay (gate-api is shutting down):
// they answer at once with what they know.
func (d *Declarer) Close() { d.closeOnce.Do(func() { close(d.closing) }) }

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
func (d *Declarer) putGraph(q *httpapi.Request, target bool) *httpapi.Refusal {
	body, bad := q.ReadJSON()
	if bad != nil {
		d.declares.WithLabelValues(outcomeUnreadable).Inc()
		return bad
	}
	app, name := plane.App(q), q.Vars["name"]
	resp, bad := d.declare(q.Context(), app, name, body, target)
	if bad != nil {
		return bad
	}
	running, notes := d.awaitRunning(q.Outer, app, map[string]uint32{name: resp.Version})
	if !running[name] {
		d.p.Log.Info("declared, but no relay runs it yet", "app", app, "graph", name, "version", resp.Version, "note", notes[name])
	}
	httpapi.WriteJSON(q.W, http.StatusOK, wire.Declared{PlanResponse: *resp, Running: running[name], RunningNote: notes[name]})
	return nil
}

// declare runs the declare pipeline for one document and counts its
// outcome. It takes the declare lock itself, for provisioning and storing
// only: the checks run before it (see declareOne).
func (d *Declarer) declare(ctx context.Context, app, name string, body []byte, target bool) (*plan.Response, *httpapi.Refusal) {
	resp, outcome, bad := d.declareOne(ctx, app, name, body, target)
	d.declares.WithLabelValues(outcome).Inc()
	return resp, bad
}

// declareOne checks the document against the store as it was read,
// without the declare lock, so a document that is slow to check holds up
// no other declare; then, under the lock, it re-reads the store and
// provisions and stores only when nothing changed since (else it checks
// again; after maxCheckRounds changed reads it checks under the lock).
func (d *Declarer) declareOne(ctx context.Context, app, name string, body []byte, target bool) (*plan.Response, string, *httpapi.Refusal) {
	for range maxCheckRounds {
		c, outcome, bad := d.check(ctx, app, name, body, target)
		if bad != nil {
			return nil, outcome, bad
		}
		d.mu.Lock()
		if d.listingPrint(ctx) == c.print {
			defer d.mu.Unlock()
			return d.commit(ctx, app, name, c)
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, outcome, bad := d.check(ctx, app, name, body, target)
	if bad != nil {
		return nil, outcome, bad
	}
	return d.commit(ctx, app, name, c)
}

// maxCheckRounds is how many times a declare checks outside the lock
// before it checks under it (the store changed under it every time).
const maxCheckRounds = 3

// checked is a compiled, accepted declaration and the store it was
// checked against.
type checked struct {
	res  *libdeclare.Result
	old  *plane.Entry
	lerr error
	// print identifies the listing the checks read (0: unreadable).
	print uint64
	// prev is what the store held under this name when the checks read
	// it, for the configuration annotation.
	prev previous
}

// listingPrint identifies the stored documents as they are now: a hash of
// every key and body, 0 when the store cannot be read.
func (d *Declarer) listingPrint(ctx context.Context) uint64 {
	listing, err := d.p.Store.List(ctx)
	if err != nil {
		return 0
	}
	return printOf(listing)
}

func printOf(l store.Listing) uint64 {
	h := fnv.New64a()
	for _, d := range l.Documents {
		_, _ = h.Write([]byte(d.App))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(d.Graph))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write(d.Body)
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64() | 1
}

// check reads the store and compiles the document against it.
func (d *Declarer) check(ctx context.Context, app, name string, body []byte, target bool) (*checked, string, *httpapi.Refusal) {
	// The other graphs and the stored copy of this one; a store that cannot
	// be read skips the cross-graph checks (the store write will then say
	// what is wrong).
	var stored []libdeclare.Stored
	var old *plane.Entry
	var print uint64
	var prev previous
	listing, lerr := d.p.Store.List(ctx)
	if lerr != nil {
		d.p.Log.Warn("declare: the store could not be read; cross-graph checks skipped", "app", app, "graph", name, "error", lerr)
	} else {
		print = printOf(listing)
		stored = plane.StoredOf(listing.Documents)
		prev.known = true
		if doc, ok := listing.Find(app, name); ok {
			old = plane.CompileStored(app, name, doc.Body, doc.Legacy, d.p.Cfg.PlanOptions())
			prev.existed, prev.body = true, doc.Body
			prev.watch = old.Doc != nil && old.Doc.Watching()
		}
	}
	res, err := libdeclare.Compile(libdeclare.Input{
		App: app, Name: name, Body: body, Target: target,
		Facts:   d.p.Facts(ctx),
		Stored:  stored,
		Options: d.p.Cfg.PlanOptions(),
		History: d.p.HasHistory(),
	})
	if bad := plane.CompileRefusal(res, err); bad != nil {
		outcome := outcomeInvalid
		if err == nil && res.Status() == http.StatusConflict {
			outcome = outcomeConflict
		}
		return nil, outcome, bad
	}
	return &checked{res: res, old: old, lerr: lerr, print: print, prev: prev}, outcomeOK, nil
}

// commit provisions and stores a checked declaration; the caller holds
// the declare lock.
func (d *Declarer) commit(ctx context.Context, app, name string, c *checked) (*plan.Response, string, *httpapi.Refusal) {
	res, old, lerr := c.res, c.old, c.lerr
	doc := res.Doc
	if doc.Watch != nil {
		// watch.startedAt belongs to the server: kept across declarations,
		// set on the first one.
		at := d.p.Clock.Now().UnixMilli()
		if old != nil && old.Doc != nil && old.Doc.Watch != nil && old.Doc.Watch.StartedAt != nil {
			at = *old.Doc.Watch.StartedAt
		}
		doc.Watch.StartedAt = &at
	}
	serving := servingNote(app, name, old, lerr)
	if rep, known := d.p.Capabilities(ctx); known && rep.Problem() != "" {
		return nil, outcomeProvisioning, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeBrokerLacks, "%s; nothing was provisioned or stored, and %s", rep.Problem(), serving).
			RetryAfter(10)
	}
	if err := d.provision(ctx, res.Plan); err != nil {
		return nil, outcomeProvisioning, httpapi.Refuse(http.StatusBadGateway, wire.CodeProvisioningFailed, "provisioning failed: %v; %s", err, serving)
	}
	stamped, err := doc.MarshalJSON()
	if err != nil {
		return nil, outcomeStoring, httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "encoding the document for the store failed: %v", err)
	}
	if err := d.p.Store.Put(ctx, app, name, stamped); err != nil {
		return nil, outcomeStoring, httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "storing the document in kv failed: %v; the queues are provisioned but %s; retry the PUT", err, serving)
	}
	d.p.Cat.Put(&plane.Entry{App: app, Graph: name, Body: stamped, Doc: doc, Plan: res.Plan})
	d.annotate(ctx, app, name, c.prev, stamped, doc)
	d.p.Log.Info("declared", "app", app, "graph", name, "version", doc.Version, "v1", res.V1, "warnings", len(res.Findings.Warnings()))
	return res.Response(), outcomeOK, nil
}

// servingNote says what still serves '%s/%s' after this declare failed to
// store: the previous version when the store listing showed one, nothing
// when it showed none, and — when the listing itself failed (readErr) —
// that the previous version, if any, may still serve.
func servingNote(app, name string, old *plane.Entry, readErr error) string {
	switch {
	case old != nil && old.Doc != nil:
		return fmt.Sprintf("still serving version %d (the stored document is unchanged)", old.Doc.Version)
	case readErr != nil:
		return fmt.Sprintf("the stored documents could not be read before this declare (%v), so whether a previous version of '%s/%s' is stored is unknown: if one is, it is unchanged and may still serve", readErr, app, name)
	}
	return fmt.Sprintf("nothing was stored, so no relay serves '%s/%s' until a declare succeeds", app, name)
}

// provision makes the broker ready for p before its document is stored:
// Gate-owned ingress and interior queues configured with the lease, retry
// limit and retention policy (a failure fails the declare), an egress queue
// the broker does not know yet created bare, application-owned queues never
// touched. See package provision.
func (d *Declarer) provision(ctx context.Context, p *plan.Plan) error {
	return provision.Queues(ctx, d.p.Client, p, provision.Options{LeaseSeconds: d.p.Cfg.LeaseSeconds, RetryLimit: d.p.Cfg.RetryLimit, Logger: d.p.Log})
}

// deleteGraph is DELETE /v1/apps/{app}/graphs/{name} (and twins): the
// stored document goes first; relays stop the graph on their next
// reconcile; queues, messages, groups, counters and breaker records stay.
func (d *Declarer) deleteGraph(q *httpapi.Request, target bool) *httpapi.Refusal {
	name := q.Vars["name"]
	if bad := plane.CheckName("graph", name); bad != nil {
		return bad
	}
	ctx := q.Context()
	app := plan.DefaultApplication
	if !q.Flat {
		app = q.Vars["app"]
		if bad := plane.CheckName("app", app); bad != nil {
			return bad
		}
	} else if apps := d.p.Cat.Apps(ctx, name); len(apps) == 1 {
		app = apps[0]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	known := d.p.Cat.Get(ctx, app, name)
	existed, err := d.p.Store.Delete(ctx, app, name)
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "deleting the stored document failed: %v; nothing was stopped, retry the DELETE", err)
	}
	d.p.Cat.Forget(app, name)
	runners := d.p.Cat.Runners(app, name)
	if !existed && known == nil && len(runners) == 0 {
		return httpapi.Refuse(http.StatusNotFound, wire.CodeGraphNotFound, "no graph '%s/%s': nothing is stored or running under that name", app, name).Field("graph")
	}
	out := wire.Deleted{
		OK: true, Application: app, Graph: name,
		Deleted:    existed || known != nil,
		Registered: len(runners) > 0,
		Stopping:   plane.NonNil(runners),
		Message: fmt.Sprintf("the document is deleted; relays stop the graph's stages on their next reconcile (within GATE_RECONCILE_SECONDS, %d s); queues and their messages, consumer groups, counters (until their TTL) and breaker records are kept",
			d.p.Cfg.ReconcileSeconds),
	}
	var stages, kept []string
	if known != nil && known.Plan != nil {
		for _, st := range known.Plan.Stages {
			stages = append(stages, st.Group)
		}
		for _, qu := range known.Plan.Queues {
			kept = append(kept, qu.Name)
		}
	}
	out.Stages = plane.NonNil(stages)
	out.KeptQueues = plane.NonNil(kept)
	d.p.Log.Info("deleted", "app", app, "graph", name, "runningOn", runners)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// syncTargets is PUT /v1/apps/{app}/targets: declare every document of the
// array as a target, then — only when none was refused — delete this
// application's stored one-node graphs the array does not name.
func (d *Declarer) syncTargets(q *httpapi.Request) *httpapi.Refusal {
	app := plane.App(q)
	if bad := plane.CheckName("app", app); bad != nil {
		return bad
	}
	body, bad := q.ReadJSON()
	if bad != nil {
		return bad
	}
	if t := httpapi.FirstByte(body); t != '[' {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeWrongType, "the sync body must be a JSON array of target documents, not %s", httpapi.KindOf(t))
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(body, &docs); err != nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeWrongType, "the sync body: %v", err)
	}
	ctx := q.Context()
	applied, removed := []string{}, []string{}
	versions := map[string]uint32{}
	type refused = wire.SyncRefusal
	refusedList := []refused{}
	named := map[string]bool{}
	for i, doc := range docs {
		var id struct {
			Graph *string `json:"graph"`
			Name  *string `json:"name"`
		}
		_ = json.Unmarshal(doc, &id)
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
		resp, bad := d.declare(ctx, app, name, bytes.Clone(doc), true)
		if bad != nil {
			msg := bad.Message()
			refusedList = append(refusedList, refused{Target: name, Error: msg})
			continue
		}
		applied = append(applied, name)
		versions[name] = resp.Version
	}
	// Each declare took the lock for its own store write; the reaping
	// takes it once, so no other declare lands between its read and its
	// deletes.
	unlock := sync.OnceFunc(d.mu.Unlock)
	d.mu.Lock()
	defer unlock()
	if len(refusedList) == 0 {
		listing, err := d.p.Store.List(ctx)
		switch {
		case err != nil:
			refusedList = append(refusedList, refused{Target: "*", Error: fmt.Sprintf("nothing was reaped: the store could not be read: %v", err)})
		case !listing.Complete:
			refusedList = append(refusedList, refused{Target: "*", Error: "nothing was reaped: the store listing was incomplete"})
		default:
			for _, doc := range listing.Documents {
				if doc.App != app || named[doc.Graph] {
					continue
				}
				e := plane.CompileStored(doc.App, doc.Graph, doc.Body, doc.Legacy, d.p.Cfg.PlanOptions())
				if e.Doc == nil || len(e.Doc.Nodes) != 1 {
					continue
				}
				if _, err := d.p.Store.Delete(ctx, app, doc.Graph); err != nil {
					refusedList = append(refusedList, refused{Target: doc.Graph, Error: fmt.Sprintf("not reaped: %v", err)})
					continue
				}
				d.p.Cat.Forget(app, doc.Graph)
				removed = append(removed, doc.Graph)
			}
		}
	}
	unlock()
	// One wait for every applied document, after the reaping and without
	// the lock: the sync answers once all run or GATE_DECLARE_WAIT_MS passed.
	running, notes := d.awaitRunning(q.Outer, app, versions)
	out := wire.Synced{
		OK: len(refusedList) == 0, Application: app,
		Applied: applied, Removed: removed, Refused: refusedList,
		Running: running,
	}
	if len(notes) > 0 {
		out.RunningNotes = notes
		d.p.Log.Info("synced, but no relay runs some targets yet", "app", app, "targets", notRunning(running))
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}
