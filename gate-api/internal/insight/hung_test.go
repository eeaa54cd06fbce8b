package insight_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/wire"
)

// A PostgreSQL that accepts connections and never answers is named as
// what did not answer — PostgreSQL and its knob, never the broker
// (QUEEN_URL) — on every route that reads history, although the broker
// deadline (1 s here) passes long before the history read gives up; the
// broker stays healthy throughout.
func TestHungPostgreSQLIsNamedNotTheBroker(t *testing.T) {
	t.Parallel()
	h := apitest.New(t, func(c *config.Config) { c.BrokerTimeout = time.Second })
	pg := gatetest.NewPostgres(t)
	u, err := url.Parse(pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := gatetest.NewHangingProxy(t, u.Host)
	u.Host = px.Addr
	db, err := history.OpenURL(t.Context(), u.String(), pg.Schema, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	// Cleanups run last first: the proxy's connections end before the
	// pool closes, so the pool does not wait out the hung ones.
	t.Cleanup(px.Close)
	h.Srv.UseHistory(db)
	now := time.Now().UnixMilli()
	storeDoc(h, t, "sim", watchDoc(h, now-3600_000))
	h.Run("relay-1", "sim", 1)
	candidate := watchDoc(h, now)

	px.Hang()
	base := "/api/apps/" + h.App + "/graphs/sim"
	routes := []struct {
		name, method, path string
		body               any
	}{
		{"timeline", http.MethodGet, base + "/timeline?minutes=60", nil},
		{"GET simulate", http.MethodGet, base + "/simulate?node=limit&count=100&timeMs=1000&minutes=60", nil},
		{"POST simulate", http.MethodPost, base + "/simulate?minutes=60", candidate},
		{"watch summary", http.MethodGet, base + "/watch", nil},
		{"roll-ups", http.MethodGet, "/api/rollups?target=" + h.App + "/sim.limit&minutes=60", nil},
		{"flow", http.MethodGet, "/api/flow?minutes=60", nil},
	}
	var wg sync.WaitGroup
	answers := make([]apitest.Answer, len(routes))
	for i, r := range routes {
		wg.Go(func() {
			start := time.Now()
			answers[i] = h.Do(r.method, r.path, r.body)
			t.Logf("%s answered %d after %v", r.name, answers[i].Status, time.Since(start).Round(time.Millisecond))
		})
	}
	wg.Wait()
	for i, r := range routes {
		a := answers[i]
		msg := h.ErrorBody(a)
		if a.Status != http.StatusGatewayTimeout || a.Str("code") != string(wire.CodeHistoryTimeout) || a.Header.Get("Retry-After") == "" {
			t.Errorf("%s with PostgreSQL hung: %d %s, want 504 history-timeout with Retry-After", r.name, a.Status, a.Raw)
			continue
		}
		if !strings.Contains(msg, "PostgreSQL") || !strings.Contains(msg, "PG_HOST or PG_URL") || strings.Contains(msg, "QUEEN_URL") || a.Str("broker") != "" {
			t.Errorf("%s: the answer must name PostgreSQL and its knob, not the broker: %s", r.name, a.Raw)
		}
	}
	metrics := apitest.DecodeAs[wire.ProductMetrics](t, h.Expect(h.Do(http.MethodGet, "/v1/apps/"+h.App+"/metrics", nil), http.StatusOK))
	if r := metrics.AdmittedPerSecReason; r == nil || !strings.Contains(*r, "PostgreSQL") || strings.Contains(*r, "QUEEN_URL") {
		t.Errorf("product metrics with PostgreSQL hung: admitted_per_sec_reason %v, want one naming PostgreSQL", apitest.Deref(r))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.Client.Health(ctx); err != nil {
		t.Errorf("the broker stopped answering: %v", err)
	}
}
