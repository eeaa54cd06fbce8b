package peer

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/budget"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

func TestTokenBucketTakesMoreThanItsBurstInSteps(t *testing.T) {
	t.Parallel()
	tb := NewTokenBucket(1e6, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tb.Wait(ctx, 35); err != nil {
		t.Fatalf("Wait(35) with burst 10: %v (x/time/rate refuses n > burst in one call)", err)
	}
}

func TestJobMovesEveryItemExactlyOnce(t *testing.T) {
	t.Parallel()
	mq, c, ctx := newBroker(t)
	const n = 1000
	for _, tc := range []struct {
		name string
		lim  Limiter
	}{{"bare", nil}, {"token bucket", NewTokenBucket(1e6, 200)}} {
		src := "peer.src." + strconv.Itoa(len(tc.name))
		group := "g"
		dst := "peer.dst." + strconv.Itoa(len(tc.name))
		pushItems(ctx, t, c, src, n, 8)
		res, err := Job{Client: c, Source: src, Group: group, Dest: dst, Workers: 3, Batch: 100, Total: n, Limiter: tc.lim, Deadline: 20 * time.Second}.Run(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Moved != n || len(res.Stamps) != n || res.Commits == 0 || res.ItemsPerSec() <= 0 {
			t.Fatalf("%s: moved %d, %d stamps, %d commits", tc.name, res.Moved, len(res.Stamps), res.Commits)
		}
		seen := map[string]int{}
		for p := 0; p < 8; p++ {
			for _, m := range mq.Messages(dst, "p"+strconv.Itoa(p)) {
				seen[string(m.Data)]++
			}
		}
		if len(seen) != n {
			t.Fatalf("%s: %d distinct items at the destination, want %d", tc.name, len(seen), n)
		}
		for k, v := range seen {
			if v != 1 {
				t.Fatalf("%s: item %s arrived %d times", tc.name, k, v)
			}
		}
	}
}

// The stamped bare loop pushes what gate-relay pushes: the item's own
// members and a `_gate` object of the stamp's shape, and nothing else.
func TestJobGateStampAddsTheStampToEveryItem(t *testing.T) {
	t.Parallel()
	mq, c, ctx := newBroker(t)
	const n = 300
	pushItems(ctx, t, c, "stamp.src", n, 4)
	st := cost.GateStamp{Graph: "bench-ovh-bare0", Path: "main", Hop: 1, Node: "n"}
	before := time.Now().UnixMilli()
	if _, err := (Job{Client: c, Source: "stamp.src", Group: "g", Dest: "stamp.dst", Workers: 2, Batch: 100, Total: n, Deadline: 20 * time.Second, GateStamp: st}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for p := 0; p < 4; p++ {
		for _, m := range mq.Messages("stamp.dst", "p"+strconv.Itoa(p)) {
			var v struct {
				I    *int `json:"i"`
				Gate struct {
					Graph, Path, Node string
					Hop               int
					At                int64
				} `json:"_gate"`
			}
			if err := json.Unmarshal(m.Data, &v); err != nil || v.I == nil {
				t.Fatalf("pushed %s: not the item with a stamp (%v)", m.Data, err)
			}
			g := v.Gate
			if g.Graph != st.Graph || g.Path != st.Path || g.Node != st.Node || g.Hop != st.Hop || g.At < before {
				t.Fatalf("pushed %s: the stamp is not %+v at or after %d", m.Data, st, before)
			}
			seen[*v.I] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct stamped items at the destination, want %d", len(seen), n)
	}
}

// The riding bare loop charges what it moves through libs/budget's rider
// path: every commit applied its incr, so the counter ends at the items
// moved.
func TestJobRiderKeyChargesEveryCommit(t *testing.T) {
	t.Parallel()
	_, c, ctx := newBroker(t)
	const n = 300
	pushItems(ctx, t, c, "ride.src", n, 4)
	res, err := (Job{Client: c, Source: "ride.src", Group: "g", Dest: "ride.dst", Workers: 2, Batch: 100, Total: n, Deadline: 20 * time.Second,
		GateStamp: cost.GateStamp{Graph: "bench-ovh-srd0", Path: "main", Hop: 1, Node: "n"}, RiderKey: "bench:riders:ride.dst", RiderTTLSeconds: 60}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Moved != n {
		t.Fatalf("moved %d with %d errors, want %d and none", res.Moved, res.Errors, n)
	}
	got, err := budget.ReadCounters(ctx, c, "gate", []string{"bench:riders:ride.dst"})
	if err != nil {
		t.Fatal(err)
	}
	if r := got["bench:riders:ride.dst"]; r.Value != n {
		t.Fatalf("the counter reads %d after %d items in %d commits, want %d", r.Value, res.Moved, res.Commits, n)
	}
}

// With AckLast each claim is settled by one ack of its last message: every
// item moves once and nothing comes back after the lease.
func TestJobAckLastSettlesEveryClaimWithOneAck(t *testing.T) {
	t.Parallel()
	mq, c, ctx := newBroker(t)
	const n = 300
	pushItems(ctx, t, c, "last.src", n, 4)
	res, err := (Job{Client: c, Source: "last.src", Group: "g", Dest: "last.dst", Workers: 2, Batch: 100, Total: n, Deadline: 20 * time.Second, AckLast: true}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Moved != n {
		t.Fatalf("moved %d with %d errors, want %d and none", res.Moved, res.Errors, n)
	}
	mq.FastForward(2 * LeaseSeconds * time.Second)
	left, err := c.Pop(ctx, queen.PopRequest{Queue: "last.src", ConsumerGroup: "g", SubscriptionMode: queen.SubscribeAll, Batch: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Fatalf("%d messages came back after the lease: one ack did not settle its claim", len(left.Messages))
	}
	moved := 0
	for p := range 4 {
		moved += len(mq.Messages("last.dst", "p"+strconv.Itoa(p)))
	}
	if moved != n {
		t.Fatalf("the destination holds %d items, want %d, each once", moved, n)
	}
}

// newBroker starts a miniqueen for t and a client of it; the context ends
// with the test, or after 30 s.
func newBroker(t *testing.T) (*miniqueen.Server, *queen.Client, context.Context) {
	t.Helper()
	mq := miniqueen.RunT(t)
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return mq, c, ctx
}

// pushItems pushes n items {"i":0}…{"i":n-1} to queue, round-robin over
// partitions p0…p{partitions-1}.
func pushItems(ctx context.Context, t *testing.T, c *queen.Client, queue string, n, partitions int) {
	t.Helper()
	items := make([]queen.PushItem, n)
	for i := range items {
		items[i] = queen.PushItem{Queue: queue, Partition: "p" + strconv.Itoa(i%partitions), Payload: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}
	}
	if _, err := c.Push(ctx, items); err != nil {
		t.Fatal(err)
	}
}
