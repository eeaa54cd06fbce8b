package push

import (
	"fmt"
	"net/http"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// goneNext is GET …/nodes/{node}/next and GET …/targets/{graph}/lanes/{lane}/next:
// 410, naming the egress queue to consume with the application's own SDK.
// It answers 410 even for unknown graphs.
func (d *Door) goneNext(q *httpapi.Request) *httpapi.Refusal {
	queue, group := "", ""
	if e, bad := d.p.Resolve(q, "graph"); bad == nil {
		var nodeName string
		if name, ok := q.Vars["node"]; ok {
			nodeName = name
		} else if entries := plane.EntryNodes(e.Plan); len(entries) == 1 {
			nodeName = entries[0]
		}
		if n := e.Plan.Node(nodeName); n != nil {
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
	e := httpapi.Refuse(http.StatusGone, wire.CodeGone, "%s", msg)
	if queue != "" {
		e.Queue(queue)
	}
	return e
}

// goneLease is POST /v1/leases/{ack|nack|renew}: 410.
func (d *Door) goneLease(q *httpapi.Request) *httpapi.Refusal {
	return httpapi.Refuse(http.StatusGone, wire.CodeGone, "'POST /v1/leases/%s' is gone: Gate no longer hands out leases. Ack, nack or renew against the egress queue with your own SDK, and report a vendor throttle to POST /v1/apps/{app}/graphs/{graph}/nodes/{node}/backoff (or one item with …/reenter)", q.Vars["op"])
}
