// Command miniqueen runs the in-memory Queen-compatible test broker until
// SIGINT or SIGTERM. It is a test and local-run broker, never a production
// path: production runs the real Queen (>= 1.0.4).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-mq/gate/libs/miniqueen"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6632", "host:port to listen on")
	mode := flag.String("default-subscription-mode", "new", "subscription mode for a new group whose pop sends none: new or all")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *mode, logger, nil); err != nil {
		logger.Error("miniqueen stopped", "error", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; started (optional) receives the server once it
// listens. The server's work ends with ctx; Stop waits until it has.
func run(ctx context.Context, addr, mode string, logger *slog.Logger, started func(*miniqueen.Server)) error {
	if mode != "new" && mode != "all" {
		return fmt.Errorf("--default-subscription-mode %q: use new or all", mode)
	}
	srv := miniqueen.New(miniqueen.WithAddr(addr), miniqueen.WithLogger(logger), miniqueen.WithDefaultSubscriptionMode(mode))
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("starting miniqueen: %w", err)
	}
	if started != nil {
		started(srv)
	}
	<-ctx.Done()
	logger.Info("miniqueen shutting down", "addr", srv.Addr())
	srv.Stop()
	return nil
}
