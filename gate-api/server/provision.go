package server

import (
	"context"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/provision"
)

// provision makes the broker ready for p before its document is stored:
// Gate-owned ingress and interior queues configured with the lease, retry
// limit and retention policy (a failure fails the declare), an egress queue
// the broker does not know yet created bare, application-owned queues never
// touched. See package provision.
func (s *Server) provision(ctx context.Context, p *plan.Plan) error {
	return provision.Queues(ctx, s.client, p, provision.Options{LeaseSeconds: s.cfg.LeaseSeconds, RetryLimit: s.cfg.RetryLimit, Logger: s.log})
}
