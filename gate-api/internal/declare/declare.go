package declare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	libdeclare "github.com/queen-mq/gate/libs/declare"
	libdiff "github.com/queen-mq/gate/libs/diff"
	"github.com/queen-mq/gate/libs/history"
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
			Help: "Declarations (PUT of a graph or target, each document of a sync, a restore; not dry runs), by outcome: ok, invalid (422), conflict (409), precondition (412), unreadable (400/413/415), provisioning (502), storing (502).",
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
	d.versionRoutes(r)
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
	outcomePrecondition = "precondition"
)

// putGraph is PUT /v1/apps/{app}/graphs/{name} (and the target and flat
// twins): the preconditions against the stored document, then compile,
// provision, store under the declare lock; then, without the lock, wait
// (GATE_DECLARE_WAIT_MS) for a relay to run the stored version; answer the
// compiled plan, whether it runs, its ETag and what it changed. With
// ?dryRun=true everything up to the store write runs and nothing is
// provisioned, stored or recorded: the answer is the plan and the diff.
func (d *Declarer) putGraph(q *httpapi.Request, target bool) *httpapi.Refusal {
	dry, bad := DryRunOf(q)
	if bad != nil {
		return bad
	}
	cond, bad := httpapi.ReadPreconditions(q.R.Header)
	if bad != nil {
		return bad
	}
	body, bad := q.ReadJSON()
	if bad != nil {
		if !dry {
			d.declares.WithLabelValues(outcomeUnreadable).Inc()
		}
		return bad
	}
	app, name := plane.App(q), q.Vars["name"]
	j := job{app: app, name: name, body: body, target: target, cond: cond, dryRun: dry, actor: plane.ActorOf(q.Context()), action: wire.ActionDeclare}
	return d.answer(q, j)
}

// answer runs j and writes its answer: the dry run's plan and diff, or the
// stored declaration once a relay runs it (or the wait ended).
func (d *Declarer) answer(q *httpapi.Request, j job) *httpapi.Refusal {
	r, bad := d.declare(q.Context(), j)
	if bad != nil {
		return bad
	}
	if j.dryRun {
		out := wire.DryRun{PlanResponse: *r.resp, DryRun: true, ETag: r.etag, Diff: r.diff}
		if r.storedETag != "" {
			out.StoredETag = &r.storedETag
		}
		httpapi.WriteJSON(q.W, http.StatusOK, out)
		return nil
	}
	running, notes := d.awaitRunning(q.Outer, j.app, map[string]uint32{j.name: r.resp.Version})
	if !running[j.name] {
		d.p.Log.Info("declared, but no relay runs it yet", "app", j.app, "graph", j.name, "version", r.resp.Version, "note", notes[j.name])
	}
	q.W.Header().Set("ETag", r.etag)
	httpapi.WriteJSON(q.W, http.StatusOK, wire.Declared{PlanResponse: *r.resp, Running: running[j.name], RunningNote: notes[j.name],
		ETag: r.etag, Diff: r.diff, Revision: r.revision})
	return nil
}

// DryRunOf reads a declare route's query: dryRun=true or dryRun=false,
// given at most once, and nothing else. Any other parameter is refused
// (422 invalid-query naming it) rather than ignored: a misspelt dryRun must
// never store.
func DryRunOf(q *httpapi.Request) (bool, *httpapi.Refusal) {
	dry := false
	for k, v := range q.Query() {
		if k != "dryRun" {
			return false, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "the query parameter %.40q is not one this route reads: the only one is dryRun=true (compile, check and diff without storing); nothing was changed", k).Field(k)
		}
		if len(v) != 1 {
			return false, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "dryRun is given %d times: give it once; nothing was changed", len(v)).Field("dryRun")
		}
		switch v[0] {
		case "true":
			dry = true
		case "false":
		default:
			return false, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "dryRun=%.40q is neither true nor false: send dryRun=true to check and diff without storing; nothing was changed", v[0]).Field("dryRun")
		}
	}
	return dry, nil
}

// job is one declaration through the pipeline.
type job struct {
	app, name string
	// body is the declared document; a restore builds it from restore
	// and the stored document instead.
	body   []byte
	target bool
	// cond are the request's preconditions, checked against the stored
	// document the checks read.
	cond httpapi.Preconditions
	// dryRun stops before anything is provisioned, stored or recorded.
	dryRun bool
	// actor, action and restore are what the change history records.
	actor   plane.Actor
	action  string
	restore *history.GraphVersion
}

// result is a declaration checked (a dry run) or stored.
type result struct {
	resp *plan.Response
	// etag is the document's entity tag as stored (or as it would be);
	// storedETag the stored one it replaced or was compared with ("" when
	// nothing was stored).
	etag, storedETag string
	diff             wire.Diff
	// revision is the history revision recorded (nil: none); pending is
	// the revision to record once the declare lock is released.
	revision *int64
	pending  *history.GraphVersion
}

// declare runs the declare pipeline for one job and counts its outcome (a
// dry run is not a declaration and is not counted). It takes the declare
// lock itself, for provisioning and storing only: the checks run before it
// (see declareOne).
func (d *Declarer) declare(ctx context.Context, j job) (*result, *httpapi.Refusal) {
	r, outcome, bad := d.declareOne(ctx, j)
	if !j.dryRun {
		d.declares.WithLabelValues(outcome).Inc()
	}
	return r, bad
}

// declareOne checks the document against the store as it was read,
// without the declare lock, so a document that is slow to check holds up
// no other declare; then, under the lock, it re-reads the store and
// provisions and stores only when nothing changed since (else it checks
// again; after maxCheckRounds changed reads it checks under the lock).
// The store write is conditional on the document's kv row as the checks
// read it, so a declare through another gate-api process that stored
// meanwhile is noticed too: the checks (the preconditions first) run again
// against what it stored (an older version is then refused by
// version-order, a stale If-Match by 412), at most maxStoreRounds times.
// A dry run stops after the first check.
func (d *Declarer) declareOne(ctx context.Context, j job) (*result, string, *httpapi.Refusal) {
	// A broker that lacks what Gate needs (kv, the depth route, the
	// cumulative ack) is named before anything is read, provisioned or
	// stored: every later step would fail against it, less clearly.
	if rep, known := d.p.Capabilities(ctx); known && rep.Problem() != "" {
		return nil, outcomeProvisioning, httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeBrokerLacks, "%s; nothing was provisioned or stored: fix the broker, then retry the PUT", rep.Problem()).
			RetryAfter(10)
	}
	if j.dryRun {
		c, outcome, bad := d.check(ctx, j)
		if bad == nil && c.lerr != nil {
			outcome, bad = outcomeStoring, httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "the stored documents could not be read (%v), so this dry run cannot be checked or diffed against the stored version: nothing was provisioned or stored; retry", c.lerr)
		}
		if bad != nil {
			return nil, outcome, bad
		}
		return &result{resp: c.res.Response(), etag: c.etag, storedETag: c.storedETag, diff: c.diff}, outcomeOK, nil
	}
	for round := range maxCheckRounds + maxStoreRounds {
		locked := round >= maxCheckRounds
		if locked {
			d.mu.Lock()
		}
		c, outcome, bad := d.check(ctx, j)
		if bad == nil && c.lerr != nil {
			outcome, bad = outcomeStoring, httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "the stored documents could not be read (%v), so this declaration cannot be checked against the stored version: nothing was provisioned or stored; %s; retry the PUT", c.lerr, d.servingNote(j.app, j.name, nil, c.lerr))
		}
		if bad != nil {
			if locked {
				d.mu.Unlock()
			}
			return nil, outcome, bad
		}
		if !locked {
			d.mu.Lock()
			if d.storePrint(ctx) != c.print {
				d.mu.Unlock()
				continue
			}
		}
		r, outcome, bad, lost := d.commit(ctx, j, c)
		d.mu.Unlock()
		if r != nil && r.pending != nil {
			// Recorded without the declare lock: a slow history holds up
			// no other declare.
			r.revision = d.record(ctx, *r.pending)
		}
		if !lost {
			return r, outcome, bad
		}
		d.p.Log.Info("declare: the stored document changed while this declare was checked (another gate-api process); checking again", "app", j.app, "graph", j.name)
	}
	return nil, outcomeConflict, httpapi.Refuse(http.StatusConflict, wire.CodeDeclareContended, "the stored document of '%s/%s' changed %d times while this declaration was checked (declares through other gate-api processes): nothing was stored; retry the PUT, or route the declarations of one graph to one gate-api", j.app, j.name, maxStoreRounds)
}

// maxCheckRounds is how many times a declare checks outside the lock
// before it checks under it (the store changed under it every time).
const maxCheckRounds = 3

// maxStoreRounds is how many conditional store writes a declare tries
// before it answers declare-contended: each lost one means another
// process stored this graph meanwhile.
const maxStoreRounds = 16

// checked is a compiled, accepted declaration and the store it was
// checked against.
type checked struct {
	res  *libdeclare.Result
	old  *plane.Entry
	lerr error
	// print identifies the store as the checks read it: the change
	// signal's revision + 1 (0: unreadable).
	print uint64
	// prev is what the store held under this name when the checks read
	// it, for the configuration annotation.
	prev previous
	// row is the kv row of the graph's document as the checks read it
	// (store.Document.Row; 0: none), the store write's precondition.
	row int64
	// stamped is the document as it would be stored (watch.startedAt
	// set), etag its entity tag; storedETag is the stored document's ("":
	// none); diff what storing it changes.
	stamped          []byte
	etag, storedETag string
	diff             wire.Diff
}

// storePrint identifies the stored documents as they are now: the change
// signal's revision + 1, which every document write and delete moves (0
// when it cannot be read). One short kv read, whatever the number of
// graphs.
func (d *Declarer) storePrint(ctx context.Context) uint64 {
	rev, err := d.p.Store.Revision(ctx)
	if err != nil {
		return 0
	}
	return uint64(rev) + 1
}

// readStore reads what a declare of app/name is checked against, in this
// order: the change signal's revision, the graph's stored document (its
// row read fresh, for the preconditions and the conditional write), and
// the catalog caught up to that revision (the other graphs, by their
// change rows: see plane.Catalog.CatchUp). It costs the same at 10,000
// graphs as at 10.
func (d *Declarer) readStore(ctx context.Context, app, name string) (print uint64, doc store.Document, found bool, err error) {
	rev, err := d.p.Store.Revision(ctx)
	if err != nil {
		return 0, store.Document{}, false, err
	}
	if doc, found, err = d.p.Store.Get(ctx, app, name); err != nil {
		return 0, store.Document{}, false, err
	}
	if err := d.p.Cat.CatchUp(ctx, rev); err != nil {
		return 0, store.Document{}, false, fmt.Errorf("reading the other stored graphs: %w", err)
	}
	return uint64(rev) + 1, doc, found, nil
}

// related answers the compiler's cross-graph rules for a declare of
// app/name: the other graphs that share a link with the document (from
// the catalog's index), then the stored copy of this one (old, as the
// checks read it; nil: none).
func (d *Declarer) related(app, name string, old *plane.Entry, oldBody []byte) func([]string) []libdeclare.Stored {
	return func(links []string) []libdeclare.Stored {
		out := []libdeclare.Stored{}
		for _, e := range d.p.Cat.Related(links, plane.GraphKey{App: app, Graph: name}) {
			out = append(out, libdeclare.Stored{App: e.App, Name: e.Graph, Doc: e.Doc, Body: e.Body})
		}
		if old != nil {
			out = append(out, libdeclare.Stored{App: app, Name: name, Doc: old.Doc, Body: oldBody})
		}
		return out
	}
}

// check reads the store, holds the job's preconditions against the stored
// document (before the body is compiled, as RFC 9110 §13.2.1 orders it),
// compiles the document against the store and diffs it against the stored
// one.
func (d *Declarer) check(ctx context.Context, j job) (*checked, string, *httpapi.Refusal) {
	app, name := j.app, j.name
	// The other graphs and the stored copy of this one; a store that cannot
	// be read skips the cross-graph checks (the store write will then say
	// what is wrong).
	var related func([]string) []libdeclare.Stored
	var old *plane.Entry
	var prev previous
	var row int64
	var storedETag string
	print, sdoc, found, lerr := d.readStore(ctx, app, name)
	if lerr != nil {
		d.p.Log.Warn("declare: the store could not be read; cross-graph checks skipped", "app", app, "graph", name, "error", lerr)
		if j.cond.Any() || j.restore != nil {
			// Nothing to hold the preconditions against (or to restore
			// over): the caller answers 502.
			return &checked{lerr: lerr}, outcomeStoring, nil
		}
	} else {
		prev.known = true
		if found {
			old = plane.CompileStored(app, name, sdoc.Body, sdoc.Legacy, d.p.Cfg.PlanOptions())
			prev.existed, prev.body = true, sdoc.Body
			prev.watch = old.Doc != nil && old.Doc.Watching()
			storedETag = sdoc.ETag()
			if !sdoc.Legacy {
				// A legacy v1 row lives under another key: the graph's
				// own row is absent then.
				row = sdoc.Row
			}
		}
		if v := j.cond.Evaluate(storedETag); v != httpapi.Proceed {
			return nil, outcomePrecondition, d.p.PreconditionFailed(ctx, app, name, j.cond, v, storedETag, storedVersion(old))
		}
		related = d.related(app, name, old, sdoc.Body)
	}
	body := j.body
	if j.restore != nil {
		var bad *httpapi.Refusal
		if body, bad = restoredBody(j.restore, old); bad != nil {
			return nil, outcomeInvalid, bad
		}
	}
	res, err := libdeclare.Compile(libdeclare.Input{
		App: app, Name: name, Body: body, Target: j.target,
		Facts:   d.p.Facts(ctx),
		Related: related,
		Options: d.p.Cfg.PlanOptions(),
		History: d.p.HasHistory(),
	})
	if bad := plane.CompileRefusal(res, err); bad != nil {
		outcome := outcomeInvalid
		if err == nil && res.Status() == http.StatusConflict {
			outcome = outcomeConflict
			// A conflict with the stored copy (version-order,
			// version-bump) says what is stored and running.
			bad = d.withStored(bad, app, name, old)
		}
		if j.restore != nil {
			bad = restoreRefusal(bad, j.restore)
		}
		return nil, outcome, bad
	}
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
	stamped, err := doc.MarshalJSON()
	if err != nil {
		return nil, outcomeStoring, httpapi.Refuse(http.StatusInternalServerError, wire.CodeInternalError, "encoding the document for the store failed: %v", err)
	}
	from := libdiff.Side{}
	if old != nil {
		from = libdiff.Side{Doc: old.Doc, Plan: old.Plan, Body: old.Body}
		if old.Doc == nil {
			// A stored body no parser reads: the diff counts it as
			// nothing, but it is stored and is replaced.
			from = libdiff.Side{}
		}
	}
	c := &checked{res: res, old: old, lerr: lerr, print: print, prev: prev, row: row,
		stamped: stamped, etag: store.ETag(stamped), storedETag: storedETag,
		diff: libdiff.Compute(from, libdiff.Side{Doc: doc, Plan: res.Plan, Body: stamped})}
	return c, outcomeOK, nil
}

// storedVersion is the version of a stored document (nil when nothing is
// stored or it cannot be read).
func storedVersion(old *plane.Entry) *int64 {
	if old == nil || old.Doc == nil {
		return nil
	}
	return new(int64(old.Doc.Version))
}

// commit provisions and stores a checked declaration and records it in the
// change history; the caller holds the declare lock. lost is true when the
// store write lost its precondition (another process stored or deleted the
// document since the checks read it): nothing was stored and the caller
// checks again.
func (d *Declarer) commit(ctx context.Context, j job, c *checked) (r *result, outcome string, bad *httpapi.Refusal, lost bool) {
	app, name := j.app, j.name
	res, old, lerr := c.res, c.old, c.lerr
	doc := res.Doc
	serving := d.servingNote(app, name, old, lerr)
	if err := d.provision(ctx, res.Plan); err != nil {
		what := fmt.Sprintf("provisioning failed: %v", err)
		var pe *provision.Error
		if errors.As(err, &pe) {
			what = fmt.Sprintf("provisioning failed at the %s queue %s (%v)", pe.Kind, pe.Queue, pe.Err)
			if len(pe.Configured) > 0 {
				what += fmt.Sprintf("; this attempt had configured %s before it (they stay configured and hold nothing until a stored version names them)", strings.Join(pe.Configured, ", "))
			}
		}
		return nil, outcomeProvisioning, d.withStored(httpapi.Refuse(http.StatusBadGateway, wire.CodeProvisioningFailed, "version %d was not stored: %s; %s; retry the PUT once the broker accepts the configure", doc.Version, what, serving).Queue(queueOf(pe)), app, name, old), false
	}
	if err := d.p.Store.PutIf(ctx, app, name, c.stamped, c.row); err != nil {
		if errors.Is(err, store.ErrChanged) {
			return nil, "", nil, true
		}
		return nil, outcomeStoring, d.withStored(httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "version %d was not stored: storing the document in kv failed (%v); its queues are provisioned, and %s; retry the PUT", doc.Version, err, serving), app, name, old), false
	}
	d.p.Cat.Put(&plane.Entry{App: app, Graph: name, Body: c.stamped, Doc: doc, Plan: res.Plan})
	d.annotate(ctx, app, name, c.prev, c.stamped, doc)
	r = &result{resp: res.Response(), etag: c.etag, storedETag: c.storedETag, diff: c.diff}
	if c.diff.Changed {
		v := history.GraphVersion{App: app, Graph: name, At: d.p.Clock.Now().UnixMilli(),
			ChangedBy: j.actor.Who, Via: j.actor.Via, Action: j.action,
			Version: new(int64(doc.Version)), ETag: c.etag, Document: c.stamped, Diff: c.diff}
		if j.restore != nil {
			v.RestoredFrom = &j.restore.Revision
		}
		r.pending = &v
	}
	d.p.Log.Info("declared", "app", app, "graph", name, "version", doc.Version, "v1", res.V1, "warnings", len(res.Findings.Warnings()), "actor", j.actor.Who)
	return r, outcomeOK, nil, false
}

// servingNote says what '%s/%s' still is after a declare that stored
// nothing: the stored version (when the listing showed one) and which
// relay replicas report running it — or that none does, or that the
// listing itself failed (readErr), so whether a previous version is stored
// is unknown.
func (d *Declarer) servingNote(app, name string, old *plane.Entry, readErr error) string {
	switch {
	case old != nil && old.Doc != nil:
		v := int64(old.Doc.Version)
		running := d.p.RunningVersion(app, name, v)
		runs := "no gate-relay replica reports running it, so nothing moves until one does"
		if len(running) > 0 {
			runs = "gate-relay " + plural(len(running), "replica ", "replicas ") + strings.Join(running, ", ") + plural(len(running), " runs it", " run it")
		}
		return fmt.Sprintf("the stored document is unchanged at version %d, and %s", v, runs)
	case readErr != nil:
		return fmt.Sprintf("the stored documents could not be read before this declare (%v), so whether a previous version of '%s/%s' is stored is unknown: if one is, it is unchanged and may still serve", readErr, app, name)
	}
	return fmt.Sprintf("nothing is stored under '%s/%s', so no relay serves it until a declare succeeds", app, name)
}

// withStored adds to a failed declare's refusal the version still stored
// and the replicas running it.
func (d *Declarer) withStored(e *httpapi.Refusal, app, name string, old *plane.Entry) *httpapi.Refusal {
	if old == nil || old.Doc == nil {
		return e
	}
	v := int64(old.Doc.Version)
	return e.StoredVersion(v, d.p.RunningVersion(app, name, v))
}

// queueOf is the queue a provisioning error names ("" when none).
func queueOf(e *provision.Error) string {
	if e == nil {
		return ""
	}
	return e.Queue
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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
// preconditions against the stored document, then the stored document goes
// first, conditional on the row they were held against; relays stop the
// graph on their next reconcile; queues, messages, groups, counters and
// breaker records stay. The deletion is recorded in the change history.
func (d *Declarer) deleteGraph(q *httpapi.Request, target bool) *httpapi.Refusal {
	name := q.Vars["name"]
	if bad := plane.CheckName("graph", name); bad != nil {
		return bad
	}
	if k, bad := onlyNoQuery(q); bad != nil {
		return bad.Field(k)
	}
	cond, bad := httpapi.ReadPreconditions(q.R.Header)
	if bad != nil {
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
	unlock := sync.OnceFunc(d.mu.Unlock)
	defer unlock()
	known := d.p.Cat.Get(ctx, app, name)
	var doc store.Document
	existed := false
	for round := 0; ; round++ {
		var found bool
		var err error
		doc, found, err = d.p.Store.Get(ctx, app, name)
		if err != nil {
			return httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "reading the stored document failed: %v; nothing was deleted or stopped, retry the DELETE", err)
		}
		if !found {
			break
		}
		var old *plane.Entry
		etag := doc.ETag()
		if v := cond.Evaluate(etag); v != httpapi.Proceed {
			old = plane.CompileStored(app, name, doc.Body, doc.Legacy, d.p.Cfg.PlanOptions())
			return d.p.PreconditionFailed(ctx, app, name, cond, v, etag, storedVersion(old))
		}
		err = d.p.Store.DeleteIf(ctx, app, name, doc.Legacy, doc.Row)
		if err == nil {
			existed = true
			break
		}
		if !errors.Is(err, store.ErrChanged) {
			return httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "deleting the stored document failed: %v; nothing was stopped, retry the DELETE", err)
		}
		if round+1 >= maxStoreRounds {
			return httpapi.Refuse(http.StatusConflict, wire.CodeDeclareContended, "the stored document of '%s/%s' changed %d times while this DELETE read it (declares through other gate-api processes): nothing was deleted; retry the DELETE", app, name, maxStoreRounds)
		}
		// Another process stored or deleted it since the read: read it
		// again and hold the preconditions against what is there now.
	}
	if !existed && cond.Any() && (known != nil || len(d.p.Cat.Runners(app, name)) > 0) {
		// Nothing is stored, though something still runs or is cached:
		// If-Match cannot hold, If-None-Match: * does (RFC 9110 §13.1).
		if v := cond.Evaluate(""); v != httpapi.Proceed {
			return d.p.PreconditionFailed(ctx, app, name, cond, v, "", nil)
		}
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
	unlock()
	if existed {
		old := plane.CompileStored(app, name, doc.Body, doc.Legacy, d.p.Cfg.PlanOptions())
		from := libdiff.Side{Doc: old.Doc, Plan: old.Plan, Body: doc.Body}
		actor := plane.ActorOf(ctx)
		diff := libdiff.Compute(from, libdiff.Side{})
		out.Revision = d.record(ctx, history.GraphVersion{App: app, Graph: name, At: d.p.Clock.Now().UnixMilli(),
			ChangedBy: actor.Who, Via: actor.Via, Action: wire.ActionDelete, Diff: diff})
	}
	d.p.Log.Info("deleted", "app", app, "graph", name, "runningOn", runners, "actor", plane.ActorOf(ctx).Who)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// onlyNoQuery refuses any query parameter on a route that reads none (a
// DELETE has no dry run: a misspelt one must never delete); it returns the
// parameter's name for the refusal's field.
func onlyNoQuery(q *httpapi.Request) (string, *httpapi.Refusal) {
	for k := range q.Query() {
		return k, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "a DELETE reads no query parameter (%.40q given; it has no dry run): nothing was deleted. Send the DELETE without it, with If-Match: the ETag you reviewed", k)
	}
	return "", nil
}

// noSyncConditions refuses what a sync cannot honour: a precondition (it
// declares many targets, each with its own document) or a query (no dry
// run of a sync exists, and it must never store when one was meant).
func noSyncConditions(q *httpapi.Request) *httpapi.Refusal {
	for _, h := range []string{"If-Match", "If-None-Match", "If-Unmodified-Since", "If-Modified-Since", "If-Range"} {
		if _, ok := q.R.Header[h]; ok {
			return httpapi.Refuse(http.StatusBadRequest, wire.CodeInvalidPrecondition, "%s is not evaluated on the sync, which declares every target of its array: send each target with PUT …/targets/{name} and its own If-Match (or If-None-Match: *) instead; nothing was changed", h).Field(h)
		}
	}
	for k := range q.Query() {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidQuery, "the sync reads no query parameter (%.40q given; it has no dry run): dry-run each target with PUT …/targets/{name}?dryRun=true; nothing was changed", k).Field(k)
	}
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
	if bad := noSyncConditions(q); bad != nil {
		return bad
	}
	actor := plane.ActorOf(q.Context())
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
		r, bad := d.declare(ctx, job{app: app, name: name, body: bytes.Clone(doc), target: true, actor: actor, action: wire.ActionSync})
		if bad != nil {
			msg := bad.Message()
			refusedList = append(refusedList, refused{Target: name, Error: msg})
			continue
		}
		applied = append(applied, name)
		versions[name] = r.resp.Version
	}
	// Each declare took the lock for its own store write; the reaping
	// takes it once, so no other declare lands between its read and its
	// deletes.
	unlock := sync.OnceFunc(d.mu.Unlock)
	d.mu.Lock()
	defer unlock()
	var reaped []history.GraphVersion
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
				reaped = append(reaped, history.GraphVersion{App: app, Graph: doc.Graph, At: d.p.Clock.Now().UnixMilli(),
					ChangedBy: actor.Who, Via: actor.Via, Action: wire.ActionDelete,
					Diff: libdiff.Compute(libdiff.Side{Doc: e.Doc, Plan: e.Plan, Body: doc.Body}, libdiff.Side{})})
			}
		}
	}
	unlock()
	for _, v := range reaped {
		d.record(ctx, v)
	}
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
