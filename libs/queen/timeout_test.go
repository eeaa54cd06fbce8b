package queen_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

// A hung broker is answered by the client's own deadline with a
// *TimeoutError naming the call; a pop's long-poll keeps its own bound; a
// caller's earlier deadline wins and is not reported as the broker's.
func TestCallTimeoutAnswersAHungBroker(t *testing.T) {
	t.Parallel()
	mq := miniqueen.RunT(t)
	c, err := queen.New(mq.URL(), queen.WithCallTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if d := queen.DefaultCallTimeout; d != 10*time.Second {
		t.Fatalf("DefaultCallTimeout %s, want 10s", d)
	}
	mq.SetHang(miniqueen.RoutePush)
	_, err = c.Push(context.Background(), []queen.PushItem{{Queue: "q", Payload: []byte(`{}`)}})
	var te *queen.TimeoutError
	if !errors.As(err, &te) || !queen.IsTimeout(err) || !errors.Is(err, context.DeadlineExceeded) || te.Route != "/api/v1/push" {
		t.Fatalf("push to a hung broker: %v, want a *TimeoutError on /api/v1/push", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = c.Push(ctx, []queen.PushItem{{Queue: "q", Payload: []byte(`{}`)}})
	if err == nil || queen.IsTimeout(err) {
		t.Fatalf("the caller's own deadline: %v, want a plain context error", err)
	}
	mq.ClearHang(miniqueen.RoutePush)
	// The same client is served again once the hang clears. Its 150 ms
	// bound is tight for a race-enabled run on a loaded machine (CI runs
	// every package at once), so a call that times out is tried again for
	// a few seconds; any other error, or no success at all, fails.
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, err := c.Push(context.Background(), []queen.PushItem{{Queue: "q", Payload: []byte(`{}`)}})
		if err == nil {
			break
		}
		if !queen.IsTimeout(err) || time.Now().After(deadline) {
			t.Fatalf("after the hang cleared: %v", err)
		}
	}
	// A long-poll of 400 ms outlives the 150 ms call timeout and ends empty.
	claim, err := c.Pop(context.Background(), queen.PopRequest{Queue: "empty", Wait: true, Timeout: 400 * time.Millisecond})
	if err != nil || len(claim.Messages) != 0 {
		t.Fatalf("a long-poll past the call timeout: %v %+v", err, claim)
	}
}
