package ops

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a server outlives its Stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
