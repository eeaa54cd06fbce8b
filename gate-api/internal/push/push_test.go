package push_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

func TestPushFrontDoor(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	push := h.GraphURL("shop") + "/nodes/entry/push"
	queue := h.Ingress("shop", "entry")

	// No relay runs the graph yet: the push is queued all the same (it
	// waits in the ingress queue) and the answer says no relay runs it.
	// Until issue 24 this was a 503 that queued nothing.
	r := h.Expect(h.Do(http.MethodPost, push, map[string]any{"payload": map[string]any{}}), http.StatusOK)
	if r.Body["running"] != false || r.Str("runningNote") != wire.NoRelayNote || r.Header.Get(wire.RelayHeader) != wire.RelayNone {
		t.Fatalf("a push to a graph no relay runs: %s (Gate-Relay %q), want running false with the note and Gate-Relay: none", r.Raw, r.Header.Get(wire.RelayHeader))
	}
	if n := len(h.Messages(queue)); n != 1 {
		t.Fatalf("a push to a graph no relay runs left %d messages on the ingress, want 1", n)
	}
	h.Run("relay-1", "shop", 1)

	a := h.Expect(h.Do(http.MethodPost, push, map[string]any{"op": "charge.card", "partition": "acct-7", "payload": map[string]any{"account": "7", "units": 2, "_gate": "forged"}}), http.StatusOK)
	if a.Body["ok"] != true || a.Num("pushed") != 1 || a.Str("queue") != queue || a.Str("partition") != "acct-7" || a.Num("cost") != 2 ||
		a.Body["running"] != true || a.Body["runningNote"] != nil || a.Header.Get(wire.RelayHeader) != wire.RelayRunning {
		t.Fatalf("push answer: %s (Gate-Relay %q)", a.Raw, a.Header.Get(wire.RelayHeader))
	}
	msgs := h.Partition(queue, "acct-7")
	if len(msgs) != 1 {
		t.Fatalf("%d messages on acct-7", len(msgs))
	}
	var data struct {
		Op   string `json:"op"`
		Gate struct {
			Graph string `json:"graph"`
			Node  string `json:"node"`
			Hop   *int   `json:"hop"`
			At    int64  `json:"at"`
		} `json:"_gate"`
	}
	if err := json.Unmarshal(msgs[0].Data, &data); err != nil || data.Op != "charge.card" || data.Gate.Graph != "shop" || data.Gate.Node != "entry" || data.Gate.Hop == nil || *data.Gate.Hop != 0 || data.Gate.At == 0 {
		t.Fatalf("stored item: %s (%v)", msgs[0].Data, err)
	}

	// Round-robin partitions over the declared width, and the key alias.
	seen := map[string]bool{}
	for range 4 {
		a := h.Expect(h.Do(http.MethodPost, push, map[string]any{}), http.StatusOK)
		seen[a.Str("partition")] = true
	}
	for i := range 4 {
		if !seen["p"+strconv.Itoa(i)] {
			t.Fatalf("round robin missed p%d: %v", i, seen)
		}
	}
	if a := h.Expect(h.Do(http.MethodPost, push, map[string]any{"key": "k1"}), http.StatusOK); a.Str("partition") != "k1" {
		t.Fatalf("key alias: %s", a.Raw)
	}

	// txn coalesces on the broker's dedup.
	first := h.Expect(h.Do(http.MethodPost, push, map[string]any{"partition": "d", "txn": "t-1"}), http.StatusOK)
	second := h.Expect(h.Do(http.MethodPost, push, map[string]any{"partition": "d", "txn": "t-1"}), http.StatusOK)
	if first.Num("pushed") != 1 || second.Num("pushed") != 0 || second.Body["duplicate"] != true || len(h.Partition(queue, "d")) != 1 {
		t.Fatalf("dedup: %s / %s", first.Raw, second.Raw)
	}

	// The v1 cost field lands at the cost path when the payload has none.
	if a := h.Expect(h.Do(http.MethodPost, push, map[string]any{"cost": 3}), http.StatusOK); a.Num("cost") != 3 {
		t.Fatalf("v1 cost: %s", a.Raw)
	}

	refusals := []struct {
		name  string
		body  map[string]any
		want  int
		field string
	}{
		{"too expensive", map[string]any{"partition": "x", "payload": map[string]any{"units": 6}}, 422, "payload"},
		{"missing scope value", map[string]any{"partition": "x", "op": "charge.card", "payload": map[string]any{}}, 422, "payload.account"},
		{"payload not an object", map[string]any{"partition": "x", "payload": []any{1}}, 422, "payload"},
		{"payload null", map[string]any{"partition": "x", "payload": nil}, 422, "payload"},
		{"partition not a string", map[string]any{"partition": 5}, 422, "partition"},
		{"unknown field", map[string]any{"partition": "x", "priority": 1}, 422, "priority"},
		{"cost not an integer", map[string]any{"partition": "x", "cost": 1.5}, 422, "cost"},
		{"10 kB partition", map[string]any{"partition": strings.Repeat("p", 10240)}, 422, "partition"},
		{"control character in txn", map[string]any{"partition": "x", "txn": "a\nb"}, 422, "txn"},
	}
	for _, c := range refusals {
		r := h.Do(http.MethodPost, push, c.body)
		if r.Status != c.want || r.Str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %s", c.name, r.Status, r.Str("field"), c.want, c.field, r.Raw)
		}
		h.ErrorBody(r)
	}
	if n := len(h.Partition(queue, "x")); n != 0 {
		t.Fatalf("refused pushes queued %d messages", n)
	}
	// An op the scoped budget does not charge needs no scope value.
	h.Expect(h.Do(http.MethodPost, push, map[string]any{"partition": "y", "op": "refund"}), http.StatusOK)

	// A counter key holding something other than a number cannot be
	// judged, so it never sheds: the push is queued.
	if _, err := h.Client.KV(context.Background(), queen.KVPut(h.NS, "b:"+h.App+":shop:entry:global", json.RawMessage(`{"at":1}`), queen.PutOpts{TTLSeconds: 7})); err != nil {
		t.Fatal(err)
	}
	h.Expect(h.Do(http.MethodPost, push, map[string]any{"partition": "w"}), http.StatusOK)
	if n := len(h.Partition(queue, "w")); n != 1 {
		t.Fatalf("a push beside an unreadable counter queued %d messages, want 1", n)
	}

	// Shed: the only unscoped counter at its ceiling → 429 with Retry-After.
	if _, err := h.Client.KV(context.Background(), queen.KVPut(h.NS, "b:"+h.App+":shop:entry:global", json.RawMessage("10"), queen.PutOpts{TTLSeconds: 7})); err != nil {
		t.Fatal(err)
	}
	r = h.Expect(h.Do(http.MethodPost, push, map[string]any{"partition": "z"}), http.StatusTooManyRequests)
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 7 || r.Str("node") != "entry" || r.Num("retryAfterSeconds") != float64(ra) {
		t.Fatalf("429: Retry-After %q body %s", r.Header.Get("Retry-After"), r.Raw)
	}
	if len(h.Partition(queue, "z")) != 0 {
		t.Fatalf("a shed push was queued")
	}
}

func TestPushRouting(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	two := map[string]any{
		"version": 1,
		"nodes": map[string]any{
			"a":     map[string]any{"ingress": true, "budgets": []any{map[string]any{"count": 10, "timeMs": 1000}}},
			"b":     map[string]any{"ingress": map[string]any{"queue": h.App + ".own.in"}, "budgets": []any{map[string]any{"count": 10, "timeMs": 1000}}},
			"inner": map[string]any{"budgets": []any{map[string]any{"count": 10, "timeMs": 1000}}, "egress": h.App + ".two.out"},
		},
		"paths": []any{
			map[string]any{"name": "pa", "nodes": []any{"a", "inner"}},
			map[string]any{"name": "pb", "nodes": []any{"b", "inner"}},
		},
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("two"), two), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets/one", h.Target("one", 10)), http.StatusOK)
	h.Run("relay-1", "two", 1)
	h.Run("relay-2", "one", 1)
	base := h.GraphURL("two") + "/nodes/"
	cases := []struct {
		name, path string
		want       int
	}{
		{"interior node has no ingress", base + "inner/push", 409},
		{"application-owned queue has the door off", base + "b/push", 409},
		{"unknown node", base + "nope/push", 404},
		{"gate-owned entry", base + "a/push", 200},
		{"target sugar", "/v1/apps/" + h.App + "/targets/one/lanes/whatever/push", 200},
		{"target sugar over two entries", "/v1/apps/" + h.App + "/targets/two/lanes/x/push", 409},
		{"unknown graph", h.GraphURL("nope") + "/nodes/a/push", 404},
		{"unknown app", "/v1/apps/nobody/graphs/two/nodes/a/push", 404},
	}
	for _, c := range cases {
		r := h.Do(http.MethodPost, c.path, map[string]any{"partition": "p"})
		if r.Status != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.Status, c.want, r.Raw)
		}
		if c.want != 200 {
			h.ErrorBody(r)
		}
	}
	if n := len(h.Messages(h.App + ".own.in")); n != 0 {
		t.Fatalf("pushed into the application's queue: %d", n)
	}
}

// Many pushes at once leave through few broker calls; each must still be
// queued once and answered with its own outcome, and a txn repeated by
// concurrent requests must be queued once with every other copy answered
// as the duplicate.
func TestConcurrentPushesThroughTheDoorAreEachQueuedOnceAndAnsweredAsTheirOwn(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), h.Shop()), http.StatusOK)
	h.Run("relay-1", "shop", 1)
	url := h.URL + h.GraphURL("shop") + "/nodes/entry/push"
	queue := h.Ingress("shop", "entry")
	const unique, repeats = 300, 3
	type result struct {
		txn    string
		status int
		pushed float64
		dup    bool
		part   string
		err    error
	}
	results := make(chan result, unique*repeats)
	var wg sync.WaitGroup
	for i := range unique {
		for range repeats {
			wg.Go(func() {
				txn := "t-" + strconv.Itoa(i)
				body := fmt.Sprintf(`{"txn":%q,"partition":"acct-%d","payload":{"i":%d}}`, txn, i%4, i)
				resp, err := http.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					results <- result{txn: txn, err: err}
					return
				}
				defer resp.Body.Close()
				var got wire.Pushed
				err = json.NewDecoder(resp.Body).Decode(&got)
				part := ""
				if got.Partition != nil {
					part = *got.Partition
				}
				results <- result{txn: txn, status: resp.StatusCode, pushed: float64(got.Pushed), dup: got.Duplicate, part: part, err: err}
			})
		}
	}
	wg.Wait()
	close(results)
	pushed := map[string]int{}
	for r := range results {
		if r.err != nil || r.status != http.StatusOK {
			t.Fatalf("push %s: status %d, %v", r.txn, r.status, r.err)
		}
		if (r.pushed == 1) == r.dup {
			t.Fatalf("push %s answered pushed=%v duplicate=%v: exactly one of them must hold", r.txn, r.pushed, r.dup)
		}
		if i, _ := strconv.Atoi(strings.TrimPrefix(r.txn, "t-")); r.part != "acct-"+strconv.Itoa(i%4) {
			t.Fatalf("push %s answered partition %q", r.txn, r.part)
		}
		pushed[r.txn] += int(r.pushed)
	}
	stored := map[int]int{}
	for p := range 4 {
		for _, m := range h.Partition(queue, "acct-"+strconv.Itoa(p)) {
			var v struct {
				I int `json:"i"`
			}
			if err := json.Unmarshal(m.Data, &v); err != nil {
				t.Fatalf("stored %s: %v", m.Data, err)
			}
			if v.I%4 != p {
				t.Fatalf("item %d stored on acct-%d", v.I, p)
			}
			stored[v.I]++
		}
	}
	for i := range unique {
		txn := "t-" + strconv.Itoa(i)
		if pushed[txn] != 1 || stored[i] != 1 {
			t.Fatalf("%s: %d answers said pushed and %d copies are queued, want 1 and 1", txn, pushed[txn], stored[i])
		}
	}
	calls, items := doorCounters(t, h)
	if items != unique*repeats {
		t.Fatalf("the door sent %d items to the broker for %d pushes", items, unique*repeats)
	}
	t.Logf("%d pushes left in %d broker calls", items, calls)
}

// The push routes take GATE_MAX_PUSH_BODY_BYTES; the others keep 2 MiB.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 10)), http.StatusOK)
	h.Run("relay-1", "g", 1)
	push := h.GraphURL("g") + "/nodes/limit/push"
	body := func(n int) string { return `{"payload":{"pad":"` + strings.Repeat("p", n) + `"}}` }
	h.Expect(h.Do(http.MethodPost, push, body(3<<20)), http.StatusOK)
	h.Expect(h.Do(http.MethodPost, h.GraphURL("g")+"/reenter", body(3<<20)), http.StatusRequestEntityTooLarge)
	r := h.Expect(h.Do(http.MethodPost, push, body(8<<20)), http.StatusRequestEntityTooLarge)
	if r.Num("limit") != 8<<20 {
		t.Fatalf("413 body: %.300s", r.Raw)
	}
	if n := len(h.Messages(h.Ingress("g", "limit"))); n != 1 {
		t.Fatalf("%d messages queued, want only the one under the limit", n)
	}
}

// doorCounters reads the push door's broker calls and the items they
// carried from GET /metrics.
func doorCounters(t *testing.T, h *apitest.Harness) (calls, items int64) {
	t.Helper()
	m := h.Expect(h.Do(http.MethodGet, "/metrics", nil), http.StatusOK)
	read := func(name string) int64 {
		for _, line := range strings.Split(string(m.Raw), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == name {
				n, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				return int64(n)
			}
		}
		t.Fatalf("GET /metrics has no %s", name)
		return 0
	}
	return read("gate_api_push_broker_calls_total"), read("gate_api_push_broker_items_total")
}
