package insight

import (
	"context"

	"github.com/queen-mq/gate/gate-api/internal/plane"
	"github.com/queen-mq/gate/libs/wire"
)

// Diagnose is the diagnosis of e as the route answers it, for the
// external tests.
func (in *Insight) Diagnose(ctx context.Context, e *plane.Entry) wire.Diagnostics {
	return in.diagnose(ctx, e)
}
