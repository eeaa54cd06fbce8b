package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/queen-mq/gate/libs/queen"
)

// statusPrefix starts every relay status key; the replica id follows.
const statusPrefix = "relay:"

// MaxStatusDenials bounds the denials a replica publishes in its status, so
// the document stays far below the broker's 64 KiB value limit.
const MaxStatusDenials = 50

// Counters are one stage's lifetime counters on one replica. The zero value
// is a stage that has done nothing.
type Counters struct {
	// Popped is the messages claimed from the stage's source.
	Popped int64 `json:"popped"`
	// Admitted is the work items whose charge applied and committed.
	Admitted int64 `json:"admitted"`
	// Deferred is the windows cut to a shorter admitted prefix after a
	// refusal.
	Deferred int64 `json:"deferred"`
	// Parked is the park sleeps taken while holding a claim.
	Parked int64 `json:"parked"`
	// Released is the claims given back unsettled (the lease redelivers).
	Released int64 `json:"released"`
	// Forwarded is the work items pushed on in committed settles.
	Forwarded int64 `json:"forwarded"`
	// Commits is the settle transactions committed.
	Commits int64 `json:"commits"`
	// Duplicates is the settles rolled back by a duplicate transaction id.
	Duplicates int64 `json:"duplicates"`
	// Foreign is the messages settled without charge because they belong to
	// another path.
	Foreign int64 `json:"foreign"`
	// Deadlettered is the poison items nacked (dead-lettered after the
	// queue's retry limit).
	Deadlettered int64 `json:"deadlettered"`
	// Leaked is the claims released because a budget call failed.
	Leaked int64 `json:"leaked"`
	// Wedged is the escalations of an ack the broker keeps refusing at one
	// head.
	Wedged int64 `json:"wedged"`
	// CostAdmitted is the cost units of forwarded items.
	CostAdmitted int64 `json:"costAdmitted"`
	// Ambiguous is the settles whose outcome was unknown (the answer was
	// cut or timed out): their charge was kept, never refunded.
	Ambiguous int64 `json:"ambiguous,omitempty"`
}

// Add sums o into c, field by field.
func (c *Counters) Add(o Counters) {
	c.Popped += o.Popped
	c.Admitted += o.Admitted
	c.Deferred += o.Deferred
	c.Parked += o.Parked
	c.Released += o.Released
	c.Forwarded += o.Forwarded
	c.Commits += o.Commits
	c.Duplicates += o.Duplicates
	c.Foreign += o.Foreign
	c.Deadlettered += o.Deadlettered
	c.Leaked += o.Leaked
	c.Wedged += o.Wedged
	c.CostAdmitted += o.CostAdmitted
}

// ItemsPerCommit is forwarded/commits, or nil before the first commit.
func (c Counters) ItemsPerCommit() *float64 {
	if c.Commits == 0 {
		return nil
	}
	v := float64(c.Forwarded) / float64(c.Commits)
	return &v
}

// Refusal is the last budget that refused a stage's whole window.
type Refusal struct {
	Budget string `json:"budget"`
	// At is epoch milliseconds.
	At int64 `json:"at"`
}

// Denial is one entry of a relay's denial ring.
type Denial struct {
	At          int64  `json:"at"`
	Application string `json:"application"`
	Graph       string `json:"graph"`
	Node        string `json:"node"`
	Path        string `json:"path"`
	Op          string `json:"op"`
	Outcome     string `json:"outcome"`
	BudgetID    string `json:"budgetId"`
}

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

// Breaker is a node's backoff record: the vendor said 429 and the node's
// window is spent until At + RetryAfterSeconds.
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
