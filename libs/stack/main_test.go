package stack

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/gatetest"
)

// TestMain fails the package when a test leaves a goroutine behind (a
// child's wait or stop that outlived it); idle keep-alive connections of
// the health probes are not counted.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }
