package miniqueen

import (
	"net/http"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	w := newWire(t, WithVersion("1.0.4"))
	v := w.call("GET", "/health", "", 200)
	if at(t, v, "status") != "healthy" || at(t, v, "version") != "1.0.4" || at(t, v, "engine") != "segments-rust" || at(t, v, "database") != "connected" {
		t.Fatalf("health: %v", v)
	}
	if v := w.call("GET", "/status", "", 200); at(t, v, "status") != "ok" {
		t.Fatalf("status: %v", v)
	}
	w.call("GET", "/metrics", "", 200)
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	v := w.call("POST", "/api/v1/configure", `{"queue":"gate.rrl.x.in","namespace":"gate.rrl","options":{"leaseTime":10,"retryLimit":3,"retentionEnabled":true,"completedRetentionSeconds":2592000}}`, 200)
	if at(t, v, "configured") != true || at(t, v, "partitionId") != nil || at(t, v, "namespace") != "gate.rrl" ||
		num(t, at(t, v, "options", "leaseTime")) != 10 || at(t, v, "options", "deadLetterQueue") != true || num(t, at(t, v, "options", "dedupWindowSeconds")) != 3600 {
		t.Fatalf("configure: %v", v)
	}
	// 1.0.x replaces the whole option set: omitted options return to defaults.
	v = w.call("POST", "/api/v1/configure", `{"queue":"gate.rrl.x.in","options":{}}`, 200)
	if num(t, at(t, v, "options", "leaseTime")) != 300 || num(t, at(t, v, "options", "retryLimit")) != 3 || at(t, v, "options", "retentionEnabled") != false {
		t.Fatalf("replace: %v", v)
	}
	// Options may also be spread at the top level; mode merge keeps the rest.
	w.call("POST", "/api/v1/configure", `{"queue":"gate.rrl.x.in","leaseTime":7}`, 200)
	v = w.call("POST", "/api/v1/configure", `{"queue":"gate.rrl.x.in","mode":"merge","options":{"retryLimit":9}}`, 200)
	if num(t, at(t, v, "options", "leaseTime")) != 7 || num(t, at(t, v, "options", "retryLimit")) != 9 {
		t.Fatalf("top-level + merge: %v", v)
	}
	if v := w.call("POST", "/api/v1/configure", `{"queue":"q","options":{"leaseTime":-1}}`, 200); str(t, at(t, v, "error")) == "" {
		t.Fatalf("out of range: %v", v)
	}
	w.call("POST", "/api/v1/configure", `{"options":{}}`, http.StatusBadRequest)
}

func TestQueueDetailListAndDelete(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.call("GET", "/api/v1/resources/queues/q", "", http.StatusNotFound)
	w.call("POST", "/api/v1/configure", `{"queue":"q","options":{"retentionEnabled":true,"retentionSeconds":60}}`, 200)
	w.push(item("q", "b", 1, ""), item("q", "a", 1, ""), item("q", "a", 2, ""))
	v := w.call("GET", "/api/v1/resources/queues/q", "", 200)
	if at(t, v, "partitions", 0, "name") != "a" || num(t, at(t, v, "partitions", 0, "stats", "pending")) != 2 ||
		num(t, at(t, v, "queue", "retentionSeconds")) != 60 || num(t, at(t, v, "retentionSeconds")) != 60 {
		t.Fatalf("detail: %v", v)
	}
	l := w.call("GET", "/api/v1/resources/queues", "", 200)
	if at(t, l, "queues", 0, "name") != "q" || num(t, at(t, l, "queues", 0, "partitions")) != 2 {
		t.Fatalf("list: %v", l)
	}
	if v := w.call("DELETE", "/api/v1/resources/queues/q", "", 200); at(t, v, "deleted") != true {
		t.Fatalf("delete: %v", v)
	}
	if v := w.call("DELETE", "/api/v1/resources/queues/q", "", 200); at(t, v, "deleted") != false {
		t.Fatalf("second delete: %v", v)
	}
	w.call("GET", "/api/v1/resources/queues/q", "", http.StatusNotFound)
}

func TestDepth(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.call("GET", "/api/v1/resources/queues/none/depth", "", http.StatusNotFound)
	for i := 0; i < 5; i++ {
		w.push(item("q", "p1", map[string]any{"n": i}, ""))
	}
	w.push(item("q", "p7", 1, ""), item("q", "p7", 2, ""))
	p := w.pop("q", "batch=3&consumerGroup=g&subscriptionMode=all")
	leased := str(t, p.messages[0]["partition"])
	proc, ready, partsReady := int64(3), int64(4), int64(2)
	if leased == "p7" {
		proc, ready, partsReady = 2, 5, 1
	}
	cases := []struct {
		query                       string
		pending, processing, ready  int64
		partitionsPending, partsRdy int64
	}{
		{"?group=g", 7, proc, ready, 2, partsReady},
		{"?group=misspelt", 7, 0, 7, 2, 2},
		{"", 7, proc, ready, 2, partsReady},
	}
	for _, c := range cases {
		v := w.call("GET", "/api/v1/resources/queues/q/depth"+c.query, "", 200)
		if num(t, at(t, v, "pending")) != c.pending || num(t, at(t, v, "processing")) != c.processing || num(t, at(t, v, "ready")) != c.ready ||
			num(t, at(t, v, "partitionsPending")) != c.partitionsPending || num(t, at(t, v, "partitionsReady")) != c.partsRdy {
			t.Fatalf("depth%s: %v", c.query, v)
		}
		if at(t, v, "partitions", 0, "partition") != "p1" || at(t, v, "partitions", 1, "partition") != "p7" {
			t.Fatalf("partitions sorted by name: %v", v)
		}
	}
	// Settling the claim lowers the group's pending.
	last := p.messages[len(p.messages)-1]
	w.ack(ackOf(last, ""))
	v := w.call("GET", "/api/v1/resources/queues/q/depth?group=g", "", 200)
	want := int64(4)
	if leased == "p7" {
		want = 5
	}
	if num(t, at(t, v, "pending")) != want || num(t, at(t, v, "processing")) != 0 {
		t.Fatalf("after ack: %v", v)
	}
}

func TestConsumerGroupsLagSeekDelete(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.push(item("q", "p", map[string]any{"n": 0}, ""), item("q", "p", map[string]any{"n": 1}, ""))
	w.s.FastForward(10 * time.Minute)
	w.push(item("q", "p", map[string]any{"n": 2}, ""))
	p := w.pop("q", "batch=1&"+grp)
	w.ack(ackOf(p.messages[0], ""))
	rows := w.call("GET", "/api/v1/consumer-groups", "", 200).([]any)
	if len(rows) != 1 {
		t.Fatalf("groups: %v", rows)
	}
	r := rows[0]
	if at(t, r, "name") != "g" || at(t, r, "queueName") != "q" || num(t, at(t, r, "totalLag")) != 2 || num(t, at(t, r, "members")) != 1 ||
		num(t, at(t, r, "maxTimeLag")) != 600 || at(t, r, "state") != "Lagging" || at(t, r, "subscriptionMode") != "all" {
		t.Fatalf("row: %v", r)
	}
	if l := w.call("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=60", "", 200).([]any); len(l) != 1 {
		t.Fatalf("lagging: %v", l)
	}
	d := w.call("GET", "/api/v1/consumer-groups/g", "", 200)
	if num(t, at(t, d, "queues", 0, "partitions", 0, "offsetLag")) != 2 {
		t.Fatalf("detail: %v", d)
	}
	w.call("GET", "/api/v1/consumer-groups/nobody", "", http.StatusNotFound)

	w.call("POST", "/api/v1/consumer-groups/g/queues/q/seek", `{}`, http.StatusBadRequest)
	w.call("POST", "/api/v1/consumer-groups/g/queues/q/seek", `{"toEnd":true}`, 200)
	if c, _ := w.s.Cursor("q", "g", "p"); c.Pending != 0 {
		t.Fatalf("seek to end: %+v", c)
	}
	w.call("POST", "/api/v1/consumer-groups/g/queues/q/seek", `{"timestamp":"`+t0.Add(time.Minute).Format(time.RFC3339)+`"}`, 200)
	if p := w.pop("q", "batch=10&"+grp); len(p.messages) != 1 || num(t, at(t, p.messages[0], "data", "n")) != 2 {
		t.Fatalf("seek to timestamp: %v", p.body)
	}
	w.call("POST", "/api/v1/consumer-groups/g/queues/q/partitions/p/seek", ``, 200)
	if c, _ := w.s.Cursor("q", "g", "p"); c.Pending != 0 || c.LeaseID != "" {
		t.Fatalf("partition seek: %+v", c)
	}
	v := w.call("DELETE", "/api/v1/consumer-groups/g", "", 200)
	if at(t, v, "success") != true || num(t, at(t, v, "deletedPartitions")) != 1 || at(t, v, "metadataDeleted") != true {
		t.Fatalf("delete: %v", v)
	}
	if _, ok := w.s.Cursor("q", "g", "p"); ok {
		t.Fatalf("cursor survived delete")
	}
}

func TestRetentionReclaimsCompletedMessages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		options string
		advance time.Duration
		kept    int
	}{
		{"retention off: reclaimed once every group passed", `{}`, 0, 1},
		{"completed retention holds messages until it passes", `{"retentionEnabled":true,"completedRetentionSeconds":60}`, 30 * time.Second, 3},
		{"completed retention releases after it passes", `{"retentionEnabled":true,"completedRetentionSeconds":60}`, 61 * time.Second, 1},
		{"retention on with 0 keeps completed messages", `{"retentionEnabled":true}`, time.Hour, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWire(t)
			w.s.SetTime(t0)
			w.call("POST", "/api/v1/configure", `{"queue":"q","options":`+c.options+`}`, 200)
			w.push(item("q", "p", map[string]any{"n": 0}, ""), item("q", "p", map[string]any{"n": 1}, ""), item("q", "p", map[string]any{"n": 2}, ""))
			// Two groups: nothing goes while one of them still owes it.
			p1 := w.pop("q", "batch=2&consumerGroup=a&subscriptionMode=all")
			w.pop("q", "batch=1&autoAck=true&consumerGroup=b&subscriptionMode=all")
			w.s.FastForward(c.advance)
			w.ack(ackOf(p1.messages[1], ""))
			if c.kept == 1 {
				w.pop("q", "batch=1&autoAck=true&consumerGroup=b&subscriptionMode=all")
			}
			if got := len(w.s.Messages("q", "p")); got != c.kept {
				t.Fatalf("kept %d messages, want %d", got, c.kept)
			}
		})
	}
}

func TestMaxWaitTimeEvictsPending(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.call("POST", "/api/v1/configure", `{"queue":"q","options":{"maxWaitTimeSeconds":30}}`, 200)
	w.push(item("q", "p", map[string]any{"n": 0}, ""))
	w.s.FastForward(31 * time.Second)
	w.push(item("q", "p", map[string]any{"n": 1}, ""))
	p := w.pop("q", "batch=10&"+grp)
	if got := payloads(t, p.messages); len(got) != 1 || got[0] != 1 {
		t.Fatalf("evicted message delivered: %v", got)
	}
}

func TestDelayedProcessingAndWindowBuffer(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.call("POST", "/api/v1/configure", `{"queue":"d","options":{"delayedProcessing":5}}`, 200)
	w.call("POST", "/api/v1/configure", `{"queue":"wb","options":{"windowBuffer":5}}`, 200)
	w.push(item("d", "p", map[string]any{"n": 0}, ""), item("wb", "p", map[string]any{"n": 0}, ""))
	for _, q := range []string{"d", "wb"} {
		if p := w.pop(q, "batch=10&"+grp); p.status != http.StatusNoContent {
			t.Fatalf("%s delivered too early", q)
		}
	}
	w.s.FastForward(5 * time.Second)
	for _, q := range []string{"d", "wb"} {
		if p := w.pop(q, "batch=10&"+grp); len(p.messages) != 1 {
			t.Fatalf("%s not delivered after the delay", q)
		}
	}
}
