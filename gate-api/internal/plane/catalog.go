package plane

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
)

// GraphKey identifies a declared graph.
type GraphKey struct{ App, Graph string }

// Entry is one stored document, compiled.
type Entry struct {
	// App and Graph name it; Body is the stored document, Legacy true for
	// a v1 target row ("spec:").
	App, Graph string
	Body       []byte
	Legacy     bool
	// Doc is the document as read (nil when it could not be); Plan is the
	// compiled plan, nil when the document does not compile.
	Doc  *graph.Document
	Plan *plan.Plan
	// Problem says why the stored document does not compile; Plan is nil.
	Problem string
}

// Catalog is this process's picture of what is declared (the stored
// documents, compiled) and what runs (the relays' published status). It is
// refreshed from kv on a timer (Run) and right after this process's own
// declares, so the hot push path never reads kv to find a graph.
type Catalog struct {
	st *store.Store
	// statusRd reads the relays' status rows, re-reading the graph rows
	// only when a replica's header says they changed.
	statusRd *store.StatusReader
	opts     plan.Options
	log      *slog.Logger
	clock    clock.Clock
	refresh  time.Duration
	// eager is the minimum age before a miss triggers a synchronous re-read.
	eager time.Duration

	mu     sync.RWMutex
	graphs map[GraphKey]*Entry
	// links indexes graphs by their cross-graph links (declare.Links):
	// link → the graphs that have it, so a declare checks the graphs
	// related to its document, not every graph. Kept with graphs.
	links map[string]map[GraphKey]struct{}
	// sorted is graphs in (application, graph) order, built on first use
	// after a change (nil until then) and never modified once built:
	// callers may keep it.
	sorted []*Entry
	// gen counts the changes of graphs (Generation).
	gen      uint64
	rev      int64
	listed   time.Time
	complete bool
	status   []store.RelayStatus
	// runs indexes status by graph, rebuilt on every status read, so a
	// lookup costs the replicas that run the graph, not every graph of
	// every replica.
	// At is left out of runs (re-indexed only when a replica's graph
	// rows moved) and filled from at, each replica's newest header time.
	runs     map[GraphKey][]GraphRun
	at       map[string]int64
	statusAt time.Time

	listMu   sync.Mutex // serialises document re-reads
	statusMu sync.Mutex // serialises status re-reads
}

// CatalogConfig is what a Catalog reads and how often.
type CatalogConfig struct {
	// Store holds the declarations and the relays' status.
	Store *store.Store
	// Options are the compile knobs of the stored documents.
	Options plan.Options
	// Log receives the failed re-reads; nil means slog.Default().
	Log *slog.Logger
	// Clock times the refresh and the re-reads; nil means the wall clock.
	Clock clock.Clock
	// Refresh is how often Run re-reads (GATE_API_REFRESH_MS).
	Refresh time.Duration
}

// WithDefaults fills the zero fields that have a default.
func (c CatalogConfig) WithDefaults() CatalogConfig {
	c.Log = cmp.Or(c.Log, slog.Default())
	c.Clock = clock.Or(c.Clock)
	return c
}

// followTries is how many times a re-read follows the change rows before
// it lists every document instead.
const followTries = 3

// maxEager bounds how long a miss waits before it may re-read kv.
const maxEager = 250 * time.Millisecond

// NewCatalog returns an empty catalog; Run (or SyncDocuments and
// SyncStatus) fills it.
func NewCatalog(cfg CatalogConfig) *Catalog {
	cfg = cfg.WithDefaults()
	return &Catalog{st: cfg.Store, statusRd: cfg.Store.NewStatusReader(store.StatusReaderConfig{Clock: cfg.Clock}), opts: cfg.Options, log: cfg.Log, clock: cfg.Clock, refresh: cfg.Refresh,
		eager: min(cfg.Refresh/4, maxEager), graphs: map[GraphKey]*Entry{}, links: map[string]map[GraphKey]struct{}{}, rev: -1}
}

// CompileStored compiles a stored document offline (the plan the relays
// run is compiled the same way, with their own knobs).
func CompileStored(app, name string, body []byte, legacy bool, opts plan.Options) *Entry {
	e := &Entry{App: app, Graph: name, Body: body, Legacy: legacy}
	res, err := declare.Compile(declare.Input{App: app, Name: name, Body: body, Target: legacy, Options: opts})
	switch {
	case err != nil:
		e.Problem = err.Error()
	case res.Plan == nil:
		e.Problem = strings.Join(res.Errors(), "; ")
		e.Doc = res.Doc
	default:
		e.Doc, e.Plan = res.Doc, res.Plan
	}
	return e
}

// Run refreshes the catalog every refresh interval until ctx ends.
func (c *Catalog) Run(ctx context.Context) {
	t := c.clock.NewTicker(c.refresh)
	defer t.Stop()
	for {
		_ = c.SyncDocuments(ctx, false)
		_ = c.SyncStatus(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// SyncDocuments re-reads the stored documents when the change signal moved
// (or always, with force).
func (c *Catalog) SyncDocuments(ctx context.Context, force bool) error {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	if !force && !c.Stale() {
		return nil // another caller re-read while this one waited
	}
	rev, err := c.st.Revision(ctx)
	if err != nil {
		c.log.Warn("reading the declarations' change signal failed", "error", err)
		c.markListed()
		return err
	}
	return c.syncTo(ctx, rev, force)
}

// CatchUp brings the catalog to at least revision rev of the change
// signal (as the caller read it): nothing when it is there already, else
// the change rows since the revision it has and the documents they name
// (a full listing only when a row is missing). A declare reads the
// revision, then checks against the catalog caught up to it: a PUT costs
// what changed, not every graph.
func (c *Catalog) CatchUp(ctx context.Context, rev int64) error {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	c.mu.RLock()
	had := c.rev
	c.mu.RUnlock()
	if had >= 0 && had >= rev {
		return nil
	}
	return c.syncTo(ctx, rev, false)
}

// syncTo applies what changed up to revision rev (listMu held): by the
// change rows when it can, else by listing every document.
func (c *Catalog) syncTo(ctx context.Context, rev int64, force bool) error {
	c.mu.RLock()
	same, had := rev == c.rev, c.rev
	c.mu.RUnlock()
	if same && !force {
		c.mu.Lock()
		c.listed = c.clock.Now()
		c.mu.Unlock()
		return nil
	}
	if !force && had >= 0 && rev > had {
		// A writer bumps the revision and then writes its change row, one
		// kv call later: a read between the two sees a gap that closes at
		// once. Looking again a few times costs a short read each; listing
		// every document costs every graph.
		for range followTries {
			if c.follow(ctx, had, rev) {
				return nil
			}
		}
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
	next := make(map[GraphKey]*Entry, len(l.Documents))
	for _, d := range l.Documents {
		k := GraphKey{d.App, d.Graph}
		if cur, ok := next[k]; ok && !cur.Legacy {
			continue // a graph row wins over a legacy target row
		}
		if e, ok := old[k]; ok && e.Legacy == d.Legacy && bytes.Equal(e.Body, d.Body) {
			next[k] = e
			continue
		}
		next[k] = CompileStored(d.App, d.Graph, d.Body, d.Legacy, c.opts)
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
	if !sameEntries(c.graphs, next) {
		// A re-read that found what this process already had (its own
		// declare, put before the change signal moved) changes nothing.
		c.graphs, c.sorted = next, nil
		c.links = indexLinks(next)
		c.gen++
	}
	c.rev, c.listed, c.complete = rev, c.clock.Now(), l.Complete
	c.mu.Unlock()
	return nil
}

// follow applies the changes from revision had to rev by their change
// rows, reading only the documents they name: a PUT costs this process one
// short read whatever the number of graphs. It reports false (and changes
// nothing) when a revision's row is missing or a read fails: the caller
// then lists everything.
func (c *Catalog) follow(ctx context.Context, had, rev int64) bool {
	changes, err := c.st.Changes(ctx, had)
	if err != nil {
		return false
	}
	latest := map[GraphKey]bool{}
	next := had
	for _, ch := range changes {
		if ch.Rev > rev {
			break
		}
		if ch.Rev != next+1 {
			return false
		}
		next = ch.Rev
		latest[GraphKey{ch.App, ch.Graph}] = true
	}
	if next != rev {
		return false
	}
	// Read and compile what changed first, then apply it all at once
	// (listMu keeps other writers out meanwhile): the catalog is never
	// half-updated, and a PUT costs the graphs it changed, not a copy of
	// every graph.
	updated := make(map[GraphKey]*Entry, len(latest)) // nil entry: deleted
	for k := range latest {
		d, found, err := c.st.Get(ctx, k.App, k.Graph)
		if err != nil {
			return false
		}
		if !found {
			updated[k] = nil
			continue
		}
		if e := c.Lookup(k.App, k.Graph); e != nil && e.Legacy == d.Legacy && bytes.Equal(e.Body, d.Body) {
			continue
		}
		updated[k] = CompileStored(d.App, d.Graph, d.Body, d.Legacy, c.opts)
	}
	c.mu.Lock()
	changed := false
	for k, e := range updated {
		if e == nil {
			if _, ok := c.graphs[k]; ok {
				c.unsetLocked(k)
				changed = true
			}
			continue
		}
		c.setLocked(k, e)
		changed = true
	}
	if changed {
		c.sorted = nil
		c.gen++
	}
	c.rev, c.listed = rev, c.clock.Now()
	c.mu.Unlock()
	return true
}

// setLocked stores e under k and re-indexes its links (c.mu held).
func (c *Catalog) setLocked(k GraphKey, e *Entry) {
	if old, ok := c.graphs[k]; ok {
		unindex(c.links, k, old)
	}
	c.graphs[k] = e
	index(c.links, k, e)
}

// unsetLocked removes k and its links (c.mu held).
func (c *Catalog) unsetLocked(k GraphKey) {
	if old, ok := c.graphs[k]; ok {
		unindex(c.links, k, old)
		delete(c.graphs, k)
	}
}

// indexLinks is the link index of graphs.
func indexLinks(graphs map[GraphKey]*Entry) map[string]map[GraphKey]struct{} {
	out := make(map[string]map[GraphKey]struct{}, len(graphs))
	for k, e := range graphs {
		index(out, k, e)
	}
	return out
}

func index(links map[string]map[GraphKey]struct{}, k GraphKey, e *Entry) {
	for _, l := range declare.Links(e.Doc) {
		set := links[l]
		if set == nil {
			set = map[GraphKey]struct{}{}
			links[l] = set
		}
		set[k] = struct{}{}
	}
}

func unindex(links map[string]map[GraphKey]struct{}, k GraphKey, e *Entry) {
	for _, l := range declare.Links(e.Doc) {
		if set := links[l]; set != nil {
			delete(set, k)
			if len(set) == 0 {
				delete(links, l)
			}
		}
	}
}

// Related returns the declared graphs other than except that share one
// of links (declare.Links) with it, in stored-key order ("graph:{app}:
// {graph}", the order a listing reads them): what the cross-graph rules
// of a declare of except need to see, however many graphs there are.
func (c *Catalog) Related(links []string, except GraphKey) []*Entry {
	c.mu.RLock()
	seen := map[GraphKey]bool{}
	var out []*Entry
	for _, l := range links {
		for k := range c.links[l] {
			if k == except || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, c.graphs[k])
		}
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Entry) int {
		return strings.Compare(plan.DocumentKey(a.App, a.Graph), plan.DocumentKey(b.App, b.Graph))
	})
	return out
}

// sameEntries reports whether a and b hold the same entries (a re-read
// keeps the entry of an unchanged document).
func sameEntries(a, b map[GraphKey]*Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, e := range a {
		if b[k] != e {
			return false
		}
	}
	return true
}

// markListed records a read attempt, so a failing broker is retried at
// most once per eager interval (and by the timer) rather than per request.
func (c *Catalog) markListed() {
	c.mu.Lock()
	c.listed = c.clock.Now()
	c.mu.Unlock()
}

// SyncStatus re-reads the relays' published status.
func (c *Catalog) SyncStatus(ctx context.Context) error { return c.ReadStatus(ctx, 0) }

// ReadStatus re-reads the relays' status unless a read younger than maxAge
// landed while this caller waited (maxAge 0: always).
func (c *Catalog) ReadStatus(ctx context.Context, maxAge time.Duration) error {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	if maxAge > 0 {
		c.mu.RLock()
		fresh := c.clock.Since(c.statusAt) <= maxAge
		c.mu.RUnlock()
		if fresh {
			return nil
		}
	}
	st, moved, err := c.statusRd.ReadChanged(ctx)
	if err != nil {
		c.log.Warn("reading the relays' status failed", "error", err)
		c.mu.Lock()
		c.statusAt = c.clock.Now() // keep the last picture; retry on the timer
		c.mu.Unlock()
		return err
	}
	// The index costs every graph: it is rebuilt only when the graph rows
	// moved, not on every read (a declare waiting for a relay reads every
	// 100 ms).
	c.mu.RLock()
	runs := c.runs
	c.mu.RUnlock()
	if moved || runs == nil {
		runs = indexRuns(st)
	}
	at := make(map[string]int64, len(st))
	for _, r := range st {
		at[r.Replica] = r.At
	}
	c.mu.Lock()
	c.status, c.runs, c.at, c.statusAt = st, runs, at, c.clock.Now()
	c.mu.Unlock()
	return nil
}

// GraphRun is one relay replica's published status of one graph.
type GraphRun struct {
	// Replica is the replica's id; At its publish time, epoch ms.
	Replica string
	At      int64
	// Status is what the replica published of the graph.
	Status *store.GraphStatus
}

// indexRuns is st by graph, in the order of st.
func indexRuns(st []store.RelayStatus) map[GraphKey][]GraphRun {
	out := map[GraphKey][]GraphRun{}
	for i := range st {
		r := &st[i]
		for j := range r.Graphs {
			g := &r.Graphs[j]
			k := GraphKey{g.App, g.Graph}
			out[k] = append(out[k], GraphRun{Replica: r.Replica, Status: g})
		}
	}
	return out
}

// Put records this process's own declare without waiting for the timer.
// It waits for a re-read in flight, which may have listed before the store
// write, so that the re-read cannot overwrite it.
func (c *Catalog) Put(e *Entry) {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	c.mu.Lock()
	c.setLocked(GraphKey{e.App, e.Graph}, e)
	c.sorted = nil
	c.gen++
	c.mu.Unlock()
}

// Forget records this process's own delete.
func (c *Catalog) Forget(app, name string) {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	c.mu.Lock()
	c.unsetLocked(GraphKey{app, name})
	c.sorted = nil
	c.gen++
	c.mu.Unlock()
}

// Lookup returns the declared graph app/name as cached, nil when none.
func (c *Catalog) Lookup(app, name string) *Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.graphs[GraphKey{app, name}]
}

// Stale reports whether the last document read is older than the eager
// re-read threshold.
func (c *Catalog) Stale() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.clock.Since(c.listed) > c.eager
}

// Get returns the declared graph app/name, re-reading kv once when the
// cached picture misses and is not fresh (another replica may have just
// declared it).
func (c *Catalog) Get(ctx context.Context, app, name string) *Entry {
	if e := c.Lookup(app, name); e != nil {
		return e
	}
	if c.Stale() {
		_ = c.SyncDocuments(ctx, false)
	}
	return c.Lookup(app, name)
}

// Apps returns the applications that declare a graph called name, sorted.
func (c *Catalog) Apps(ctx context.Context, name string) []string {
	find := func() []string {
		c.mu.RLock()
		defer c.mu.RUnlock()
		var out []string
		for k := range c.graphs {
			if k.Graph == name {
				out = append(out, k.App)
			}
		}
		sort.Strings(out)
		return out
	}
	out := find()
	if len(out) == 0 && c.Stale() {
		_ = c.SyncDocuments(ctx, false)
		out = find()
	}
	return out
}

// All returns every declared graph of app ("" = every application), in
// (application, graph) order.
func (c *Catalog) All(app string) []*Entry {
	all := c.Sorted()
	if app == "" {
		return slices.Clone(all)
	}
	// The application's graphs are one run of the sorted slice.
	lo, _ := slices.BinarySearchFunc(all, GraphKey{App: app}, compareEntry)
	hi := lo
	for hi < len(all) && all[hi].App == app {
		hi++
	}
	return slices.Clone(all[lo:hi])
}

// Generation changes whenever the declared graphs do (a re-read that found
// a change, this process's own declare or delete): what is computed from
// every graph can be kept while it stays the same.
func (c *Catalog) Generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// Sorted returns every declared graph in (application, graph) order. The
// slice is shared and must not be modified; it is rebuilt on the first
// call after the declared graphs change, so the console's pages do not
// sort ten thousand graphs per request.
func (c *Catalog) Sorted() []*Entry {
	c.mu.RLock()
	s := c.sorted
	c.mu.RUnlock()
	if s != nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sorted == nil {
		s := make([]*Entry, 0, len(c.graphs))
		for _, e := range c.graphs {
			s = append(s, e)
		}
		slices.SortFunc(s, func(a, b *Entry) int { return CompareKeys(GraphKey{a.App, a.Graph}, GraphKey{b.App, b.Graph}) })
		c.sorted = s
	}
	return c.sorted
}

// CompareKeys orders graph keys by application, then graph name.
func CompareKeys(a, b GraphKey) int {
	if c := strings.Compare(a.App, b.App); c != 0 {
		return c
	}
	return strings.Compare(a.Graph, b.Graph)
}

// compareEntry compares an entry with a key, for binary searches of
// Sorted.
func compareEntry(e *Entry, k GraphKey) int { return CompareKeys(GraphKey{e.App, e.Graph}, k) }

// After is the index in Sorted() of the first graph ordered after k (a
// page's cursor): every graph from there on comes after it.
func After(sorted []*Entry, k GraphKey) int {
	i, found := slices.BinarySearchFunc(sorted, k, compareEntry)
	if found {
		i++
	}
	return i
}

// Statuses returns the relays' last published status.
func (c *Catalog) Statuses() []store.RelayStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.status
}

// Runs returns what each relay replica last published of app/name (none
// when no replica reports it), each with its replica's newest header time.
// The statuses are shared: do not modify them.
func (c *Catalog) Runs(app, name string) []GraphRun {
	c.mu.RLock()
	defer c.mu.RUnlock()
	runs := c.runs[GraphKey{app, name}]
	if len(runs) == 0 {
		return nil
	}
	out := make([]GraphRun, len(runs))
	for i, r := range runs {
		r.At = c.at[r.Replica]
		out[i] = r
	}
	return out
}

// Runners returns the replicas that run app/name (any version) according
// to the cached status.
func (c *Catalog) Runners(app, name string) []string {
	var out []string
	for _, r := range c.Runs(app, name) {
		if r.Status.Running {
			out = append(out, r.Replica)
		}
	}
	return out
}

// Running reports whether some relay replica runs app/name, re-reading the
// status once when the cached picture says no and is not fresh.
func (c *Catalog) Running(ctx context.Context, app, name string) bool {
	if len(c.Runners(app, name)) > 0 {
		return true
	}
	c.mu.RLock()
	old := c.clock.Since(c.statusAt) > c.eager
	c.mu.RUnlock()
	if old {
		_ = c.ReadStatus(ctx, c.eager)
	}
	return len(c.Runners(app, name)) > 0
}

// RunsVersion reports whether some relay replica runs version of app/name
// according to the cached status; when none does, failure is the error a
// replica reported for that version's failed start ("" when none did).
func (c *Catalog) RunsVersion(app, name string, version int64) (ok bool, failure string) {
	for _, r := range c.Runs(app, name) {
		g := r.Status
		if g.Version != version {
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

// RunsVersionNow reports whether some relay runs e's declared version.
func (c *Catalog) RunsVersionNow(e *Entry) bool {
	ok, _ := c.RunsVersion(e.App, e.Graph, int64(e.Plan.Version))
	return ok
}
