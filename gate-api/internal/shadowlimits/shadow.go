// Package shadowlimits is gate-api's shadow limits route family (issue 27):
// PUT, GET and DELETE …/graphs/{graph}/shadow. A candidate set of budgets
// per node, in the document's own budget syntax, is compiled and validated
// by libs/declare exactly as a document's budgets (libs/shadow), stored as
// a small kv row (store.Shadow), and evaluated by gate-recorder once a
// minute on the graph's live traffic; GET answers the candidate and its
// per-minute results from PostgreSQL. Nothing here touches a counter.
package shadowlimits

import (
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/shadow"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Range bounds of GET …/shadow?minutes=.
const (
	defaultMinutes = 60
	maxMinutes     = 1440
)

// Shadows is the family. Build it with New; it is safe for concurrent use.
type Shadows struct{ p *plane.Plane }

// New builds the family on p.
func New(p *plane.Plane) *Shadows { return &Shadows{p: p} }

// Routes registers GET, PUT and DELETE …/graphs/{graph}/shadow on /v1 and
// /api, with their flat twins.
func (s *Shadows) Routes(r *httpapi.Router) {
	limit := int64(shadow.MaxCandidateBytes)
	add := func(name, method string, h httpapi.Handler) {
		r.Handle(httpapi.Route{Name: name, Method: method, Path: "/api/apps/{app}/graphs/{graph}/shadow", Limit: limit}, h)
		r.Handle(httpapi.Route{Name: "flat-" + name, Method: method, Path: "/api/graphs/{graph}/shadow", Limit: limit, Flat: true}, h)
		r.Handle(httpapi.Route{Name: name, Method: method, Path: "/v1/apps/{app}/graphs/{graph}/shadow", Limit: limit}, h)
		r.Handle(httpapi.Route{Name: "flat-" + name, Method: method, Path: "/v1/graphs/{graph}/shadow", Limit: limit, Flat: true}, h)
	}
	add("shadow-get", http.MethodGet, s.get)
	add("shadow-put", http.MethodPut, s.put)
	add("shadow-delete", http.MethodDelete, s.delete)
}

func noHistory() *httpapi.Refusal {
	return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodeNoHistory, "shadow limits need the PostgreSQL history, and this gate-api has none: gate-recorder evaluates a candidate on the traffic it records there; set PG_HOST (or PG_URL) to the database gate-recorder writes and restart").NotBroker()
}

func legacy(e *plane.Entry) *httpapi.Refusal {
	return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeShadowInvalid, "'%s/%s' is a v1 target: shadow limits run beside v2 graphs only; declare it as a v2 graph (PUT /v1/apps/%s/graphs/%s) first", e.App, e.Graph, e.App, e.Graph).Field("graph")
}

// put is PUT …/shadow: the body is the candidate, {"nodes": {"NODE":
// {"budgets": [...]}}}. It replaces any candidate of the graph (its results
// start again) and answers the candidate as GET would, without minutes.
func (s *Shadows) put(q *httpapi.Request) *httpapi.Refusal {
	e, bad := s.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	if e.Legacy || e.Doc == nil {
		return legacy(e)
	}
	body, bad := q.ReadJSON()
	if bad != nil {
		return bad
	}
	cand, err := shadow.ParseCandidate(body, e.Doc.NodeNames())
	if bad := candidateRefusal(err); bad != nil {
		return bad
	}
	res, err := shadow.Compile(e.App, e.Graph, e.Body, cand, s.p.Cfg.PlanOptions())
	if err != nil {
		if errors.Is(err, shadow.ErrCandidate) {
			return candidateRefusal(err)
		}
		return httpapi.Refuse(http.StatusConflict, wire.CodeStoredDocumentInvalid, "the stored document of '%s/%s' could not be read to merge the candidate into (%v): PUT a corrected document", e.App, e.Graph, err)
	}
	if bad := plane.CompileRefusal(res, nil); bad != nil {
		return bad
	}
	if s.p.History() == nil {
		return noHistory()
	}
	sh := store.Shadow{Application: e.App, Graph: e.Graph, Since: s.p.Clock.Now().UnixMilli(), SetBy: plane.ActorOf(q.Context()).Who,
		BasedOn: store.ETag(e.Body), Candidate: cand.Marshal()}
	if err := s.p.Store.PutShadow(q.Context(), sh); err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "storing the shadow candidate in kv failed: %v; nothing changed, retry the PUT", err)
	}
	out, bad := s.answer(q, e, sh, cand, nil, 0)
	if bad != nil {
		return bad
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// candidateRefusal turns a candidate's shape error into 422 naming its
// field.
func candidateRefusal(err error) *httpapi.Refusal {
	if err == nil {
		return nil
	}
	var fe *shadow.FieldError
	if errors.As(err, &fe) {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeShadowInvalid, "shadow candidate refused at %s: %s", fe.Field, fe.Message).Field(fe.Field)
	}
	return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeShadowInvalid, "shadow candidate refused: %v", err)
}

// get is GET …/shadow?minutes=: the candidate and its results over the
// last minutes (1..1440, default 60); {set: false} when none is set.
func (s *Shadows) get(q *httpapi.Request) *httpapi.Refusal {
	e, bad := s.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	if e.Legacy || e.Doc == nil {
		return legacy(e)
	}
	minutes, bad := httpapi.QueryClamped[int64](q.Query(), "minutes", defaultMinutes, 1, maxMinutes)
	if bad != nil {
		return bad
	}
	sh, found, err := s.p.Store.GetShadow(q.Context(), e.App, e.Graph)
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "reading the shadow candidate from kv failed: %v; retry", err)
	}
	if !found {
		httpapi.WriteJSON(q.W, http.StatusOK, wire.Shadow{Application: e.App, Graph: e.Graph, Minutes: int(minutes),
			Nodes: []wire.ShadowNode{}, Unsupported: []wire.SimUnsupported{}, Assumes: []string{}})
		return nil
	}
	if s.p.History() == nil {
		return noHistory()
	}
	cand, err := shadow.ParseCandidate(sh.Candidate, e.Doc.NodeNames())
	if err != nil {
		// A node the document no longer has: answer what is known.
		cand, _ = shadow.ParseCandidate(sh.Candidate, nil)
	}
	hctx, cancel := s.p.HistoryContext(q)
	defer cancel()
	now := s.p.Clock.Now().UnixMilli()
	from := max(sh.Since-sh.Since%60000, now-now%60000-minutes*60000)
	rows, err := s.p.History().ShadowMinutes(hctx, e.App, e.Graph, sh.Since, from, now)
	if err != nil {
		return s.p.HistoryRefusal(hctx, err)
	}
	out, bad := s.answer(q, e, sh, cand, rows, int(minutes))
	if bad != nil {
		return bad
	}
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// answer builds the wire answer of sh with its minutes.
func (s *Shadows) answer(q *httpapi.Request, e *plane.Entry, sh store.Shadow, cand shadow.Candidate, rows []history.ShadowMinute, minutes int) (wire.Shadow, *httpapi.Refusal) {
	out := wire.Shadow{Application: e.App, Graph: e.Graph, Set: true, Since: sh.Since, SetBy: sh.SetBy, BasedOn: sh.BasedOn,
		Current: sh.BasedOn == store.ETag(e.Body), Recording: "forwarded", Minutes: minutes,
		Nodes: []wire.ShadowNode{}, Unsupported: []wire.SimUnsupported{}, Assumes: assumptions()}
	if e.Doc.Watch != nil {
		out.Recording = "watch"
	}
	var compiled *plan.Plan
	if res, err := shadow.Compile(e.App, e.Graph, e.Body, cand, s.p.Cfg.PlanOptions()); err == nil && res.Accepted() {
		compiled = res.Plan
		if ev, err := shadow.NewEvaluator(res.Plan, cand.NodeNames(), shadow.State{}); err == nil {
			for _, u := range ev.Unsupported() {
				out.Unsupported = append(out.Unsupported, wire.SimUnsupported{Node: u.Node, Budget: u.Budget, Reason: u.Reason})
			}
		}
	} else if !out.Current {
		out.Assumes = append(out.Assumes, "the stored document changed since the candidate was set and the candidate no longer compiles against it: it is not evaluated until it is set again")
	}
	byNode := map[string][]history.ShadowMinute{}
	var through int64
	for _, m := range rows {
		byNode[m.Node] = append(byNode[m.Node], m)
		through = max(through, m.Minute+60000)
	}
	if through > 0 {
		out.EvaluatedThrough = &through
	}
	for _, name := range cand.NodeNames() {
		n := wire.ShadowNode{Node: name, Budgets: cand.Nodes[name], PerMinute: []wire.ShadowMinute{}, Notes: []string{}}
		missing := map[string]int64{}
		for _, m := range byNode[name] {
			n.PerMinute = append(n.PerMinute, wire.ShadowMinute{T: m.Minute, Arrived: m.Arrived, Admitted: m.Admitted, Delayed: m.Delayed,
				Backlog: m.Backlog, DelayP50Ms: m.DelayP50Ms, DelayMaxMs: m.DelayMaxMs, OldestWaitingMs: m.OldestWaitingMs, Approximate: m.Approximate})
			t := &n.IfEnforced
			t.Arrived += m.Arrived
			t.Delayed += m.Delayed
			t.Backlog = m.Backlog
			t.PeakBacklog = max(t.PeakBacklog, m.Backlog)
			t.DelayMaxMs = max(t.DelayMaxMs, m.DelayMaxMs)
			t.OldestWaitingMs = max(t.OldestWaitingMs, m.OldestWaitingMs)
			t.Approximate += m.Approximate
			for id, k := range m.Missing {
				missing[id] += k
			}
		}
		n.Sentence = Sentence(n.IfEnforced, len(n.PerMinute))
		n.Notes = notes(compiled, name, n.IfEnforced, missing)
		out.Nodes = append(out.Nodes, n)
	}
	return out, nil
}

// notes says what a node's evaluation could not judge exactly: the items
// judged without their values, and each scoped budget whose field some
// (or all) of the judged items did not carry.
func notes(p *plan.Plan, node string, t wire.ShadowTotals, missing map[string]int64) []string {
	out := []string{}
	if t.Approximate > 0 {
		out = append(out, fmt.Sprintf("approximate: %d of %d items were judged without their scope value or op (past the relays' cap of distinct values a node records a second, GATE_SHADOW_KEYS_PER_SECOND, or recorded before the relays knew the candidate); they charged only the budgets that charge every item, so the delay may be under-reported", t.Approximate, t.Arrived))
	}
	if len(missing) == 0 {
		return out
	}
	var n *plan.Node
	if p != nil {
		n = p.Node(node)
	}
	judged := t.Arrived - t.Approximate
	ids := make([]string, 0, len(missing))
	for id := range missing {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		field := "its scopeBy"
		if n != nil {
			for _, b := range n.Budgets {
				if b.ID == id {
					field = "'" + b.ScopeBy + "'"
				}
			}
		}
		if missing[id] >= judged {
			out = append(out, fmt.Sprintf("budget '%s' scopes by %s, but none of the %d items recorded at %s carried a value there, so it charged nothing (as the relay would not): check the field's path against the items' payload (payload.FIELD, nested members joined by dots)", id, field, judged, node))
			continue
		}
		out = append(out, fmt.Sprintf("%d of %d items recorded at %s carried no value at %s: budget '%s' did not charge them (as the relay would not)", missing[id], judged, node, field, id))
	}
	return out
}

// Sentence says a node's totals in one line, as the console shows them
// beside the node.
func Sentence(t wire.ShadowTotals, minutes int) string {
	if minutes == 0 {
		return "if enforced: not evaluated yet (gate-recorder evaluates each minute about a minute after it ends)"
	}
	span := "in the last minute"
	if minutes > 1 {
		span = fmt.Sprintf("over %d minutes", minutes)
	}
	if t.Delayed == 0 && t.Backlog == 0 {
		return fmt.Sprintf("if enforced: none of %d items delayed %s", t.Arrived, span) + approx(t)
	}
	s := fmt.Sprintf("if enforced: %d of %d items delayed %s, up to %s", t.Delayed, t.Arrived, span, seconds(max(t.DelayMaxMs, t.OldestWaitingMs)))
	if t.Backlog > 0 {
		s += fmt.Sprintf("; %d still waiting", t.Backlog)
	} else {
		s += "; no backlog"
	}
	return s + approx(t)
}

// approx is the sentence's tail when some items were judged without their
// values.
func approx(t wire.ShadowTotals) string {
	if t.Approximate == 0 {
		return ""
	}
	return fmt.Sprintf(" (approximate: %d items judged without their scope value or op)", t.Approximate)
}

func seconds(ms int64) string {
	if ms < 60000 {
		return fmt.Sprintf("%d s", ms/1000)
	}
	if ms < 3600000 {
		return fmt.Sprintf("%d min %d s", ms/60000, ms%60000/1000)
	}
	return fmt.Sprintf("%d h %d min", ms/3600000, ms%3600000/60000)
}

func assumptions() []string {
	return []string{
		"the candidate never refuses or delays a real item: it runs in gate-recorder on the recorded per-second items, through the relay's own admission arithmetic (budget.Table), with its backlog carried from minute to minute",
		"a graph in Watch is judged on its recorded arrivals; an enforcing graph on the items each node forwards under its enforced limits, so a candidate above the enforced limits shows no delay, never less delay than today",
		"items of one second arrive together; a node's paths take turns claim by claim",
		"a scoped or operation-filtered candidate is judged per scope value and op the relays record (at most GATE_SHADOW_KEYS_PER_SECOND distinct a node a second; further items are judged on the budgets that charge every item and reported as approximate): the items of one value and op wait in their own line, so one key's wait holds only its own items, as when each value is pushed to its own partition; the document's per-key counts (keys) apply, runtime key limits (…/budgets/{budget}/keys) do not",
	}
}

// delete is DELETE …/shadow: the candidate stops (its results stay
// readable until retention only through PostgreSQL).
func (s *Shadows) delete(q *httpapi.Request) *httpapi.Refusal {
	e, bad := s.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	existed, err := s.p.Store.DeleteShadow(q.Context(), e.App, e.Graph)
	if err != nil {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodeStoreFailed, "deleting the shadow candidate from kv failed: %v; it still runs, retry the DELETE", err)
	}
	if db := s.p.History(); db != nil {
		hctx, cancel := s.p.HistoryContext(q)
		_ = db.DeleteShadowState(hctx, e.App, e.Graph)
		cancel()
	}
	httpapi.WriteJSON(q.W, http.StatusOK, wire.ShadowDeleted{Application: e.App, Graph: e.Graph, Deleted: existed})
	return nil
}
