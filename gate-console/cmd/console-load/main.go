// Command console-load measures gate-console on a local stack (miniqueen,
// NATS, gate-api, gate-relay and gate-console with the dev bypass, started
// by libs/stack):
//
//  1. the console read routes, open loop at -rate requests/s for -reads
//     (latency from each request's due time, so a stall is not hidden);
//
//  2. SSE fan-out: -clients streams on one graph, -updates counter
//     snapshots published on the relays' NATS subject at -update-rate/s,
//     latency from publish to each client's receipt, and the console's RSS.
//
//     go run ./gate-console/cmd/console-load
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/queen-mq/gate/libs/stack"
	"github.com/queen-mq/gate/libs/stack/gateapi"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

func main() {
	rate := flag.Int("rate", 200, "read requests per second (open loop)")
	reads := flag.Duration("reads", 20*time.Second, "how long the read phase runs")
	clients := flag.Int("clients", 200, "SSE clients on one graph")
	updates := flag.Int("updates", 200, "counter snapshots published")
	updateRate := flag.Int("update-rate", 10, "snapshots per second")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *rate, *reads, *clients, *updates, *updateRate); err != nil {
		fmt.Fprintf(os.Stderr, "console-load: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, rate int, reads time.Duration, clients, updates, updateRate int) error {
	bind, err := stack.FreeAddr()
	if err != nil {
		return err
	}
	st, err := stack.Start(ctx, stack.Config{ConsoleBind: bind, NoReuse: true, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	defer st.Stop()
	if err := declareDemo(ctx, st.GateURL()); err != nil {
		return err
	}
	base := st.ConsoleURL()
	pid := st.Console().Pid()
	fmt.Printf("stack up: console %s (pid %d), NATS %s; load average %s\n", base, pid, st.NATSURL(), loadavg())

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}
	readPhase(ctx, hc, base, rate, reads)
	fmt.Printf("console RSS after the read phase: %s\n", rss(pid))
	return fanout(ctx, base, st.NATSURL(), pid, clients, updates, updateRate)
}

func declareDemo(ctx context.Context, gate string) error {
	api := gateapi.New(gate, nil)
	doc := map[string]any{
		"version": 1,
		"nodes": map[string]any{"api": map[string]any{
			"ingress": true,
			"budgets": []any{map[string]any{"id": "per-second", "count": 200, "timeMs": 10000, "subWindows": 10}},
			"egress":  map[string]any{"queue": "load.out", "group": "load-workers"},
		}},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"api"}}},
	}
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := api.Declare(dctx, "load", "demo", doc); err != nil {
		return fmt.Errorf("declaring load/demo: %w", err)
	}
	return nil
}

var readRoutes = []string{
	"/api/overview", "/api/apps", "/api/targets", "/api/graphs",
	"/api/apps/load/graphs/demo", "/api/apps/load/graphs/demo/topology",
	"/api/budgets", "/api/breaches/recent", "/api/me", "/api/version",
}

func readPhase(ctx context.Context, hc *http.Client, base string, rate int, d time.Duration) {
	// Warm the connection pool and the caches.
	for _, r := range readRoutes {
		if res, err := hc.Get(base + r); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	type sample struct {
		route  string
		lat    time.Duration
		status int
	}
	var mu sync.Mutex
	var samples []sample
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	n := int(d / interval)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		route := readRoutes[i%len(readRoutes)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := 0
			res, err := hc.Get(base + route)
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				status = res.StatusCode
			}
			lat := time.Since(due)
			mu.Lock()
			samples = append(samples, sample{route, lat, status})
			mu.Unlock()
		}()
	}
	wg.Wait()
	all := make([]time.Duration, 0, len(samples))
	statuses := map[int]int{}
	per := map[string][]time.Duration{}
	for _, s := range samples {
		all = append(all, s.lat)
		statuses[s.status]++
		per[s.route] = append(per[s.route], s.lat)
	}
	fmt.Printf("\n== console read routes, open loop %d req/s for %v (%d requests over %d routes, latency from each due time; load average %s)\n", rate, d, len(samples), len(readRoutes), loadavg())
	fmt.Printf("%-40s %8s %8s %8s %8s\n", "route", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, r := range readRoutes {
		p := pct(per[r])
		fmt.Printf("%-40s %8.2f %8.2f %8.2f %8.2f\n", r, p[0], p[1], p[2], p[3])
	}
	p := pct(all)
	fmt.Printf("%-40s %8.2f %8.2f %8.2f %8.2f\n", "ALL", p[0], p[1], p[2], p[3])
	fmt.Printf("statuses: %v\n", statuses)
}

// pct is p50, p90, p99 and max in milliseconds.
func pct(d []time.Duration) [4]float64 {
	if len(d) == 0 {
		return [4]float64{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(q float64) float64 {
		i := min(len(d)-1, int(q*float64(len(d))))
		return float64(d[i]) / 1e6
	}
	return [4]float64{at(0.50), at(0.90), at(0.99), float64(d[len(d)-1]) / 1e6}
}

func fanout(ctx context.Context, base, natsURL string, pid, clients, updates, updateRate int) error {
	const app, graph = "load", "fanout"
	var mu sync.Mutex
	sent := map[int64]time.Time{}
	var lats []time.Duration
	var ready, delivered atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients + 10}}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, base+"/api/live?graphs="+app+"/"+graph, nil)
			res, err := hc.Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			rd := bufio.NewReaderSize(res.Body, 64<<10)
			event := ""
			for {
				line, err := rd.ReadString('\n')
				if err != nil {
					return
				}
				line = strings.TrimRight(line, "\n")
				switch {
				case strings.HasPrefix(line, "event: "):
					event = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: "):
					data := strings.TrimPrefix(line, "data: ")
					now := time.Now()
					if event == "status" && strings.Contains(data, `"mode":"stream"`) {
						ready.Add(1)
					}
					if event == "counters" {
						var c wire.LiveCounters
						if json.Unmarshal([]byte(data), &c) == nil && len(c.Stages) > 0 {
							seq := c.Stages[0].Counters.Forwarded
							mu.Lock()
							if t, ok := sent[seq]; ok {
								lats = append(lats, now.Sub(t))
							}
							mu.Unlock()
							delivered.Add(1)
						}
					}
				}
			}
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); ready.Load() < int64(clients); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d streams said mode stream within 30 s", ready.Load(), clients)
		}
	}
	rssOpen := rss(pid)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	g := store.GraphStatus{App: app, Graph: graph, Version: 1, Running: true, Stages: []store.StageStatus{{Path: "main", Node: "api"}}}
	interval := time.Second / time.Duration(updateRate)
	start := time.Now()
	for i := 1; i <= updates && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		g.Stages[0].Counters.Forwarded = int64(i)
		b, _ := json.Marshal(map[string]any{"replica": "load", "at": time.Now().UnixMilli(), "graph": g})
		mu.Lock()
		sent[int64(i)] = time.Now()
		mu.Unlock()
		if err := nc.Publish("gate.relay.counters."+app+"."+graph, b); err != nil {
			return err
		}
	}
	_ = nc.Flush()
	time.Sleep(2 * time.Second)
	rssAfter := rss(pid)
	cancel()
	wg.Wait()
	mu.Lock()
	p := pct(lats)
	mu.Unlock()
	want := int64(clients * updates)
	fmt.Printf("\n== SSE fan-out: %d clients on one graph, %d counter snapshots at %d/s (load average %s)\n", clients, updates, updateRate, loadavg())
	fmt.Printf("delivered %d of %d (%.1f%%; the rest coalesced into a newer snapshot)\n", delivered.Load(), want, 100*float64(delivered.Load())/float64(want))
	fmt.Printf("publish → client latency: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n", p[0], p[1], p[2], p[3])
	fmt.Printf("console RSS: %s with %d streams open, %s after the updates\n", rssOpen, clients, rssAfter)
	return nil
}

func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	var cur, peak string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			cur = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			peak = strings.TrimSpace(v)
		}
	}
	return cur + " (peak " + peak + ")"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}
