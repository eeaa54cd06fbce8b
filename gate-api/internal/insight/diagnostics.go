package insight

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Diagnostics constants (gate-runtime §6.1, §8.2).
const (
	// diagViewTimeout bounds the graph read behind a diagnosis.
	diagViewTimeout = 8 * time.Second
	// recentRefusal is how old a stage's last refusal may be and still
	// explain a backlog as budget pacing.
	recentRefusal = 15 * time.Second
	// durationScope is what a finding's since means.
	durationScope = "First detected on this Gate replica; resets after a restart or recovery."
)

// insightRoutes registers the read-only insight routes — diagnostics,
// timeline and simulate — on the console paths (/api/apps/{app}/graphs/…
// and the flat /api/graphs/…) and their /v1 twins. They are GETs (and the
// POST simulate, which writes nothing), open to viewers.
func (in *Insight) insightRoutes(r *httpapi.Router) {
	small := in.p.Cfg.BodyBytes
	// Every insight route is a read: the candidate simulation is a POST
	// whose body is the question, and stores nothing.
	add := func(name, method, suffix string, h httpapi.Handler) {
		r.Handle(httpapi.Route{Name: name, Method: method, Path: "/api/apps/{app}/graphs/{graph}" + suffix, Limit: small, Read: true}, h)
		r.Handle(httpapi.Route{Name: "flat-" + name, Method: method, Path: "/api/graphs/{graph}" + suffix, Limit: small, Flat: true, Read: true}, h)
		r.Handle(httpapi.Route{Name: name, Method: method, Path: "/v1/apps/{app}/graphs/{graph}" + suffix, Limit: small, Read: true}, h)
		r.Handle(httpapi.Route{Name: "flat-" + name, Method: method, Path: "/v1/graphs/{graph}" + suffix, Limit: small, Flat: true, Read: true}, h)
	}
	add("diagnostics", http.MethodGet, "/diagnostics", in.diagnostics)
	add("timeline", http.MethodGet, "/timeline", in.timeline)
	add("simulate", http.MethodGet, "/simulate", in.simulate)
	add("simulate-candidate", http.MethodPost, "/simulate", in.simulateCandidate)
	add("explain", http.MethodGet, "/nodes/{node}/explain", in.explain)
}

// sinceBook remembers, per replica, when each finding was first seen.
type sinceBook struct {
	mu sync.Mutex
	m  map[string]int64
}

// mark returns the first-seen time of every key in active (recording now
// for new ones) and forgets the graph's keys not active any more.
func (b *sinceBook) mark(graphPrefix string, active []string, now int64) map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]int64{}
	}
	keep := make(map[string]bool, len(active))
	out := make(map[string]int64, len(active))
	for _, k := range active {
		keep[k] = true
		at, ok := b.m[k]
		if !ok {
			at = now
			b.m[k] = at
		}
		out[k] = at
	}
	for k := range b.m {
		if strings.HasPrefix(k, graphPrefix) && !keep[k] {
			delete(b.m, k)
		}
	}
	return out
}

// prune forgets the entries of graphs that are no longer declared.
func (b *sinceBook) prune(declared func(prefix string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		parts := strings.SplitN(k, "/", 3)
		if len(parts) < 3 || !declared(parts[0]+"/"+parts[1]+"/") {
			delete(b.m, k)
		}
	}
}

// nodeState is what a diagnosis knows about one node.
type nodeState struct {
	waitingBudget, waitingWorkers int64
	// budgetSpent names an unscoped budget at or over its widest ceiling
	// in a live window.
	budgetSpent bool
	breaker     *store.Breaker
	// meters are the live vendor meter rows of the node's mirrored
	// budgets, by budget id.
	meters map[string]budget.MeterRow
}

// stageState is one stage summed over the replicas that publish it.
type stageState struct {
	wedge   *store.Wedge
	refusal *store.Refusal
}

// diagnostics is GET …/graphs/{graph}/diagnostics: why traffic waits,
// from the broker and the relays' published status (no PostgreSQL).
func (in *Insight) diagnostics(q *httpapi.Request) *httpapi.Refusal {
	e, bad := in.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	httpapi.WriteJSON(q.W, http.StatusOK, in.diagnose(q.Context(), e))
	return nil
}

type draft struct {
	f   wire.Finding
	key string
}

func (in *Insight) diagnose(ctx context.Context, e *plane.Entry) wire.Diagnostics {
	now := in.p.Clock.Now()
	p := e.Plan
	var found []draft
	add := func(kind, node, path, severity, title, action string, budget *string) {
		f := wire.Finding{Kind: kind, Title: title, Action: action, Severity: severity, Budget: budget}
		if node != "" {
			f.Node = &node
		}
		if path != "" {
			f.Path = &path
		}
		found = append(found, draft{f: f, key: fmt.Sprintf("%s/%s/%s/%q/%q", e.App, e.Graph, kind, node, path)})
	}
	if ok, _, problem := in.p.BrokerHealth(ctx); !ok {
		add(wire.FindingBroker, "", "", wire.SeverityBad, "The broker is unreachable: nothing moves and nothing else can be checked",
			fmt.Sprintf("Check the broker at %s (%s): its /health, its database, and the network from gate-api; relays park until it answers.", in.p.Cfg.QueenURL, problem), nil)
		return in.finish(e, now, found)
	}
	if !in.p.Cat.Running(ctx, e.App, e.Graph) {
		// The same words as the push door's answer: work is accepted and
		// waits, it is not refused.
		add(wire.FindingStopped, "", "", wire.SeverityBad, fmt.Sprintf("Pushes to '%s/%s' version %d are %s, and nothing is relayed until one does", e.App, e.Graph, p.Version, wire.NoRelayNote),
			fmt.Sprintf("Check that gate-relay runs against the same broker and GATE_KV_NAMESPACE (%s) and read its log for a failed start of this graph; relays pick a declaration up within GATE_RECONCILE_SECONDS, then drain what waits.", in.p.Cfg.KVNamespace), nil)
	}
	stages := in.stageStates(e)
	rctx, cancel := context.WithTimeout(ctx, diagViewTimeout)
	defer cancel()
	nodes, readErr := in.nodeStates(rctx, e, now)
	if readErr != "" {
		add(wire.FindingRead, "", "", wire.SeverityBad, "The graph's live state could not be read: "+readErr,
			"Check the broker's kv and depth routes (GET /v1/apps/"+e.App+"/graphs/"+e.Graph+" shows what failed) and retry; the other findings may be incomplete.", nil)
	}
	explained := map[string]bool{}
	for i := range p.Stages {
		st := &p.Stages[i]
		ss := stages[plane.StageID(st.Path, st.Node, st.Hop)]
		if ss.wedge == nil || !ss.wedge.Escalated {
			continue
		}
		explained[st.Node] = true
		w := ss.wedge
		add(wire.FindingCursor, st.Node, st.Path, wire.SeverityBad,
			fmt.Sprintf("Stage %s at node %s is wedged: the broker refused the ack of head %s on partition %s %d times (%s)", st.Path, st.Node, w.Head, w.Partition, w.Attempts, w.Error),
			fmt.Sprintf("Inspect the gate-relay log (ERROR \"stage wedged\") and the cursor of group %s on %s before seeking; if the group reads frames older than the broker's transaction window, POST /api/v1/consumer-groups/%s/queues/%s/seek with {\"toEnd\":true} on the broker — this skips what the group has not consumed.", st.Group, st.Source, st.Group, st.Source), nil)
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		ns := nodes[n.Name]
		if ns.breaker != nil && ns.breaker.Until() > now.UnixMilli() {
			explained[n.Name] = true
			by := ""
			if ns.breaker.By != "" {
				by = " by " + ns.breaker.By
			}
			add(wire.FindingBackoff, n.Name, "", wire.SeverityWarn,
				fmt.Sprintf("A backoff%s holds node %s until %s (Retry-After %d s)", by, n.Name, time.UnixMilli(ns.breaker.Until()).UTC().Format(time.RFC3339), ns.breaker.RetryAfterSeconds),
				fmt.Sprintf("Check why the provider throttled (the 429 that was reported); the node resumes by itself at the deadline, or lift it early with DELETE /v1/apps/%s/graphs/%s/nodes/%s/backoff.", e.App, e.Graph, n.Name), nil)
		}
	}
	mp := meterPlan(e)
	for i := range mp.Nodes {
		n := &mp.Nodes[i]
		for j := range n.Budgets {
			b := &n.Budgets[j]
			row, ok := nodes[n.Name].meters[b.ID]
			if !ok {
				continue
			}
			id := b.ID
			add(wire.FindingVendor, n.Name, "", wire.SeverityInfo,
				fmt.Sprintf("Budget %s of node %s: %s", b.ID, n.Name, row.Sentence()),
				fmt.Sprintf("Gate paces at the vendor's limit (it last said so at %s) until %s unless the vendor says otherwise; if the vendor's limit is permanent, declare it (count %d), or ask the vendor for more.",
					time.UnixMilli(row.At).UTC().Format(time.RFC3339), time.UnixMilli(row.Until).UTC().Format(time.RFC3339), row.Limit), &id)
		}
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		ns := nodes[n.Name]
		if ns.waitingBudget <= 0 || explained[n.Name] {
			continue
		}
		var recent *store.Refusal
		for j := range p.Stages {
			st := &p.Stages[j]
			if st.Node != n.Name {
				continue
			}
			if r := stages[plane.StageID(st.Path, st.Node, st.Hop)].refusal; r != nil && now.UnixMilli()-r.At < recentRefusal.Milliseconds() && (recent == nil || r.At > recent.At) {
				recent = r
			}
		}
		if !p.Watching && (recent != nil || ns.budgetSpent) {
			var id *string
			what := "a budget is spent for its current window"
			if recent != nil {
				b := recent.Budget
				id = &b
				what = fmt.Sprintf("budget %s refused %.0f s ago", b, now.Sub(time.UnixMilli(recent.At)).Seconds())
			}
			add(wire.FindingBudget, n.Name, "", wire.SeverityInfo,
				fmt.Sprintf("%d items wait at node %s for budget: %s", ns.waitingBudget, n.Name, what),
				fmt.Sprintf("This is the declared limit pacing traffic, not a fault: GET /v1/apps/%s/graphs/%s/nodes/%s/eta says when the backlog clears; raise the budget only if the provider allows more.", e.App, e.Graph, n.Name), id)
			continue
		}
		add(wire.FindingRelay, n.Name, "", wire.SeverityWarn,
			fmt.Sprintf("%d items wait at node %s but no budget refused them recently", ns.waitingBudget, n.Name),
			"Check that gate-relay runs this graph and its log for warnings at this node (kv call failures, released claims, settle errors); the stage counters in the graph view show whether claims are released instead of committed.", nil)
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		ns := nodes[n.Name]
		if ns.waitingWorkers <= 0 || n.EgressQueue == "" {
			continue
		}
		group := "every group (the worst cursor; the egress declares no group)"
		if n.EgressGroup != "" {
			group = "group " + n.EgressGroup
		}
		add(wire.FindingWorkers, n.Name, "", wire.SeverityInfo,
			fmt.Sprintf("%d admitted items wait on egress %s for %s", ns.waitingWorkers, n.EgressQueue, group),
			fmt.Sprintf("Gate has already admitted these; check your consumers of %s (are they running, keeping up, acking?). Worker backlog alone does not prove a worker is broken — a burst that is being drained looks the same.", n.EgressQueue), nil)
	}
	return in.finish(e, now, found)
}

// finish stamps the findings with their first-seen times.
func (in *Insight) finish(e *plane.Entry, now time.Time, found []draft) wire.Diagnostics {
	keys := make([]string, len(found))
	for i, d := range found {
		keys[i] = d.key
	}
	since := in.since.mark(e.App+"/"+e.Graph+"/", keys, now.UnixMilli())
	in.since.prune(func(prefix string) bool {
		parts := strings.SplitN(prefix, "/", 3)
		return len(parts) >= 2 && in.p.Cat.Lookup(parts[0], parts[1]) != nil
	})
	out := wire.Diagnostics{At: now.UnixMilli(), Issues: make([]wire.Finding, 0, len(found)), DurationScope: durationScope}
	for _, d := range found {
		d.f.Since = since[d.key]
		out.Issues = append(out.Issues, d.f)
	}
	return out
}

// stageStates collects, per stage, the newest refusal and an escalated
// wedge from every replica that runs the graph's current version.
func (in *Insight) stageStates(e *plane.Entry) map[[3]string]stageState {
	out := map[[3]string]stageState{}
	for _, r := range in.p.Cat.Runs(e.App, e.Graph) {
		g := r.Status
		if g.Version != int64(e.Plan.Version) {
			continue
		}
		for _, st := range g.Stages {
			k := plane.StageID(st.Path, st.Node, st.Hop)
			cur := out[k]
			if st.LastRefusal != nil && (cur.refusal == nil || st.LastRefusal.At > cur.refusal.At) {
				lr := *st.LastRefusal
				cur.refusal = &lr
			}
			if st.Wedge != nil && (cur.wedge == nil || st.Wedge.Escalated && !cur.wedge.Escalated) {
				w := *st.Wedge
				cur.wedge = &w
			}
			out[k] = cur
		}
	}
	return out
}

// nodeStates reads the backlogs, live counters and breaker records of
// every node; problem says what could not be read ("" when all was).
func (in *Insight) nodeStates(ctx context.Context, e *plane.Entry, now time.Time) (map[string]nodeState, string) {
	p := e.Plan
	out := make(map[string]nodeState, len(p.Nodes))
	var problems []string
	live, err := in.p.Limiter().ReadNodes(ctx, p.Nodes)
	if err != nil {
		problems = append(problems, "the live budget counters (kv getMany failed)")
	}
	breakers, err := in.p.Store.Breakers(ctx, p)
	if err != nil {
		problems = append(problems, "the backoff records ("+err.Error()+")")
	}
	var meterKeys []string
	mp := meterPlan(e)
	for i := range mp.Nodes {
		for j := range mp.Nodes[i].Budgets {
			if m := mp.Nodes[i].Budgets[j].VendorMeter; m != nil {
				meterKeys = append(meterKeys, m.Key)
			}
		}
	}
	meters, err := budget.ReadMeters(ctx, in.p.Client, in.p.Cfg.KVNamespace, meterKeys)
	if err != nil {
		problems = append(problems, "the vendor meter rows (kv getMany failed)")
	}
	for _, st := range p.Stages {
		if _, ok := in.p.Pending(ctx, st.Source, st.Group); !ok {
			problems = append(problems, fmt.Sprintf("the backlog of %s for %s", st.Source, st.Group))
		}
	}
	for i := range p.Nodes {
		// A queue several paths read at the node counts once.
		if w, ok := in.p.NodeWaiting(ctx, p, p.Nodes[i].Name); ok {
			ns := out[p.Nodes[i].Name]
			ns.waitingBudget = w
			out[p.Nodes[i].Name] = ns
		}
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		ns := out[n.Name]
		if n.EgressQueue != "" {
			w, ok := in.p.Pending(ctx, n.EgressQueue, n.EgressGroup)
			if !ok {
				problems = append(problems, "the backlog of "+n.EgressQueue)
			}
			ns.waitingWorkers = w
		}
		for _, c := range budget.Unscoped(n) {
			if live[c.Key].Spent(c.Ceiling, now) {
				ns.budgetSpent = true
			}
		}
		if b, ok := breakers[n.BreakerKey]; ok {
			ns.breaker = &b
		}
		mn := n
		if vn := mp.Node(n.Name); vn != nil {
			mn = vn
		}
		for j := range mn.Budgets {
			b := &mn.Budgets[j]
			if b.VendorMeter == nil {
				continue
			}
			if row, ok := meters[b.VendorMeter.Key]; ok && row.Until > now.UnixMilli() {
				if ns.meters == nil {
					ns.meters = map[string]budget.MeterRow{}
				}
				ns.meters[b.ID] = row
			}
		}
		out[n.Name] = ns
	}
	if ctx.Err() != nil {
		problems = append(problems, fmt.Sprintf("the read took longer than %s", diagViewTimeout))
	}
	return out, strings.Join(problems, "; ")
}
