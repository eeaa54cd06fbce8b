package queen

import (
	"context"
	"testing"
)

func TestHealthWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "healthy broker reports its version",
			wire: wire{method: "GET", path: "/health", status: 200,
				answer: `{"status":"healthy","database":"connected","engine":"segments-rust","version":"1.0.5"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				h, err := c.Health(ctx)
				noErr(t, err)
				eq(t, "healthy", h.Healthy(), true)
				eq(t, "version", h.Version, "1.0.5")
				eq(t, "engine", h.Engine, "segments-rust")
				eq(t, "database", h.Database, "connected")
			},
		},
		{
			name: "database down is a 503 error that still carries the body",
			wire: wire{method: "GET", path: "/health", status: 503,
				answer: `{"status":"unhealthy","database":"disconnected","engine":"segments-rust","version":"1.0.5"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				h, err := c.Health(ctx)
				mustErr(t, err, 503)
				eq(t, "IsUnavailable", IsUnavailable(err), true)
				eq(t, "healthy", h.Healthy(), false)
				eq(t, "version", h.Version, "1.0.5")
			},
		},
		{
			name: "version reads /health",
			wire: wire{method: "GET", path: "/health", status: 200,
				answer: `{"status":"healthy","database":"connected","version":"2.0.0-beta.6"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				v, err := c.Version(ctx)
				noErr(t, err)
				eq(t, "version", v, "2.0.0-beta.6")
			},
		},
	})
}

func TestConfigureWire(t *testing.T) {
	t.Parallel()
	const configured = `{"configured":true,"queueId":"0198aa","partitionId":null,"queue":"gate.rrl.price-airbnb.providerX.in",
		"namespace":"gate.rrl","task":"","storage":"segments",
		"options":{"leaseTime":10,"retryLimit":3,"deadLetterQueue":true,"retentionEnabled":true,"completedRetentionSeconds":2592000,"retentionSeconds":0,"maxWaitTimeSeconds":0,"retentionSinkHold":""}}`
	runWire(t, []wireCase{
		{
			name: "owned queue with Gate's retention policy",
			wire: wire{method: "POST", path: "/api/v1/configure", status: 200, answer: configured,
				body: `{"queue":"gate.rrl.price-airbnb.providerX.in","namespace":"gate.rrl","options":{
					"leaseTime":10,"retryLimit":3,"retentionEnabled":true,"completedRetentionSeconds":2592000,
					"retentionSeconds":0,"maxWaitTimeSeconds":0}}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				qc, err := c.Configure(ctx, ConfigureRequest{
					Queue: "gate.rrl.price-airbnb.providerX.in", Namespace: "gate.rrl",
					Options: QueueOptions{LeaseTime: Int(10), RetryLimit: Int(3), RetentionEnabled: Bool(true),
						CompletedRetentionSeconds: Int(2592000), RetentionSeconds: Int(0), MaxWaitTimeSeconds: Int(0)},
				})
				noErr(t, err)
				eq(t, "configured", qc.Configured, true)
				eq(t, "queueId", qc.QueueID, "0198aa")
				eq(t, "storage", qc.Storage, "segments")
				eq(t, "options.leaseTime", qc.Options.LeaseTime, Int(10))
				eq(t, "options.deadLetterQueue", qc.Options.DeadLetterQueue, Bool(true))
				eq(t, "options.completedRetentionSeconds", qc.Options.CompletedRetentionSeconds, Int(2592000))
				eq(t, "options.ttl (not echoed)", qc.Options.TTL, OptInt{})
				eq(t, "options.retentionEnabled", qc.Options.RetentionEnabled, Bool(true))
				if len(qc.RawOptions) == 0 {
					t.Error("raw options not kept")
				}
			},
		},
		{
			name: "odd echoed option values do not hide the others",
			wire: wire{method: "POST", path: "/api/v1/configure", status: 200,
				answer: `{"configured":true,"queue":"q","options":{"leaseTime":10.0,"ttl":"3600","retryLimit":3,"deadLetterQueue":true}}`,
				body:   `{"queue":"q","options":{"leaseTime":10}}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				qc, err := c.Configure(ctx, ConfigureRequest{Queue: "q", Options: QueueOptions{LeaseTime: Int(10)}})
				noErr(t, err)
				eq(t, "leaseTime from 10.0", qc.Options.LeaseTime, Int(10))
				eq(t, "retryLimit", qc.Options.RetryLimit, Int(3))
				eq(t, "ttl (a string) left absent", qc.Options.TTL, OptInt{})
				eq(t, "deadLetterQueue", qc.Options.DeadLetterQueue, Bool(true))
			},
		},
		{
			name: "bare create sends empty options",
			wire: wire{method: "POST", path: "/api/v1/configure", status: 200, answer: configured,
				body: `{"queue":"channel.airbnb.out","options":{}}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Configure(ctx, ConfigureRequest{Queue: "channel.airbnb.out"})
				noErr(t, err)
			},
		},
		{
			name: "complete default set with DLQ off and replace mode",
			wire: wire{method: "POST", path: "/api/v1/configure", status: 200, answer: configured,
				body: `{"queue":"q","task":"t","mode":"replace","options":{"leaseTime":300,"retryLimit":3,"retryDelay":1000,
					"deadLetterQueue":false,"dlqAfterMaxRetries":false,"priority":0,"maxSize":0,"ttl":3600,"delayedProcessing":0,
					"windowBuffer":0,"retentionEnabled":false,"retentionSeconds":0,"completedRetentionSeconds":0,
					"maxWaitTimeSeconds":0,"dedupWindowSeconds":3600,"encryptionEnabled":false,"minPopWaitTime":0,
					"retentionSinkHold":"s3","retentionSinkHoldMaxSeconds":604800}}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				o := DefaultQueueOptions()
				o.DeadLetterQueue, o.DLQAfterMaxRetries = Bool(false), Bool(false)
				o.RetentionSinkHold, o.RetentionSinkHoldMaxSeconds = "s3", Int(604800)
				_, err := c.Configure(ctx, ConfigureRequest{Queue: "q", Task: "t", Mode: "replace", Options: o})
				noErr(t, err)
			},
		},
		{
			name: "refused configure in a 200 body is an error",
			wire: wire{method: "POST", path: "/api/v1/configure", status: 200,
				answer: `{"error":"retentionSinkHoldMaxSeconds out of range"}`,
				body:   `{"queue":"q","options":{"retentionSinkHoldMaxSeconds":-1}}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Configure(ctx, ConfigureRequest{Queue: "q", Options: QueueOptions{RetentionSinkHoldMaxSeconds: Int(-1)}})
				e := mustErr(t, err, 200)
				eq(t, "code", e.Code, "configure_refused")
				eq(t, "message", e.Message, "retentionSinkHoldMaxSeconds out of range")
			},
		},
		{
			name: "empty queue name is refused before sending",
			wire: wire{},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				if _, err := c.Configure(ctx, ConfigureRequest{}); err == nil {
					t.Fatal("want an error naming the queue")
				}
			},
		},
	})
}

func TestQueueAdminWire(t *testing.T) {
	t.Parallel()
	runWire(t, []wireCase{
		{
			name: "detail with nested queue object",
			wire: wire{method: "GET", path: "/api/v1/resources/queues/rrl.ingress%2Fx", status: 200,
				answer: `{"queue":{"name":"rrl.ingress/x","retentionSeconds":86400},"partitions":[
					{"name":"p1","stats":{"pending":4,"completed":9}},{"name":"Default","stats":{}}]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				q, err := c.Queue(ctx, "rrl.ingress/x")
				noErr(t, err)
				eq(t, "name", q.Name, "rrl.ingress/x")
				eq(t, "retentionSeconds", q.RetentionSeconds, Int(86400))
				if len(q.Partitions) != 2 || q.Partitions[0] != (PartitionInfo{Name: "p1", Pending: 4}) || q.Partitions[1] != (PartitionInfo{Name: "Default"}) {
					t.Errorf("partitions = %+v", q.Partitions)
				}
				if len(q.Raw) == 0 {
					t.Error("raw body not kept")
				}
			},
		},
		{
			name: "detail with top-level retention and string queue",
			wire: wire{method: "GET", path: "/api/v1/resources/queues/q", status: 200,
				answer: `{"queue":"q","retentionSeconds":0,"partitions":[]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				q, err := c.Queue(ctx, "q")
				noErr(t, err)
				eq(t, "name", q.Name, "q")
				eq(t, "retentionSeconds", q.RetentionSeconds, Int(0))
			},
		},
		{
			name: "unknown queue is 404",
			wire: wire{method: "GET", path: "/api/v1/resources/queues/nope", status: 404, answer: `{"error":"Queue not found"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				_, err := c.Queue(ctx, "nope")
				e := mustErr(t, err, 404)
				eq(t, "IsNotFound", IsNotFound(err), true)
				eq(t, "message", e.Message, "Queue not found")
				eq(t, "route", e.Route, "/api/v1/resources/queues/nope")
			},
		},
		{
			name: "list with filters",
			wire: wire{method: "GET", path: "/api/v1/resources/queues", query: "namespace=gate.rrl&task=t&limit=50&offset=100",
				status: 200, answer: `{"queues":[{"name":"a"}]}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				raw, err := c.ListQueues(ctx, ListQueuesRequest{Namespace: "gate.rrl", Task: "t", Limit: 50, Offset: 100})
				noErr(t, err)
				jsonEqual(t, "listing", raw, []byte(`{"queues":[{"name":"a"}]}`))
			},
		},
		{
			name: "delete reports the flag",
			wire: wire{method: "DELETE", path: "/api/v1/resources/queues/gate.rrl.x", status: 200, answer: `{"deleted":true,"queue":"gate.rrl.x"}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				d, err := c.DeleteQueue(ctx, "gate.rrl.x")
				noErr(t, err)
				eq(t, "deleted", d.Deleted, true)
			},
		},
		{
			name: "delete of nothing is 200 with deleted false",
			wire: wire{method: "DELETE", path: "/api/v1/resources/queues/ghost", status: 200, answer: `{"deleted":false}`},
			run: func(t *testing.T, ctx context.Context, c *Client) {
				d, err := c.DeleteQueue(ctx, "ghost")
				noErr(t, err)
				eq(t, "deleted", d.Deleted, false)
			},
		},
	})
}
