package scenario

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
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

// histBound is the upper bound, in milliseconds, of the bucket of
// histogram name that holds quantile q of the observations made between two
// scrapes of one page (before, after), and how many there were; ok is false
// when the page has no such histogram or nothing was observed. A quantile
// beyond the last finite bucket answers +Inf.
func histBound(before, after map[string]float64, name string, q float64) (ms, n float64, ok bool) {
	type bucket struct{ le, count float64 }
	var bs []bucket
	prefix := name + `_bucket{le="`
	for k, v := range after {
		le, found := strings.CutPrefix(k, prefix)
		if !found {
			continue
		}
		bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{bound, v - before[k]})
	}
	if len(bs) == 0 {
		return 0, 0, false
	}
	slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	n = bs[len(bs)-1].count // the +Inf bucket counts every observation
	if n <= 0 {
		return 0, 0, false
	}
	for _, b := range bs {
		if b.count >= q*n {
			return b.le * 1000, n, true
		}
	}
	return math.Inf(1), n, true
}

// doorSplit says how gate-api's push door spent a window, from two scrapes
// of its /metrics: the pushes' p50 and p99 and its broker calls' (the
// broker's share), each as the upper bound of its histogram bucket.
func doorSplit(before, after map[string]float64) string {
	bound := func(name string, q float64) (string, float64) {
		ms, n, ok := histBound(before, after, name, q)
		if !ok {
			return "", 0
		}
		return "≤ " + strconv.FormatFloat(ms, 'f', -1, 64), n
	}
	p50, pushes := bound("gate_api_push_duration_seconds", 0.5)
	p99, _ := bound("gate_api_push_duration_seconds", 0.99)
	if pushes == 0 {
		return "gate-api's push histogram: nothing observed"
	}
	out := fmt.Sprintf("gate-api's histograms: %.0f pushes p50 %s ms, p99 %s ms", pushes, p50, p99)
	c50, calls := bound("gate_api_push_broker_call_seconds", 0.5)
	c99, _ := bound("gate_api_push_broker_call_seconds", 0.99)
	if calls == 0 {
		return out + "; no broker call histogram (a gate-api older than gate_api_push_broker_call_seconds)"
	}
	return out + fmt.Sprintf("; its %.0f broker calls (%.1f pushes each) p50 %s ms, p99 %s ms", calls, pushes/calls, c50, c99)
}
