// Command miniqueen runs the in-memory Queen-compatible test broker until
// SIGINT or SIGTERM. It is a test and local-run broker, never a production
// path.
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
	if err := run(*addr, *mode, logger); err != nil {
		logger.Error("miniqueen stopped", "err", err)
		os.Exit(1)
	}
}

func run(addr, mode string, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := miniqueen.NewServer(miniqueen.WithLogger(logger), miniqueen.WithDefaultSubscriptionMode(mode))
	if err := srv.Start(addr); err != nil {
		return fmt.Errorf("starting miniqueen: %w", err)
	}
	<-ctx.Done()
	logger.Info("miniqueen shutting down")
	srv.Close()
	return nil
}
