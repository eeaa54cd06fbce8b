package peer

import (
	"testing"

	"github.com/queen-mq/gate/libs/gatetest"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind
// (net/http's idle keep-alive loops aside, see gatetest.IgnoreIdleConns).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }
