package scenario

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/queen-mq/gate/libs/gatetest"
	"go.uber.org/goleak"
)

// TestMain lets the test binary stand in for gate-bench when the overhead
// scenario starts its bare-loop child (it re-executes os.Executable()), and
// otherwise fails the package when a test leaves a goroutine behind
// (net/http's idle keep-alive loops aside, see gatetest.IgnoreIdleConns).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == BareLoopCommand {
		if err := RunBareLoop(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "gate-bench: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...)
}
