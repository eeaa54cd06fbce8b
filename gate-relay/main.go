// Command gate-relay is Gate's data plane: it makes declared ceilings true
// by relaying work from ingress to egress queues through kv-charged
// admission. See README.md for its knobs, subjects and metrics.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/queen-mq/gate/gate-relay/config"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/knob"
)

func main() {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gate-relay: bad configuration:\n%v\n", err)
		os.Exit(2)
	}
	if cfg.Replica == "" {
		host, _ := os.Hostname()
		cfg.Replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	level, _ := knob.ParseLogLevel(cfg.LogLevel) // Load has checked it
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	if limit, from := cfg.SoftMemoryLimit(os.ReadFile); limit > 0 {
		debug.SetMemoryLimit(limit)
		log.Info("soft memory limit set", "memoryLimitMB", limit>>20, "memoryLimitFrom", from)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := relay.Run(ctx, cfg, relay.WithLogger(log)); err != nil {
		log.Error("gate-relay failed", "error", err)
		os.Exit(1)
	}
}
