package scenario

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary stand in for gate-bench when the overhead
// scenario starts its bare-loop child (it re-executes os.Executable()).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == BareLoopCommand {
		if err := RunBareLoop(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "gate-bench: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
