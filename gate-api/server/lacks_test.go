package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/wire"
)

// A broker that answers but is not the broker Gate needs (no kv store, as
// Queen 0.15.1 or 1.0.4 without QUEEN_KV_ENABLED): /health answers 503
// naming what it lacks and the fix, and a PUT is refused before it
// provisions anything (it used to provision the queues, then answer 502
// and leave them behind). After the broker was unreachable and comes back
// with kv, gate-api probes again and answers 200.
func TestABrokerWithoutKVIsNamedAndNothingIsProvisioned(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	mini := h.Broker.RequireMini(t, "switching the broker's kv store off")
	mini.SetKVAbsent(true)
	// The harness's first probe may have run with kv on: a broker that
	// went away and came back is probed again.
	mini.SetError("health", http.StatusServiceUnavailable)
	h.Expect(h.Do(http.MethodGet, "/health", nil), http.StatusServiceUnavailable)
	mini.ClearError("health")

	var last apitest.Answer
	gatetest.Eventually(t, 10*time.Second, func() bool {
		last = h.Do(http.MethodGet, "/health", nil)
		return last.Status == http.StatusServiceUnavailable && last.Str("code") == string(wire.CodeBrokerLacks)
	})
	body := h.ErrorBody(last)
	for _, want := range []string{"kv incr with max", "QUEEN_KV_ENABLED=true", "1.0.4", h.Broker.URL} {
		if !strings.Contains(body, want) {
			t.Errorf("/health's 503 does not say %q: %s", want, last.Raw)
		}
	}
	if !strings.Contains(string(last.Raw), `"need":"kv","what":"kv incr with max (the budget counters)","present":false`) {
		t.Errorf("/health's 503 does not list kv as missing in queen.needs: %s", last.Raw)
	}

	put := h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 10))
	h.Expect(put, http.StatusServiceUnavailable)
	if put.Str("code") != string(wire.CodeBrokerLacks) || !strings.Contains(h.ErrorBody(put), "nothing was provisioned") {
		t.Fatalf("PUT on a broker without kv: %s, want 503 broker-lacks saying nothing was provisioned", put.Raw)
	}
	if q := h.Ingress("g", "limit"); h.QueueExists(q) {
		t.Fatalf("the refused PUT left queue %s behind", q)
	}

	// The operator restarts the broker with kv on.
	mini.SetError("health", http.StatusServiceUnavailable)
	h.Expect(h.Do(http.MethodGet, "/health", nil), http.StatusServiceUnavailable)
	mini.SetKVAbsent(false)
	mini.ClearError("health")
	// A restart shorter than gate-api's one-second health cache is not
	// seen as one; what is missing is then probed again by the ten-second
	// recheck (capabilityRecheck), so the bound is that plus a probe, with
	// room for a loaded machine (10 s flaked at exactly the recheck).
	gatetest.Eventually(t, 30*time.Second, func() bool {
		last = h.Do(http.MethodGet, "/health", nil)
		return last.Status == http.StatusOK
	})
	if !strings.Contains(string(last.Raw), `"need":"kv"`) || strings.Contains(string(last.Raw), `"present":false,"required":true`) {
		t.Fatalf("/health once kv is back: %s, want every required need present", last.Raw)
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), h.Target("g", 10)), http.StatusOK)
}
