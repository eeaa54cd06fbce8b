package push

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

type reenterBody struct {
	Payload   json.RawMessage `json:"payload"`
	Txn       *string         `json:"txn"`
	Path      *string         `json:"path"`
	Attempt   *uint32         `json:"attempt"`
	Partition *string         `json:"partition"`
}

// priorStamp is what re-entry reads back from an item's _gate stamp.
type priorStamp struct {
	Path string `json:"path"`
	// Attempt is read as a number of any size, so a forged 4294967295 is
	// over maxAttempts rather than wrapping to 0.
	Attempt json.Number `json:"attempt"`
}

// nextAttempt is the attempt after the stamp's: 1 without one, and the
// largest value (over every maxAttempts) for one that is not a whole number
// of at most 2^63, so it never wraps.
func (p priorStamp) nextAttempt() uint64 {
	if p.Attempt == "" {
		return 1
	}
	n, err := strconv.ParseUint(string(p.Attempt), 10, 63)
	if err != nil {
		return math.MaxUint64
	}
	return n + 1
}

// reenter is POST …/graphs/{graph}/reenter: one item goes back to the
// ingress of the first node of its own path, so it re-pays every budget;
// the attempt rides in the derived transaction id, so reporting one item
// twice collapses on the broker's dedup.
func (d *Door) reenter(q *httpapi.Request) *httpapi.Refusal {
	raw, bad := q.ReadRaw()
	if bad != nil {
		return bad
	}
	var b reenterBody
	if bad := httpapi.DecodeStrict(raw, &b, "the reenter body"); bad != nil {
		return bad
	}
	if b.Txn == nil || *b.Txn == "" {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "txn is required: send the transaction id the item arrived with on the egress queue").Field("txn")
	}
	if bad := plane.CheckText("txn", *b.Txn, maxTxn); bad != nil {
		return bad
	}
	partition := ""
	if b.Partition != nil {
		partition = *b.Partition
		if bad := plane.CheckText("partition", partition, maxPartition); bad != nil {
			return bad
		}
	}
	// Like a push, a re-entry queues whether or not a relay runs the
	// graph, and says which.
	e, bad := d.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	data := b.Payload
	if httpapi.FirstByte(data) != '{' {
		data = json.RawMessage("{}")
	}
	var prior priorStamp
	if st, ok := cost.Lookup(data, "payload."+cost.Stamp); ok && httpapi.FirstByte(st) == '{' {
		_ = json.Unmarshal(st, &prior)
	}
	path := prior.Path
	if b.Path != nil && *b.Path != "" {
		path = *b.Path
	}
	paths := pathNames(e.Plan)
	if path == "" {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMissingField, "no path: the payload carries no _gate.path and the body names none; send \"path\", one of %s", strings.Join(paths, ", ")).Field("path").Paths(paths)
	}
	entry := entryStage(e.Plan, path)
	if entry == nil {
		return httpapi.Refuse(http.StatusNotFound, wire.CodePathNotFound, "no path '%s' in graph '%s/%s': its paths are %s", path, e.App, e.Graph, strings.Join(paths, ", ")).Field("path")
	}
	node := e.Plan.Node(entry.Node)
	if node == nil || node.IngressQueue == "" {
		return httpapi.Refuse(http.StatusConflict, wire.CodeNoIngress, "path '%s' starts at node '%s', which has no ingress queue to re-enter", path, entry.Node).Field("path")
	}
	attempt := prior.nextAttempt()
	if b.Attempt != nil {
		attempt = uint64(*b.Attempt)
	}
	maxAttempts := max(e.Plan.MaxAttempts, 1)
	if attempt > uint64(maxAttempts) {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeMaxAttempts, "attempt %d is over the graph's maxAttempts %d: dead-letter the item in your worker now (raise maxAttempts in the document to allow more)", attempt, maxAttempts).Field("attempt").MaxAttempts(int64(maxAttempts))
	}
	st := stamp{graph: e.Graph, path: path, node: entry.Node, at: d.p.Clock.Now().UnixMilli(), attempt: int64(attempt)}
	item, err := restamp(data, st)
	if err != nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "payload: %v", err).Field("payload")
	}
	txn := plan.DeriveTransactionID(*b.Txn, plan.ReentryLabel(int(attempt)))
	res, err := d.p.Client.Push(q.Context(), []queen.PushItem{{Queue: node.IngressQueue, Partition: partition, Payload: item, TransactionID: txn}})
	if err != nil {
		return brokerRefused(node.IngressQueue, err)
	}
	pushed := 0
	for _, r := range res {
		switch {
		case r.Stored():
			pushed++
		case r.Duplicate():
		default:
			return notStored(node.IngressQueue, r.Error)
		}
	}
	running, note := d.p.RelayState(e)
	d.p.Log.Info("re-entered", "app", e.App, "graph", e.Graph, "path", path, "node", entry.Node, "attempt", attempt, "transactionId", txn, "pushed", pushed, "running", running)
	plane.SetRelayHeader(q.W, running)
	httpapi.WriteJSON(q.W, http.StatusOK, wire.Reentered{
		OK: true, Queue: node.IngressQueue, Path: path, Node: entry.Node,
		Attempt: int(attempt), MaxAttempts: int(maxAttempts), TransactionID: txn, Pushed: pushed,
		Running: running, RunningNote: note,
	})
	return nil
}

// restamp overwrites _gate on an object payload.
func restamp(data json.RawMessage, st stamp) ([]byte, error) { return stamped(data, "", st) }

// entryStage is the first-hop stage of path, or nil.
func entryStage(p *plan.Plan, path string) *plan.Stage {
	for i := range p.Stages {
		if st := &p.Stages[i]; st.Path == path && st.Hop == 0 {
			return st
		}
	}
	return nil
}

func pathNames(p *plan.Plan) []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range p.Stages {
		if !seen[st.Path] {
			seen[st.Path] = true
			out = append(out, st.Path)
		}
	}
	return out
}
