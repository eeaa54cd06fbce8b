// Package insight is gate-api's read-only insight into a graph: why its
// traffic waits (diagnostics, from the broker and the relays' status), its
// traffic over time (timeline), a limit tried against its recorded Watch
// traffic (simulate), and the history reads (the Watch summary, minute
// roll-ups, flow and denial traces) that need the PostgreSQL history.
package insight

import (
	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/httpapi"
)

// Insight is the insight family. Build it with New; it is safe for
// concurrent use.
type Insight struct {
	p *plane.Plane
	// since remembers when each finding was first seen on this replica.
	since sinceBook
}

// New builds the insight family on p.
func New(p *plane.Plane) *Insight { return &Insight{p: p} }

// Routes registers the history reads and the insight routes.
func (in *Insight) Routes(r *httpapi.Router) {
	in.historyRoutes(r)
	in.insightRoutes(r)
}
