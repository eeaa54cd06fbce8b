package conformance

import (
	"github.com/queen-mq/gate/libs/capability"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

// §12.18 — subscription seeding only on first contact.

func TestSemantic18_SubscriptionModeSeedsANewGroupOnFirstContactOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	e.push(t, q, "p", msgs(1, 2)...)
	all, tail, now := e.Group("all"), e.Group("new"), e.Group("now")

	if got := numbers(t, e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: all, Batch: 10, SubscriptionMode: queen.SubscribeAll})); !equalInts(got, []int{1, 2}) {
		t.Errorf("mode all got %v, want the whole backlog [1 2]", got)
	}
	if c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: tail, Batch: 10, SubscriptionMode: queen.SubscribeNew}); !c.Empty() {
		t.Errorf("mode new got %v, want nothing (seeded at the tail)", numbers(t, c))
	}
	if c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: now, Batch: 10, SubscriptionFrom: "now"}); !c.Empty() {
		t.Errorf("subscriptionFrom=now got %v, want nothing", numbers(t, c))
	}
	e.push(t, q, "p", msg(3))
	e.push(t, q, "later", msg(4)) // a partition created after the groups registered
	// tail keeps sending mode new: its stored registration (not this pop)
	// decides where the later partition starts, so 4 is delivered. now sends
	// mode all: an existing cursor is never re-seeded, so 1 and 2 stay
	// skipped.
	for g, mode := range map[string]queen.SubscriptionMode{tail: queen.SubscribeNew, now: queen.SubscribeAll} {
		got := map[int]bool{}
		for range 2 {
			c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: g, Batch: 10, SubscriptionMode: mode})
			for _, n := range numbers(t, c) {
				got[n] = true
			}
		}
		if !got[3] || !got[4] || got[1] || got[2] || len(got) != 2 {
			t.Errorf("group %s (now sending mode %s) after new pushes got %v, want exactly {3, 4}", g, mode, got)
		}
	}
}

func TestSemantic18_SubscriptionFromTimestampStartsAtTheFirstMessageAtOrAfterIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	e.push(t, q, "p", msg(1))
	e.elapse(2 * time.Second)
	e.push(t, q, "p", msg(2))
	probe := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("probe"), Batch: 10})
	if len(probe.Messages) != 2 {
		t.Fatalf("probe claimed %v", numbers(t, probe))
	}
	c1, err1 := probe.Messages[0].CreatedAt.Time()
	c2, err2 := probe.Messages[1].CreatedAt.Time()
	if err1 != nil || err2 != nil || !c2.After(c1) {
		t.Fatalf("createdAt %q / %q do not order the two pushes", probe.Messages[0].CreatedAt, probe.Messages[1].CreatedAt)
	}
	between := c1.Add(c2.Sub(c1) / 2)
	got := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("ts"), Batch: 10, SubscriptionFrom: queen.FormatTimestamp(between)})
	if !equalInts(numbers(t, got), []int{2}) {
		t.Errorf("subscriptionFrom between the pushes got %v, want [2]", numbers(t, got))
	}
	exact := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("exact"), Batch: 10, SubscriptionFrom: string(probe.Messages[1].CreatedAt)})
	if !equalInts(numbers(t, exact), []int{2}) {
		t.Errorf("subscriptionFrom at the second push's createdAt got %v, want [2] (at or after)", numbers(t, exact))
	}
	if c := e.pop(t, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("future"), Batch: 10, SubscriptionFrom: queen.FormatTimestamp(c2.Add(time.Hour))}); !c.Empty() {
		t.Errorf("subscriptionFrom after every message got %v, want nothing (tail)", numbers(t, c))
	}
}

// The default mode when a pop sends none is version-dependent and unconfirmed
// for 1.0.4/1.0.5 (§13.1); the newest broker defaults to "new", which this
// test follows. The default is broker configuration; on miniqueen the option
// is checked too.
func TestSemantic18_DefaultSubscriptionModeIsNewUnconfirmedFor1_0(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.Queue("in")
	e.push(t, q, "p", msg(1))
	if c, err := e.c.Pop(e.ctx, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("g"), Batch: 10}); err != nil || !c.Empty() {
		t.Errorf("a group whose first pop sends no mode got %v (%v), want nothing (default new)", numbers(t, c), err)
	}
	e.push(t, q, "p", msg(2))
	if c, err := e.c.Pop(e.ctx, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("g"), Batch: 10}); err != nil || !equalInts(numbers(t, c), []int{2}) {
		t.Errorf("the default-mode group after a new push got %v (%v), want [2]", numbers(t, c), err)
	}
	if e.Mini == nil {
		return // a real broker's default is its own configuration
	}
	m := miniqueen.RunT(t, miniqueen.WithDefaultSubscriptionMode("all"))
	c, _ := queen.New(m.URL())
	if _, err := c.Push(e.ctx, []queen.PushItem{item(q, "p", "t1", 1)}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Pop(e.ctx, queen.PopRequest{Queue: q, ConsumerGroup: e.Group("g"), Batch: 10}); err != nil || !equalInts(numbers(t, got), []int{1}) {
		t.Errorf("broker configured with default mode all: got %v (%v), want the backlog [1]", numbers(t, got), err)
	}
}

// §12.20 — the depth route.

func TestSemantic20_DepthCountsAgainstTheNamedGroupsCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.needs(t, capability.Depth)
	q, g, h := e.Queue("in"), e.Group("g"), e.Group("h")
	e.push(t, q, "p1", msgs(1, 3)...)
	e.push(t, q, "p2", msgs(4, 5)...)

	// A group without a cursor owes the whole retained range.
	d := e.depth(t, q, g)
	if d.Pending != 5 || partDepth(d, "p1").Pending != 3 || partDepth(d, "p2").Pending != 2 {
		t.Fatalf("depth for a cursor-less group: %+v, want pending 5 (p1 3, p2 2)", d)
	}
	if len(d.Partitions) != 2 || d.Partitions[0].Partition != "p1" || d.Partitions[1].Partition != "p2" {
		t.Errorf("partitions %+v, want p1 then p2 (sorted by name)", d.Partitions)
	}

	c := e.pop(t, queen.PopRequest{Queue: q, Partition: "p1", ConsumerGroup: g, Batch: 2})
	p1 := partDepth(e.depth(t, q, g), "p1")
	if p1.Pending != 3 || p1.Processing != 2 || p1.Ready != 1 {
		t.Errorf("p1 with 2 of 3 leased: %+v, want pending 3 processing 2 ready 1", p1)
	}
	if r := e.ack(t, c.Messages[1].AckItem(queen.AckCompleted, "")); !r.Success {
		t.Fatal(r)
	}
	p1 = partDepth(e.depth(t, q, g), "p1")
	if p1.Pending != 1 || p1.Processing != 0 || p1.Ready != 1 {
		t.Errorf("p1 after acking 2: %+v, want pending 1 processing 0 ready 1", p1)
	}

	// Group h drains p1 entirely; without a group the worst named cursor (g's) counts.
	hc := e.pop(t, queen.PopRequest{Queue: q, Partition: "p1", ConsumerGroup: h, Batch: 10})
	if r := e.ack(t, hc.Messages[len(hc.Messages)-1].AckItem(queen.AckCompleted, "")); !r.Success {
		t.Fatal(r)
	}
	if got := partDepth(e.depth(t, q, h), "p1").Pending; got != 0 {
		t.Errorf("h's p1 pending %d, want 0", got)
	}
	if got := partDepth(e.depth(t, q, ""), "p1").Pending; got != 1 {
		t.Errorf("queue-level p1 pending %d, want 1 (the worst named cursor, g's)", got)
	}

	// A partition created after both groups registered: neither has a cursor
	// there yet, so both the group figure and the queue-level one owe all of it.
	e.push(t, q, "p3", msgs(6, 8)...)
	if got := partDepth(e.depth(t, q, g), "p3").Pending; got != 3 {
		t.Errorf("g's pending on a partition it never touched: %d, want 3", got)
	}
	if got := partDepth(e.depth(t, q, ""), "p3").Pending; got != 3 {
		t.Errorf("queue-level pending on a partition no group touched: %d, want 3", got)
	}

	if _, err := e.c.Depth(e.ctx, e.Queue("never-used"), g); !queen.IsNotFound(err) {
		t.Errorf("depth of an unknown queue: %v, want 404", err)
	}
}
