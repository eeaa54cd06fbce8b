package queen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// AckStatus is what an ack says about a message.
type AckStatus string

const (
	// AckCompleted advances the cursor (implicitly acking every earlier
	// message of the leased batch). The empty AckStatus is sent as this.
	AckCompleted AckStatus = "completed"
	// AckFailed is a nack that charges the retry budget; at the limit the
	// message is dead-lettered (or dropped with the DLQ off).
	AckFailed AckStatus = "failed"
	// AckRetry is a nack that does not charge the retry budget.
	AckRetry AckStatus = "retry"
	// AckDLQ dead-letters the message now, bypassing the budget.
	AckDLQ AckStatus = "dlq"
)

// AckItem settles one message. TransactionID and PartitionID are required
// (transaction ids are unique per partition only), ConsumerGroup must be the
// group the message was popped under ("" addresses queue mode), and LeaseID,
// when set, is validated against the live lease.
type AckItem struct {
	TransactionID string
	PartitionID   string
	LeaseID       string
	ConsumerGroup string
	// Status is the verdict; "" is sent as "completed".
	Status AckStatus
	// Error is the reason recorded on a dead-letter row ("" = not sent).
	Error string
}

// AckResult is the broker's answer for one ack, in request order. Success
// false is a verdict the caller must look at (lease lost, already committed,
// unknown transaction id), not an error.
type AckResult struct {
	Index         int    `json:"index"`
	TransactionID string `json:"transactionId"`
	// Success says the ack was applied.
	Success bool `json:"success"`
	// Error is the broker's reason when Success is false.
	Error string `json:"error"`
	// LeaseReleased says the ack reached the end of the leased batch.
	LeaseReleased bool `json:"leaseReleased"`
	// DLQ says the message was dead-lettered by this ack.
	DLQ bool `json:"dlq"`
	// Noop says the ack was a harmless duplicate below the cursor.
	Noop bool `json:"noop"`
}

// checkAck names an ack's missing required field; where locates the ack
// (e.g. "ack batch: acknowledgments[3]").
func checkAck(where string, a *AckItem) error {
	if a.TransactionID == "" {
		return fmt.Errorf("%s: transactionId is empty; copy it from the claimed message", where)
	}
	if a.PartitionID == "" {
		return fmt.Errorf("%s: partitionId is empty; copy it from the claimed message (transaction ids are unique per partition only)", where)
	}
	return nil
}

// Ack settles one message (POST /api/v1/ack). An ack is never retried by
// the client.
func (c *Client) Ack(ctx context.Context, ack AckItem) (AckResult, error) {
	const path = "/api/v1/ack"
	if err := checkAck("queen: ack", &ack); err != nil {
		return AckResult{}, err
	}
	b := make([]byte, 0, 256)
	b = append(b, '{')
	b = appendAckFields(b, &ack, true)
	b = append(b, '}')
	res, err := c.postAcks(ctx, path, b, 1)
	if err != nil {
		return AckResult{}, err
	}
	return res[0], nil
}

// AckBatch settles many messages of one consumer group in one call (POST
// /api/v1/ack/batch); the route carries a single group, so every item's
// ConsumerGroup must be "" or equal to consumerGroup. Results are in request
// order.
func (c *Client) AckBatch(ctx context.Context, consumerGroup string, acks []AckItem) ([]AckResult, error) {
	const path = "/api/v1/ack/batch"
	if len(acks) == 0 {
		return nil, nil
	}
	b := make([]byte, 0, 64+len(acks)*160)
	b = append(b, '{')
	b = strFieldOmit(b, "consumerGroup", consumerGroup)
	b = field(b, "acknowledgments")
	b = append(b, '[')
	for i := range acks {
		a := &acks[i]
		if err := checkAck("queen: ack batch: acknowledgments["+strconv.Itoa(i)+"]", a); err != nil {
			return nil, err
		}
		if a.ConsumerGroup != "" && a.ConsumerGroup != consumerGroup {
			return nil, fmt.Errorf("queen: ack batch: acknowledgments[%d].consumerGroup is %q but the batch is for %q; one batch carries one group, split it", i, a.ConsumerGroup, consumerGroup)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendAckFields(b, a, false)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	return c.postAcks(ctx, path, b, len(acks))
}

// postAcks sends an ack body and decodes the per-item array (an object is
// tolerated as a one-element answer).
func (c *Client) postAcks(ctx context.Context, path string, body []byte, n int) ([]AckResult, error) {
	var out []AckResult
	err := c.call(ctx, http.MethodPost, path, "", body, func(_ int, b []byte) error {
		var err error
		out, err = decodeAcks(b, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeAcks reads an ack answer of n items: a top-level array in request
// order (a single object is tolerated as one element).
func decodeAcks(b []byte, n int) ([]AckResult, error) {
	b = bytes.TrimSpace(b)
	out := make([]AckResult, 0, n)
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("empty answer for %d acks", n)
	case b[0] == '[':
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, err
		}
	case b[0] == '{':
		var one AckResult
		if err := json.Unmarshal(b, &one); err != nil {
			return nil, err
		}
		out = append(out, one)
	default:
		return nil, fmt.Errorf("answer is not JSON: %.200s", b)
	}
	if len(out) != n {
		return nil, fmt.Errorf("the broker answered %d results for %d acks", len(out), n)
	}
	return out, nil
}

// LeaseExtension is the answer to a lease renewal.
type LeaseExtension struct {
	// LeaseID is the renewed lease.
	LeaseID string
	// Success says at least one live claim was renewed; false means the
	// lease had already expired (or never existed) and was NOT revived.
	Success bool
	// Renewed is how many (partition, group) claims were extended (a
	// multi-partition pop shares one lease, so > 1 is normal).
	Renewed int
	// ExpiresAt is the new expiry ("" when nothing was renewed).
	ExpiresAt Timestamp
}

// ExtendLease renews a claim's lease (POST /api/v1/lease/:leaseId/extend):
// the new expiry is max(current, now + d), rounded up to whole seconds; a
// lease is never shortened and an expired one is never revived. d ≤ 0 sends
// no body (the broker's default is 60 s).
func (c *Client) ExtendLease(ctx context.Context, leaseID string, d time.Duration) (LeaseExtension, error) {
	if err := need("extend lease", "leaseId", leaseID); err != nil {
		return LeaseExtension{}, err
	}
	path := "/api/v1/lease/" + escape(leaseID) + "/extend"
	var body []byte
	if d > 0 {
		body = intField([]byte{'{'}, "seconds", CeilSeconds(d))
		body = append(body, '}')
	}
	var raw json.RawMessage
	if err := c.callJSON(ctx, http.MethodPost, path, "", body, &raw); err != nil {
		return LeaseExtension{}, err
	}
	out, err := decodeExtension(raw)
	if err != nil {
		return LeaseExtension{}, fmt.Errorf("queen: POST %s: %w", path, err)
	}
	if out.LeaseID == "" {
		out.LeaseID = leaseID
	}
	return out, nil
}

// extensionWire is one lease extension as a broker answers it.
type extensionWire struct {
	LeaseID        string    `json:"leaseId"`
	Success        bool      `json:"success"`
	Renewed        *int      `json:"renewed"`
	NewExpiresAt   Timestamp `json:"newExpiresAt"`
	ExpiresAt      Timestamp `json:"expiresAt"`
	LeaseExpiresAt Timestamp `json:"lease_expires_at"`
}

// decodeExtension reads a lease extend answer: the object current brokers
// send, or the array of one element per renewed claim older ones (Queen
// 0.15) send, which is summed: success when any claim was renewed, renewed
// the count (an element without "renewed" counts one when it succeeded),
// the expiry the first one given.
func decodeExtension(raw json.RawMessage) (LeaseExtension, error) {
	var out LeaseExtension
	var ws []extensionWire
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return out, nil
	case b[0] == '[':
		if err := json.Unmarshal(b, &ws); err != nil {
			return out, fmt.Errorf("reading the lease extension array: %w", err)
		}
	default:
		var w extensionWire
		if err := json.Unmarshal(b, &w); err != nil {
			return out, fmt.Errorf("reading the lease extension: %w", err)
		}
		ws = []extensionWire{w}
		if w.Renewed == nil {
			ws[0].Renewed = new(0)
		}
	}
	for _, w := range ws {
		out.LeaseID = cmp.Or(out.LeaseID, w.LeaseID)
		out.Success = out.Success || w.Success
		switch {
		case w.Renewed != nil:
			out.Renewed += *w.Renewed
		case w.Success:
			out.Renewed++
		}
		for _, t := range []Timestamp{w.NewExpiresAt, w.ExpiresAt, w.LeaseExpiresAt} {
			if t != "" && out.ExpiresAt == "" {
				out.ExpiresAt = t
			}
		}
	}
	return out, nil
}
