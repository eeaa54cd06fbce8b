// Command gate-run is `make run`: it starts a local Gate stack (miniqueen
// unless a broker answers at QUEEN_URL, NATS, gate-api, gate-relay),
// declares a small demo graph, pushes demo traffic at a modest rate, prints
// how to watch the ceiling hold, and stops everything it started on Ctrl-C.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/queen-mq/gate/libs/stack"
	"github.com/queen-mq/gate/libs/stack/gateapi"
)

func main() {
	// Ctrl-C reaches gate-run alone, not the make that started it: make
	// would die of the SIGINT (the shell's 130) however cleanly gate-run
	// stops, where `make run` promises 0.
	restore := stack.Foreground()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	restore()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gate-run: %v\n", err)
		os.Exit(1)
	}
}

// demoRate is the demo's declared ceiling per second; traffic is pushed at
// twice that, so the ceiling visibly binds.
const demoRate = 20

func run(ctx context.Context) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg := stack.Config{
		GateBind:  envOr("GATE_BIND", "127.0.0.1:8788"),
		RelayBind: envOr("GATE_RELAY_BIND", "127.0.0.1:8791"),
		QueenAddr: "127.0.0.1:6632",
		// The console with the dev sign-in bypass, on loopback only.
		ConsoleBind: envOr("GATE_PUBLIC_BIND", "127.0.0.1:8790"),
		Logger:      log,
		// The demo's logs stay apart from the test suites' (.gate-run/logs).
		LogDir: demoLogDir(),
	}
	if v, err := strconv.Atoi(os.Getenv("GATE_RECONCILE_SECONDS")); err == nil && v > 0 {
		cfg.ReconcileSeconds = v
	}
	st, err := stack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Stop()
	api := gateapi.New(st.GateURL(), nil)
	doc := map[string]any{
		"version": 1,
		"nodes": map[string]any{
			"api": map[string]any{
				"ingress": true,
				"budgets": []any{map[string]any{"id": "per-second", "count": demoRate * 10, "timeMs": 10000, "subWindows": 10}},
				"egress":  map[string]any{"queue": "demo.out", "group": "demo-workers"},
			},
		},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"api"}}},
		// Minute roll-ups, so the console's overview and the product
		// metrics show the admitted rate when history is on.
		"counters": map[string]any{"windowSeconds": 60},
	}
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	_, err = api.Declare(dctx, "demo", "demo", doc)
	cancel()
	if err != nil {
		return fmt.Errorf("declaring the demo graph: %w", err)
	}
	// Pushes before a relay runs the graph would only wait in the ingress
	// queue (Gate-Relay: none): print the URLs once one runs it.
	for deadline := time.Now().Add(60 * time.Second); ; {
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := api.View(vctx, "demo", "demo")
		cancel()
		if err == nil && v.Running && len(v.Stages) > 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the demo graph is declared but no relay ran it within 60 s (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	g := st.GateURL()
	fmt.Printf(`
Gate is running.
  broker     %s
  gate-api   %s
  console    %s   (sign-in BYPASSED: every request is %s, an admin; loopback only)
  NATS       %s
  relays     %s
  history    %s
  logs       %s/

Demo graph demo/demo: %d items per 10 s in ten 1 s sub-windows (%d/s). Demo traffic arrives
in bursts of %d/s for 20 s (the ceiling binds, lag grows), then %d/s for 40 s (lag drains).
Watch the ceiling hold (the graph view: budgets[].value against countSub, stages[].lag):
  curl -s %s/v1/apps/demo/graphs/demo
  curl -s "%s/v1/apps/demo/graphs/demo/nodes/api/eta?path=main"
With jq installed, just the fields that move:
  curl -s %s/v1/apps/demo/graphs/demo | jq '.nodes[].budgets[] | {id, value, countSub, expiresAt}'
Push your own:
  curl -s -XPOST %s/v1/apps/demo/graphs/demo/nodes/api/push -H 'content-type: application/json' -d '{"payload":{"hello":"gate"}}'
Consume demo.out (group demo-workers) with your Queen SDK; Ctrl-C stops everything started here.
`, st.QueenURL(), g, st.ConsoleURL(), stack.DefaultConsoleEmail, st.NATSURL(), relayURLs(st), st.HistoryNote(), demoLogDir(), demoRate*10, demoRate, 2*demoRate, demoRate/4, g, g, g, g)

	// Bursts above the ceiling, then a lull below it, so the backlog stays
	// bounded however long the demo runs (average 5/6 of the ceiling).
	burst, lull := time.Second/(2*demoRate), time.Second/(demoRate/4)
	tick := time.NewTicker(burst)
	defer tick.Stop()
	phase := time.NewTicker(20 * time.Second)
	defer phase.Stop()
	bursting := true
	status := time.NewTicker(10 * time.Second)
	defer status.Stop()
	var n, failed int
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "\ngate-run: stopping (pushed %d, %d failed)\n", n, failed)
			return nil
		case <-phase.C:
			bursting = !bursting
			if bursting {
				tick.Reset(burst)
				phase.Reset(20 * time.Second)
			} else {
				tick.Reset(lull)
				phase.Reset(40 * time.Second)
			}
		case <-status.C:
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			v, err := api.View(sctx, "demo", "demo")
			cancel()
			if err == nil && len(v.Stages) > 0 {
				c := v.Stages[0].Counters
				lag := "unknown"
				if l := v.Stages[0].Lag; l != nil {
					lag = strconv.FormatInt(*l, 10)
				}
				fmt.Fprintf(os.Stderr, "gate-run: pushed %d; relay forwarded %d, parked %d, lag %s\n", n, c.Forwarded, c.Parked, lag)
			}
		case <-tick.C:
			payload, _ := json.Marshal(map[string]any{"n": n, "at": time.Now().UnixMilli()})
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := api.Push(pctx, "demo", "demo", "api", gateapi.PushBody{Partition: "p" + strconv.Itoa(n%4), Payload: payload})
			cancel()
			if err != nil {
				failed++
				continue
			}
			n++
		}
	}
}

func relayURLs(st *stack.Stack) string {
	s := ""
	for i, p := range st.Relays() {
		if i > 0 {
			s += ", "
		}
		s += p.HealthURL
	}
	return s
}

// demoLogDir is where `make run` keeps its children's logs: beside the test
// suites' .gate-run/logs, never mixed into it. Relative to the repository
// root, where make runs.
func demoLogDir() string {
	if root, err := findRoot(); err == nil {
		return filepath.Join(root, ".gate-run", "demo", "logs")
	}
	return filepath.Join(".gate-run", "demo", "logs")
}

func findRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return stack.FindRoot(wd)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
