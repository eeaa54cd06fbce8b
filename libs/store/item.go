package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// DefaultItemRecordTTL is how long the push door's record of an item
// pushed with a transaction id lives by default (GATE_ITEM_RECORD_SECONDS):
// explain by transaction id answers for items pushed within it (an item
// waiting longer is explained by scope and op).
const DefaultItemRecordTTL = 24 * time.Hour

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

// PutItem records an item pushed with transaction id txn for ttl,
// replacing an earlier record of the same id.
func (s *Store) PutItem(ctx context.Context, app, graph, txn string, r ItemRecord, ttl time.Duration) error {
	return s.PutItems(ctx, []ItemPut{{App: app, Graph: graph, TxnID: txn, Record: r, TTL: ttl}})
}

// Item reads the record of an item pushed to app/graph with transaction id
// txn; found is false when there is none (never pushed with that id,
// pushed longer ago than the record lives, or records are off).
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

// ItemPut is one item record to write with PutItems.
type ItemPut struct {
	App, Graph, TxnID string
	Record            ItemRecord
	// TTL is how long the record lives (whole seconds, at least one).
	TTL time.Duration
}

// MaxItemPuts is the most records one PutItems call carries (the broker's
// 256 kv operations per call).
const MaxItemPuts = 256

// PutItems records several items in one kv call (at most MaxItemPuts; a
// transaction id given twice is written once, the last record winning, as
// the broker takes one write per key per call).
func (s *Store) PutItems(ctx context.Context, puts []ItemPut) error {
	if len(puts) > MaxItemPuts {
		return fmt.Errorf("recording %d items in one call: at most %d", len(puts), MaxItemPuts)
	}
	last := make(map[string]int, len(puts))
	for i, p := range puts {
		last[plan.ItemRecordKey(p.App, p.Graph, p.TxnID)] = i
	}
	ops := make([]queen.KVOp, 0, len(last))
	for i, p := range puts {
		key := plan.ItemRecordKey(p.App, p.Graph, p.TxnID)
		if last[key] != i {
			continue
		}
		raw, err := json.Marshal(p.Record)
		if err != nil {
			return fmt.Errorf("recording item %q: %w", p.TxnID, err)
		}
		ops = append(ops, queen.KVPut(s.ns, key, raw, queen.PutOpts{TTLSeconds: max(int64(p.TTL/time.Second), 1)}))
	}
	res, err := s.c.KV(ctx, ops...)
	if err != nil {
		return fmt.Errorf("recording %d items: %w", len(ops), err)
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("recording %d items: %w", len(ops), err)
	}
	return nil
}
