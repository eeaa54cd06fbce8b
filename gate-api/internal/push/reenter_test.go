package push_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/wire"
)

// Re-entry goes back to the ingress of the path's first node; the attempt
// rides in the derived transaction id, so a repeated report collapses.
func TestReenter(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	url := h.GraphURL("airbnb") + "/reenter"
	item := map[string]any{"rooms": 2, "_gate": map[string]any{"graph": "airbnb", "path": "prices", "hop": 1, "node": "ip", "attempt": 1}}
	body := map[string]any{"payload": item, "txn": "orig-1", "partition": "listing-9"}

	// No relay runs the graph: the re-entry is queued all the same and
	// says so (until issue 24 it was a 503 that queued nothing); the
	// second report of the same attempt collapses on the broker's dedup.
	a := h.Expect(h.Do(http.MethodPost, url, body), http.StatusOK)
	if a.Body["running"] != false || a.Str("runningNote") != wire.NoRelayNote || a.Header.Get(wire.RelayHeader) != wire.RelayNone {
		t.Fatalf("a re-entry no relay runs: %s (Gate-Relay %q), want running false with the note and Gate-Relay: none", a.Raw, a.Header.Get(wire.RelayHeader))
	}
	h.Run("relay-1", "airbnb", 3)
	b := h.Expect(h.Do(http.MethodPost, url, body), http.StatusOK)
	if b.Body["running"] != true || b.Header.Get(wire.RelayHeader) != wire.RelayRunning {
		t.Fatalf("a re-entry a relay runs: %s (Gate-Relay %q), want running true", b.Raw, b.Header.Get(wire.RelayHeader))
	}
	wantTxn := plan.DeriveTransactionID("orig-1", plan.ReentryLabel(2))
	queue := h.Ingress("airbnb", "prices")
	if a.Str("queue") != queue || a.Str("node") != "prices" || a.Num("attempt") != 2 || a.Num("maxAttempts") != 3 || a.Str("transactionId") != wantTxn || a.Num("pushed") != 1 || b.Num("pushed") != 0 {
		t.Fatalf("re-entry answers: %s / %s", a.Raw, b.Raw)
	}
	msgs := h.Partition(queue, "listing-9")
	if len(msgs) != 1 || msgs[0].TransactionID != wantTxn {
		t.Fatalf("%d messages on the ingress, want 1 with txn %s", len(msgs), wantTxn)
	}
	var data struct {
		Rooms int `json:"rooms"`
		Gate  struct {
			Path    string `json:"path"`
			Node    string `json:"node"`
			Hop     int    `json:"hop"`
			Attempt int    `json:"attempt"`
		} `json:"_gate"`
	}
	if err := json.Unmarshal(msgs[0].Data, &data); err != nil || data.Rooms != 2 || data.Gate.Path != "prices" || data.Gate.Node != "prices" || data.Gate.Hop != 0 || data.Gate.Attempt != 2 {
		t.Fatalf("restamped item: %s", msgs[0].Data)
	}

	refusals := []struct {
		name  string
		body  map[string]any
		want  int
		field string
	}{
		{"beyond maxAttempts", map[string]any{"payload": item, "txn": "orig-1", "attempt": 4}, 422, "attempt"},
		{"missing txn", map[string]any{"payload": item}, 422, "txn"},
		{"no path anywhere", map[string]any{"payload": map[string]any{}, "txn": "t"}, 422, "path"},
		{"unknown path", map[string]any{"payload": item, "txn": "t", "path": "nope"}, 404, "path"},
		{"negative attempt", map[string]any{"payload": item, "txn": "t", "attempt": -1}, 422, "attempt"},
		{"unknown field", map[string]any{"payload": item, "txn": "t", "node": "ip"}, 422, "node"},
	}
	for _, c := range refusals {
		r := h.Do(http.MethodPost, url, c.body)
		if r.Status != c.want || r.Str("field") != c.field {
			t.Errorf("%s: status %d field %q, want %d %q: %s", c.name, r.Status, r.Str("field"), c.want, c.field, r.Raw)
		}
		h.ErrorBody(r)
	}
	if n := len(h.Messages(queue)); n != 1 {
		t.Fatalf("refused re-entries queued messages: %d on the ingress", n)
	}
}

// GET …/next and the lease routes are gone, naming what to consume.
func TestGoneRoutes(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("airbnb"), h.Airbnb(3)), http.StatusOK)
	a := h.Expect(h.Do(http.MethodGet, h.GraphURL("airbnb")+"/nodes/ip/next", nil), http.StatusGone)
	if !strings.Contains(h.ErrorBody(a), h.App+".airbnb.out") || !strings.Contains(a.Str("error"), "channel-workers") {
		t.Fatalf("410 does not name the egress: %s", a.Raw)
	}
	h.ErrorBody(h.Expect(h.Do(http.MethodGet, "/v1/graphs/nothing/nodes/x/next", nil), http.StatusGone))
	h.ErrorBody(h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/targets/nothing/lanes/l/next", nil), http.StatusGone))
	for _, op := range []string{"ack", "nack", "renew"} {
		r := h.Expect(h.Do(http.MethodPost, "/v1/leases/"+op, "{}"), http.StatusGone)
		if !strings.Contains(h.ErrorBody(r), "backoff") {
			t.Fatalf("lease 410: %s", r.Raw)
		}
	}
}
