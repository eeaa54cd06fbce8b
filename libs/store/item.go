package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// ItemRecordTTL is how long the push door's record of an item pushed with
// a transaction id lives: explain by transaction id answers for items
// pushed within it (an item waiting longer is explained by scope and op).
const ItemRecordTTL = 24 * time.Hour

// ItemRecord is what the push door knew of an item pushed with a
// transaction id: where it was queued, its op and scope value as the
// node's budgets read them from its payload, and when. Explain by
// transaction id reads it, so it needs no broker route to look a message
// up.
type ItemRecord struct {
	Node      string `json:"node"`
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
	Op        string `json:"op,omitempty"`
	// Scope is the value the node's first scoped budget that applies to
	// the op counts the item under (HasScope false: none applies).
	Scope    string `json:"scope,omitempty"`
	HasScope bool   `json:"hasScope,omitempty"`
	Cost     int64  `json:"cost"`
	// At is when the push door queued it (epoch ms).
	At int64 `json:"at"`
}

// PutItem records an item pushed with transaction id txn for
// ItemRecordTTL, replacing an earlier record of the same id.
func (s *Store) PutItem(ctx context.Context, app, graph, txn string, r ItemRecord) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("recording item %q: %w", txn, err)
	}
	key := plan.ItemRecordKey(app, graph, txn)
	res, err := s.c.KV(ctx, queen.KVPut(s.ns, key, raw, queen.PutOpts{TTLSeconds: int64(ItemRecordTTL / time.Second)}))
	if err != nil {
		return fmt.Errorf("recording item %q at %s: %w", txn, key, err)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("recording item %q at %s: %w", txn, key, err)
	}
	return nil
}

// Item reads the record of an item pushed to app/graph with transaction id
// txn; found is false when there is none (never pushed with that id, or
// pushed more than ItemRecordTTL ago).
func (s *Store) Item(ctx context.Context, app, graph, txn string) (r ItemRecord, found bool, err error) {
	key := plan.ItemRecordKey(app, graph, txn)
	res, err := s.c.KV(ctx, queen.KVGet(s.ns, key))
	if err != nil {
		return r, false, fmt.Errorf("reading item %q at %s: %w", txn, key, err)
	}
	if len(res.Results) != 1 {
		return r, false, fmt.Errorf("reading item %q at %s: the broker answered %d results for 1 read", txn, key, len(res.Results))
	}
	if !res.Results[0].Found {
		return r, false, nil
	}
	if err := json.Unmarshal(res.Results[0].Value, &r); err != nil {
		return r, false, fmt.Errorf("reading item %q at %s: %w", txn, key, err)
	}
	return r, true, nil
}
