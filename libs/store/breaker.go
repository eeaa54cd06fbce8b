package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// Breaker is a node's backoff record: the vendor said 429 and the node's
// window is spent until At + RetryAfterSeconds. It lives at the node's
// plan.Node.BreakerKey (under plan.BreakerPrefix) and expires when it
// lifts; this file is its only writer and reader.
type Breaker struct {
	At                int64  `json:"at"`
	RetryAfterSeconds int64  `json:"retryAfterSeconds"`
	By                string `json:"by,omitempty"`
	Application       string `json:"application"`
	Graph             string `json:"graph"`
	Node              string `json:"node"`
}

// Until is epoch milliseconds when the record lifts by itself.
func (b Breaker) Until() int64 { return b.At + b.RetryAfterSeconds*1000 }

// PutBreaker writes b at key (the node's BreakerKey), expiring after its
// RetryAfterSeconds, so the record lifts with the window it explains.
func (s *Store) PutBreaker(ctx context.Context, key string, b Breaker) error {
	if b.RetryAfterSeconds < 1 {
		return fmt.Errorf("writing the breaker record of node '%s': retryAfterSeconds is %d; it must be at least 1 so the record expires", b.Node, b.RetryAfterSeconds)
	}
	body, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("writing the breaker record of node '%s': %w", b.Node, err)
	}
	res, err := s.c.KV(ctx, queen.KVPut(s.ns, key, body, queen.PutOpts{TTLSeconds: b.RetryAfterSeconds}))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err != nil {
		return fmt.Errorf("writing the breaker record of node '%s': %w", b.Node, err)
	}
	return nil
}

// Breakers reads the live breaker records of p's nodes in one getMany,
// keyed by each node's BreakerKey; a node without one is absent from the
// map. A row that is no breaker record (see decodeBreaker) is skipped.
func (s *Store) Breakers(ctx context.Context, p *plan.Plan) (map[string]Breaker, error) {
	out := map[string]Breaker{}
	seen := map[string]bool{}
	keys := make([]string, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		if !seen[n.BreakerKey] {
			seen[n.BreakerKey] = true
			keys = append(keys, n.BreakerKey)
		}
	}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.oneAnswer(ctx, queen.KVGetMany(s.ns, keys...), fmt.Sprintf("reading the breaker records of %d nodes from the broker", len(keys)))
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		if b, ok := decodeBreaker(r); ok {
			out[r.Key] = b
		}
	}
	return out, nil
}

// RecentBreakers lists every live breaker record of the namespace (every
// key under plan.BreakerPrefix, page by page), newest first.
func (s *Store) RecentBreakers(ctx context.Context) ([]Breaker, error) {
	out := []Breaker{}
	err := s.eachRow(ctx, plan.BreakerPrefix, func(r queen.KVRow) {
		if b, ok := decodeBreaker(r); ok {
			out = append(out, b)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing the breaker records from the broker failed: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At > out[j].At })
	return out, nil
}

// decodeBreaker reads one kv row as a breaker record: it must decode and
// name its node (a row another writer put under the prefix is not one).
func decodeBreaker(r queen.KVRow) (Breaker, bool) {
	var b Breaker
	if json.Unmarshal(r.Value, &b) != nil || b.Node == "" {
		return Breaker{}, false
	}
	return b, true
}

// oneAnswer runs one read op and returns its rows; a failed or refused call
// or an answer without exactly one result is an error saying what failed.
func (s *Store) oneAnswer(ctx context.Context, op queen.KVOp, what string) ([]queen.KVRow, error) {
	res, err := s.c.KV(ctx, op)
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err == nil && len(res.Results) != 1 {
		err = fmt.Errorf("the broker answered %d results for one read", len(res.Results))
	}
	if err != nil {
		return nil, fmt.Errorf("%s failed: %w", what, err)
	}
	return res.Results[0].Rows, nil
}
