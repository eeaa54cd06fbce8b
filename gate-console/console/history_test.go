package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-console/config"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/wire"
)

// A change made through the console is recorded with the signed-in
// identity; the same change through gate-api's own plane is "api". A
// viewer reads the history and cannot restore.
func TestConsoleChangesAreRecordedWithTheSignedInIdentity(t *testing.T) {
	b := gatetest.NewBroker(t)
	pg := gatetest.NewPostgres(t)
	cfg := config.Default()
	cfg.API.QueenURL, cfg.API.KVNamespace, cfg.API.DeclareWait = b.URL, b.Namespace(), 0
	cfg.API.History = knob.History{URL: pg.URL, Schema: pg.Schema}
	cfg.PublicURL = "http://console.test"
	cfg.Issuer = "http://127.0.0.1:1"
	cfg.ClientID, cfg.ClientSecret = "client", "secret"
	cfg.AllowedDomains = []string{"example.com"}
	cfg.SessionSecret = testSecret
	s, err := Boot(t.Context(), cfg, slog.New(slog.DiscardHandler), Options{Getenv: func(k string) string {
		if k == "GATE_ADMIN_EMAILS" {
			return "ann@example.com"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	e := &testEnv{t: t, s: s, h: s.Handler()}
	as := func(r *http.Request, email string) *http.Request {
		r.AddCookie(e.sessionCookie(t, email))
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		return r
	}
	doc := `{"version":1,"nodes":{"limit":{"ingress":true,"budgets":[{"id":"global","count":5,"timeMs":1000}],"egress":"shop.pay.out"}},"paths":[{"name":"main","nodes":["limit"]}]}`
	w := e.do(as(newReq(http.MethodPut, "/v1/apps/shop/graphs/pay", doc), "ann@example.com"))
	if w.Code != http.StatusOK || w.Header().Get("ETag") == "" {
		t.Fatalf("PUT through the console: %d %s", w.Code, w.Body)
	}
	// The same graph at version 2 straight through gate-api's handler.
	r := newReq(http.MethodPut, "/v1/apps/shop/graphs/pay", `{"version":2,"nodes":{"limit":{"ingress":true,"budgets":[{"id":"global","count":9,"timeMs":1000}],"egress":"shop.pay.out"}},"paths":[{"name":"main","nodes":["limit"]}]}`)
	direct := s.api.Handler()
	rec := httptest.NewRecorder()
	direct.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Fatalf("PUT through gate-api: %d %s", rec.Code, rec.Body)
	}
	w = e.do(as(newReq(http.MethodGet, "/api/apps/shop/graphs/pay/versions", ""), "viewer@example.com"))
	var page wire.GraphVersionPage
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &page) != nil || len(page.Items) != 2 {
		t.Fatalf("history through the console: %d %s", w.Code, w.Body)
	}
	if page.Items[0].ChangedBy != "api" || page.Items[0].Via != wire.ViaAPI || page.Items[1].ChangedBy != "ann@example.com" || page.Items[1].Via != wire.ViaConsole {
		t.Fatalf("history %+v, want revision 2 by api and 1 by ann@example.com through the console", page.Items)
	}
	// Restore is a write: a viewer is refused, an admin restores.
	if w := e.do(as(newReq(http.MethodPost, "/v1/apps/shop/graphs/pay/versions/1/restore", ""), "viewer@example.com")); w.Code != http.StatusForbidden {
		t.Fatalf("a viewer's restore: %d %s", w.Code, w.Body)
	}
	w = e.do(as(newReq(http.MethodPost, "/v1/apps/shop/graphs/pay/versions/1/restore", ""), "ann@example.com"))
	var d wire.Declared
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &d) != nil || d.Version != 3 || d.Revision == nil || *d.Revision != 3 {
		t.Fatalf("an admin's restore: %d %s", w.Code, w.Body)
	}
}

// Without PostgreSQL the console keeps no history: its history routes
// answer 503 no-history naming PG_HOST (the History tab reads that as
// "History is off"), to viewers and admins alike, and a restore stores
// nothing.
func TestHistoryIsOffWithoutPostgres(t *testing.T) {
	e := newTestEnv(t, nil, nil)
	if e.s.api.History() != nil {
		t.Fatal("the test console was built with a history database")
	}
	signed := func(r *http.Request, email string) *http.Request {
		r.AddCookie(e.sessionCookie(t, email))
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		return r
	}
	for _, c := range []struct {
		method, path, who string
	}{
		{http.MethodGet, "/api/apps/shop/graphs/pay/versions", "viewer@example.com"},
		{http.MethodGet, "/api/apps/shop/graphs/pay/versions/1", "viewer@example.com"},
		{http.MethodPost, "/v1/apps/shop/graphs/pay/versions/1/restore?dryRun=true", "admin@example.com"},
		{http.MethodPost, "/v1/apps/shop/graphs/pay/versions/1/restore", "admin@example.com"},
	} {
		w := e.do(signed(newReq(c.method, c.path, ""), c.who))
		var refusal wire.Error
		if w.Code != http.StatusServiceUnavailable || json.Unmarshal(w.Body.Bytes(), &refusal) != nil || refusal.Code != wire.CodeNoHistory {
			t.Fatalf("%s %s without PostgreSQL: %d %s; want 503 %s", c.method, c.path, w.Code, w.Body, wire.CodeNoHistory)
		}
		if !strings.Contains(refusal.Error, "PG_HOST") || !strings.Contains(refusal.Error, "shop/pay") {
			t.Fatalf("%s %s: %q does not name PG_HOST and the graph", c.method, c.path, refusal.Error)
		}
	}
}
