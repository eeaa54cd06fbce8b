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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return s, err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return s, fmt.Errorf("reading the relay's call counts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("reading the relay's call counts: %s answered HTTP %d", r.url, resp.StatusCode)
	}
	const metric = `gate_relay_broker_calls_total{route="`
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), metric)
		if !ok {
			continue
		}
		route, rest, ok := strings.Cut(line, `"} `)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			continue
		}
		n := int64(v)
		found = true
		switch route {
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
	if err := sc.Err(); err != nil {
		return s, err
	}
	if !found {
		return s, fmt.Errorf("%s carries no gate_relay_broker_calls_total", r.url)
	}
	return s, nil
}
