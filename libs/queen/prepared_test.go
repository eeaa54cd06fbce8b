package queen_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

// A prepared pop claims again each time it is sent, as Pop does, and an
// empty queue name is refused when it is prepared.
func TestPreparedPopClaimsEachTimeItIsSent(t *testing.T) {
	t.Parallel()
	mq := miniqueen.RunT(t)
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	items := []queen.PushItem{{Queue: "pp", Partition: "a", Payload: []byte(`1`)}, {Queue: "pp", Partition: "b", Payload: []byte(`2`)}}
	_, err = c.Push(t.Context(), items)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PreparePop(queen.PopRequest{Queue: "pp", ConsumerGroup: "g", Batch: 10, SubscriptionMode: queen.SubscribeAll})
	if err != nil {
		t.Fatal(err)
	}
	if p.Request().Queue != "pp" {
		t.Fatalf("prepared request %+v, want queue pp", p.Request())
	}
	var parts []string
	for range 2 {
		cl, err := p.Pop(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(cl.Messages) != 1 {
			t.Fatalf("a prepared pop claimed %d messages, want the one of a partition", len(cl.Messages))
		}
		parts = append(parts, cl.Messages[0].Partition)
	}
	slices.Sort(parts)
	if got := strings.Join(parts, ","); got != "a,b" {
		t.Fatalf("partitions claimed %s, want a,b", got)
	}
	cl, err := p.Pop(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !cl.Empty() {
		t.Fatalf("a third pop claimed %+v, want nothing left", cl.Messages)
	}
	if _, err := c.PreparePop(queen.PopRequest{}); err == nil || !strings.Contains(err.Error(), "queue is empty") {
		t.Fatalf("preparing a pop without a queue: %v, want the empty queue named", err)
	}
}
