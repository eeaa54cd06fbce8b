package live_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/plan"
)

// A graph in Watch charges no budget, but the vendor's meter of the
// budgets it declares is followed all the same (so the recorder keeps it
// beside the Watch's traffic for "Try a limit"), under the key the relays
// read once the graph enforces; a budget that mirrors nothing is still
// refused by name.
func TestObserveFollowsTheVendorDuringWatch(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "reading kv rows")
	h.WithHistory(t)
	doc := mirroredTarget(h, "w", "x-ratelimit")
	doc["watch"] = map[string]any{"durationSeconds": 600}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("w"), doc), http.StatusOK)
	a := h.Expect(h.Do(http.MethodPost, h.GraphURL("w")+"/nodes/limit/observe", map[string]any{"status": 200, "headers": map[string]any{
		"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "1",
	}}), http.StatusOK)
	bs, _ := observed(t, a)
	if len(bs) != 1 || bs[0]["applied"] != true || bs[0]["vendorLimit"] != 10.0 || bs[0]["declared"] != 50.0 {
		t.Fatalf("observe in Watch: %s", a.Raw)
	}
	meter := plan.MeterKey(plan.BudgetKey(h.App, "w", "limit", "global"))
	if e, ok := mini.KV(h.NS, meter); !ok || !strings.Contains(string(e.Value), `"limit":10`) {
		t.Fatalf("meter row in Watch %+v", e)
	}
	// Diagnostics say it too, not only while enforcing.
	d := h.Expect(h.Do(http.MethodGet, h.GraphURL("w")+"/diagnostics", nil), http.StatusOK)
	if !strings.Contains(string(d.Raw), "the vendor enforces 10 where 50 is declared, since ") {
		t.Fatalf("diagnostics in Watch do not name the vendor's limit: %s", d.Raw)
	}
	plain := h.Target("p", 50)
	plain["watch"] = map[string]any{"durationSeconds": 600}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("p"), plain), http.StatusOK)
	a = h.Expect(h.Do(http.MethodPost, h.GraphURL("p")+"/nodes/limit/observe", map[string]any{"status": 200, "headers": map[string]any{"X-RateLimit-Limit": "10"}}), http.StatusUnprocessableEntity)
	if a.Str("code") != "no-vendor-meter" {
		t.Fatalf("observe on a Watch that mirrors nothing: %s", a.Raw)
	}
}
