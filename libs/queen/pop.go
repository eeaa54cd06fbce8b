package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// SubscriptionMode says where a NEW consumer-group cursor starts; an
// existing cursor is never re-seeded.
type SubscriptionMode string

const (
	// SubscribeAll starts a new group at the head of the retained log (the
	// whole backlog is delivered). A rate limiter wants this on ingress.
	SubscribeAll SubscriptionMode = "all"
	// SubscribeNew starts a new group at the tail (existing backlog skipped).
	SubscribeNew SubscriptionMode = "new"
)

// PopRequest describes one claim. The zero values of the optional fields
// are not sent and leave the broker's defaults.
type PopRequest struct {
	// Queue is the queue to claim from. Empty Queue with Namespace or Task
	// set uses the discovery route GET /api/v1/pop?namespace=&task=.
	Queue string
	// Partition names one partition (GET …/partition/:partition); "" pops
	// the wildcard route (any partition of the queue).
	Partition string
	// Namespace and Task select queues on the discovery route.
	Namespace string
	Task      string
	// ConsumerGroup is the group; "" is queue mode (__QUEUE_MODE__).
	ConsumerGroup string
	// Batch is the message budget of the whole pop (0 = not sent; the
	// broker's default, 200 on the Rust broker).
	Batch int
	// Partitions is how many partitions a wildcard pop may claim; sent only
	// when > 1 (the broker's default is 1) and never on the partition route.
	Partitions int
	// Wait long-polls: the broker holds the call until something is claimed
	// or Timeout passes.
	Wait bool
	// Timeout bounds the long-poll, sent as milliseconds in "timeout"
	// (0 = not sent; the broker's default is 30 s). The HTTP call itself is
	// bounded by ctx and, with Wait, by Timeout (or 30 s) plus 5 s of grace,
	// so a quiet queue reads as an empty claim, not a transport error.
	Timeout time.Duration
	// LeaseSeconds overrides the queue's leaseTime for this claim (0 = not
	// sent).
	LeaseSeconds int
	// AutoAck commits at delivery (no lease, nothing is redelivered); sent
	// only when true.
	AutoAck bool
	// SubscriptionMode seeds a new group's cursor ("" = not sent; the
	// broker's default, which is "new" on the newest brokers — send
	// SubscribeAll explicitly for a limiter).
	SubscriptionMode SubscriptionMode
	// SubscriptionFrom seeds a new group at "now" or at an ISO-8601 instant
	// (see FormatTimestamp); "" is not sent.
	SubscriptionFrom string
}

// Message is one claimed message.
type Message struct {
	// ID is the message id (UUIDv7).
	ID string `json:"id"`
	// TransactionID is the idempotency key it was pushed with (or its id).
	TransactionID string `json:"transactionId"`
	// TraceID is set only for messages pushed inside a transaction with a
	// UUID traceId; "" otherwise.
	TraceID string `json:"traceId"`
	// Data is the pushed payload verbatim ("null" for an empty payload),
	// one JSON value the decoder has validated (see PushItem.PayloadValid).
	Data json.RawMessage `json:"data"`
	// ProducerSub is the pusher's JWT subject when auth is on, else "".
	ProducerSub string `json:"producerSub"`
	// CreatedAt is when the stored segment was written (shared by the items
	// of one push call, so not a per-message timestamp).
	CreatedAt Timestamp `json:"createdAt"`
	// PartitionID is the partition's UUID; every ack must carry it.
	PartitionID string `json:"partitionId"`
	// Partition is the partition name.
	Partition string `json:"partition"`
	// LeaseID is the claim's lease ("" on an autoAck pop).
	LeaseID string `json:"leaseId"`
	// ConsumerGroup is the group the message was claimed under; every ack
	// must carry it.
	ConsumerGroup string `json:"consumerGroup"`
	// RetryCount is reported by older brokers only (0 when absent).
	RetryCount int `json:"retryCount"`
}

// AckItem returns the ack that settles m with status (AckCompleted,
// AckFailed, AckRetry, AckDLQ) and, for a failure, the reason recorded on a
// dead-letter row. It carries m's transaction id, partition id, lease id and
// group, which is everything the broker needs to fence and apply it.
func (m *Message) AckItem(status AckStatus, errText string) AckItem {
	return AckItem{
		TransactionID: m.TransactionID,
		PartitionID:   m.PartitionID,
		LeaseID:       m.LeaseID,
		ConsumerGroup: m.ConsumerGroup,
		Status:        status,
		Error:         errText,
	}
}

// Claim is the answer to a pop. An empty claim (HTTP 204, an empty body,
// or "messages": []) is a Claim with no Messages and no error.
type Claim struct {
	// Queue is the queue the claim came from.
	Queue string `json:"queue"`
	// Partition and PartitionID describe the FIRST claimed partition only;
	// each Message carries its own.
	Partition   string `json:"partition"`
	PartitionID string `json:"partitionId"`
	// LeaseID is shared by every partition the pop claimed.
	LeaseID string `json:"leaseId"`
	// ConsumerGroup is the group the claim was made under.
	ConsumerGroup string `json:"consumerGroup"`
	// Messages are in offset order within each partition.
	Messages []Message `json:"messages"`
	// PartitionsClaimed is how many partitions the pop claimed.
	PartitionsClaimed int `json:"partitionsClaimed"`
	// Paused is true when the broker is in pop-maintenance mode (the claim
	// is empty).
	Paused bool `json:"paused"`
}

// Empty reports whether nothing was claimed.
func (c *Claim) Empty() bool { return len(c.Messages) == 0 }

// popWire adds the failure fields of a 200 answer to Claim.
type popWire struct {
	Claim
	Success *bool           `json:"success"`
	Error   json.RawMessage `json:"error"`
}

// longPollGrace is added to the pop's timeout to bound the HTTP call, so the
// broker's timer fires first.
const longPollGrace = 5 * time.Second

// defaultPopTimeout is the broker's long-poll bound when none is sent.
const defaultPopTimeout = 30 * time.Second

// Pop claims messages (GET /api/v1/pop/queue/:queue[/partition/:p] or the
// discovery route). Nothing to claim is an empty Claim, not an error. A
// broker-side failure answered as 200 {"success": false} is an *Error with
// Status 200 and Code "pop_failed". A caller that pops the same request
// in a loop prepares it once with PreparePop instead.
func (c *Client) Pop(ctx context.Context, req PopRequest) (Claim, error) {
	p, err := c.PreparePop(req)
	if err != nil {
		return Claim{}, err
	}
	return p.Pop(ctx)
}

// PreparedPop is a pop whose route, query string and URL were built once
// (PreparePop), to be sent many times: a stage's worker pops the same
// request after every claim. It is safe for concurrent use.
type PreparedPop struct {
	c     *Client
	req   PopRequest
	route string
	u     *url.URL
}

// PreparePop builds req's call for Pop to send again and again; req is
// validated here, as Pop validates it.
func (c *Client) PreparePop(req PopRequest) (*PreparedPop, error) {
	var path string
	switch {
	case req.Queue != "" && req.Partition != "":
		path = "/api/v1/pop/queue/" + escape(req.Queue) + "/partition/" + escape(req.Partition)
	case req.Queue != "":
		path = "/api/v1/pop/queue/" + escape(req.Queue)
	case req.Namespace != "" || req.Task != "":
		path = "/api/v1/pop"
	default:
		return nil, fmt.Errorf("queen: pop: queue is empty; name a queue (or a namespace/task for discovery)")
	}
	u, err := c.url(path, popQuery(&req))
	if err != nil {
		return nil, fmt.Errorf("queen: %s %s: %w", http.MethodGet, path, err)
	}
	return &PreparedPop{c: c, req: req, route: path, u: u}, nil
}

// Request is the pop this call sends.
func (p *PreparedPop) Request() PopRequest { return p.req }

// Pop sends the prepared pop; its answer and errors are Client.Pop's.
func (p *PreparedPop) Pop(ctx context.Context) (Claim, error) {
	if bound := p.req.httpBound(); bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	// The long-poll's bound is its own, not the client's call timeout.
	var claim Claim
	err := p.c.callURL(ctx, http.MethodGet, p.route, p.u, nil, true, func(status int, b []byte) error {
		var err error
		claim, err = decodeClaim(p.route, status, b, p.req.Batch)
		return err
	})
	if err != nil {
		return Claim{}, err
	}
	return claim, nil
}

// decodeClaim reads a pop answer: 204, an empty body and "messages": [] are
// an empty claim; a 200 {"success": false} is an *Error ("pop_failed").
// batch (the pop's budget, 0 = unknown) sizes the message slice up front.
func decodeClaim(path string, status int, b []byte, batch int) (Claim, error) {
	if status == http.StatusNoContent || len(bytes.TrimSpace(b)) == 0 {
		return Claim{}, nil
	}
	var w popWire
	if batch > 0 {
		w.Messages = make([]Message, 0, claimCap(batch, len(b)))
	}
	if err := decodeClaimFast(b, &w); err != nil {
		return Claim{}, err
	}
	if w.Success != nil && !*w.Success {
		if emptyPopError(w.Error) {
			return Claim{}, nil
		}
		e := newError(http.MethodGet, path, status, nil, b)
		e.Code = "pop_failed"
		return Claim{}, e
	}
	if len(w.Messages) == 0 {
		w.Messages = nil
	}
	return w.Claim, nil
}

// minMessageBytes is less than any message of a pop answer takes on the
// wire: its id, transactionId, partitionId and leaseId are UUIDs, 36
// characters each with their keys and quotes, before the payload.
const minMessageBytes = 128

// claimCap is how many messages a pop answer of bodyLen bytes is given
// room for up front: the pop's batch (at most 1000), but no more than the
// body can hold, so a thin claim of a big batch — the common answer under
// a trickle load, one item per claim — does not allocate and zero a slice
// of the whole batch (200 messages, about 36 KiB, by default). A body of
// smaller messages than minMessageBytes only grows the slice by append.
func claimCap(batch, bodyLen int) int {
	return max(min(batch, 1000, bodyLen/minMessageBytes), 1)
}

// emptyPopError reports the "error" of a 200 {"success": false} pop answer
// that older brokers (Queen 0.15) give for an empty claim: no partition
// had anything claimable ("no_available_partition"), or every candidate
// was leased ("lease_held"). It is an empty claim, as 204 is on current
// brokers (queen-wire §0.1: the client tolerates both).
func emptyPopError(raw []byte) bool {
	var text string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &text) != nil {
		return false
	}
	switch text {
	case "no_available_partition", "lease_held":
		return true
	}
	return false
}

// httpBound is how long the HTTP call of a long-poll may take: the pop's
// timeout (or the broker's 30 s default) plus longPollGrace; 0 (only ctx
// bounds it) for a pop that does not wait.
func (r *PopRequest) httpBound() time.Duration {
	if !r.Wait {
		return 0
	}
	bound := r.Timeout
	if bound <= 0 {
		bound = defaultPopTimeout
	}
	return bound + longPollGrace
}

// popQuery renders the pop's query string (only the parameters that are set).
func popQuery(r *PopRequest) string {
	q := make(url.Values, 12)
	if r.Queue == "" {
		if r.Namespace != "" {
			q.Set("namespace", r.Namespace)
		}
		if r.Task != "" {
			q.Set("task", r.Task)
		}
	}
	if r.Batch > 0 {
		q.Set("batch", strconv.Itoa(r.Batch))
	}
	if r.Partitions > 1 && r.Partition == "" {
		q.Set("partitions", strconv.Itoa(r.Partitions))
	}
	if r.Wait {
		q.Set("wait", "true")
	}
	if r.Timeout > 0 {
		q.Set("timeout", strconv.FormatInt(r.Timeout.Milliseconds(), 10))
	}
	if r.ConsumerGroup != "" {
		q.Set("consumerGroup", r.ConsumerGroup)
	}
	if r.AutoAck {
		q.Set("autoAck", "true")
	}
	if r.SubscriptionMode != "" {
		q.Set("subscriptionMode", string(r.SubscriptionMode))
	}
	if r.SubscriptionFrom != "" {
		q.Set("subscriptionFrom", r.SubscriptionFrom)
	}
	if r.LeaseSeconds > 0 {
		q.Set("leaseSeconds", strconv.Itoa(r.LeaseSeconds))
	}
	return q.Encode()
}
