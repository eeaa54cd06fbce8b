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
	"strings"
	"syscall"

	"github.com/queen-mq/gate/libs/miniqueen"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6632", "host:port to listen on")
	mode := flag.String("default-subscription-mode", "new", "subscription mode for a new group whose pop sends none: new or all")
	without := flag.String("without", "", "comma-separated capabilities to switch off, to imitate an older broker: kv (no kv store, as Queen 0.15.1), depth (no depth route), ack-lease (a claim's lease ends after as many acks as it holds, as 0.15.1)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts, err := withoutOptions(*without)
	if err != nil {
		logger.Error("bad flag", "error", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *mode, logger, nil, opts...); err != nil {
		logger.Error("miniqueen stopped", "error", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; started (optional) receives the server once it
// listens. The server's work ends with ctx; Stop waits until it has.
func run(ctx context.Context, addr, mode string, logger *slog.Logger, started func(*miniqueen.Server), extra ...miniqueen.Option) error {
	if mode != "new" && mode != "all" {
		return fmt.Errorf("--default-subscription-mode %q: use new or all", mode)
	}
	opts := append([]miniqueen.Option{miniqueen.WithAddr(addr), miniqueen.WithLogger(logger), miniqueen.WithDefaultSubscriptionMode(mode)}, extra...)
	srv := miniqueen.New(opts...)
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

// withoutOptions reads --without: the capabilities to switch off.
func withoutOptions(list string) ([]miniqueen.Option, error) {
	var opts []miniqueen.Option
	for _, w := range strings.Split(list, ",") {
		switch strings.TrimSpace(w) {
		case "":
		case "kv":
			opts = append(opts, miniqueen.WithoutKV())
		case "depth":
			opts = append(opts, miniqueen.WithoutDepth())
		case "ack-lease":
			opts = append(opts, miniqueen.WithLeaseReleasedByAckCount())
		default:
			return nil, fmt.Errorf("--without %q: %q is not kv, depth or ack-lease", list, w)
		}
	}
	return opts, nil
}
