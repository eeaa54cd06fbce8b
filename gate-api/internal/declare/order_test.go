package declare_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/server"
)

// secondAPI is another gate-api process on h's broker and namespace: a
// harness whose requests go to it.
func secondAPI(t *testing.T, h *apitest.Harness) *apitest.Harness {
	t.Helper()
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace = h.Broker.URL, h.NS
	cfg.Refresh, cfg.DeclareWait = 200*time.Millisecond, 0
	srv, err := server.New(cfg, apitest.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	h2 := *h
	h2.Srv, h2.URL = srv, ts.URL
	return &h2
}

// storedVersion is the version of the document stored for graph.
func storedVersion(t *testing.T, h *apitest.Harness, graph string) float64 {
	t.Helper()
	d, found, err := h.Store.Get(context.Background(), h.App, graph)
	if err != nil || !found {
		t.Fatalf("nothing stored for %s: %v", graph, err)
	}
	var doc struct {
		Version float64 `json:"version"`
	}
	if err := json.Unmarshal(d.Body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Version
}

// A PUT below the stored version is refused with 409 version-order naming
// both versions, through the process that stored it and through another;
// nothing changes. The stored document itself may be PUT again.
func TestAnOlderDeclarationNeverReplacesANewerOne(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h2 := secondAPI(t, h)
	doc := func(v int) map[string]any {
		d := h.Target("g", 100+v)
		d["version"] = v
		return d
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g"), doc(11)), http.StatusOK)
	for _, api := range []*apitest.Harness{h, h2} {
		r := api.Expect(api.Do(http.MethodPut, h.GraphURL("g"), doc(3)), http.StatusConflict)
		if msg := api.ErrorBody(r); r.Str("rule") != "version-order" || r.Str("code") != "declare-refused" ||
			!strings.Contains(msg, "version 3 is below the stored version 11") {
			t.Errorf("version 3 over 11: %s", r.Raw)
		}
	}
	if v := storedVersion(t, h, "g"); v != 11 {
		t.Fatalf("stored version %v after the refused older PUTs, want 11", v)
	}
	h2.Expect(h2.Do(http.MethodPut, h.GraphURL("g"), doc(11)), http.StatusOK)
	h2.Expect(h2.Do(http.MethodPut, h.GraphURL("g"), doc(12)), http.StatusOK)
	if v := storedVersion(t, h, "g"); v != 12 {
		t.Fatalf("stored version %v, want 12", v)
	}
}

// Concurrent PUTs of versions 1–20 of one graph, split across two gate-api
// processes: each is answered 200 or refused (409), the highest version is
// acknowledged, and what is stored at the end is the highest acknowledged
// version — never an older one that lost a race.
func TestConcurrentDeclarationsEndWithTheHighestAcknowledgedVersion(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h2 := secondAPI(t, h)
	apis := []*apitest.Harness{h, h2}
	for round := range 5 {
		graph := fmt.Sprintf("race%d", round)
		versions := rand.Perm(20)
		var mu sync.Mutex
		acked := map[int]bool{}
		var wg sync.WaitGroup
		for i, p := range versions {
			v := p + 1
			api := apis[i%2]
			wg.Go(func() {
				d := h.Target(graph, 100+v)
				d["version"] = v
				r := api.Do(http.MethodPut, h.GraphURL(graph), d)
				switch {
				case r.Status == http.StatusOK:
					mu.Lock()
					acked[v] = true
					mu.Unlock()
				case r.Status == http.StatusConflict && (r.Str("rule") == "version-order" || r.Str("code") == "declare-contended"):
				default:
					t.Errorf("%s v%d: %d %.300s", graph, v, r.Status, r.Raw)
				}
			})
		}
		wg.Wait()
		highest := 0
		for v := range acked {
			highest = max(highest, v)
		}
		if !acked[20] {
			t.Errorf("%s: version 20 was not acknowledged (acknowledged %v)", graph, acked)
		}
		if got := storedVersion(t, h, graph); int(got) != highest {
			t.Errorf("%s: stored version %v, want the highest acknowledged %d (acknowledged %v)", graph, got, highest, acked)
		}
	}
}
