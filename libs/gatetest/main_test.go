package gatetest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (an
// embedded broker or NATS server that outlived its test).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, IgnoreIdleConns()...) }
