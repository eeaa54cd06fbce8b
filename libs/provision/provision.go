package provision

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Gate's retention policy for the queues it owns (product description,
// "Queue retention"): completed messages are kept 30 days with retention
// enabled; pending work has no age limit, so waiting for a budget cannot
// expire it.
const (
	// CompletedRetentionSeconds is how long a Gate-owned queue keeps
	// completed messages: 30 days.
	CompletedRetentionSeconds = 30 * 24 * 3600
	// RetentionSeconds is the pending-message age limit: 0, none.
	RetentionSeconds = 0
	// MaxWaitTimeSeconds is the pending-message wait limit: 0, none.
	MaxWaitTimeSeconds = 0
)

// CallTimeout bounds each broker call provisioning makes, so one hung
// call cannot hold a declare or a graph start forever.
const CallTimeout = 10 * time.Second

// Options are the knobs provisioning applies to Gate-owned queues.
type Options struct {
	// LeaseSeconds is the queue's leaseTime (GATE_LEASE_SECONDS); values
	// below 1 are sent as 1.
	LeaseSeconds int
	// RetryLimit is the queue's retryLimit before the DLQ
	// (GATE_RETRY_LIMIT); negative values are sent as 0.
	RetryLimit int
	// Logger receives the warnings about egress queues that could not be
	// read or created; nil means slog.Default().
	Logger *slog.Logger
}

// OwnedQueueOptions are the options every Gate-owned ingress and interior
// queue is configured with: the complete option set (a 1.0.x configure
// replaces every option, so the broker's defaults are sent explicitly), the
// lease, the retry limit and the retention policy.
func OwnedQueueOptions(o Options) queen.QueueOptions {
	q := queen.DefaultQueueOptions()
	q.LeaseTime = queen.Int(int64(max(o.LeaseSeconds, 1)))
	q.RetryLimit = queen.Int(int64(max(o.RetryLimit, 0)))
	q.RetentionEnabled = queen.Bool(true)
	q.CompletedRetentionSeconds = queen.Int(CompletedRetentionSeconds)
	q.RetentionSeconds = queen.Int(RetentionSeconds)
	q.MaxWaitTimeSeconds = queen.Int(MaxWaitTimeSeconds)
	return q
}

// Queues provisions p's queues in the plan's order:
//
//   - a Gate-owned ingress or interior queue is configured with
//     OwnedQueueOptions in the plan's namespace; a failure stops and is
//     returned, naming the queue;
//   - an egress queue the broker answers "not found" for is created bare, so
//     consumers can subscribe before the first relayed message; an existing
//     one keeps exactly its owner's options; a failure to read or create it
//     is only logged (the relay's first push creates it anyway);
//   - an application-owned ingress queue is never touched.
//
// A failure is an *Error naming the queue and listing the Gate-owned queues
// this call had configured before it.
func Queues(ctx context.Context, client *queen.Client, p *plan.Plan, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	owned := OwnedQueueOptions(o)
	var configured []string
	for _, q := range p.Queues {
		switch {
		case q.OwnedByGate:
			cctx, cancel := context.WithTimeout(ctx, CallTimeout)
			_, err := client.Configure(cctx, queen.ConfigureRequest{Queue: q.Name, Namespace: p.Namespace, Options: owned})
			cancel()
			if err != nil {
				return &Error{Kind: string(q.Kind), Queue: q.Name, Configured: configured, Err: err}
			}
			configured = append(configured, q.Name)
		case q.Kind == plan.KindEgress:
			egress(ctx, client, q.Name, log)
		}
	}
	return nil
}

// Error is a failed provisioning: the queue whose configure failed, and
// the Gate-owned queues the same call had configured before it (they stay
// configured; a queue holds nothing until a stored version names it).
type Error struct {
	// Kind is the failed queue's kind (ingress, interior).
	Kind string
	// Queue is the queue whose configure failed.
	Queue string
	// Configured are the queues configured before the failure, in order.
	Configured []string
	// Err is the broker's answer.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("configuring %s queue %s: %v", e.Kind, e.Queue, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// egress creates the egress queue when the broker does not know it.
func egress(ctx context.Context, client *queen.Client, name string, log *slog.Logger) {
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	_, err := client.Queue(cctx, name)
	if err == nil {
		return
	}
	if !queen.IsNotFound(err) {
		log.Warn("provisioning: the egress queue could not be read; left alone", "queue", name, "error", err)
		return
	}
	if _, err := client.Configure(cctx, queen.ConfigureRequest{Queue: name}); err != nil {
		log.Warn("provisioning: creating the egress queue failed; the first relay push creates it", "queue", name, "error", err)
	}
}
