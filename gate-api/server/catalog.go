package server

import (
	"bytes"
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
)

// graphKey identifies a declared graph.
type graphKey struct{ app, graph string }

// entry is one stored document, compiled.
type entry struct {
	app, graph string
	body       []byte
	legacy     bool
	doc        *graph.Document
	plan       *plan.Plan
	// problem says why the stored document does not compile; plan is nil.
	problem string
}

// catalog is this process's picture of what is declared (the stored
// documents, compiled) and what runs (the relays' published status). It is
// refreshed from kv on a timer and right after this process's own declares,
// so the hot push path never reads kv to find a graph.
type catalog struct {
	st      *store.Store
	opts    plan.Options
	log     *slog.Logger
	refresh time.Duration
	// eager is the minimum age before a miss triggers a synchronous re-read.
	eager time.Duration

	mu       sync.RWMutex
	graphs   map[graphKey]*entry
	rev      int64
	listed   time.Time
	complete bool
	status   []store.RelayStatus
	statusAt time.Time

	listMu   sync.Mutex // serialises document re-reads
	statusMu sync.Mutex // serialises status re-reads
}

func newCatalog(st *store.Store, opts plan.Options, log *slog.Logger, refresh time.Duration) *catalog {
	return &catalog{st: st, opts: opts, log: log, refresh: refresh, eager: min(refresh/4, 250*time.Millisecond), graphs: map[graphKey]*entry{}, rev: -1}
}

// compileStored compiles a stored document offline (the plan the relays run
// is compiled the same way, with their own knobs).
func compileStored(app, name string, body []byte, legacy bool, opts plan.Options) *entry {
	e := &entry{app: app, graph: name, body: body, legacy: legacy}
	res, err := declare.Compile(declare.Input{App: app, Name: name, Body: body, Target: legacy, Options: opts})
	switch {
	case err != nil:
		e.problem = err.Error()
	case res.Plan == nil:
		e.problem = strings.Join(res.Errors(), "; ")
		e.doc = res.Doc
	default:
		e.doc, e.plan = res.Doc, res.Plan
	}
	return e
}

// run refreshes the catalog every refresh interval until ctx ends.
func (c *catalog) run(ctx context.Context) {
	t := time.NewTicker(c.refresh)
	defer t.Stop()
	for {
		c.syncDocuments(ctx, false)
		c.syncStatus(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// syncDocuments re-reads the stored documents when the change signal moved
// (or always, with force).
func (c *catalog) syncDocuments(ctx context.Context, force bool) error {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	if !force && !c.stale() {
		return nil // another caller re-read while this one waited
	}
	rev, err := c.st.Revision(ctx)
	if err != nil {
		c.log.Warn("reading the declarations' change signal failed", "error", err)
		c.markListed()
		return err
	}
	c.mu.RLock()
	same := rev == c.rev
	c.mu.RUnlock()
	if same && !force {
		c.mu.Lock()
		c.listed = time.Now()
		c.mu.Unlock()
		return nil
	}
	l, err := c.st.List(ctx)
	if err != nil {
		c.log.Warn("listing the stored declarations failed", "error", err)
		c.markListed()
		return err
	}
	c.mu.RLock()
	old := c.graphs
	c.mu.RUnlock()
	next := make(map[graphKey]*entry, len(l.Documents))
	for _, d := range l.Documents {
		k := graphKey{d.App, d.Graph}
		if cur, ok := next[k]; ok && !cur.legacy {
			continue // a graph row wins over a legacy target row
		}
		if e, ok := old[k]; ok && e.legacy == d.Legacy && bytes.Equal(e.body, d.Body) {
			next[k] = e
			continue
		}
		next[k] = compileStored(d.App, d.Graph, d.Body, d.Legacy, c.opts)
	}
	if !l.Complete {
		// Keep what an incomplete listing could not show.
		for k, e := range old {
			if _, ok := next[k]; !ok {
				next[k] = e
			}
		}
	}
	c.mu.Lock()
	c.graphs, c.rev, c.listed, c.complete = next, rev, time.Now(), l.Complete
	c.mu.Unlock()
	return nil
}

// markListed records a read attempt, so a failing broker is retried at
// most once per eager interval (and by the timer) rather than per request.
func (c *catalog) markListed() {
	c.mu.Lock()
	c.listed = time.Now()
	c.mu.Unlock()
}

// syncStatus re-reads the relays' published status.
func (c *catalog) syncStatus(ctx context.Context) error { return c.readStatus(ctx, 0) }

// readStatus re-reads the relays' status unless a read younger than maxAge
// landed while this caller waited (maxAge 0: always).
func (c *catalog) readStatus(ctx context.Context, maxAge time.Duration) error {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	if maxAge > 0 {
		c.mu.RLock()
		fresh := time.Since(c.statusAt) <= maxAge
		c.mu.RUnlock()
		if fresh {
			return nil
		}
	}
	st, err := c.st.Statuses(ctx)
	if err != nil {
		c.log.Warn("reading the relays' status failed", "error", err)
		c.mu.Lock()
		c.statusAt = time.Now() // keep the last picture; retry on the timer
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	c.status, c.statusAt = st, time.Now()
	c.mu.Unlock()
	return nil
}

// put records this process's own declare without waiting for the timer.
// It waits for a re-read in flight, which may have listed before the store
// write, so that the re-read cannot overwrite it.
func (c *catalog) put(e *entry) {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	c.mu.Lock()
	c.graphs[graphKey{e.app, e.graph}] = e
	c.mu.Unlock()
}

// forget records this process's own delete.
func (c *catalog) forget(app, name string) {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	c.mu.Lock()
	delete(c.graphs, graphKey{app, name})
	c.mu.Unlock()
}

func (c *catalog) lookup(app, name string) *entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.graphs[graphKey{app, name}]
}

// stale reports whether the last document read is older than the eager
// re-read threshold.
func (c *catalog) stale() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return time.Since(c.listed) > c.eager
}

// get returns the declared graph app/name, re-reading kv once when the
// cached picture misses and is not fresh (another replica may have just
// declared it).
func (c *catalog) get(ctx context.Context, app, name string) *entry {
	if e := c.lookup(app, name); e != nil {
		return e
	}
	if c.stale() {
		_ = c.syncDocuments(ctx, false)
	}
	return c.lookup(app, name)
}

// apps returns the applications that declare a graph called name, sorted.
func (c *catalog) apps(ctx context.Context, name string) []string {
	find := func() []string {
		c.mu.RLock()
		defer c.mu.RUnlock()
		var out []string
		for k := range c.graphs {
			if k.graph == name {
				out = append(out, k.app)
			}
		}
		sort.Strings(out)
		return out
	}
	out := find()
	if len(out) == 0 && c.stale() {
		_ = c.syncDocuments(ctx, false)
		out = find()
	}
	return out
}

// all returns every declared graph of app ("" = every application).
func (c *catalog) all(app string) []*entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*entry
	for k, e := range c.graphs {
		if app == "" || k.app == app {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].app != out[j].app {
			return out[i].app < out[j].app
		}
		return out[i].graph < out[j].graph
	})
	return out
}

// statuses returns the relays' last published status.
func (c *catalog) statuses() []store.RelayStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.status
}

// runners returns the replicas that run app/name (any version) according
// to the cached status.
func (c *catalog) runners(app, name string) []string {
	var out []string
	for _, r := range c.statuses() {
		if g, ok := r.Graph(app, name); ok && g.Running {
			out = append(out, r.Replica)
		}
	}
	return out
}

// running reports whether some relay replica runs app/name, re-reading the
// status once when the cached picture says no and is not fresh.
func (c *catalog) running(ctx context.Context, app, name string) bool {
	if len(c.runners(app, name)) > 0 {
		return true
	}
	c.mu.RLock()
	old := time.Since(c.statusAt) > c.eager
	c.mu.RUnlock()
	if old {
		_ = c.readStatus(ctx, c.eager)
	}
	return len(c.runners(app, name)) > 0
}

// runsVersion reports whether some relay replica runs version of app/name
// according to the cached status; when none does, failure is the error a
// replica reported for that version's failed start ("" when none did).
func (c *catalog) runsVersion(app, name string, version int64) (ok bool, failure string) {
	for _, r := range c.statuses() {
		g, found := r.Graph(app, name)
		if !found || g.Version != version {
			continue
		}
		if g.Running {
			return true, ""
		}
		if g.Error != "" {
			failure = r.Replica + ": " + g.Error
		}
	}
	return false, failure
}
