package queen

import (
	"context"
	"testing"
	"time"
)

func TestConsumerGroupWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "list with lag and oldest pending",
			wire: wire{method: "GET", path: "/api/v1/consumer-groups", status: 200,
				answer: `[{"name":"channel-workers","queueName":"channel.airbnb.out","topics":["channel.airbnb.out"],
					"members":16,"partitionCursors":16,"partitionsWithLag":3,"totalLag":412,"maxTimeLag":95,
					"state":"Stable","storage":"segments","subscriptionMode":"all",
					"subscriptionTimestamp":"1970-01-01T00:00:00+00:00","subscriptionCreatedAt":"2026-08-01T00:00:00+00:00","conflation":false}]`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				gs, err := c.ConsumerGroups(ctx)
				noErr(t, err)
				if len(gs) != 1 {
					t.Fatalf("groups = %d", len(gs))
				}
				g := gs[0]
				eq(t, "name", g.Name, "channel-workers")
				eq(t, "queue", g.QueueName, "channel.airbnb.out")
				eq(t, "members", g.Members, 16)
				eq(t, "partitionsWithLag", g.PartitionsWithLag, 3)
				eq(t, "totalLag", g.TotalLag, int64(412))
				eq(t, "oldest pending", g.OldestPending(), 95*time.Second)
				eq(t, "state", g.State, "Stable")
				eq(t, "mode", g.SubscriptionMode, "all")
				ts, err := g.SubscriptionTimestamp.Time()
				noErr(t, err)
				eq(t, "subscription epoch", ts.Unix(), int64(0))
			},
		},
		{
			name: "detail is raw",
			wire: wire{method: "GET", path: "/api/v1/consumer-groups/gate.rrl.g.main.n", status: 200, answer: `{"queues":[]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				raw, err := c.ConsumerGroupDetail(ctx, "gate.rrl.g.main.n")
				noErr(t, err)
				eq(t, "raw", string(raw), `{"queues":[]}`)
			},
		},
		{
			name: "delete everywhere with metadata",
			wire: wire{method: "DELETE", path: "/api/v1/consumer-groups/g", query: "deleteMetadata=true", status: 200,
				answer: `{"success":true,"consumerGroup":"g","deletedPartitions":4,"metadataDeleted":true}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				d, err := c.DeleteConsumerGroup(ctx, "g", DeleteGroupOpts{})
				noErr(t, err)
				eq(t, "result", d, GroupDeleted{Success: true, ConsumerGroup: "g", DeletedPartitions: 4, MetadataDeleted: true})
			},
		},
		{
			name: "delete on one queue keeping metadata",
			wire: wire{method: "DELETE", path: "/api/v1/consumer-groups/g/queues/q.in", query: "deleteMetadata=false", status: 200,
				answer: `{"success":true,"consumerGroup":"g","queueName":"q.in","deletedPartitions":1,"metadataDeleted":false}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				d, err := c.DeleteConsumerGroup(ctx, "g", DeleteGroupOpts{Queue: "q.in", KeepMetadata: true})
				noErr(t, err)
				eq(t, "queueName", d.QueueName, "q.in")
				eq(t, "deletedPartitions", d.DeletedPartitions, 1)
			},
		},
		{
			name: "seek to end (the wedge remedy)",
			wire: wire{method: "POST", path: "/api/v1/consumer-groups/gate.rrl.g.main.n/queues/gate.rrl.g.n.in/seek", body: `{"toEnd":true}`,
				status: 200, answer: `{"success":true,"partitions":3}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.Seek(ctx, "gate.rrl.g.main.n", "gate.rrl.g.n.in", SeekToEnd())
				noErr(t, err)
				eq(t, "success", r.Success, true)
				jsonEqual(t, "raw", r.Raw, []byte(`{"success":true,"partitions":3}`))
			},
		},
		{
			name: "seek to a timestamp",
			wire: wire{method: "POST", path: "/api/v1/consumer-groups/g/queues/q/seek", body: `{"timestamp":"2026-08-04T09:15:00.000Z"}`,
				status: 200, answer: `{"success":false}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.Seek(ctx, "g", "q", SeekToTime(time.Date(2026, 8, 4, 11, 15, 0, 0, time.FixedZone("CEST", 7200))))
				noErr(t, err)
				eq(t, "success", r.Success, false)
			},
		},
		{
			name: "seek to head is the epoch",
			wire: wire{method: "POST", path: "/api/v1/consumer-groups/g/queues/q/seek", body: `{"timestamp":"1970-01-01T00:00:00.000Z"}`,
				status: 200, answer: `{"success":true}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Seek(ctx, "g", "q", SeekToHead())
				noErr(t, err)
			},
		},
		{
			name: "seek without a target: 400 from the broker is not reached, the client refuses",
			wire: wire{},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Seek(ctx, "g", "q", SeekTarget{}); err == nil {
					t.Error("no target accepted")
				}
				if _, err := c.Seek(ctx, "g", "q", SeekTarget{ToEnd: true, At: time.Now()}); err == nil {
					t.Error("two targets accepted")
				}
				if _, err := c.Seek(ctx, "", "q", SeekToEnd()); err == nil {
					t.Error("empty group accepted")
				}
			},
		},
		{
			name: "seek one partition to its end",
			wire: wire{method: "POST", path: "/api/v1/consumer-groups/g/queues/q/partitions/acme%2Feu/seek", status: 200, answer: `{"success":true}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.SeekPartitionToEnd(ctx, "g", "q", "acme/eu")
				noErr(t, err)
				eq(t, "success", r.Success, true)
			},
		},
		{
			name: "change the stored subscription cutoff",
			wire: wire{method: "POST", path: "/api/v1/consumer-groups/g/subscription", body: `{"subscriptionTimestamp":"2026-08-04T09:13:00.000Z"}`,
				status: 200, answer: `{"success":true}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				r, err := c.SetSubscription(ctx, "g", time.Date(2026, 8, 4, 9, 13, 0, 0, time.UTC))
				noErr(t, err)
				eq(t, "success", r.Success, true)
			},
		},
	})
}

func TestDepthWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "group-scoped depth with the newer fields",
			wire: wire{method: "GET", path: "/api/v1/resources/queues/channel.airbnb.out/depth", query: "group=channel-workers", status: 200,
				answer: `{"queue":"channel.airbnb.out","group":"channel-workers","pending":412,"processing":200,"ready":212,
					"partitionsPending":3,"partitionsReady":2,"conflation":false,"effectivePending":412,"effectiveReady":212,
					"partitions":[{"partition":"p1","pending":200,"processing":200,"ready":0},{"partition":"p7","pending":12,"processing":0,"ready":12}]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				d, err := c.Depth(ctx, "channel.airbnb.out", "channel-workers")
				noErr(t, err)
				eq(t, "pending", d.Pending, int64(412))
				eq(t, "processing", d.Processing, int64(200))
				eq(t, "ready", d.Ready, int64(212))
				eq(t, "partitionsPending", d.PartitionsPending, 3)
				eq(t, "effectiveReady", d.EffectiveReady, int64(212))
				eq(t, "partitions", len(d.Partitions), 2)
				eq(t, "p1", d.Partitions[0], PartitionDepth{Partition: "p1", Pending: 200, Processing: 200})
			},
		},
		{
			name: "queue-level depth from a 1.0.4 broker (old fields only)",
			wire: wire{method: "GET", path: "/api/v1/resources/queues/q%20x/depth", status: 200,
				answer: `{"queue":"q x","pending":5,"partitions":[{"partition":"Default","pending":5}]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				d, err := c.Depth(ctx, "q x", "")
				noErr(t, err)
				eq(t, "pending", d.Pending, int64(5))
				eq(t, "ready (absent)", d.Ready, int64(0))
				eq(t, "partition", d.Partitions[0].Pending, int64(5))
			},
		},
		{
			name: "group name with reserved characters is query-escaped",
			wire: wire{method: "GET", path: "/api/v1/resources/queues/q/depth", query: "group=a%26b%3Dc", status: 200, answer: `{"queue":"q","group":"a&b=c","pending":0,"partitions":[]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				d, err := c.Depth(ctx, "q", "a&b=c")
				noErr(t, err)
				eq(t, "group", d.Group, "a&b=c")
			},
		},
		{
			name: "unknown queue or too-old broker is 404",
			wire: wire{method: "GET", path: "/api/v1/resources/queues/nope/depth", status: 404, answer: `{"error":"no_such_route"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Depth(ctx, "nope", "")
				eq(t, "IsNotFound", IsNotFound(err), true)
				eq(t, "code", CodeOf(err), "no_such_route")
			},
		},
	})
}

func TestDeadLetterWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "listing with filters",
			wire: wire{method: "GET", path: "/api/v1/dlq", query: "queue=q&consumerGroup=g&limit=10&offset=20", status: 200,
				answer: `{"messages":[{"id":"m1","transactionId":"t1","partitionId":"pid","queue":"q","partition":"p","consumerGroup":"g",
					"errorMessage":"vendor 500","retryCount":3,"data":{"a":1},"createdAt":"2026-08-04T09:15:00.123Z","failedAt":"2026-08-04T09:16:00.000Z"}],
					"pagination":{"limit":10,"offset":20},"total":1}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				p, err := c.DeadLetters(ctx, DLQQuery{Queue: "q", ConsumerGroup: "g", Limit: 10, Offset: 20})
				noErr(t, err)
				eq(t, "total", p.Total, 1)
				m := p.Messages[0]
				eq(t, "error", m.ErrorMessage, "vendor 500")
				eq(t, "retryCount", m.RetryCount, 3)
				eq(t, "transactionId", m.TransactionID, "t1")
				eq(t, "failedAt", m.FailedAt, Timestamp("2026-08-04T09:16:00.000Z"))
			},
		},
		{
			name: "no filters sends no query",
			wire: wire{method: "GET", path: "/api/v1/dlq", status: 200, answer: `{"messages":[],"pagination":{},"total":0}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				p, err := c.DeadLetters(ctx, DLQQuery{})
				noErr(t, err)
				eq(t, "len", len(p.Messages), 0)
			},
		},
	})
}
