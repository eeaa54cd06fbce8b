package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// TxnOpType tags an operation of the transaction wire.
type TxnOpType string

const (
	// TxnAckOp settles one claimed message inside the transaction.
	TxnAckOp TxnOpType = "ack"
	// TxnPushOp pushes items inside the transaction.
	TxnPushOp TxnOpType = "push"
)

// TxnOp is one entry of a transaction's "operations": an ack (Ack is used)
// or a push (Items are used). Build it with TxnAck or TxnPush.
type TxnOp struct {
	Type  TxnOpType
	Ack   AckItem
	Items []PushItem
}

// TxnAck is an ack operation. Always give the ack its LeaseID: the broker
// then fences it against exactly that lease.
func TxnAck(a AckItem) TxnOp { return TxnOp{Type: TxnAckOp, Ack: a} }

// TxnPush is a push operation of one or more items; each item takes one
// result slot. Inside a transaction a transactionId that already exists on
// the (queue, partition) rolls the whole bundle back (QDUP).
func TxnPush(items ...PushItem) TxnOp { return TxnOp{Type: TxnPushOp, Items: items} }

// Transaction is one POST /api/v1/transaction bundle: pushes and acks plus
// KV (and timer) riders, applied in one database transaction — KV first,
// then timers, then pushes in order, then acks — or not at all. The zero
// value is an empty bundle; the methods append to it and return it for
// chaining, and Reset empties it keeping its capacity for reuse.
type Transaction struct {
	// Operations are the pushes and acks, in result order.
	Operations []TxnOp
	// RequiredLeases are lease ids that must still be live.
	RequiredLeases []string
	// KV are rider ops, applied before the operations; a rider refused with
	// Required rolls everything back (Refusal.KVReason says why). getPrefix
	// is not allowed here.
	KV []KVOp
	// Timers are timer rider ops as raw JSON objects (sent verbatim).
	Timers []json.RawMessage
	// Lean keeps a committed answer's slots without the strings a caller
	// that only checks the verdict and its riders never reads: each push
	// and ack slot comes back without TransactionID, MessageID and
	// QueueName (KV and timer slots are whole). The answer is still
	// checked as strictly. Reset leaves it as it is.
	Lean bool
}

// Ack appends an ack operation.
func (t *Transaction) Ack(a AckItem) *Transaction {
	t.Operations = append(t.Operations, TxnAck(a))
	return t
}

// Push appends one push operation carrying items.
func (t *Transaction) Push(items ...PushItem) *Transaction {
	t.Operations = append(t.Operations, TxnPush(items...))
	return t
}

// AddKV appends KV rider ops.
func (t *Transaction) AddKV(ops ...KVOp) *Transaction {
	t.KV = append(t.KV, ops...)
	return t
}

// RequireLease appends lease ids that must still be live at commit.
func (t *Transaction) RequireLease(leaseIDs ...string) *Transaction {
	t.RequiredLeases = append(t.RequiredLeases, leaseIDs...)
	return t
}

// Reset empties the bundle and keeps its slices' capacity.
func (t *Transaction) Reset() {
	clear(t.Operations)
	t.Operations = t.Operations[:0]
	t.RequiredLeases = t.RequiredLeases[:0]
	clear(t.KV)
	t.KV = t.KV[:0]
	t.Timers = t.Timers[:0]
}

// Slots is the number of result slots the broker answers on commit: one per
// push item and per ack, then one per KV rider, then one per timer.
func (t *Transaction) Slots() int {
	n := len(t.KV) + len(t.Timers)
	for i := range t.Operations {
		if t.Operations[i].Type == TxnPushOp {
			n += len(t.Operations[i].Items)
		} else {
			n++
		}
	}
	return n
}

// TxnItemResult is one slot of a committed transaction's flat results: push
// items and acks in operation order, then KV riders, then timers. Type says
// which fields apply.
type TxnItemResult struct {
	// Index is the flat position.
	Index int `json:"index"`
	// Type is "push", "ack", "kv" or "timer".
	Type string `json:"type"`
	// OpIndex is a rider's position inside its own array (kv or timers).
	OpIndex int `json:"opIndex"`
	// Success says the push or ack applied (always true for them in a
	// committed bundle; KV and timer slots carry their own verdicts).
	Success bool `json:"success"`
	// TransactionID is the pushed/acked message's transaction id.
	TransactionID string `json:"transactionId"`
	// MessageID is the stored message of a push; for an in-bundle duplicate,
	// the first item's message.
	MessageID string `json:"messageId"`
	// QueueName is a push's queue.
	QueueName string `json:"queueName"`
	// Duplicate is set on a push that repeated an earlier item of the same
	// bundle (same queue, partition and transaction id): not stored again.
	Duplicate bool `json:"duplicate"`
	// Error is an ack's error text (null → "").
	Error string `json:"error"`
	// DLQ says an ack dead-lettered its message inside the bundle.
	DLQ bool `json:"dlq"`
	// OK and Status are a timer rider's verdict.
	OK     bool   `json:"ok"`
	Status string `json:"status"`
	// KV is a KV rider's result (op, applied, reason, key, value, version,
	// rows, …) with its Index set to the rider's position among the
	// transaction's KV ops; nil for pushes, acks and timers (unless such an
	// entry unexpectedly carries KV fields).
	KV *KVResult `json:"-"`
}

// TxnResult is the answer to a transaction. When Success is false, Refusal
// says why and NOTHING was applied (no push, no ack, no KV write): this is
// an HTTP 200 verdict, not an error, and the caller must look at it.
type TxnResult struct {
	// TransactionID is the bundle's own id, minted by the broker per call.
	TransactionID string
	// Success says the bundle committed.
	Success bool
	// Results are the flat result slots of a committed bundle (empty on
	// refusal).
	Results []TxnItemResult
	// Refusal is the rollback verdict when Success is false.
	Refusal *Refusal
}

// Err returns the Refusal as an error, or nil when the bundle committed.
func (r *TxnResult) Err() error {
	if r.Success || r.Refusal == nil {
		return nil
	}
	return r.Refusal
}

type txnWire struct {
	TransactionID string          `json:"transactionId"`
	Results       []TxnItemResult `json:"results"`
	refusalWire
}

// Transact sends one bundle (POST /api/v1/transaction). A rolled-back
// bundle (lost required KV gate, QDUP, rejected ack, …) is a TxnResult with
// Success false and a Refusal, not an error; a malformed bundle (HTTP 400),
// riders refused by a kill switch (403) and 5xx are *Error. A transaction is
// never retried by the client; an empty bundle is ErrEmptyTransaction.
func (c *Client) Transact(ctx context.Context, t *Transaction) (TxnResult, error) {
	const path = "/api/v1/transaction"
	if t == nil || len(t.Operations) == 0 && len(t.KV) == 0 && len(t.Timers) == 0 {
		return TxnResult{}, ErrEmptyTransaction
	}
	body, err := encodeTransaction(t)
	if err != nil {
		return TxnResult{}, fmt.Errorf("queen: transaction: %w", err)
	}
	var res TxnResult
	err = c.call(ctx, http.MethodPost, path, "", body, func(_ int, b []byte) error {
		var err error
		res, err = decodeTxn(b, t.Slots(), t.Lean)
		return err
	})
	if err != nil {
		return TxnResult{}, err
	}
	return res, nil
}

// decodeTxn reads a 2xx transaction answer: a commit, or a refusal
// envelope; slots (the expected result count) sizes the results up front;
// lean is Transaction.Lean.
func decodeTxn(b []byte, slots int, lean bool) (TxnResult, error) {
	var w txnWire
	if slots > 0 {
		w.Results = make([]TxnItemResult, 0, min(slots, 4096))
	}
	if err := decodeTxnFast(b, &w, lean); err != nil {
		return TxnResult{}, err
	}
	if w.Success != nil && !*w.Success || w.OK != nil && !*w.OK {
		return TxnResult{TransactionID: w.TransactionID, Refusal: w.refusal()}, nil
	}
	if w.Success == nil {
		return TxnResult{}, fmt.Errorf("answer carries no success flag: %.200s", b)
	}
	return TxnResult{TransactionID: w.TransactionID, Success: true, Results: w.Results}, nil
}

// encodedSizeHint estimates the body size so encoding allocates once.
func (t *Transaction) encodedSizeHint() int {
	n := 64 + len(t.KV)*160
	for i := range t.Operations {
		op := &t.Operations[i]
		if op.Type == TxnAckOp {
			a := &op.Ack
			n += 128 + len(a.TransactionID) + len(a.PartitionID) + len(a.LeaseID) + len(a.ConsumerGroup) + len(a.Error)
			continue
		}
		n += 32
		for j := range op.Items {
			it := &op.Items[j]
			n += 96 + len(it.Queue) + len(it.Partition) + len(it.Payload) + len(it.TransactionID) + len(it.TraceID)
		}
	}
	for _, l := range t.RequiredLeases {
		n += len(l) + 3
	}
	for _, tm := range t.Timers {
		n += len(tm) + 1
	}
	return n
}

// encodeTransaction writes the bundle's wire body.
func encodeTransaction(t *Transaction) ([]byte, error) {
	b := make([]byte, 0, t.encodedSizeHint())
	b = append(b, `{"operations":[`...)
	var err error
	for i := range t.Operations {
		op := &t.Operations[i]
		if i > 0 {
			b = append(b, ',')
		}
		where := "operations[" + strconv.Itoa(i) + "]"
		switch op.Type {
		case TxnAckOp:
			if err := checkAck(where, &op.Ack); err != nil {
				return nil, err
			}
			b = append(b, `{"type":"ack"`...)
			b = appendAckFields(b, &op.Ack, true)
			b = append(b, '}')
		case TxnPushOp:
			if len(op.Items) == 0 {
				return nil, fmt.Errorf("%s: push has no items; give it at least one PushItem", where)
			}
			b = append(b, `{"type":"push","items":[`...)
			for j := range op.Items {
				if j > 0 {
					b = append(b, ',')
				}
				if b, err = appendPushItem(b, &op.Items[j], where+".items["+strconv.Itoa(j)+"]"); err != nil {
					return nil, err
				}
			}
			b = append(b, "]}"...)
		default:
			return nil, fmt.Errorf("%s: type %q is not ack or push; build it with TxnAck or TxnPush", where, op.Type)
		}
	}
	b = append(b, ']')
	if len(t.RequiredLeases) > 0 {
		b = field(b, "requiredLeases")
		b = appendStrings(b, t.RequiredLeases)
	}
	if len(t.KV) > 0 {
		b = field(b, "kv")
		b = append(b, '[')
		for i := range t.KV {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendKVOp(b, &t.KV[i], "kv["+strconv.Itoa(i)+"]"); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(t.Timers) > 0 {
		b = field(b, "timers")
		b = append(b, '[')
		for i, tm := range t.Timers {
			if i > 0 {
				b = append(b, ',')
			}
			if !json.Valid(tm) {
				return nil, fmt.Errorf("timers[%d] is not valid JSON; pass one timer op object", i)
			}
			b = append(b, tm...)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}
