// Command gate-bench answers "what does Gate itself cost?" against a
// running Gate stack (or one it starts with --embedded). See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-mq/gate/gate-bench/scenario"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	if len(os.Args) > 1 && os.Args[1] == scenario.BareLoopCommand {
		if err := scenario.RunBareLoop(ctx, os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "gate-bench: %v\n", err)
			return 1
		}
		return 0
	}
	cfg, err := scenario.Parse(os.Args[1:], nil)
	if err != nil {
		// Parse only fails on the command line or a BENCH_* knob.
		fmt.Fprintf(os.Stderr, "gate-bench: %v\n\n%s", err, scenario.Usage)
		return 2
	}
	out, err := scenario.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gate-bench: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stdout, "\nmachine: %s\n", out.Machine)
	if cfg.JSONFile != "" {
		if err := scenario.WriteJSON(cfg.JSONFile, out); err != nil {
			fmt.Fprintf(os.Stderr, "gate-bench: writing %s: %v\n", cfg.JSONFile, err)
			return 1
		}
	}
	if len(out.Incomplete) > 0 {
		fmt.Fprintln(os.Stdout, "== incomplete")
		for _, s := range out.Incomplete {
			fmt.Fprintf(os.Stdout, "   %s\n", s)
		}
		return 1
	}
	return 0
}
