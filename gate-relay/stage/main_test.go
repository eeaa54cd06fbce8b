package stage

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: a
// worker, a renewal or a park that outlived its stage.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
