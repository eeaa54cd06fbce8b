package stage

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/gatetest"
)

// TestMain fails the package when a test leaves a goroutine behind: a
// worker, a renewal or a park that outlived its stage (idle keep-alive
// connections are not counted).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }
