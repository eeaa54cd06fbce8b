// Command gate-e2e answers "did the declared ceiling hold?" against a
// running Gate stack (or one it starts with --embedded). See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-mq/gate/gate-e2e/load"
	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	noProgress := false
	for _, a := range os.Args[1:] {
		if a == "--no-progress" {
			noProgress = true
		}
	}
	cfg, err := load.Parse(os.Args[1:], nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gate-e2e: %v\n\n%s", err, load.Usage)
		if errors.Is(err, load.ErrUsage) && len(os.Args) > 1 && (os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help") {
			return 0
		}
		return 2
	}
	cfg.Progress = !noProgress && !cfg.JSON && term.IsTerminal(int(os.Stderr.Fd()))
	r, err := load.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gate-e2e: %v\n", err)
		return 2
	}
	if cfg.JSON {
		if err := load.WriteJSON(os.Stdout, cfg, r); err != nil {
			fmt.Fprintf(os.Stderr, "gate-e2e: %v\n", err)
			return 2
		}
	} else {
		load.WriteText(os.Stdout, cfg, r)
	}
	if !r.Pass {
		return 1
	}
	return 0
}
