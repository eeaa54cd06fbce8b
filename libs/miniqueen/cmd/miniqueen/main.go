// Command miniqueen runs the in-memory Queen-compatible test broker until
// SIGINT or SIGTERM. It is a test and local-run broker, never a production
// path: production runs the real Queen (>= 1.0.4).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/queen-mq/gate/libs/miniqueen"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6632", "host:port to listen on")
	mode := flag.String("default-subscription-mode", "new", "subscription mode for a new group whose pop sends none: new or all")
	profiles := flag.String("pprof", os.Getenv("MINIQUEEN_PPROF"), "host:port to serve Go's runtime profiles on (/debug/pprof/), for measuring the broker itself; empty (the default, or MINIQUEEN_PPROF) serves none")
	gc := flag.String("gc-percent", os.Getenv("MINIQUEEN_GC_PERCENT"), fmt.Sprintf("the collector's target, as GOGC (%d..%d; default %d, or MINIQUEEN_GC_PERCENT); GOGC, when set, wins", minGCPercent, maxGCPercent, defaultGCPercent))
	without := flag.String("without", "", "comma-separated capabilities to switch off, to imitate an older broker: kv (no kv store, as Queen 0.15.1), depth (no depth route), ack-lease (a claim's lease ends after as many acks as it holds, as 0.15.1)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts, err := withoutOptions(*without)
	if err != nil {
		logger.Error("bad flag", "error", err)
		os.Exit(2)
	}
	percent, err := collectorPercent(*gc, os.Getenv)
	if err != nil {
		logger.Error("bad flag", "error", err)
		os.Exit(2)
	}
	if percent > 0 {
		debug.SetGCPercent(percent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *profiles != "" {
		addr, done, err := serveProfiles(ctx, *profiles, logger)
		if err != nil {
			logger.Error("bad flag", "error", err)
			os.Exit(2)
		}
		defer done()
		logger.Info("serving runtime profiles", "addr", addr, "path", "/debug/pprof/")
	}
	if err := run(ctx, *addr, *mode, logger, nil, opts...); err != nil {
		logger.Error("miniqueen stopped", "error", err)
		os.Exit(1)
	}
}

// The broker's collector target. Nearly all of its heap is long-lived —
// queues, partitions, cursors, retained messages, kv rows, a connection's
// buffers per parked poll — and at 10,000 graphs it is 200-800 MB, so at
// Go's default (100) the collector marked all of it every few seconds
// while items flowed, and on two cores the broker's calls waited behind
// it: gate-bench scale-fleet's push door p99 over 1,000 graphs read
// 91-740 ms, the slow pushes bunched in the seconds the broker's CPU
// doubled. A test broker trades memory for that: 400 marks a quarter as
// often. GOGC, the runtime's own knob, wins when set.
const (
	defaultGCPercent = 400
	minGCPercent     = 25
	maxGCPercent     = 10000
)

// collectorPercent is the GC percent to set from the --gc-percent value
// (flagValue: "" is the default); 0 when GOGC is set (the runtime has
// read it; leave it be).
func collectorPercent(flagValue string, getenv func(string) string) (int, error) {
	if strings.TrimSpace(getenv("GOGC")) != "" {
		return 0, nil
	}
	v := strings.TrimSpace(flagValue)
	if v == "" {
		return defaultGCPercent, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < minGCPercent || n > maxGCPercent {
		return 0, fmt.Errorf("--gc-percent (or MINIQUEEN_GC_PERCENT) %q: give a whole number from %d to %d, as GOGC (%d, the default, collects a quarter as often as Go's 100), or set GOGC itself", flagValue, minGCPercent, maxGCPercent, defaultGCPercent)
	}
	return n, nil
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

// serveProfiles serves net/http/pprof's handlers on addr, on a listener of
// their own (never the broker's routes), until ctx ends; it answers the
// address bound and a func that waits for the server to stop.
func serveProfiles(ctx context.Context, addr string, logger *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--pprof %q: %w; give a free host:port such as 127.0.0.1:6061", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("the profile listener stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	stopped := context.AfterFunc(ctx, func() { _ = srv.Close() })
	done := func() {
		stopped()
		_ = srv.Close()
		<-served
	}
	return ln.Addr().String(), done, nil
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
