package server

import (
	"encoding/json"
	"github.com/queen-mq/gate/libs/wire"
	"net/http"
	"strings"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
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
	Path    string `json:"path"`
	Attempt uint32 `json:"attempt"`
}

// reenter is POST …/graphs/{graph}/reenter: one item goes back to the
// ingress of the first node of its own path, so it re-pays every budget;
// the attempt rides in the derived transaction id, so reporting one item
// twice collapses on the broker's dedup.
func (s *Server) reenter(q *req) *apiError {
	raw, bad := readRaw(q.w, q.r, q.limit)
	if bad != nil {
		return bad
	}
	var b reenterBody
	if bad := decodeStrict(raw, &b, "the reenter body"); bad != nil {
		return bad
	}
	if b.Txn == nil || *b.Txn == "" {
		return fail(http.StatusUnprocessableEntity, "txn is required: send the transaction id the item arrived with on the egress queue").field("txn")
	}
	if bad := checkText("txn", *b.Txn, maxTxn); bad != nil {
		return bad
	}
	partition := ""
	if b.Partition != nil {
		partition = *b.Partition
		if bad := checkText("partition", partition, maxPartition); bad != nil {
			return bad
		}
	}
	e, bad := s.resolveRunning(q)
	if bad != nil {
		return bad
	}
	data := b.Payload
	if firstByte(data) != '{' {
		data = json.RawMessage("{}")
	}
	var prior priorStamp
	if st, ok := cost.Lookup(data, "payload."+cost.Stamp); ok && firstByte(st) == '{' {
		_ = json.Unmarshal(st, &prior)
	}
	path := prior.Path
	if b.Path != nil && *b.Path != "" {
		path = *b.Path
	}
	paths := pathNames(e.plan)
	if path == "" {
		return fail(http.StatusUnprocessableEntity, "no path: the payload carries no _gate.path and the body names none; send \"path\", one of %s", strings.Join(paths, ", ")).field("path").with("paths", paths)
	}
	entry := entryStage(e.plan, path)
	if entry == nil {
		return fail(http.StatusNotFound, "no path '%s' in graph '%s/%s': its paths are %s", path, e.app, e.graph, strings.Join(paths, ", ")).field("path")
	}
	node := e.plan.Node(entry.Node)
	if node == nil || node.IngressQueue == "" {
		return fail(http.StatusConflict, "path '%s' starts at node '%s', which has no ingress queue to re-enter", path, entry.Node).field("path")
	}
	attempt := prior.Attempt + 1
	if b.Attempt != nil {
		attempt = *b.Attempt
	}
	maxAttempts := max(e.plan.MaxAttempts, 1)
	if attempt > maxAttempts {
		return fail(http.StatusUnprocessableEntity, "attempt %d is over the graph's maxAttempts %d: dead-letter the item in your worker now (raise maxAttempts in the document to allow more)", attempt, maxAttempts).field("attempt").with("maxAttempts", maxAttempts)
	}
	st := stamp{graph: e.graph, path: path, node: entry.Node, at: s.now().UnixMilli(), attempt: int64(attempt)}
	item, err := restamp(data, st)
	if err != nil {
		return fail(http.StatusUnprocessableEntity, "payload: %v", err).field("payload")
	}
	txn := plan.DeriveTransactionID(*b.Txn, plan.ReentryLabel(int(attempt)))
	res, err := s.client.Push(q.r.Context(), []queen.PushItem{{Queue: node.IngressQueue, Partition: partition, Payload: item, TransactionID: txn}})
	if err != nil {
		return fail(http.StatusBadGateway, "pushing to %s failed: %v; nothing was queued, retry (the same txn and attempt stay idempotent)", node.IngressQueue, err)
	}
	pushed := 0
	for _, r := range res {
		switch {
		case r.Stored():
			pushed++
		case r.Duplicate():
		default:
			return fail(http.StatusBadGateway, "the broker did not store the item on %s: %s; retry", node.IngressQueue, r.Error)
		}
	}
	s.log.Info("re-entered", "application", e.app, "graph", e.graph, "path", path, "node", entry.Node, "attempt", attempt, "transactionId", txn, "pushed", pushed)
	writeJSON(q.w, http.StatusOK, wire.Reentered{
		OK: true, Queue: node.IngressQueue, Path: path, Node: entry.Node,
		Attempt: int(attempt), MaxAttempts: int(maxAttempts), TransactionID: txn, Pushed: pushed,
	})
	return nil
}

// restamp overwrites _gate on an object payload.
func restamp(data json.RawMessage, st stamp) ([]byte, error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	m[cost.Stamp] = st.json(0)
	return json.Marshal(m)
}

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
