package queen

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// Answers of older brokers the client met (a Queen 0.15.1 built from its
// public sources) and must read the way current brokers' answers are read
// (queen-wire §0.1: miniqueen speaks the newest, the client tolerates both).
func TestOlderBrokersAnswersReadAsCurrentOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("an empty pop as success false no_available_partition or lease_held", func(t *testing.T) {
		t.Parallel()
		for _, answer := range []string{
			`{"success":false,"error":"no_available_partition"}`,
			`{"success":false,"error":"lease_held","messages":[]}`,
		} {
			c, _ := broker(t, wire{answer: answer})
			claim, err := c.Pop(ctx, PopRequest{Queue: "q", ConsumerGroup: "g", Wait: true, Timeout: time.Second})
			if err != nil || !claim.Empty() {
				t.Fatalf("pop answered %s: claim %+v, err %v; want an empty claim and no error", answer, claim, err)
			}
		}
		// Any other failure is still a failed pop.
		c, _ := broker(t, wire{answer: `{"success":false,"error":"database unavailable"}`})
		if _, err := c.Pop(ctx, PopRequest{Queue: "q"}); CodeOf(err) != "pop_failed" {
			t.Fatalf("a failed pop: %v, want pop_failed", err)
		}
	})

	t.Run("an unknown queue as 200 with an error body", func(t *testing.T) {
		t.Parallel()
		c, _ := broker(t, wire{answer: `{"error":"Queue not found"}`})
		_, err := c.Queue(ctx, "missing")
		if !IsNotFound(err) {
			t.Fatalf("queue detail answered 200 {error: Queue not found}: %v, want IsNotFound", err)
		}
		c, _ = broker(t, wire{status: http.StatusNotFound, answer: `{"error":"Queue not found"}`})
		if _, err := c.Queue(ctx, "missing"); !IsNotFound(err) {
			t.Fatalf("404: %v, want IsNotFound", err)
		}
		c, _ = broker(t, wire{answer: `{"error":"pool exhausted"}`})
		if _, err := c.Queue(ctx, "q"); err == nil || IsNotFound(err) {
			t.Fatalf("a 200 error that is not a not-found: %v, want a failed call, not IsNotFound", err)
		}
		c, _ = broker(t, wire{answer: `{"name":"q","partitions":[{"name":"p","stats":{"pending":3}}]}`})
		qi, err := c.Queue(ctx, "q")
		if err != nil || qi.Name != "q" || len(qi.Partitions) != 1 {
			t.Fatalf("a found queue: %+v %v", qi, err)
		}
	})

	t.Run("a lease extend answered with an array", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			answer  string
			success bool
			renewed int
		}{
			{`[{"leaseId":"L1","success":true,"expiresAt":"2026-08-04T10:05:00.000Z"}]`, true, 1},
			{`[{"leaseId":"L1","success":true,"renewed":1},{"leaseId":"L1","success":true,"renewed":1}]`, true, 2},
			{`[{"leaseId":"L1","success":false}]`, false, 0},
			{`[]`, false, 0},
			{`{"leaseId":"L1","success":true,"renewed":1,"newExpiresAt":"2026-08-04T10:05:00.000Z"}`, true, 1},
			{`{"leaseId":"L1","success":false,"renewed":0,"newExpiresAt":null}`, false, 0},
		} {
			c, _ := broker(t, wire{answer: tc.answer})
			ext, err := c.ExtendLease(ctx, "L1", 10*time.Second)
			if err != nil || ext.Success != tc.success || ext.Renewed != tc.renewed || ext.LeaseID != "L1" {
				t.Fatalf("extend answered %s: %+v %v; want success %v renewed %d", tc.answer, ext, err, tc.success, tc.renewed)
			}
			if tc.success && ext.ExpiresAt == "" && tc.answer[0] == '{' {
				t.Fatalf("extend answered %s: no expiry read", tc.answer)
			}
		}
	})
}
