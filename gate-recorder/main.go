// Command gate-recorder is Gate's history writer: it drains the relays'
// handover rows from Queen kv into PostgreSQL (Watch samples, minute
// roll-ups, denial traces), samples queue snapshots once a minute and
// applies retention every hour. See README.md.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-mq/gate/gate-recorder/config"
	"github.com/queen-mq/gate/gate-recorder/recorder"
	"github.com/queen-mq/gate/libs/knob"
)

func main() {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gate-recorder: bad configuration:\n%v\n", err)
		os.Exit(2)
	}
	level, _ := knob.ParseLogLevel(cfg.LogLevel)
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := recorder.Run(ctx, cfg, log); err != nil {
		fmt.Fprintf(os.Stderr, "gate-recorder: %v\n", err)
		os.Exit(1)
	}
}
