// Command gate-console is Gate's public plane: the same application routes
// as gate-api behind a session on every route, sign-in (OIDC, Google by
// default), the console /api, a live stream of the relays' counters and the
// embedded web app, on GATE_PUBLIC_BIND (default 0.0.0.0:8790).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/gate-console/console"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/knob"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "gate-console takes no arguments (got %q); configure it with environment variables (see gate-console/README.md)\n", args)
		return 2
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "gate-console: refusing to start:\n%v\n", err)
		return 2
	}
	level, _ := knob.ParseLogLevel(cfg.API.LogLevel) // Load has checked it
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := console.Run(ctx, cfg, log); err != nil {
		if errors.Is(err, history.ErrUnreachable) {
			fmt.Fprintf(stderr, "gate-console: refusing to start:\n%v\n", err)
			return 2
		}
		log.Error("gate-console stopped", "error", err)
		return 1
	}
	log.Info("gate-console stopped")
	return 0
}
