package miniqueen

import (
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"
)

const grp = "consumerGroup=g&subscriptionMode=all"

func TestPushAnswersOneElementPerItemInOrder(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	got := w.push(
		item("q", "p1", map[string]any{"n": 1}, "evt-1"),
		item("q", "", nil, ""),
	)
	if len(got) != 2 {
		t.Fatalf("want 2 elements, got %v", got)
	}
	first := got[0].(map[string]any)
	if num(t, first["index"]) != 0 || first["transaction_id"] != "evt-1" || first["status"] != "queued" || first["queueName"] != "q" {
		t.Fatalf("first element %v", first)
	}
	second := got[1].(map[string]any)
	if second["transaction_id"] != second["message_id"] {
		t.Fatalf("a push without transactionId must use the message id: %v", second)
	}
	if !isUUID(str(t, second["message_id"])) {
		t.Fatalf("message id %v is not a UUID", second["message_id"])
	}
	if parts := w.s.Partitions("q"); !slices.Equal(parts, []string{"p1", "Default"}) {
		t.Fatalf("partitions %v, want implicit p1 and Default", parts)
	}
	if v := w.call("POST", "/api/v1/push", `{"items":[]}`, http.StatusCreated); len(v.([]any)) != 0 {
		t.Fatalf("empty items must answer 201 []: %v", v)
	}
}

func TestPushDedup(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	first := w.push(item("q", "a", map[string]any{"n": 1}, "t1"))[0].(map[string]any)
	cases := []struct {
		name      string
		partition string
		advance   time.Duration
		want      string
		sameID    bool
	}{
		{"same partition within the window", "a", 0, "duplicate", true},
		{"other partition is not a duplicate", "b", 0, "queued", false},
		{"still inside the window", "a", 3599 * time.Second, "duplicate", true},
		{"after the window", "a", 2 * time.Second, "queued", false},
	}
	for _, c := range cases {
		w.s.FastForward(c.advance)
		el := w.push(item("q", c.partition, map[string]any{"n": 2}, "t1"))[0].(map[string]any)
		if el["status"] != c.want {
			t.Fatalf("%s: status %v, want %s", c.name, el["status"], c.want)
		}
		if (el["message_id"] == first["message_id"]) != c.sameID {
			t.Fatalf("%s: message id %v vs original %v", c.name, el["message_id"], first["message_id"])
		}
	}
	// Inside one request a repeat copies the first item's id.
	got := w.push(item("q", "c", 1, "x"), item("q", "c", 2, "x"))
	if got[1].(map[string]any)["status"] != "duplicate" || got[1].(map[string]any)["message_id"] != got[0].(map[string]any)["message_id"] {
		t.Fatalf("in-call repeat: %v", got)
	}
}

func TestPopEmptyAnswers204(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	for _, q := range []string{"batch=10", "batch=10&wait=true&timeout=50&" + grp} {
		if p := w.pop("nothing", q); p.status != http.StatusNoContent {
			t.Fatalf("%s: status %d, want 204", q, p.status)
		}
	}
}

func TestPopShapeAndOrder(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	for i := 0; i < 5; i++ {
		w.push(item("q", "p7", map[string]any{"n": i}, ""))
	}
	p := w.pop("q", "batch=3&"+grp+"&leaseSeconds=10")
	if p.status != http.StatusOK || len(p.messages) != 3 {
		t.Fatalf("pop: %d %v", p.status, p.body)
	}
	if got := payloads(t, p.messages); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Fatalf("order %v", got)
	}
	body := p.body.(map[string]any)
	for _, k := range []string{"success", "queue", "partition", "partitionId", "leaseId", "consumerGroup", "messages", "partitionsClaimed"} {
		if !has(body, k) {
			t.Fatalf("pop body lacks %q: %v", k, body)
		}
	}
	m := p.messages[0]
	for _, k := range []string{"id", "transactionId", "traceId", "data", "producerSub", "createdAt", "partitionId", "partition", "leaseId", "consumerGroup"} {
		if !has(m, k) {
			t.Fatalf("message lacks %q: %v", k, m)
		}
	}
	if m["partition"] != "p7" || m["consumerGroup"] != "g" || m["leaseId"] != p.leaseID || m["traceId"] != nil {
		t.Fatalf("message %v", m)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", str(t, m["createdAt"])); err != nil {
		t.Fatalf("createdAt %v: %v", m["createdAt"], err)
	}
	// The rest is leased: the same group gets nothing, another group all five.
	if q := w.pop("q", "batch=10&"+grp); q.status != http.StatusNoContent {
		t.Fatalf("leased partition must be skipped, got %v", q.body)
	}
	if q := w.pop("q", "batch=10&consumerGroup=other&subscriptionMode=all"); len(q.messages) != 5 {
		t.Fatalf("other group got %d messages", len(q.messages))
	}
}

func TestWildcardPopClaimsOnePartitionInRandomOrder(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	parts := []string{"a", "b", "c", "d", "e", "f"}
	for _, p := range parts {
		w.push(item("q", p, map[string]any{"n": 1}, ""), item("q", p, map[string]any{"n": 2}, ""))
	}
	orders := map[string]bool{}
	for run := 0; run < 8; run++ {
		group := "g" + string(rune('0'+run))
		var order []string
		for range parts {
			p := w.pop("q", "batch=200&consumerGroup="+group+"&subscriptionMode=all")
			if len(p.messages) != 2 || num(t, at(t, p.body, "partitionsClaimed")) != 1 {
				t.Fatalf("one pop must claim exactly one partition: %v", p.body)
			}
			order = append(order, str(t, p.messages[0]["partition"]))
		}
		sorted := slices.Clone(order)
		sort.Strings(sorted)
		if !slices.Equal(sorted, parts) {
			t.Fatalf("group %s claimed %v", group, order)
		}
		orders[mustJSON(order)] = true
	}
	if len(orders) < 2 {
		t.Fatalf("8 groups saw one order %v: wildcard pop is not random", orders)
	}
}

func TestSeedMakesWildcardOrderReproducible(t *testing.T) {
	t.Parallel()
	order := func() []string {
		w := newWire(t, WithSeed(42))
		for _, p := range []string{"a", "b", "c", "d", "e"} {
			w.push(item("q", p, 1, ""))
		}
		var out []string
		for i := 0; i < 5; i++ {
			p := w.pop("q", "batch=1&"+grp)
			out = append(out, str(t, p.messages[0]["partition"]))
		}
		return out
	}
	if a, b := order(), order(); !slices.Equal(a, b) {
		t.Fatalf("same seed, different orders %v %v", a, b)
	}
}

func TestPartitionsAndBatchBudget(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	for _, p := range []string{"a", "b", "c"} {
		for i := 0; i < 4; i++ {
			w.push(item("q", p, map[string]any{"n": i}, ""))
		}
	}
	p := w.pop("q", "batch=6&partitions=3&"+grp)
	if len(p.messages) != 6 {
		t.Fatalf("batch is a global budget: got %d messages", len(p.messages))
	}
	seen := map[string]bool{}
	for _, m := range p.messages {
		seen[str(t, m["partition"])] = true
		if m["leaseId"] != p.leaseID {
			t.Fatalf("all claimed partitions share one lease: %v", m)
		}
	}
	if len(seen) != 2 || num(t, at(t, p.body, "partitionsClaimed")) != 2 {
		t.Fatalf("6 of 4-message partitions must span 2 partitions, got %v", seen)
	}
}

func TestNamedPartitionPop(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.push(item("q", "a", map[string]any{"n": 1}, ""), item("q", "b/x", map[string]any{"n": 2}, ""))
	status, b, _ := w.do("GET", "/api/v1/pop/queue/q/partition/b%2Fx?batch=10&"+grp, "")
	if status != http.StatusOK {
		t.Fatalf("status %d %s", status, b)
	}
	if got := at(t, decode(t, b), "messages", 0, "partition"); got != "b/x" {
		t.Fatalf("partition %v", got)
	}
	if status, _, _ := w.do("GET", "/api/v1/pop/queue/q/partition/zzz?batch=10&"+grp, ""); status != http.StatusNoContent {
		t.Fatalf("unknown partition: %d", status)
	}
}

func TestPopRejectsBadParameters(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	for _, q := range []string{"batch=0", "batch=x", "partitions=0", "leaseSeconds=0", "timeout=-1"} {
		v := w.call("GET", "/api/v1/pop/queue/q?"+q, "", http.StatusBadRequest)
		if str(t, at(t, v, "error")) == "" {
			t.Fatalf("%s: no error text", q)
		}
	}
}

func TestLeaseExpiryRedeliversWithoutChargingTheRetryBudget(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.call("POST", "/api/v1/configure", `{"queue":"q","options":{"leaseTime":10,"retryLimit":1}}`, http.StatusOK)
	w.push(item("q", "p", map[string]any{"n": 1}, "m1"), item("q", "p", map[string]any{"n": 2}, "m2"))
	var lease string
	for round := 0; round < 5; round++ {
		p := w.pop("q", "batch=10&"+grp)
		if got := payloads(t, p.messages); !slices.Equal(got, []int64{1, 2}) {
			t.Fatalf("round %d: got %v, want the same two messages", round, got)
		}
		if p.leaseID == lease {
			t.Fatalf("a new claim must mint a new lease id")
		}
		lease = p.leaseID
		if q := w.pop("q", "batch=10&"+grp); q.status != http.StatusNoContent {
			t.Fatalf("live lease must hide the partition")
		}
		c, _ := w.s.Cursor("q", "g", "p")
		if c.Retries != 0 || c.Committed != -1 || c.LeaseID != lease {
			t.Fatalf("round %d: cursor %+v", round, c)
		}
		w.s.FastForward(10 * time.Second)
	}
	if len(w.s.DeadLetters("q")) != 0 {
		t.Fatalf("lease expiry must never dead-letter")
	}
	// A stale lease cannot settle.
	el := w.ack(map[string]any{"transactionId": "m1", "partitionId": w.s.Messages("q", "p")[0].PartitionID, "leaseId": lease, "consumerGroup": "g"})
	if el["success"] != false || str(t, el["error"]) == "" {
		t.Fatalf("ack under an expired lease: %v", el)
	}
}

func TestAckSemantics(t *testing.T) {
	t.Parallel()
	ack := func(idx int, status string) struct {
		idx    int
		status string
	} {
		return struct {
			idx    int
			status string
		}{idx, status}
	}
	cases := []struct {
		name string
		acks []struct {
			idx    int
			status string
		}
		// expectations
		committed int64
		leaseKept bool
		released  bool
		next      []int64 // payloads the next pop returns
	}{
		{"ack of the last message settles the whole batch", []struct {
			idx    int
			status string
		}{ack(3, "completed")}, 3, false, true, []int64{4}},
		{"prefix ack keeps the lease", []struct {
			idx    int
			status string
		}{ack(1, "")}, 1, true, false, nil},
		{"failed is a barrier below completed", []struct {
			idx    int
			status string
		}{ack(3, "completed"), ack(1, "failed")}, 0, false, true, []int64{1, 2, 3, 4}},
		{"retry releases without charging", []struct {
			idx    int
			status string
		}{ack(0, "retry")}, -1, false, true, []int64{0, 1, 2, 3, 4}},
		{"unknown status counts as failed", []struct {
			idx    int
			status string
		}{ack(0, "completed"), ack(1, "completed"), ack(2, "COMPLETED")}, 1, false, true, []int64{2, 3, 4}},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWire(t)
			for i := 0; i < 5; i++ {
				w.push(item("q", "p", map[string]any{"n": i}, ""))
			}
			p := w.pop("q", "batch=4&"+grp)
			var list []map[string]any
			for _, a := range c.acks {
				list = append(list, ackOf(p.messages[a.idx], a.status))
			}
			v := w.call("POST", "/api/v1/ack/batch", mustJSON(map[string]any{"consumerGroup": "g", "acknowledgments": list}), http.StatusOK)
			for i := range c.acks {
				el := at(t, v, i).(map[string]any)
				if el["success"] != true || el["leaseReleased"] != c.released || num(t, el["index"]) != int64(i) {
					t.Fatalf("element %d: %v", i, el)
				}
			}
			cur, _ := w.s.Cursor("q", "g", "p")
			if cur.Committed != c.committed || (cur.LeaseID != "") != c.leaseKept {
				t.Fatalf("cursor %+v, want committed %d lease kept %v", cur, c.committed, c.leaseKept)
			}
			q := w.pop("q", "batch=10&"+grp)
			if c.next == nil {
				if q.status != http.StatusNoContent {
					t.Fatalf("partition with a live lease was claimable: %v", q.body)
				}
				return
			}
			if got := payloads(t, q.messages); !slices.Equal(got, c.next) {
				t.Fatalf("next pop %v, want %v", got, c.next)
			}
		})
	}
}

func TestAckValidation(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.push(item("q", "p", map[string]any{"n": 0}, "a"), item("q", "p", map[string]any{"n": 1}, "b"))
	p := w.pop("q", "batch=1&"+grp)
	pid := p.messages[0]["partitionId"]
	if el := w.ack(ackOf(p.messages[0], "completed")); el["success"] != true || el["noop"] != false {
		t.Fatalf("first ack %v", el)
	}
	cases := []struct {
		name    string
		ack     map[string]any
		success bool
		noop    bool
	}{
		{"below-cursor completed is a no-op", map[string]any{"transactionId": "a", "partitionId": pid, "consumerGroup": "g"}, true, true},
		{"below-cursor failed is refused", map[string]any{"transactionId": "a", "partitionId": pid, "consumerGroup": "g", "status": "failed"}, false, false},
		{"wrong lease is refused", map[string]any{"transactionId": "b", "partitionId": pid, "consumerGroup": "g", "leaseId": "nope"}, false, false},
		{"unknown transaction id is refused", map[string]any{"transactionId": "zz", "partitionId": pid, "consumerGroup": "g"}, false, false},
		{"unknown partition is refused", map[string]any{"transactionId": "b", "partitionId": "0198-none", "consumerGroup": "g"}, false, false},
	}
	for _, c := range cases {
		el := w.ack(c.ack)
		if el["success"] != c.success || el["noop"] != c.noop {
			t.Fatalf("%s: %v", c.name, el)
		}
		if !c.success && str(t, el["error"]) == "" {
			t.Fatalf("%s: refusal without error text", c.name)
		}
	}
	// An ack without a group addresses queue mode, not g.
	w.ack(map[string]any{"transactionId": "b", "partitionId": pid})
	if c, _ := w.s.Cursor("q", "g", "p"); c.Committed != 0 {
		t.Fatalf("group-less ack moved the group cursor: %+v", c)
	}
	if c, ok := w.s.Cursor("q", "", "p"); !ok || c.Committed != 1 {
		t.Fatalf("group-less ack must move the queue-mode cursor: %+v %v", c, ok)
	}
	for _, body := range []string{`{"transactionId":"a"}`, `{"partitionId":"x"}`, `not json`} {
		w.call("POST", "/api/v1/ack", body, http.StatusBadRequest)
	}
}

func TestFailedAcksDeadLetterAfterRetryLimit(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.call("POST", "/api/v1/configure", `{"queue":"q","options":{"leaseTime":10,"retryLimit":3}}`, http.StatusOK)
	w.push(item("q", "p", map[string]any{"n": 0}, "poison"), item("q", "p", map[string]any{"n": 1}, "fine"))
	deliveries := 0
	for {
		p := w.pop("q", "batch=1&"+grp)
		if len(p.messages) == 0 {
			t.Fatalf("poison vanished after %d deliveries", deliveries)
		}
		if num(t, at(t, p.messages[0], "data", "n")) != 0 {
			break
		}
		deliveries++
		a := ackOf(p.messages[0], "failed")
		a["error"] = "vendor 500"
		el := w.ack(a)
		if el["success"] != true || el["leaseReleased"] != true {
			t.Fatalf("failed ack %v", el)
		}
		if el["dlq"] == true {
			if deliveries != 4 {
				t.Fatalf("dead-lettered at delivery %d, want 4 with retryLimit 3", deliveries)
			}
		}
		if deliveries > 4 {
			t.Fatalf("more than 4 deliveries")
		}
	}
	if deliveries != 4 {
		t.Fatalf("deliveries %d, want 4", deliveries)
	}
	dl := w.s.DeadLetters("q")
	if len(dl) != 1 || dl[0].TransactionID != "poison" || dl[0].Error != "vendor 500" || dl[0].ConsumerGroup != "g" {
		t.Fatalf("dead letters %+v", dl)
	}
	v := w.call("GET", "/api/v1/dlq?queue=q&consumerGroup=g", "", http.StatusOK)
	if at(t, v, "messages", 0, "transactionId") != "poison" || at(t, v, "messages", 0, "errorMessage") != "vendor 500" {
		t.Fatalf("dlq route %v", v)
	}
	if c, _ := w.s.Cursor("q", "g", "p"); c.Retries != 0 || c.Committed != 0 {
		t.Fatalf("cursor after DLQ %+v", c)
	}
}

func TestDLQStatusDeadLettersAtOnceAndDisabledDLQDrops(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.call("POST", "/api/v1/configure", `{"queue":"nodlq","options":{"retryLimit":0,"deadLetterQueue":false,"dlqAfterMaxRetries":false}}`, http.StatusOK)
	w.push(item("q", "p", 1, "x"), item("nodlq", "p", 1, "y"))
	p := w.pop("q", "batch=1&"+grp)
	if el := w.ack(ackOf(p.messages[0], "dlq")); el["dlq"] != true {
		t.Fatalf("dlq status: %v", el)
	}
	p = w.pop("nodlq", "batch=1&"+grp)
	if el := w.ack(ackOf(p.messages[0], "failed")); el["dlq"] != false || el["success"] != true {
		t.Fatalf("drop: %v", el)
	}
	if c, _ := w.s.Cursor("nodlq", "g", "p"); c.Committed != 0 {
		t.Fatalf("a dropped message must be passed: %+v", c)
	}
	if len(w.s.DeadLetters("nodlq")) != 0 || len(w.s.DeadLetters("q")) != 1 {
		t.Fatalf("dead letters %+v", w.s.DeadLetters(""))
	}
}

func TestSubscriptionSeeding(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.push(item("q", "old", map[string]any{"n": 1}, ""))
	w.s.FastForward(time.Minute)
	w.push(item("q", "old", map[string]any{"n": 2}, ""))
	mid := w.s.Now().Add(-time.Second).Format(time.RFC3339)
	cases := []struct {
		group, query string
		want         []int64
	}{
		{"all", "subscriptionMode=all", []int64{1, 2}},
		{"new", "subscriptionMode=new", nil},
		{"newonly", "subscriptionMode=new_only", nil},
		{"from-now", "subscriptionFrom=now", nil},
		{"from-ts", "subscriptionFrom=" + mid, []int64{2}},
		{"default", "", nil},
	}
	var settle []map[string]any
	for _, c := range cases {
		p := w.pop("q", "batch=10&consumerGroup="+c.group+"&"+c.query)
		if got := payloads(t, p.messages); !slices.Equal(got, c.want) {
			t.Fatalf("%s: got %v want %v", c.group, got, c.want)
		}
		settle = append(settle, p.messages...)
	}
	for _, m := range settle {
		w.ack(ackOf(m, ""))
	}
	// Every registered group passed both messages: they are reclaimed.
	if got := w.s.Messages("q", "old"); len(got) != 0 {
		t.Fatalf("completed messages not reclaimed: %d left", len(got))
	}
	// Later pushes reach every group, and an existing cursor is never re-seeded.
	w.s.FastForward(time.Second)
	w.push(item("q", "old", map[string]any{"n": 3}, ""), item("q", "fresh", map[string]any{"n": 4}, ""))
	for _, c := range cases {
		var got []int64
		for {
			p := w.pop("q", "batch=10&consumerGroup="+c.group+"&subscriptionMode=all")
			if p.status == http.StatusNoContent {
				break
			}
			got = append(got, payloads(t, p.messages)...)
			for _, m := range p.messages {
				w.ack(ackOf(m, ""))
			}
		}
		sort.Slice(got, func(a, b int) bool { return got[a] < got[b] })
		if want := []int64{3, 4}; !slices.Equal(got, want) {
			t.Fatalf("%s after new pushes: got %v want %v", c.group, got, want)
		}
	}
}

func TestDefaultSubscriptionModeOption(t *testing.T) {
	t.Parallel()
	w := newWire(t, WithDefaultSubscriptionMode("all"))
	w.push(item("q", "p", map[string]any{"n": 1}, ""))
	if p := w.pop("q", "batch=10&consumerGroup=g"); len(p.messages) != 1 {
		t.Fatalf("default all must deliver the backlog")
	}
}

func TestAutoAck(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.push(item("q", "p", map[string]any{"n": 1}, ""))
	p := w.pop("q", "batch=10&autoAck=true&"+grp)
	if p.leaseID != "" || len(p.messages) != 1 {
		t.Fatalf("autoAck pop: %v", p.body)
	}
	if c, _ := w.s.Cursor("q", "g", "p"); c.Committed != 0 || c.LeaseID != "" {
		t.Fatalf("autoAck must commit at delivery: %+v", c)
	}
}

func TestLeaseExtend(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.s.SetTime(t0)
	w.push(item("q", "a", 1, ""), item("q", "b", 1, ""))
	p := w.pop("q", "batch=10&partitions=2&leaseSeconds=10&"+grp)
	cases := []struct {
		name    string
		advance time.Duration
		body    string
		renewed int64
		expiry  time.Time
	}{
		{"extends both claims of one lease", 5 * time.Second, `{"seconds":30}`, 2, t0.Add(35 * time.Second)},
		{"never shortens", 0, `{"seconds":1}`, 2, t0.Add(35 * time.Second)},
		{"default is 60 s", 0, ``, 2, t0.Add(65 * time.Second)},
		{"an expired lease is not revived", 66 * time.Second, `{"seconds":30}`, 0, time.Time{}},
	}
	for _, c := range cases {
		w.s.FastForward(c.advance)
		v := w.call("POST", "/api/v1/lease/"+p.leaseID+"/extend", c.body, http.StatusOK)
		if num(t, at(t, v, "renewed")) != c.renewed || at(t, v, "success") != (c.renewed > 0) || at(t, v, "leaseId") != p.leaseID {
			t.Fatalf("%s: %v", c.name, v)
		}
		for _, k := range []string{"newExpiresAt", "expiresAt", "lease_expires_at"} {
			if c.expiry.IsZero() {
				if at(t, v, k) != nil {
					t.Fatalf("%s: %s = %v, want null", c.name, k, at(t, v, k))
				}
				continue
			}
			got, err := time.Parse(time.RFC3339Nano, str(t, at(t, v, k)))
			if err != nil || !got.Equal(c.expiry) {
				t.Fatalf("%s: %s = %v, want %v", c.name, k, at(t, v, k), c.expiry)
			}
		}
	}
}
