package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// PushItem is one message to push, on POST /api/v1/push or inside a
// transaction.
type PushItem struct {
	// Queue is the target queue (required; created on first use).
	Queue string
	// Partition is the target partition; "" is not sent and means the
	// broker's "Default".
	Partition string
	// Payload is any one JSON value, stored verbatim and delivered as the
	// message's Data; nil is sent as null.
	Payload json.RawMessage
	// TransactionID is the idempotency key, unique per (queue, partition)
	// within the queue's dedup window; "" is not sent and the broker uses the
	// new message id (see NewTransactionID).
	TransactionID string
	// TraceID is a UUID kept only for pushes inside a transaction (the plain
	// push route drops it); "" is not sent.
	TraceID string
	// PayloadValid says Payload is already known to be one valid JSON
	// value, so encoding copies it without checking it again: the Data of
	// a claimed Message is (this client's decoder validated it), and so is
	// what a splice that keeps such a value valid builds from it. Leave it
	// false for anything else — an invalid payload sent this way is not
	// caught here, and the broker refuses the whole request.
	PayloadValid bool
}

// PushStatus is the broker's verdict on one pushed item.
type PushStatus string

const (
	// PushQueued means the message was stored.
	PushQueued PushStatus = "queued"
	// PushDuplicate means the transactionId was already stored on that
	// (queue, partition) within the dedup window (or earlier in the same
	// request); nothing was stored and MessageID is the existing message's.
	PushDuplicate PushStatus = "duplicate"
	// PushBuffered means the broker spooled the item to disk (maintenance
	// mode or database failure) and will replay it later.
	PushBuffered PushStatus = "buffered"
	// PushFailed means the item was not stored.
	PushFailed PushStatus = "failed"
)

// PushResult is the broker's answer for one pushed item, in request order.
type PushResult struct {
	// Index is the item's position in the request.
	Index int `json:"index"`
	// MessageID is the stored (or, for a duplicate, the existing) message id.
	MessageID string `json:"message_id"`
	// TransactionID is the item's transaction id; when the broker omits it,
	// the id the caller sent.
	TransactionID string `json:"transaction_id"`
	// QueueName is the queue, when the broker reports it.
	QueueName string `json:"queueName"`
	// Status is queued, duplicate, buffered or failed.
	Status PushStatus `json:"status"`
	// Error is the broker's reason for a failed item, when given.
	Error string `json:"error"`
}

// Duplicate reports whether the broker found the item's transactionId
// already stored: not an error, and nothing new was stored.
func (r PushResult) Duplicate() bool { return r.Status == PushDuplicate }

// Stored reports whether the broker took the item (queued now, or buffered
// for replay).
func (r PushResult) Stored() bool { return r.Status == PushQueued || r.Status == PushBuffered }

// Push stores items (POST /api/v1/push) and returns one result per item in
// request order. Duplicates, buffered and failed items are results, not
// errors: look at each Status. A push without transaction ids is not
// idempotent, so the client never retries it.
func (c *Client) Push(ctx context.Context, items []PushItem) ([]PushResult, error) {
	const path = "/api/v1/push"
	b := make([]byte, 0, 64+len(items)*96)
	b = append(b, `{"items":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendPushItem(b, &items[i], fmt.Sprintf("push: items[%d]", i)); err != nil {
			return nil, fmt.Errorf("queen: %w", err)
		}
	}
	b = append(b, "]}"...)
	var out []PushResult
	err := c.call(ctx, http.MethodPost, path, "", b, func(_ int, body []byte) error {
		var err error
		out, err = decodePush(body, items)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodePush reads the push answer: a top-level array, one element per item
// in request order; a missing transaction_id falls back to the one sent.
func decodePush(body []byte, items []PushItem) ([]PushResult, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, fmt.Errorf("empty answer for %d items", len(items))
	}
	if body[0] != '[' {
		return nil, fmt.Errorf("answer is not an array: %.200s", body)
	}
	out := make([]PushResult, 0, len(items))
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	if len(out) != len(items) {
		return nil, fmt.Errorf("the broker answered %d results for %d items", len(out), len(items))
	}
	for i := range out {
		if out[i].TransactionID == "" && out[i].Index >= 0 && out[i].Index < len(items) {
			out[i].TransactionID = items[out[i].Index].TransactionID
		}
	}
	return out, nil
}
