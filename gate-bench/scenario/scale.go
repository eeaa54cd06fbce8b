package scenario

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queen-mq/gate/gate-bench/stats"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

// scaleSample is how many graphs of each step are declared one at a time
// and watched until a push says a relay runs them (PUT → running).
const scaleSample = 20

// scale declares two-node graphs in steps up to each of BENCH_SCALE_GRAPHS
// (cumulative) and reports, per step: PUT p50/p99 of the step's PUTs, the
// time from the step's last PUT until a push to it answers running, PUT →
// running p99 over a sample, the relay's /health, and at idle its
// goroutines per stage, RSS and CPU, and the broker's RSS and CPU. Every
// graph is deleted at the end.
func (b *Bench) scale(ctx context.Context) ([]stats.Table, error) {
	t := stats.Table{Title: "scale — N two-node graphs on one relay (PUT cost, PUT → running, idle cost)",
		Header: []string{"graphs", "PUT p50 ms", "PUT p99 ms", "last PUT → running s", "PUT → running p99 ms", "relay /health",
			"relay goroutines/stage", "relay RSS MB", "relay idle CPU %", "broker RSS MB", "broker idle CPU %", "relay idle pops/s", "relay idle calls/s"}}
	var declared []string
	defer func() {
		for _, g := range declared {
			b.forget(g)
		}
	}()
	doc := func(i int, graph string) map[string]any {
		return map[string]any{"version": 1, "nodes": map[string]any{
			"in":  map[string]any{"ingress": true, "budgets": []any{map[string]any{"id": "in", "count": 100, "timeMs": 1000}}},
			"out": map[string]any{"budgets": []any{map[string]any{"id": "out", "count": 50, "timeMs": 1000}}, "egress": b.egressQueue(graph, "")},
		}, "paths": []any{map[string]any{"name": "main", "nodes": []any{"in", "out"}}}}
	}
	put := func(i int) (time.Duration, string, error) {
		graph := b.graphName("scale-" + strconv.Itoa(i))
		c, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		t0 := time.Now()
		_, err := b.api.Declare(c, b.cfg.App, graph, doc(i, graph))
		if err != nil {
			return 0, graph, fmt.Errorf("declaring %s: %w", graph, err)
		}
		declared = append(declared, graph)
		return time.Since(t0), graph, nil
	}
	running := func(graph string) bool {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		p, err := b.api.Push(c, b.cfg.App, graph, "in", wire.PushBody{Payload: json.RawMessage(`{"scale":1}`)})
		return err == nil && p.Running
	}
	var lastPut time.Time
	for _, n := range b.cfg.ScaleGraphs {
		var lat []time.Duration
		last := ""
		for i := len(declared); i < n-scaleSample; i++ {
			d, g, err := put(i)
			if err != nil {
				return []stats.Table{t}, err
			}
			lat, last = append(lat, d), g
			lastPut = time.Now()
		}
		t0 := time.Now()
		lastRunning := "-"
		if last != "" {
			if waitFor(ctx, 60*time.Second, func() bool { return running(last) }) {
				lastRunning = stats.Num(time.Since(t0).Seconds())
			} else {
				lastRunning = "not in 60 s"
			}
		}
		var toRun []time.Duration
		never := false
		for i := len(declared); i < n; i++ {
			d, g, err := put(i)
			if err != nil {
				return []stats.Table{t}, err
			}
			lat = append(lat, d)
			lastPut = time.Now()
			if never {
				continue
			}
			t1 := time.Now()
			if waitFor(ctx, 30*time.Second, func() bool { return running(g) }) {
				toRun = append(toRun, time.Since(t1)+d)
			} else {
				// One graph that never runs says it for the rest.
				never = true
			}
		}
		toRunP99 := ms(quantile(toRun, 0.99))
		if never {
			toRunP99 = "not in 30 s"
		}
		health := b.relayHealth(ctx)
		// The idle figures are the relay's steady idle: past the time its
		// quiet interior stages take to doze (twice the poll timeout or
		// the lease, and at most one poll timeout more for the poll parked
		// then) since the step's last PUT, and the client's idle
		// keep-alive timeout after that (the connections they parked on).
		time.Sleep(max(5*time.Second, time.Until(lastPut.Add(dozeAfter()+idleConns))))
		gor, rss := b.relayProcess(ctx)
		relayCPU := startCPU(b.relayPid())
		brokerCPU := startCPU(b.queenPid())
		calls0, callsOK := b.snap(ctx)
		wall := time.Now()
		select {
		case <-ctx.Done():
			return []stats.Table{t}, ctx.Err()
		case <-time.After(b.cfg.IdleSeconds):
		}
		secs := time.Since(wall).Seconds()
		pct := func(m *cpuMeter) string {
			d, ok := m.stop()
			if !ok || len(d) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", 100*d[0].Seconds()/secs)
		}
		pops, calls := "-", "-"
		if calls1, ok := b.snap(ctx); ok && callsOK {
			d := calls1.Sub(calls0)
			pops, calls = fmt.Sprintf("%.1f", float64(d.Pop)/secs), fmt.Sprintf("%.1f", float64(d.Total)/secs)
		}
		perStage := "-"
		if gor > 0 {
			perStage = fmt.Sprintf("%.2f", float64(gor)/float64(2*n))
		}
		t.Add(strconv.Itoa(n), ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), lastRunning, toRunP99, health,
			perStage, mb(rss), pct(relayCPU), mb(rssOf(b.queenPid())), pct(brokerCPU), pops, calls)
		t.Figure(fmt.Sprintf("put p99 ms at %d", n), float64(quantile(lat, 0.99).Microseconds())/1000)
	}
	t.Note("PUT → running: a PUT of a sample of %d graphs per step, then pushes until one answers running (the relay's status as gate-api reads it)", scaleSample)
	t.Note("idle figures over BENCH_IDLE_SECONDS after a settle of 5 s, and at least until the quiet interior stages doze and the connections they parked on idle out (twice GATE_POLL_TIMEOUT_SECONDS or GATE_LEASE_SECONDS, one poll timeout and 95 s after the last PUT); goroutines per stage = the relay's go_goroutines ÷ (2 × graphs)")
	t.Note("relay idle pops/s and calls/s: the relay's own client's count (gate_relay_broker_calls_total) over the idle window; a parked long-poll counts when it is sent")
	return []stats.Table{t}, ctx.Err()
}

// idleConns is the relay's client's idle keep-alive timeout
// (queen.NewTransport's IdleConnTimeout) and a margin.
const idleConns = 95 * time.Second

// dozeAfter is how long until an embedded relay's interior stage quiet
// since then dozes: stage.Config.DozeAfter (twice the poll timeout or the
// lease, whichever is longer) and the poll parked at that instant, from
// the knobs the stack inherits.
func dozeAfter() time.Duration {
	poll, err := knob.PollTimeoutSeconds.Read(os.Getenv)
	if err != nil {
		poll = knob.PollTimeoutSeconds.Default
	}
	lease, err := knob.LeaseSeconds.Read(os.Getenv)
	if err != nil {
		lease = knob.LeaseSeconds.Default
	}
	return 2*time.Duration(max(poll, lease))*time.Second + time.Duration(poll)*time.Second
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func mb(bytes int64) string {
	if bytes <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(bytes)/(1<<20))
}

// relayHealth is the embedded relay's /health status word ("-" without
// one).
func (b *Bench) relayHealth(ctx context.Context) string {
	if b.relay == nil {
		return "-"
	}
	body, err := get(ctx, b.relay.p.HealthURL+"/health")
	if err != nil {
		return "unreachable"
	}
	var h wire.RelayHealth
	if json.Unmarshal(body, &h) != nil {
		return "unreadable"
	}
	return h.Status
}

// relayProcess reads go_goroutines and process_resident_memory_bytes from
// the embedded relay's /metrics.
func (b *Bench) relayProcess(ctx context.Context) (goroutines int, rss int64) {
	if b.relay == nil {
		return 0, 0
	}
	body, err := get(ctx, b.relay.p.HealthURL+"/metrics")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "go_goroutines "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			goroutines = int(f)
		}
		if v, ok := strings.CutPrefix(l, "process_resident_memory_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			rss = int64(f)
		}
	}
	return goroutines, rss
}

func get(ctx context.Context, url string) ([]byte, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// rssOf is a process's resident set in bytes (VmRSS of /proc/PID/status;
// 0 when unknown).
func rssOf(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
