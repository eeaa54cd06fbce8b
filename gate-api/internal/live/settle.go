package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// settleBodyBytes bounds a settle body: the message as popped (its payload
// included, a prompt of an LLM call say) and the cost.
const settleBodyBytes = 1 << 20

// maxTransactionID is the longest transaction id a settle takes (the
// broker's are far shorter; the idempotency row's key must fit kv's 512).
const maxTransactionID = 256

// absurdFactor bounds an actual cost: at most this many times the node's
// largest item cost.
const absurdFactor = 100

type settleBody struct {
	Message    json.RawMessage `json:"message"`
	ActualCost json.RawMessage `json:"actualCost"`
}

// settleMessage is the popped message: only its transaction id and data
// are read, every other member (id, createdAt, leaseId, …) is allowed.
type settleMessage struct {
	TransactionID *string         `json:"transactionId"`
	Data          json.RawMessage `json:"data"`
}

// settleMetrics are the settle route's series.
type settleMetrics struct {
	settles  *prometheus.CounterVec
	cost     *prometheus.CounterVec
	ratio    *prometheus.HistogramVec
	duration prometheus.Histogram
}

func newSettleMetrics(r *prometheus.Registry) *settleMetrics {
	m := &settleMetrics{
		settles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gate_settle_total",
			Help: "Counter writes of settles, by outcome (refunded, charged, even, window-ended, window-unknown, guarded), and settles answered duplicate or refused."}, []string{"app", "graph", "node", "outcome"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gate_settle_cost_total",
			Help: "Cost units of settled messages: kind estimated (charged by the relay) and actual (reported)."}, []string{"app", "graph", "node", "kind"}),
		ratio: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gate_settle_ratio",
			Help:    "Actual / estimated cost of each settled message, per node: how good the estimates are.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.1, 1.5, 2, 4}}, []string{"app", "graph", "node"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gate_settle_duration_seconds",
			Help: "Settle route latency, every outcome.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
	}
	if r != nil {
		r.MustRegister(m.settles, m.cost, m.ratio, m.duration)
	}
	return m
}

// settle is POST …/nodes/{node}/settle: the egress message as the worker
// popped it (its data with the `_gate` stamp, its transaction id) and the
// call's actual cost. The stamp's signed charge record at the node says
// what was estimated and the window each counter was charged in;
// libs/budget refunds a lower cost into that window while it lives, or
// charges a higher one to the current window, once per message.
func (l *Live) settle(q *httpapi.Request) *httpapi.Refusal {
	start := time.Now()
	defer func() { l.sm.duration.Observe(time.Since(start).Seconds()) }()
	raw, bad := q.ReadRaw()
	if bad != nil {
		return bad
	}
	var b settleBody
	if bad := httpapi.DecodeStrict(raw, &b, "the settle body"); bad != nil {
		return bad
	}
	msg, bad := readSettleMessage(b.Message)
	if bad != nil {
		return bad
	}
	e, n, bad := l.backoffNode(q)
	if bad != nil {
		return bad
	}
	actual, bad := readActualCost(b.ActualCost, n)
	if bad != nil {
		return bad
	}
	refused := func(r *httpapi.Refusal) *httpapi.Refusal {
		l.sm.settles.WithLabelValues(e.App, e.Graph, n.Name, "refused").Inc()
		return r
	}
	st, ch, bad := l.settleStamp(q, e, n, msg)
	if bad != nil {
		return refused(bad)
	}
	now := l.p.Clock.Now()
	counters, err := budget.NodeCounters(n, st.Path, msg.Data)
	if err != nil {
		return refused(httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeScopeValueTooLong, "%v: the message could not have been charged at node '%s'", err, n.Name).Field("message.data"))
	}
	if budget.StaleCharge(counters, ch.At, now) {
		return refused(httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeStaleCharge, "the message was charged at node '%s' at %s, longer ago than its longest window plus %s: a settle is taken until then, so that a repeat is always recognised; nothing was changed",
			n.Name, time.UnixMilli(ch.At).UTC().Format(time.RFC3339), budget.SettleTaken).Field("message.data._gate.charges"))
	}
	windows := ch.Windows
	note := ""
	if len(windows) != len(counters) {
		// The node's budgets changed since the charge: which window each
		// counter was charged in is unknown, so nothing is refunded.
		windows = make([]int64, len(counters))
		note = "the node's budgets changed since the charge: nothing is refunded, a debt is charged to the current windows"
	}
	record, _ := json.Marshal(map[string]int64{"estimated": ch.Cost, "actual": actual, "at": now.UnixMilli()})
	res, err := l.p.Limiter().Settle(q.Context(), budget.Settle{
		Key: budget.SettleKey(e.App, e.Graph, n.Name, *msg.TransactionID), Record: record,
		Estimated: ch.Cost, Actual: actual, Counters: counters, Windows: windows, Row: ch.Row, Now: now,
		Stats: budget.SettleStatsKey(e.App, e.Graph, n.Name),
	})
	if err != nil {
		return refused(httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "settling message %s at node '%s' failed: %v; retry (a settle that applied answers duplicate)", clip(*msg.TransactionID), n.Name, err))
	}
	out := wire.Settled{OK: true, Node: n.Name, TransactionID: *msg.TransactionID, Estimated: ch.Cost, Actual: actual,
		Duplicate: res.Duplicate, Refunded: res.Refunded, Charged: res.Charged, Budgets: make([]wire.SettledBudget, 0, len(res.Counters))}
	if res.Duplicate {
		l.sm.settles.WithLabelValues(e.App, e.Graph, n.Name, "duplicate").Inc()
		out.Note = "this message was settled before: nothing changed"
		httpapi.WriteJSON(q.W, http.StatusOK, out)
		return nil
	}
	for _, c := range res.Counters {
		sb := wire.SettledBudget{Budget: c.BudgetID, Key: c.Key, Outcome: c.Outcome, Delta: c.Delta, Counter: c.Value}
		if !c.WindowEnd.IsZero() {
			sb.WindowEnd = c.WindowEnd.UnixMilli()
		}
		out.Budgets = append(out.Budgets, sb)
		l.sm.settles.WithLabelValues(e.App, e.Graph, n.Name, c.Outcome).Inc()
	}
	l.sm.cost.WithLabelValues(e.App, e.Graph, n.Name, "estimated").Add(float64(ch.Cost))
	l.sm.cost.WithLabelValues(e.App, e.Graph, n.Name, "actual").Add(float64(actual))
	if ch.Cost > 0 {
		l.sm.ratio.WithLabelValues(e.App, e.Graph, n.Name).Observe(float64(actual) / float64(ch.Cost))
	}
	out.Note = settleNote(out, note)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// readSettleMessage reads the message member: an object with a
// transactionId and an object data.
func readSettleMessage(raw json.RawMessage) (settleMessage, *httpapi.Refusal) {
	var m settleMessage
	if len(raw) == 0 || string(raw) == "null" {
		return m, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "message is required: send the egress message as your worker popped it, at least its transactionId and data (with its _gate stamp)").Field("message")
	}
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return m, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "message must be the popped message as an object: {\"transactionId\": …, \"data\": {…}}").Field("message")
	}
	switch {
	case m.TransactionID == nil:
		return m, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "message.transactionId is required: send the popped message's transactionId").Field("message.transactionId")
	case *m.TransactionID == "" || len(*m.TransactionID) > maxTransactionID:
		return m, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "message.transactionId is %d bytes: send the popped message's transactionId (1–%d bytes)", len(*m.TransactionID), maxTransactionID).Field("message.transactionId")
	case len(m.Data) == 0 || string(m.Data) == "null":
		return m, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "message.data is required: send the popped message's data as it came, with its _gate stamp").Field("message.data")
	case bytes.TrimSpace(m.Data)[0] != '{':
		return m, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "message.data is not an object: Gate stamps only object payloads, so this message carries no charge to settle").Field("message.data")
	}
	return m, nil
}

// readActualCost reads actualCost: a whole number from 0 to absurdFactor
// times the node's largest item cost.
func readActualCost(raw json.RawMessage, n *plan.Node) (int64, *httpapi.Refusal) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "actualCost is required: send what the call really cost, in the node's cost units (for an LLM call, the tokens the vendor reported)").Field("actualCost")
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || raw[0] == '"' || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "actualCost is %s: send a whole number of cost units", clip(string(raw))).Field("actualCost")
	}
	if f < 0 || f != math.Trunc(f) {
		return 0, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "actualCost is %s: send a whole number of cost units, 0 or more (counters count whole units; round up)", clip(string(raw))).Field("actualCost")
	}
	limit := max(n.Cost.Max, n.Cost.Default, 1) * absurdFactor
	if f > float64(limit) {
		return 0, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "actualCost %s is over %d, %d times node '%s''s largest item cost: no call costs that; send the cost in the node's units", clip(string(raw)), limit, absurdFactor, n.Name).Field("actualCost")
	}
	return int64(f), nil
}

// settleStamp reads and verifies the message's stamp and returns its
// (last) charge record at node n.
func (l *Live) settleStamp(q *httpapi.Request, e *plane.Entry, n *plan.Node, m settleMessage) (cost.GateStamp, cost.Charge, *httpapi.Refusal) {
	const field = "message.data._gate"
	raw, ok := cost.StampOf(m.Data)
	if !ok {
		return cost.GateStamp{}, cost.Charge{}, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidStamp, "message.data has no _gate stamp: send the data exactly as popped from the egress queue").Field(field)
	}
	st, err := cost.ParseStamp(raw)
	if err != nil {
		return st, cost.Charge{}, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidStamp, "message.data._gate is not a stamp a relay wrote (%v): send the data exactly as popped", err).Field(field)
	}
	if len(st.Charges) == 0 || st.Sig == "" {
		return st, cost.Charge{}, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidStamp, "message.data._gate carries no signed charge records: its nodes charge a fixed cost (only a cost read from the payload, cost.path, is an estimate to settle), charge nothing, or the relay that forwarded it had not read the fleet's stamp key (kv %s); nothing to settle", budgetStampKeyHint(l)).Field(field)
	}
	sg, err := l.p.StampSigner(q.Context())
	if err != nil {
		return st, cost.Charge{}, httpapi.Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "reading the fleet's stamp key failed: %v; nothing was changed, retry", err)
	}
	if !sg.Verify(st, e.App, *m.TransactionID) {
		return st, cost.Charge{}, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidStamp, "message.data._gate does not verify: it was altered, forged, or belongs to another message than transactionId %s (or another application); send the message exactly as popped", clip(*m.TransactionID)).Field(field)
	}
	if st.Graph != e.Graph {
		return st, cost.Charge{}, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownMessage, "this message was forwarded by graph '%s', not '%s': settle it on its own graph", clip(st.Graph), e.Graph).Field(field + ".graph")
	}
	for i := len(st.Charges) - 1; i >= 0; i-- {
		if st.Charges[i].Node == n.Name {
			return st, st.Charges[i], nil
		}
	}
	var at []string
	for _, c := range st.Charges {
		at = append(at, c.Node)
	}
	return st, cost.Charge{}, httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeUnknownMessage, "this message was not charged at node '%s' (its stamp records charges at %q): settle it at a node that charged it; only a node whose cost is read from the payload (cost.path, an estimate) records its charges, a fixed cost is charged exactly", n.Name, at).Field(field + ".charges")
}

func budgetStampKeyHint(l *Live) string { return l.p.Cfg.KVNamespace + "/" + store.StampKeyKey }

// settleNote says what a settle did in a sentence.
func settleNote(s wire.Settled, extra string) string {
	var out string
	switch {
	case s.Actual == s.Estimated:
		out = fmt.Sprintf("the estimate of %d was exact: nothing to refund or charge", s.Estimated)
	case s.Charged > 0:
		out = fmt.Sprintf("the call cost %d where %d was estimated: %d charged to the current window as a debt", s.Actual, s.Estimated, s.Actual-s.Estimated)
	case s.Refunded > 0:
		out = fmt.Sprintf("the call cost %d where %d was estimated: %d given back to the window it was charged in", s.Actual, s.Estimated, s.Estimated-s.Actual)
	default:
		out = fmt.Sprintf("the call cost %d where %d was estimated: nothing given back, the window it was charged in has ended", s.Actual, s.Estimated)
	}
	if extra != "" {
		out += "; " + extra
	}
	return out
}

// settleStats reads the settle statistics of p's nodes for the graph
// view; a failed read shows none.
func (l *Live) settleStats(q *httpapi.Request, e *plane.Entry, p *plan.Plan) map[string]*wire.SettleStats {
	prefixes := make([]string, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		prefixes = append(prefixes, budget.SettleStatsKey(e.App, e.Graph, n.Name))
	}
	stats, err := budget.ReadSettleStats(q.Context(), l.p.Client, l.p.Cfg.KVNamespace, prefixes)
	out := map[string]*wire.SettleStats{}
	if err != nil {
		return out
	}
	for _, n := range p.Nodes {
		st, ok := stats[budget.SettleStatsKey(e.App, e.Graph, n.Name)]
		if !ok {
			continue
		}
		ws := &wire.SettleStats{Settles: st.Settles, Estimated: st.Estimated, Actual: st.Actual, Until: st.Until.UnixMilli()}
		if st.Estimated > 0 {
			ws.Ratio = float64(st.Actual) / float64(st.Estimated)
		}
		out[n.Name] = ws
	}
	return out
}
