package push

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// Field limits of the push and re-enter bodies: a partition or transaction
// id names broker rows, so it stays short and printable.
const (
	maxPartition = 256
	maxTxn       = 256
	// maxOp bounds the op a push writes to payload.op; whenOp globs match
	// it, so it stays a short printable name.
	maxOp = 256
)

// pushBody is the push front door's body; every field is optional.
type pushBody struct {
	Op        *string    `json:"op"`
	Partition *string    `json:"partition"`
	Key       *string    `json:"key"`
	Txn       *string    `json:"txn"`
	Cost      *int64     `json:"cost"`
	Payload   rawPayload `json:"payload"`
}

// rawPayload is a JSON value kept as a slice of the body it was decoded
// from (json.RawMessage copies it): the push body's payload, which can be
// megabytes, is not duplicated by decoding.
type rawPayload []byte

// UnmarshalJSON keeps data itself; json.Unmarshal hands it a slice of its
// input, which outlives the call.
func (p *rawPayload) UnmarshalJSON(data []byte) error {
	*p = data
	return nil
}

// push is POST …/graphs/{graph}/nodes/{node}/push and the target sugar
// POST …/targets/{graph}/lanes/{lane}/push.
func (d *Door) push(q *httpapi.Request) *httpapi.Refusal {
	start := d.p.Clock.Now()
	defer func() { d.duration.Observe(d.p.Clock.Since(start).Seconds()) }()
	release, bad := d.bytes.reserve(q.R.ContentLength, q.Limit)
	if bad != nil {
		return bad
	}
	defer release()
	raw, bad := q.ReadRaw()
	if bad != nil {
		return bad
	}
	var b pushBody
	if bad := httpapi.DecodeStrict(raw, &b, "the push body"); bad != nil {
		return bad
	}
	// A graph no relay runs is served all the same: the item waits in the
	// ingress queue, and the answer says so.
	e, bad := d.p.Resolve(q, "graph")
	if bad != nil {
		return bad
	}
	node, bad := pushNode(q, e)
	if bad != nil {
		return bad
	}
	if node.IngressQueue == "" {
		return httpapi.Refuse(http.StatusConflict, wire.CodeNoIngress, "node '%s' of graph '%s/%s' has no ingress: pushing into its interior queue would skip the budgets upstream of it; push to an entry node (%s)", node.Name, e.App, e.Graph, strings.Join(plane.EntryNodes(e.Plan), ", ")).Field("node")
	}
	if !node.HTTPPush {
		return httpapi.Refuse(http.StatusConflict, wire.CodeHTTPPushOff, "node '%s' of graph '%s/%s' reads the application-owned queue %q and has the HTTP front door off: push to that queue with your own SDK, or declare \"http\": true on its ingress", node.Name, e.App, e.Graph, node.IngressQueue).Field("node")
	}
	if b.Payload != nil && httpapi.FirstByte(b.Payload) != '{' {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeWrongType, "payload must be a JSON object, not %s: wrap the value, e.g. {\"payload\": {\"value\": …}}", httpapi.KindOf(httpapi.FirstByte(b.Payload))).Field("payload")
	}
	partition := ""
	switch {
	case b.Partition != nil && *b.Partition != "":
		partition = *b.Partition
		if bad := plane.CheckText("partition", partition, maxPartition); bad != nil {
			return bad
		}
	case b.Key != nil && *b.Key != "":
		partition = *b.Key
		if bad := plane.CheckText("key", partition, maxPartition); bad != nil {
			return bad
		}
	}
	txn := ""
	if b.Txn != nil {
		txn = *b.Txn
		if bad := plane.CheckText("txn", txn, maxTxn); bad != nil {
			return bad
		}
	}
	op := ""
	if b.Op != nil {
		op = *b.Op
		if bad := plane.CheckText("op", op, maxOp); bad != nil {
			return bad
		}
	}
	var legacyCost int64
	if b.Cost != nil {
		legacyCost = *b.Cost
	}
	data, err := envelope(json.RawMessage(b.Payload), op, legacyCost, node.Cost.Path, stamp{graph: e.Graph, node: node.Name, at: d.p.Clock.Now().UnixMilli()})
	if err != nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeInvalidField, "payload: %v", err).Field("payload")
	}
	itemCost, err := node.Cost.Of(data)
	if err != nil {
		return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeCostMax, "node '%s': %v", node.Name, err).Field("payload").Rule("cost-max")
	}
	itemOp := cost.Op(data)
	rec := store.ItemRecord{Node: node.Name, Queue: node.IngressQueue, Op: itemOp, Cost: itemCost, At: d.p.Clock.Now().UnixMilli()}
	for _, bu := range node.Budgets {
		if bu.ScopeBy == "" || !cost.Applies(bu.WhenOp, itemOp) {
			continue
		}
		v, ok := cost.Scope(data, bu.ScopeBy)
		if ok && !rec.HasScope {
			rec.Scope, rec.HasScope = v, true
		}
		if !ok {
			return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeScopeValueMissing, "budget '%s' of node '%s' counts per %s, and this item has no value there (a string, number or boolean): add it to the payload", bu.ID, node.Name, bu.ScopeBy).Field(bu.ScopeBy).Budget(bu.ID)
		}
		if room := plan.ScopeRoom(bu.Key); len(v) > room {
			// The broker would refuse the counter key on every claim:
			// the item would never move, and nothing behind it either.
			return httpapi.Refuse(http.StatusUnprocessableEntity, wire.CodeScopeValueTooLong, "budget '%s' of node '%s' counts per %s, and this item's value there is %d bytes: its counter key %s:… would pass the broker's %d-byte limit, which leaves %d bytes for the value; send a shorter value (e.g. an id or a hash of it)", bu.ID, node.Name, bu.ScopeBy, len(v), bu.Key, plan.MaxKVKeyBytes, max(room, 0)).
				Field(bu.ScopeBy).Budget(bu.ID).Room(int64(max(room, 0))).Bytes(int64(len(v)))
		}
	}
	if node.Shed {
		// A failed read never sheds: the item queues and the relay's
		// charge judges it as it would any other.
		if wait, full, _ := d.p.Limiter().Full(q.Context(), budget.Unscoped(node), itemCost, d.p.Clock.Now()); full {
			return httpapi.Refuse(http.StatusTooManyRequests, wire.CodeShed, "node '%s' of graph '%s/%s' is at its ceiling on every budget: retry after %d second(s); nothing was charged or queued", node.Name, e.App, e.Graph, wait).
				Node(node.Name).RetryAfterSeconds(wait).RetryAfter(wait)
		}
	}
	if partition == "" && node.IngressOwnedByGate && node.IngressPartitions > 1 {
		if txn != "" {
			// A retry of one txn must meet the broker's dedup, which is
			// per partition: the txn picks the partition.
			partition = plan.TxnPartition(txn, node.IngressPartitions)
		} else {
			partition = plan.RoundRobinPartition((d.rr.Add(1) - 1) % uint64(node.IngressPartitions))
		}
	}
	// An item with a transaction id is recorded for explain by transaction
	// id, beside the push (a kv write coalesced with the records of other
	// pushes, not after the push: the answer waits for the slower of the
	// two). A record that fails is logged and the push
	// answered all the same: explain then says it knows no such item.
	var recorded sync.WaitGroup
	if txn != "" && d.p.Cfg.ItemRecordSeconds > 0 {
		// The broker names an unnamed partition Default.
		rec.Partition = cmp.Or(partition, "Default")
		recorded.Add(1)
		go func() {
			defer recorded.Done()
			if err := d.records.Put(q.Context(), store.ItemPut{App: e.App, Graph: e.Graph, TxnID: txn, Record: rec, TTL: time.Duration(d.p.Cfg.ItemRecordSeconds) * time.Second}); err != nil {
				d.p.Log.Warn("item not recorded for explain", "app", e.App, "graph", e.Graph, "node", node.Name, "transactionId", txn, "error", err)
			}
		}()
	}
	r, err := d.batch.Push(q.Context(), queen.PushItem{Queue: node.IngressQueue, Partition: partition, Payload: data, TransactionID: txn})
	recorded.Wait()
	switch {
	case errors.Is(err, errPushUnknown):
		return httpapi.Refuse(http.StatusGatewayTimeout, wire.CodePushOutcomeUnknown, "pushing to %s: %v; the item may or may not be queued: retry with the same txn to stay idempotent (without a txn a retry may queue it twice)", node.IngressQueue, err)
	case err != nil:
		return brokerRefused(node.IngressQueue, err)
	case !r.Stored() && !r.Duplicate():
		return notStored(node.IngressQueue, r.Error)
	}
	pushed := 0
	if r.Stored() {
		pushed = 1
	}
	dup := r.Duplicate()
	running, note := d.p.RelayState(e)
	out := wire.Pushed{OK: true, Pushed: pushed, Duplicate: dup, Queue: node.IngressQueue, Cost: itemCost, Running: running, RunningNote: note}
	if partition != "" {
		out.Partition = &partition
	}
	plane.SetRelayHeader(q.W, running)
	httpapi.WriteJSON(q.W, http.StatusOK, out)
	return nil
}

// maxBrokerRetryAfter bounds the Retry-After a push passes on from the
// broker's own.
const maxBrokerRetryAfter = 60

// brokerRefused is the answer to a push or re-entry whose broker call
// failed: 502 push-failed when the broker refused the item as bad input
// (the same item is refused again), else 503 push-unavailable with
// Retry-After (the broker's own, 1..60 s, else 1): the broker could not
// take it right now. A call that outlived its deadline is answered 504 by
// the router (the error is among the arguments).
func brokerRefused(queue string, err error) *httpapi.Refusal {
	if refusedAsBadInput(err) {
		return httpapi.Refuse(http.StatusBadGateway, wire.CodePushFailed, "the broker refused the item on %s: %v; nothing was queued, and the same item is refused again: fix what the broker names", queue, err)
	}
	wait := int64(1)
	if d, ok := queen.RetryAfter(err); ok {
		wait = min(max(int64((d+time.Second-1)/time.Second), 1), maxBrokerRetryAfter)
	}
	return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodePushUnavailable, "the broker could not take the item on %s: %v; nothing was queued: retry after %d second(s) (with the same txn to stay idempotent)", queue, err, wait).RetryAfter(wait)
}

// notStored is the answer to an item the broker answered for without
// storing it (neither queued nor a duplicate): 503, retry.
func notStored(queue, why string) *httpapi.Refusal {
	return httpapi.Refuse(http.StatusServiceUnavailable, wire.CodePushUnavailable, "the broker did not store the item on %s: %s; nothing was queued: retry after 1 second (with the same txn to stay idempotent)", queue, cmp.Or(why, "it gave no reason")).RetryAfter(1)
}

// pushNode is the node a push names: {node}, or on the target route the
// target's only ingress node.
func pushNode(q *httpapi.Request, e *plane.Entry) (*plan.Node, *httpapi.Refusal) {
	if _, ok := q.Vars["node"]; ok {
		return plane.NodeOf(q, e)
	}
	entries := plane.EntryNodes(e.Plan)
	switch len(entries) {
	case 1:
		return e.Plan.Node(entries[0]), nil
	case 0:
		return nil, httpapi.Refuse(http.StatusConflict, wire.CodeNoIngress, "target '%s/%s' has no ingress node: nothing can be pushed to it", e.App, e.Graph)
	}
	return nil, httpapi.Refuse(http.StatusConflict, wire.CodeAmbiguousNode, "target '%s/%s' has %d ingress nodes (%s): push to one with POST /v1/apps/%s/graphs/%s/nodes/{node}/push", e.App, e.Graph, len(entries), strings.Join(entries, ", "), e.App, e.Graph).Nodes(entries)
}

// stamp is the _gate field of an item entering at the front door.
type stamp struct {
	graph, node, path string
	at                int64
	attempt           int64
}

func (st stamp) gate() cost.GateStamp {
	return cost.GateStamp{Graph: st.graph, Path: st.path, Node: st.node, At: st.at, Attempt: st.attempt, HasAttempt: st.attempt > 0}
}

// stamped is the payload as the ingress stores it: the payload object (an
// absent or null payload is {}) with op written as its "op" member when
// non-empty and st as its one `_gate`, through the stamp's one splice
// (libs/cost): every other member is kept as it came. A payload that is
// not an object is refused with the decoder's words.
func stamped(payload []byte, op string, st stamp) ([]byte, error) {
	body := bytes.TrimSpace(payload)
	if len(body) == 0 || string(body) == "null" {
		body = []byte("{}")
	}
	if out, ok := st.gate().AppendStamped(make([]byte, 0, len(body)+len(op)+128), body, cost.Splice{Op: op}); ok {
		return out, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	return nil, errors.New("is not a JSON object")
}

// envelope builds the stored item: the payload object (absent → {}), op
// written to payload.op when non-empty, the v1 cost written at the node's
// cost path when the payload has nothing there, and _gate overwritten.
func envelope(payload json.RawMessage, op string, legacyCost int64, costPath string, st stamp) ([]byte, error) {
	if legacyCost <= 0 || costPath == "" {
		return stamped(payload, op, st)
	}
	body := bytes.TrimSpace(payload)
	if len(body) == 0 {
		body = []byte("{}")
	}
	if _, ok := cost.Lookup(body, costPath); !ok {
		m := map[string]json.RawMessage{}
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
		segs := strings.Split(strings.TrimPrefix(costPath, cost.Root+"."), ".")
		setPath(m, segs, json.RawMessage(strconv.FormatInt(legacyCost, 10)))
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		body = b
	}
	return stamped(body, op, st)
}

// setPath writes v at segs inside m, creating intermediate objects and
// never replacing a value that is not an object.
func setPath(m map[string]json.RawMessage, segs []string, v json.RawMessage) {
	if len(segs) == 1 {
		if _, ok := m[segs[0]]; !ok {
			m[segs[0]] = v
		}
		return
	}
	child := map[string]json.RawMessage{}
	if cur, ok := m[segs[0]]; ok {
		if httpapi.FirstByte(cur) != '{' || json.Unmarshal(cur, &child) != nil {
			return
		}
	}
	setPath(child, segs[1:], v)
	b, err := json.Marshal(child)
	if err == nil {
		m[segs[0]] = b
	}
}
