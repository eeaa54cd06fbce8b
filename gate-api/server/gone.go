package server

import (
	"fmt"
	"net/http"
)

// goneNext is GET …/nodes/{node}/next and GET …/targets/{graph}/lanes/{lane}/next:
// 410, naming the egress queue to consume with the application's own SDK.
// It answers 410 even for unknown graphs.
func (s *Server) goneNext(q *req) *apiError {
	queue, group := "", ""
	if e, bad := s.resolve(q, "graph"); bad == nil {
		var nodeName string
		if name, ok := q.vars["node"]; ok {
			nodeName = name
		} else if entries := entryNodes(e.plan); len(entries) == 1 {
			nodeName = entries[0]
		}
		if n := e.plan.Node(nodeName); n != nil {
			queue, group = n.EgressQueue, n.EgressGroup
		}
	}
	if group == "" {
		group = "your-workers"
	}
	msg := "'GET .../next' is gone: Gate no longer mediates the pop, hands out leases or sees the outcome. "
	if queue != "" {
		msg += fmt.Sprintf("Consume '%s' directly with your SDK:\n  await queen.queue('%s').group('%s')\n    .consume(async (msg) => { /* call the vendor */ })", queue, queue, group)
	} else {
		msg += "This node has no egress queue that Gate knows of: consume the egress queue of the last node of its path directly with your SDK, e.g.\n  await queen.queue('<egress queue>').group('your-workers')\n    .consume(async (msg) => { /* call the vendor */ })"
	}
	e := fail(http.StatusGone, "%s", msg)
	if queue != "" {
		e.with("queue", queue)
	}
	return e
}

// goneLease is POST /v1/leases/{ack|nack|renew}: 410.
func (s *Server) goneLease(q *req) *apiError {
	return fail(http.StatusGone, "'POST /v1/leases/%s' is gone: Gate no longer hands out leases. Ack, nack or renew against the egress queue with your own SDK, and report a vendor throttle to POST /v1/apps/{app}/graphs/{graph}/nodes/{node}/backoff (or one item with …/reenter)", q.vars["op"])
}
