// Command gate-api is Gate's application plane: with no arguments (or
// `serve`) it serves the HTTP routes applications call — declare, push,
// backoff, re-enter, ETA — on GATE_BIND against the broker at QUEEN_URL.
// `gate-api check` validates and compiles declarations offline; `gate-api
// diff` and `gate-api apply` check and apply graphs kept in git against a
// running gate-api.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-mq/gate/gate-api/apply"
	"github.com/queen-mq/gate/gate-api/check"
	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/server"
	"github.com/queen-mq/gate/libs/knob"
)

const usage = `usage:
  gate-api [serve]
      serve the application plane on GATE_BIND (default 0.0.0.0:8788)
      against the broker at QUEEN_URL; see README.md for every knob
  gate-api check [--json] [--app APP] [--name GRAPH] [--target] FILE...
      validate and compile graph documents offline, exactly as a PUT would
  gate-api diff --server URL [--json] [--exit-code] FILE...
      print what PUT-ing each document would change on a running gate-api
      (its dry run; nothing is stored)
  gate-api apply --server URL [--json] FILE...
      dry-run every document, then PUT each changed one with If-Match on
      the stored document it was compared with; exit 1 refused, 3 conflict,
      4 gate-api unavailable
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "check":
		return check.Run(args[1:], stdout, stderr)
	case "diff":
		return apply.RunDiff(context.Background(), args[1:], os.Stdin, stdout, stderr)
	case "apply":
		return apply.RunApply(context.Background(), args[1:], os.Stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "", "serve":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "gate-api serve takes no arguments (got %q); configure it with environment variables\n%s", args[1:], usage)
			return 2
		}
		return serve(stderr)
	default:
		fmt.Fprintf(stderr, "gate-api: unknown command %q\n%s", cmd, usage)
		return 2
	}
}

// serve reads the knobs, logs JSON to stderr and runs the server until
// SIGINT or SIGTERM.
func serve(stderr io.Writer) int {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "gate-api: configuration:\n%v\n", err)
		return 2
	}
	level, _ := knob.ParseLogLevel(cfg.LogLevel) // Load has checked it
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg, log); err != nil {
		log.Error("gate-api stopped", "error", err)
		return 1
	}
	log.Info("gate-api stopped")
	return 0
}
