package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// QueueOptions are a queue's settings as POST /api/v1/configure carries them
// under "options". Every field is optional: an absent field is not sent.
// Against the 1.0.x brokers Gate targets a configure REPLACES the whole set,
// so an absent field goes back to the broker default; start from
// DefaultQueueOptions to send the complete set.
type QueueOptions struct {
	// LeaseTime is the claim lease in seconds when a pop names none (default 300).
	LeaseTime OptInt `json:"leaseTime,omitzero"`
	// RetryLimit is how many failing ack calls a batch head survives before
	// dead-letter or drop (default 3).
	RetryLimit OptInt `json:"retryLimit,omitzero"`
	// RetryDelay is in milliseconds, stored and echoed (default 1000).
	RetryDelay OptInt `json:"retryDelay,omitzero"`
	// DeadLetterQueue sends exhausted messages to the DLQ (broker default true).
	DeadLetterQueue OptBool `json:"deadLetterQueue,omitzero"`
	// DLQAfterMaxRetries is an equivalent DLQ trigger (default true).
	DLQAfterMaxRetries OptBool `json:"dlqAfterMaxRetries,omitzero"`
	// Priority orders discovery pops across queues (default 0).
	Priority OptInt `json:"priority,omitzero"`
	// MaxSize bounds the queue (default 0 = unbounded).
	MaxSize OptInt `json:"maxSize,omitzero"`
	// TTL is in seconds, stored (default 3600).
	TTL OptInt `json:"ttl,omitzero"`
	// DelayedProcessing makes a message claimable only when this many
	// seconds old (default 0).
	DelayedProcessing OptInt `json:"delayedProcessing,omitzero"`
	// WindowBuffer holds back a partition written within the last N seconds
	// (default 0).
	WindowBuffer OptInt `json:"windowBuffer,omitzero"`
	// RetentionEnabled turns the retention job on for this queue (default false).
	RetentionEnabled OptBool `json:"retentionEnabled,omitzero"`
	// RetentionSeconds drops messages older than N s when retention is on
	// (default 0 = keep).
	RetentionSeconds OptInt `json:"retentionSeconds,omitzero"`
	// CompletedRetentionSeconds drops messages older than N s that every
	// consumer group has passed, when retention is on (default 0 = keep).
	CompletedRetentionSeconds OptInt `json:"completedRetentionSeconds,omitzero"`
	// MaxWaitTimeSeconds evicts pending messages older than N s, whatever
	// RetentionEnabled says (default 0 = never).
	MaxWaitTimeSeconds OptInt `json:"maxWaitTimeSeconds,omitzero"`
	// DedupWindowSeconds is how long a repeated transactionId on one
	// partition counts as a duplicate (default 3600).
	DedupWindowSeconds OptInt `json:"dedupWindowSeconds,omitzero"`
	// EncryptionEnabled encrypts payloads at rest (default false).
	EncryptionEnabled OptBool `json:"encryptionEnabled,omitzero"`
	// MinPopWaitTime holds an under-full claim up to N ms (default 0).
	MinPopWaitTime OptInt `json:"minPopWaitTime,omitzero"`
	// RetentionSinkHold is the S3-sink retention hold ("" = not sent).
	RetentionSinkHold string `json:"retentionSinkHold,omitempty"`
	// RetentionSinkHoldMaxSeconds bounds the sink hold (default 604800).
	RetentionSinkHoldMaxSeconds OptInt `json:"retentionSinkHoldMaxSeconds,omitzero"`
}

// DefaultQueueOptions returns every data-plane option set to the broker's
// documented default, so a configure built from it sends the complete set
// (what a replacing 1.0.x broker needs to keep the options you did not mean
// to change at their defaults).
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{
		LeaseTime:                 Int(300),
		RetryLimit:                Int(3),
		RetryDelay:                Int(1000),
		DeadLetterQueue:           Bool(true),
		DLQAfterMaxRetries:        Bool(true),
		Priority:                  Int(0),
		MaxSize:                   Int(0),
		TTL:                       Int(3600),
		DelayedProcessing:         Int(0),
		WindowBuffer:              Int(0),
		RetentionEnabled:          Bool(false),
		RetentionSeconds:          Int(0),
		CompletedRetentionSeconds: Int(0),
		MaxWaitTimeSeconds:        Int(0),
		DedupWindowSeconds:        Int(3600),
		EncryptionEnabled:         Bool(false),
		MinPopWaitTime:            Int(0),
	}
}

// ConfigureRequest is the body of POST /api/v1/configure.
type ConfigureRequest struct {
	// Queue is the queue name (required).
	Queue string `json:"queue"`
	// Namespace and Task are tags ("" = not sent; the broker derives them
	// from the dotted name for implicitly created queues).
	Namespace string `json:"namespace,omitempty"`
	Task      string `json:"task,omitempty"`
	// Options is always sent, as {} when empty (a bare create).
	Options QueueOptions `json:"options"`
	// Mode is "replace" or "merge" on brokers ≥ 1.6 ("" = not sent; the
	// broker's default applies).
	Mode string `json:"mode,omitempty"`
}

// QueueConfig is the broker's answer to a configure.
type QueueConfig struct {
	// Configured is the broker's verdict; QueueID is the queue's UUID.
	Configured bool   `json:"configured"`
	QueueID    string `json:"queueId"`
	Queue      string `json:"queue"`
	Namespace  string `json:"namespace"`
	Task       string `json:"task"`
	Storage    string `json:"storage"`
	// Options are the queue's options as resolved by the broker, decoded
	// best effort: an option whose echoed value does not fit its Go type is
	// left absent (RawOptions has everything).
	Options QueueOptions `json:"-"`
	// RawOptions is the "options" object exactly as the broker echoed it.
	RawOptions json.RawMessage `json:"options"`
}

// Configure creates or reconfigures a queue (POST /api/v1/configure). A
// configure the broker refuses in a 200 body ({"error": …}) returns an
// *Error with Status 200 and Code "configure_refused".
func (c *Client) Configure(ctx context.Context, req ConfigureRequest) (QueueConfig, error) {
	const path = "/api/v1/configure"
	if err := need("configure", "queue", req.Queue); err != nil {
		return QueueConfig{}, err
	}
	body, err := marshal(http.MethodPost, path, req)
	if err != nil {
		return QueueConfig{}, err
	}
	var out struct {
		QueueConfig
		Error json.RawMessage `json:"error"`
	}
	err = c.call(ctx, http.MethodPost, path, "", body, func(status int, b []byte) error {
		if err := json.Unmarshal(b, &out); err != nil {
			return err
		}
		if len(out.Error) > 0 && string(out.Error) != "null" {
			e := newError(http.MethodPost, path, status, nil, b)
			e.Code = "configure_refused"
			return e
		}
		out.Options = decodeOptions(out.RawOptions)
		return nil
	})
	return out.QueueConfig, err
}

// decodeOptions reads echoed options one by one, so that one odd value
// (a float, a string) does not hide the others.
func decodeOptions(raw json.RawMessage) QueueOptions {
	var o QueueOptions
	if len(raw) == 0 || json.Unmarshal(raw, &o) == nil {
		return o
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return QueueOptions{}
	}
	o = QueueOptions{}
	for k, v := range fields {
		one, err := json.Marshal(map[string]json.RawMessage{k: v})
		if err != nil {
			continue
		}
		var probe QueueOptions
		if json.Unmarshal(one, &probe) == nil {
			_ = json.Unmarshal(one, &o)
		}
	}
	return o
}

// QueueInfo is the part of GET /api/v1/resources/queues/:queue a client can
// rely on; the rest of the console-grade answer is in Raw.
type QueueInfo struct {
	// Name is the queue name.
	Name string
	// RetentionSeconds is the queue's retention option, read from
	// "queue.retentionSeconds" or a top-level "retentionSeconds"; absent when
	// neither is there.
	RetentionSeconds OptInt
	// Partitions are the queue's partitions with their pending count.
	Partitions []PartitionInfo
	// Raw is the whole answer.
	Raw json.RawMessage
}

// PartitionInfo is one partition of QueueInfo.
type PartitionInfo struct {
	// Name is the partition name.
	Name string
	// Pending is partitions[].stats.pending (0 when absent).
	Pending int64
}

// Queue reads one queue's detail (GET /api/v1/resources/queues/:queue). An
// unknown queue is IsNotFound: a 404, or the 200 {"error": "… not found"}
// an older broker answers.
func (c *Client) Queue(ctx context.Context, queue string) (QueueInfo, error) {
	if err := need("queue detail", "queue", queue); err != nil {
		return QueueInfo{}, err
	}
	path := "/api/v1/resources/queues/" + escape(queue)
	var qi QueueInfo
	err := c.call(ctx, http.MethodGet, path, "", nil, func(_ int, b []byte) error {
		var w struct {
			Name             string          `json:"name"`
			Queue            json.RawMessage `json:"queue"`
			Error            json.RawMessage `json:"error"`
			RetentionSeconds OptInt          `json:"retentionSeconds"`
			Partitions       []struct {
				Name  string `json:"name"`
				Stats struct {
					Pending int64 `json:"pending"`
				} `json:"stats"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		if len(w.Error) > 0 && w.Error[0] == '"' && w.Name == "" && len(w.Queue) == 0 && w.Partitions == nil {
			// An older broker (Queen 0.15) answers an unknown queue with
			// 200 {"error": "Queue not found"}; a current one with 404.
			e := newError(http.MethodGet, path, http.StatusOK, nil, b)
			if strings.Contains(strings.ToLower(e.Message), "not found") {
				e.Code = CodeNotFound
			}
			return e
		}
		qi.Raw = bytes.Clone(b)
		qi.Name = w.Name
		qi.RetentionSeconds = w.RetentionSeconds
		if len(w.Queue) > 0 {
			switch w.Queue[0] {
			case '"':
				_ = json.Unmarshal(w.Queue, &qi.Name)
			case '{':
				var inner struct {
					Name             string `json:"name"`
					RetentionSeconds OptInt `json:"retentionSeconds"`
				}
				if err := json.Unmarshal(w.Queue, &inner); err == nil {
					if inner.Name != "" {
						qi.Name = inner.Name
					}
					if inner.RetentionSeconds.Set {
						qi.RetentionSeconds = inner.RetentionSeconds
					}
				}
			}
		}
		if qi.Name == "" {
			qi.Name = queue
		}
		for _, p := range w.Partitions {
			qi.Partitions = append(qi.Partitions, PartitionInfo{Name: p.Name, Pending: p.Stats.Pending})
		}
		return nil
	})
	return qi, err
}

// ListQueuesRequest filters GET /api/v1/resources/queues; zero fields are
// not sent.
type ListQueuesRequest struct {
	// Namespace and Task filter by tag; Limit and Offset page the listing.
	Namespace string
	Task      string
	Limit     int
	Offset    int
}

// ListQueues returns the raw queue listing (GET /api/v1/resources/queues);
// its shape is a report, not a contract.
func (c *Client) ListQueues(ctx context.Context, req ListQueuesRequest) (json.RawMessage, error) {
	const path = "/api/v1/resources/queues"
	q := url.Values{}
	if req.Namespace != "" {
		q.Set("namespace", req.Namespace)
	}
	if req.Task != "" {
		q.Set("task", req.Task)
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Offset > 0 {
		q.Set("offset", strconv.Itoa(req.Offset))
	}
	var raw json.RawMessage
	err := c.call(ctx, http.MethodGet, path, q.Encode(), nil, func(_ int, b []byte) error {
		raw = bytes.Clone(b)
		return nil
	})
	return raw, err
}

// QueueDeleted is the answer to a queue delete.
type QueueDeleted struct {
	// Deleted is the body's "deleted" flag: false when there was nothing to
	// delete (the broker still answers 200).
	Deleted bool
	// Raw is the whole answer.
	Raw json.RawMessage
}

// DeleteQueue drops a queue and everything in it (DELETE
// /api/v1/resources/queues/:queue).
func (c *Client) DeleteQueue(ctx context.Context, queue string) (QueueDeleted, error) {
	if err := need("delete queue", "queue", queue); err != nil {
		return QueueDeleted{}, err
	}
	path := "/api/v1/resources/queues/" + escape(queue)
	var out QueueDeleted
	err := c.call(ctx, http.MethodDelete, path, "", nil, func(_ int, b []byte) error {
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		var w struct {
			Deleted bool `json:"deleted"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		out.Deleted = w.Deleted
		out.Raw = bytes.Clone(b)
		return nil
	})
	return out, err
}
