package scenario

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/queen-mq/gate/libs/stack"
)

// Snapshot is a relay's broker calls at one moment, as its own client
// counted them (gate_relay_broker_calls_total on its /metrics): nothing
// sits between the relay and the broker to count them.
type Snapshot struct{ Total, KV, Incr, Txn, Pop, Push int64 }

// Sub is s − o field by field.
func (s Snapshot) Sub(o Snapshot) Snapshot {
	return Snapshot{s.Total - o.Total, s.KV - o.KV, s.Incr - o.Incr, s.Txn - o.Txn, s.Pop - o.Pop, s.Push - o.Push}
}

// relayCalls reads a relay's broker calls from its /metrics.
type relayCalls struct {
	hc  *http.Client
	url string
}

func newRelayCalls(p *stack.Process) *relayCalls {
	return &relayCalls{hc: &http.Client{Timeout: 5 * time.Second}, url: p.HealthURL + "/metrics"}
}

// snap scrapes the counters; a failed scrape is an error, never zeros.
func (r *relayCalls) snap(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	series, err := scrape(ctx, r.hc, r.url)
	if err != nil {
		return s, fmt.Errorf("reading the relay's call counts: %w", err)
	}
	const metric = `gate_relay_broker_calls_total{route="`
	found := false
	for name, v := range series {
		route, ok := strings.CutPrefix(name, metric)
		if !ok {
			continue
		}
		n := int64(v)
		found = true
		switch strings.TrimSuffix(route, `"}`) {
		case "pop":
			s.Pop = n
		case "push":
			s.Push = n
		case "transaction":
			s.Txn = n
		case "kv":
			s.KV = n
		case "kv_incr":
			s.Incr = n
			continue
		}
		s.Total += n
	}
	if !found {
		return s, fmt.Errorf("%s carries no gate_relay_broker_calls_total", r.url)
	}
	return s, nil
}

// doorCalls is gate-api's push front door at one moment: the broker push
// calls it made and the items they carried.
type doorCalls struct{ Calls, Items int64 }

// snapDoor scrapes gate-api's /metrics for the door's broker calls.
func snapDoor(ctx context.Context, hc *http.Client, gateURL string) (doorCalls, error) {
	series, err := scrape(ctx, hc, gateURL+"/metrics")
	if err != nil {
		return doorCalls{}, fmt.Errorf("reading the push door's broker calls: %w", err)
	}
	calls, ok1 := series["gate_api_push_broker_calls_total"]
	items, ok2 := series["gate_api_push_broker_items_total"]
	if !ok1 || !ok2 {
		return doorCalls{}, fmt.Errorf("%s/metrics carries no gate_api_push_broker_calls_total or _items_total (a gate-api older than the batched door?)", gateURL)
	}
	return doorCalls{int64(calls), int64(items)}, nil
}

// scrape reads a Prometheus text page into its samples, keyed by the
// series as written (name{labels}); comments are skipped.
func scrape(ctx context.Context, hc *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d", url, resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}
