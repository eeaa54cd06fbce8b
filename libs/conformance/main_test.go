package conformance

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/gatetest"
)

// TestMain fails the suite when a test leaves a goroutine behind (a parked
// poll still waiting for a slower broker after its test ended would report
// into a finished test); idle keep-alive connections are not counted.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }
