package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// statusPrefix starts every relay status key; the replica id follows.
const statusPrefix = "relay:"

// MaxStatusDenials bounds the denials a replica publishes in its status, so
// the document stays far below the broker's 64 KiB value limit.
const MaxStatusDenials = 50

// Counters are one stage's lifetime counters on one replica (the wire
// shape, defined once in libs/wire).
type Counters = wire.Counters

// Refusal is the last budget that refused a stage's whole window.
type Refusal = wire.Refusal

// Denial is one entry of a relay's denial ring.
type Denial = wire.Denial

// Wedge describes a stage whose ack the broker keeps refusing at one head.
type Wedge struct {
	Queue     string `json:"queue"`
	Group     string `json:"group"`
	Partition string `json:"partition"`
	Head      string `json:"head"`
	Attempts  int    `json:"attempts"`
	Error     string `json:"error"`
	Escalated bool   `json:"escalated"`
}

// StageStatus is one stage as one replica runs it.
type StageStatus struct {
	Path        string   `json:"path"`
	Node        string   `json:"node"`
	Hop         int      `json:"hop"`
	Source      string   `json:"source"`
	Group       string   `json:"group"`
	Counters    Counters `json:"counters"`
	LastRefusal *Refusal `json:"lastRefusal,omitempty"`
	Wedge       *Wedge   `json:"wedge,omitempty"`
	// Holding is how many claims the stage holds now, leased while their
	// window does not open (a gauge; 0 is omitted).
	Holding int `json:"holding,omitempty"`
	// Denials are the stage's denials on this replica (lifetime of the
	// graph runtime) by budget and reason, sorted.
	Denials []DenialCount `json:"denials,omitempty"`
}

// DenialCount is how many times one budget refused a stage's window for
// one reason (budget.ReasonCeiling, ReasonShare, ReasonBackoff).
type DenialCount struct {
	Budget string `json:"budget"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// GraphStatus is one graph as one replica runs it.
type GraphStatus struct {
	App     string `json:"application"`
	Graph   string `json:"graph"`
	Version int64  `json:"version"`
	// Running is false when the replica knows the graph but its stages are
	// not running (a failed start); Error then says why.
	Running bool          `json:"running"`
	Error   string        `json:"error,omitempty"`
	Stages  []StageStatus `json:"stages"`
	// Started is epoch milliseconds of the runtime's start.
	Started int64 `json:"started"`
}

// RelayStatus is what one relay replica publishes every few seconds.
type RelayStatus struct {
	Replica string `json:"replica"`
	// At is epoch milliseconds of the write.
	At      int64         `json:"at"`
	Graphs  []GraphStatus `json:"graphs"`
	Denials []Denial      `json:"denials,omitempty"`
}

// Graph returns the status of app/graph on this replica.
func (r *RelayStatus) Graph(app, graph string) (GraphStatus, bool) {
	for _, g := range r.Graphs {
		if g.App == app && g.Graph == graph {
			return g, true
		}
	}
	return GraphStatus{}, false
}

// PutStatus publishes a replica's status with a time to live; a replica
// that stops writing disappears from every view once ttl passes.
func (s *Store) PutStatus(ctx context.Context, st RelayStatus, ttl time.Duration) error {
	if st.Replica == "" {
		return fmt.Errorf("publishing relay status: the replica id is empty")
	}
	if len(st.Denials) > MaxStatusDenials {
		st.Denials = st.Denials[:MaxStatusDenials]
	}
	body, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("publishing relay status: %w", err)
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	res, err := s.c.KV(ctx, queen.KVPut(s.ns, statusPrefix+st.Replica, body, queen.PutOpts{TTLSeconds: secs}))
	if err != nil {
		return fmt.Errorf("publishing relay status: %w", err)
	}
	return res.Err()
}

// DeleteStatus withdraws a replica's status at a clean shutdown.
func (s *Store) DeleteStatus(ctx context.Context, replica string) error {
	_, err := s.c.KV(ctx, queen.KVDelete(s.ns, statusPrefix+replica, queen.DeleteOpts{}))
	if err != nil {
		return fmt.Errorf("withdrawing relay status: %w", err)
	}
	return nil
}

// Statuses reads the status of every live relay replica, ordered by
// replica id. Unreadable rows are skipped.
func (s *Store) Statuses(ctx context.Context) ([]RelayStatus, error) {
	res, err := s.c.KV(ctx, queen.KVGetPrefix(s.ns, statusPrefix, queen.PrefixOpts{Limit: ListLimit}))
	if err != nil {
		return nil, fmt.Errorf("reading relay status: %w", err)
	}
	if len(res.Results) != 1 {
		return nil, fmt.Errorf("reading relay status: the broker answered %d results for 1 listing", len(res.Results))
	}
	var out []RelayStatus
	for _, row := range res.Results[0].Rows {
		var st RelayStatus
		if err := json.Unmarshal(row.Value, &st); err != nil || st.Replica == "" {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Replica < out[j].Replica })
	return out, nil
}
