package server

import (
	"context"
	"fmt"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// CompletedRetentionSeconds is how long Gate-owned queues keep completed
// messages (30 days, retention enabled); pending work never expires.
const CompletedRetentionSeconds = 30 * 24 * 3600

// ownedQueueOptions are the options every Gate-owned ingress and interior
// queue is configured with: the complete set (a 1.0.x configure replaces
// every option), the work lease, the retry limit before the DLQ, and the
// retention policy of the product description.
func (s *Server) ownedQueueOptions() queen.QueueOptions {
	o := queen.DefaultQueueOptions()
	o.LeaseTime = queen.Int(int64(s.cfg.LeaseSeconds))
	o.RetryLimit = queen.Int(int64(s.cfg.RetryLimit))
	o.RetentionEnabled = queen.Bool(true)
	o.CompletedRetentionSeconds = queen.Int(CompletedRetentionSeconds)
	o.RetentionSeconds = queen.Int(0)
	o.MaxWaitTimeSeconds = queen.Int(0)
	return o
}

// provision configures the plan's queues in provisioning order: Gate-owned
// ingress and interior queues get ownedQueueOptions in the application's
// namespace (a failure fails the declare); an egress queue the broker does
// not know yet is created bare so consumers can subscribe early (an
// existing one is left exactly as its owner configured it; errors are only
// logged); application-owned ingress queues are never touched. Consumer
// groups are created by the relays' first pop.
func (s *Server) provision(ctx context.Context, p *plan.Plan) error {
	opts := s.ownedQueueOptions()
	for _, q := range p.Queues {
		switch {
		case q.OwnedByGate:
			if _, err := s.client.Configure(ctx, queen.ConfigureRequest{Queue: q.Name, Namespace: p.Namespace, Options: opts}); err != nil {
				return fmt.Errorf("configuring %s queue %s: %w", q.Kind, q.Name, err)
			}
		case q.Kind == plan.KindEgress:
			_, err := s.client.Queue(ctx, q.Name)
			if err == nil {
				continue
			}
			if !queen.IsNotFound(err) {
				s.log.Warn("provisioning: the egress queue could not be read; left alone", "queue", q.Name, "error", err)
				continue
			}
			if _, err := s.client.Configure(ctx, queen.ConfigureRequest{Queue: q.Name}); err != nil {
				s.log.Warn("provisioning: creating the egress queue failed; the first relay push creates it", "queue", q.Name, "error", err)
			}
		}
	}
	return nil
}
