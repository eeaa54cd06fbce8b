package recorder_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/gatetest"
)

// TestMain fails the package when a test leaves a goroutine behind (a
// recorder loop, a relay or a handover that outlived its Stop); only idle
// keep-alive connections are not counted.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }
