package peer

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

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
	mq := miniqueen.RunT(t)
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 1000
	for _, tc := range []struct {
		name string
		lim  Limiter
	}{{"bare", nil}, {"token bucket", NewTokenBucket(1e6, 200)}} {
		src := "peer.src." + strconv.Itoa(len(tc.name))
		group := "g"
		dst := "peer.dst." + strconv.Itoa(len(tc.name))
		items := make([]queen.PushItem, n)
		for i := range items {
			items[i] = queen.PushItem{Queue: src, Partition: "p" + strconv.Itoa(i%8), Payload: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}
		}
		if _, err := c.Push(ctx, items); err != nil {
			t.Fatal(err)
		}
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
