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

// ConsumerGroup is one (group, queue) entry of GET /api/v1/consumer-groups.
type ConsumerGroup struct {
	// Name is the group name.
	Name string `json:"name"`
	// QueueName is the queue the entry is about.
	QueueName string   `json:"queueName"`
	Topics    []string `json:"topics"`
	// Members is the number of partitions the group has a cursor on (not
	// processes).
	Members          int `json:"members"`
	PartitionCursors int `json:"partitionCursors"`
	// PartitionsWithLag counts cursors with something pending.
	PartitionsWithLag int `json:"partitionsWithLag"`
	// TotalLag is the sum of pending messages over the group's cursors.
	TotalLag int64 `json:"totalLag"`
	// MaxTimeLag is the age in seconds of the oldest unconsumed message
	// (see OldestPending).
	MaxTimeLag int64 `json:"maxTimeLag"`
	// State is "Lagging" (MaxTimeLag > 300), "Stable" or "Dead".
	State                 string    `json:"state"`
	Storage               string    `json:"storage"`
	SubscriptionMode      string    `json:"subscriptionMode"`
	SubscriptionTimestamp Timestamp `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt Timestamp `json:"subscriptionCreatedAt"`
	Conflation            bool      `json:"conflation"`
}

// OldestPending is MaxTimeLag as a duration: how long the oldest unconsumed
// message has waited.
func (g *ConsumerGroup) OldestPending() time.Duration {
	return time.Duration(g.MaxTimeLag) * time.Second
}

// ConsumerGroups lists every (group, queue) with its lag (GET
// /api/v1/consumer-groups).
func (c *Client) ConsumerGroups(ctx context.Context) ([]ConsumerGroup, error) {
	var out []ConsumerGroup
	if err := c.callJSON(ctx, http.MethodGet, "/api/v1/consumer-groups", "", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ConsumerGroupDetail returns the raw per-queue/partition detail of one group
// (GET /api/v1/consumer-groups/:group); its shape is a report, not a
// contract.
func (c *Client) ConsumerGroupDetail(ctx context.Context, group string) (json.RawMessage, error) {
	if err := need("consumer group detail", "group", group); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	err := c.call(ctx, http.MethodGet, "/api/v1/consumer-groups/"+escape(group), "", nil, func(_ int, b []byte) error {
		raw = bytes.Clone(b)
		return nil
	})
	return raw, err
}

// DeleteGroupOpts are the options of DeleteConsumerGroup.
type DeleteGroupOpts struct {
	// Queue limits the delete to one queue ("" = every queue).
	Queue string
	// KeepMetadata keeps the group's stored subscription (deleteMetadata=
	// false); the default deletes it, so the next pop re-registers the group
	// with its subscription mode.
	KeepMetadata bool
}

// GroupDeleted is the answer to a consumer-group delete.
type GroupDeleted struct {
	// Success is the broker's verdict.
	Success bool `json:"success"`
	// ConsumerGroup and QueueName echo the target (QueueName "" = all queues).
	ConsumerGroup string `json:"consumerGroup"`
	QueueName     string `json:"queueName"`
	// DeletedPartitions counts the cursors removed (0 = the group had none).
	DeletedPartitions int `json:"deletedPartitions"`
	// MetadataDeleted says the stored subscription went too.
	MetadataDeleted bool `json:"metadataDeleted"`
}

// DeleteConsumerGroup removes a group's cursors (DELETE
// /api/v1/consumer-groups/:group[/queues/:queue]?deleteMetadata=…): the
// group then owes the whole retained range again.
func (c *Client) DeleteConsumerGroup(ctx context.Context, group string, o DeleteGroupOpts) (GroupDeleted, error) {
	if err := need("delete consumer group", "group", group); err != nil {
		return GroupDeleted{}, err
	}
	path := "/api/v1/consumer-groups/" + escape(group)
	if o.Queue != "" {
		path += "/queues/" + escape(o.Queue)
	}
	q := "deleteMetadata=" + strconv.FormatBool(!o.KeepMetadata)
	var out GroupDeleted
	err := c.callJSON(ctx, http.MethodDelete, path, q, nil, &out)
	return out, err
}

// SeekTarget says where Seek moves a group's cursors: exactly one of ToEnd
// and At. Build it with SeekToEnd, SeekToTime or SeekToHead.
type SeekTarget struct {
	// ToEnd moves past the newest message.
	ToEnd bool
	// At moves to just before the first message at/after this instant.
	At time.Time
}

// SeekToEnd skips everything currently in the queue.
func SeekToEnd() SeekTarget { return SeekTarget{ToEnd: true} }

// SeekToTime replays from instant t.
func SeekToTime(t time.Time) SeekTarget { return SeekTarget{At: t} }

// SeekToHead replays the whole retained log (the Unix epoch).
func SeekToHead() SeekTarget { return SeekTarget{At: time.Unix(0, 0)} }

// AdminResult is the answer of an admin call whose body is not fully
// specified: its success flag plus the raw body.
type AdminResult struct {
	// Success is the body's "success" flag; false is a verdict to look at.
	Success bool
	// Raw is the whole answer.
	Raw json.RawMessage
}

func (c *Client) admin(ctx context.Context, method, path string, body []byte) (AdminResult, error) {
	var out AdminResult
	err := c.call(ctx, method, path, "", body, func(_ int, b []byte) error {
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		var w struct {
			Success bool `json:"success"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		out = AdminResult{Success: w.Success, Raw: bytes.Clone(b)}
		return nil
	})
	return out, err
}

// Seek moves a group's cursors on every partition of a queue (POST
// /api/v1/consumer-groups/:group/queues/:queue/seek with {"toEnd":true} or
// {"timestamp":…}).
func (c *Client) Seek(ctx context.Context, group, queue string, to SeekTarget) (AdminResult, error) {
	if err := need("seek", "group", group); err != nil {
		return AdminResult{}, err
	}
	if err := need("seek", "queue", queue); err != nil {
		return AdminResult{}, err
	}
	var body []byte
	switch {
	case to.ToEnd && !to.At.IsZero():
		return AdminResult{}, fmt.Errorf("queen: seek: both toEnd and a timestamp are set; choose one (SeekToEnd or SeekToTime)")
	case to.ToEnd:
		body = []byte(`{"toEnd":true}`)
	case !to.At.IsZero():
		body = append(strField([]byte{'{'}, "timestamp", FormatTimestamp(to.At)), '}')
	default:
		return AdminResult{}, fmt.Errorf("queen: seek: no target; use SeekToEnd, SeekToTime or SeekToHead")
	}
	path := "/api/v1/consumer-groups/" + escape(group) + "/queues/" + escape(queue) + "/seek"
	return c.admin(ctx, http.MethodPost, path, body)
}

// SeekPartitionToEnd moves a group's cursor on one partition past its newest
// message (POST …/queues/:queue/partitions/:partition/seek, no body).
func (c *Client) SeekPartitionToEnd(ctx context.Context, group, queue, partition string) (AdminResult, error) {
	for _, f := range [][2]string{{"group", group}, {"queue", queue}, {"partition", partition}} {
		if err := need("seek partition", f[0], f[1]); err != nil {
			return AdminResult{}, err
		}
	}
	path := "/api/v1/consumer-groups/" + escape(group) + "/queues/" + escape(queue) + "/partitions/" + escape(partition) + "/seek"
	return c.admin(ctx, http.MethodPost, path, nil)
}

// SetSubscription changes a group's stored subscription cutoff, used to seed
// partitions the group meets later (POST
// /api/v1/consumer-groups/:group/subscription).
func (c *Client) SetSubscription(ctx context.Context, group string, from time.Time) (AdminResult, error) {
	if err := need("set subscription", "group", group); err != nil {
		return AdminResult{}, err
	}
	body := append(strField([]byte{'{'}, "subscriptionTimestamp", FormatTimestamp(from)), '}')
	return c.admin(ctx, http.MethodPost, "/api/v1/consumer-groups/"+escape(group)+"/subscription", body)
}

// Depth is the backlog of a queue against one group's cursor (or, without a
// group, the worst cursor), from GET /api/v1/resources/queues/:queue/depth.
// Fields newer than broker 1.0.4 (processing, ready, partitionsPending, …)
// are zero when the broker does not send them.
type Depth struct {
	// Queue and Group echo the request (Group "" = queue-level figures).
	Queue string `json:"queue"`
	Group string `json:"group"`
	// Pending is messages not yet acked by the cursor.
	Pending int64 `json:"pending"`
	// Processing is the live leased span; Ready = Pending − Processing.
	Processing int64 `json:"processing"`
	Ready      int64 `json:"ready"`
	// PartitionsPending and PartitionsReady count partitions with pending or
	// ready messages.
	PartitionsPending int `json:"partitionsPending"`
	PartitionsReady   int `json:"partitionsReady"`
	// Conflation, EffectivePending and EffectiveReady are the conflation-aware
	// figures of newer brokers (equal to Pending/Ready without conflation).
	Conflation       bool  `json:"conflation"`
	EffectivePending int64 `json:"effectivePending"`
	EffectiveReady   int64 `json:"effectiveReady"`
	// Partitions are sorted by name.
	Partitions []PartitionDepth `json:"partitions"`
}

// PartitionDepth is one partition of a Depth.
type PartitionDepth struct {
	// Partition is the partition name; the counts are as on Depth.
	Partition  string `json:"partition"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Ready      int64  `json:"ready"`
}

// Depth reads a queue's backlog (broker ≥ 1.0.4). group "" asks for the
// queue-level figure (worst cursor). An unknown queue — or a broker too old
// for the route — is a 404 (IsNotFound).
func (c *Client) Depth(ctx context.Context, queue, group string) (Depth, error) {
	if err := need("depth", "queue", queue); err != nil {
		return Depth{}, err
	}
	q := ""
	if group != "" {
		q = "group=" + url.QueryEscape(group)
	}
	var d Depth
	err := c.callJSON(ctx, http.MethodGet, "/api/v1/resources/queues/"+escape(queue)+"/depth", q, nil, &d)
	return d, err
}

// DLQQuery filters the dead-letter listing; zero fields are not sent (the
// broker's default limit is 100).
type DLQQuery struct {
	// Queue and ConsumerGroup filter the rows ("" = any).
	Queue         string
	ConsumerGroup string
	// Limit and Offset page the listing (0 = not sent).
	Limit  int
	Offset int
}

// DeadLetter is one dead-lettered message.
type DeadLetter struct {
	// ID, TransactionID and PartitionID identify the original message (the
	// replay route takes the partition id and transaction id).
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	ConsumerGroup string `json:"consumerGroup"`
	// ErrorMessage is the "error" text of the ack that dead-lettered it.
	ErrorMessage string          `json:"errorMessage"`
	RetryCount   int             `json:"retryCount"`
	Data         json.RawMessage `json:"data"`
	CreatedAt    Timestamp       `json:"createdAt"`
	FailedAt     Timestamp       `json:"failedAt"`
}

// DLQPage is one page of the dead-letter listing.
type DLQPage struct {
	Messages []DeadLetter `json:"messages"`
	// Total is the broker's "total" (the page length on current brokers).
	Total int `json:"total"`
	// Pagination is kept raw.
	Pagination json.RawMessage `json:"pagination"`
}

// DeadLetters lists dead-lettered messages (GET /api/v1/dlq).
func (c *Client) DeadLetters(ctx context.Context, f DLQQuery) (DLQPage, error) {
	q := url.Values{}
	if f.Queue != "" {
		q.Set("queue", f.Queue)
	}
	if f.ConsumerGroup != "" {
		q.Set("consumerGroup", f.ConsumerGroup)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Offset > 0 {
		q.Set("offset", strconv.Itoa(f.Offset))
	}
	var p DLQPage
	err := c.callJSON(ctx, http.MethodGet, "/api/v1/dlq", q.Encode(), nil, &p)
	return p, err
}
