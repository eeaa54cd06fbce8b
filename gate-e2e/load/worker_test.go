package load

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

func brokerRunner(t *testing.T) (*runner, *miniqueen.Server) {
	t.Helper()
	mq := miniqueen.RunT(t)
	qc, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	return &runner{cfg: Config{}.withDefaults(), q: qc, runID: "r1"}, mq
}

// A vendor scenario's backlog is every item once, spread round-robin over
// the ingress's partitions, each with the payload asked for it, across
// several pushes.
func TestFillBacklogQueuesEveryItemOnItsPartition(t *testing.T) {
	t.Parallel()
	r, mq := brokerRunner(t)
	const n = 1203
	err := r.fillBacklog(context.Background(), "in", n, func(i int) map[string]any {
		return map[string]any{"id": "r1-" + strconv.Itoa(i), "max_tokens": i}
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, n)
	for p := range VendorPartitns {
		for _, m := range mq.Messages("in", "p"+strconv.Itoa(p)) {
			var body struct {
				ID        string `json:"id"`
				MaxTokens int    `json:"max_tokens"`
			}
			if err := json.Unmarshal(m.Data, &body); err != nil {
				t.Fatalf("partition p%d: %s: %v", p, m.Data, err)
			}
			if body.ID != "r1-"+strconv.Itoa(body.MaxTokens) || body.MaxTokens%VendorPartitns != p || seen[body.MaxTokens] {
				t.Fatalf("partition p%d holds %s: want items i ≡ %d mod %d, each once, with id r1-i", p, m.Data, p, VendorPartitns)
			}
			seen[body.MaxTokens] = true
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("item %d of %d was not queued", i, n)
		}
	}
}

// A worker's pop takes at most its batch from the egress for the vendor
// workers' group, and answers none, not an error, when ctx has ended.
func TestPopWorkTakesABatchAndNoneOnceStopped(t *testing.T) {
	t.Parallel()
	r, _ := brokerRunner(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.fillBacklog(ctx, "out", 25, func(i int) map[string]any { return map[string]any{"id": i} }); err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < 25 {
		ms := r.popWork(ctx, "out", 10)
		if len(ms) > 10 {
			t.Fatalf("a pop of batch 10 took %d", len(ms))
		}
		if len(ms) == 0 && ctx.Err() != nil {
			t.Fatalf("took %d of 25 before the deadline", got)
		}
		got += len(ms)
	}
	if got != 25 {
		t.Fatalf("took %d, want 25", got)
	}
	stopped, stop := context.WithCancel(ctx)
	stop()
	if ms := r.popWork(stopped, "out", 10); len(ms) != 0 {
		t.Fatalf("a stopped worker's pop answered %d messages", len(ms))
	}
}

// The fake vendor answers on its path until stopped, then refuses to connect.
func TestServeVendorAnswersUntilStopped(t *testing.T) {
	t.Parallel()
	url, stop, err := serveVendor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	}), "/v1/call")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "/v1/call" {
		t.Fatalf("the vendor at %s saw path %q, want /v1/call", url, body)
	}
	stop()
	if resp, err := hc.Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("a stopped vendor still answered %s", resp.Status)
	}
}
