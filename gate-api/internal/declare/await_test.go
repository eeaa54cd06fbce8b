package declare_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/store"
)

// waitFor configures the declare wait (GATE_DECLARE_WAIT_MS).
func waitFor(d time.Duration) func(*config.Config) {
	return func(c *config.Config) { c.DeclareWait = d }
}

// relayLater plays a gate-relay replica: once version of graph is stored it
// takes startup to start it, then publishes that it runs it (or, with
// failure set, that its start failed). The channel reports the outcome.
func relayLater(h *apitest.Harness, replica, graphName string, version uint32, startup time.Duration, failure string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			d, found, err := h.Store.Get(ctx, h.App, graphName)
			if err == nil && found {
				if doc, perr := graph.Parse(d.Body); perr == nil && doc.Version == version {
					break
				}
			}
			select {
			case <-ctx.Done():
				done <- fmt.Errorf("version %d of %s was never stored", version, graphName)
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		time.Sleep(startup) // the relay's start-up time, not synchronisation
		g := store.GraphStatus{App: h.App, Graph: graphName, Version: int64(version), Running: failure == "", Error: failure}
		done <- h.Store.PutStatus(ctx, store.RelayStatus{Replica: replica, At: time.Now().UnixMilli(), Graphs: []store.GraphStatus{g}}, time.Minute)
	}()
	return done
}

// A PUT answers once a relay reports running the stored version — not an
// older one — so a push right after it is accepted.
func TestDeclareWaitsForRelay(t *testing.T) {
	t.Parallel()
	h := apitest.New(t, waitFor(10*time.Second))
	// A replica still runs version 1: it does not satisfy a wait for 2.
	h.Run("relay-old", "shop", 1)
	relay := relayLater(h, "relay-new", "shop", 2, 300*time.Millisecond, "")
	doc := h.Shop()
	doc["version"] = 2
	a := h.Expect(h.Do(http.MethodPut, h.GraphURL("shop"), doc), http.StatusOK)
	if err := <-relay; err != nil {
		t.Fatal(err)
	}
	if a.Body["running"] != true || a.Body["runningNote"] != nil || a.Num("version") != 2 || a.Body["resolved"] == nil {
		t.Fatalf("declare answer: %.600s", a.Raw)
	}
	h.Expect(h.Do(http.MethodPost, h.GraphURL("shop")+"/nodes/entry/push", map[string]any{"payload": map[string]any{}}), http.StatusOK)
}

// Without a relay that runs the version, the PUT still answers 200 after
// the wait, with the document stored and a note saying what follows.
func TestDeclareNotRunning(t *testing.T) {
	t.Parallel()
	const wait = time.Second
	cases := []struct {
		name    string
		failure string // a relay reports this start failure; "" = no relay
		want    []string
	}{
		{"no relay", "", []string{"no gate-relay replica reported running version 1", "GATE_DECLARE_WAIT_MS (1000 ms)", "pushes and re-entries are queued (Gate-Relay: none)", "the document is stored"}},
		{"relay failed to start", "provisioning refused", []string{"GATE_DECLARE_WAIT_MS (1000 ms)", "a replica failed to start it: relay-1: provisioning refused", "pushes and re-entries are queued (Gate-Relay: none)", "ETA answers 503"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := apitest.New(t, waitFor(wait))
			var relay <-chan error
			if c.failure != "" {
				relay = relayLater(h, "relay-1", "t", 1, 0, c.failure)
			}
			start := time.Now()
			a := h.Expect(h.Do(http.MethodPut, h.GraphURL("t"), h.Target("t", 10)), http.StatusOK)
			if took := time.Since(start); took < wait {
				t.Fatalf("answered after %v, before the %v wait ended", took, wait)
			}
			if relay != nil {
				if err := <-relay; err != nil {
					t.Fatal(err)
				}
			}
			note := a.Str("runningNote")
			if a.Body["ok"] != true || a.Body["running"] != false {
				t.Fatalf("declare answer: %.600s", a.Raw)
			}
			for _, w := range c.want {
				if !strings.Contains(note, w) {
					t.Fatalf("runningNote %q lacks %q", note, w)
				}
			}
			if !h.Stored(h.App, "t") {
				t.Fatalf("the document was not stored")
			}
		})
	}
}

// GATE_DECLARE_WAIT_MS=0 answers at once, from what the relays last said.
func TestDeclareWaitOff(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(k string) string {
		if k == "GATE_DECLARE_WAIT_MS" {
			return "0"
		}
		return ""
	})
	if err != nil || cfg.DeclareWait != 0 {
		t.Fatalf("Load: %v, wait %v", err, cfg.DeclareWait)
	}
	h := apitest.New(t, waitFor(cfg.DeclareWait))
	start := time.Now()
	a := h.Expect(h.Do(http.MethodPut, h.GraphURL("t"), h.Target("t", 10)), http.StatusOK)
	// The default wait is 5 s; answering well inside it shows none happened.
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("answered after %v with waiting off", took)
	}
	if a.Body["running"] != false || !strings.Contains(a.Str("runningNote"), "waiting is off: GATE_DECLARE_WAIT_MS=0") || !h.Stored(h.App, "t") {
		t.Fatalf("declare answer: %.600s", a.Raw)
	}
	h.Run("relay-1", "t", 1)
	a = h.Expect(h.Do(http.MethodPut, h.GraphURL("t"), h.Target("t", 20)), http.StatusOK)
	if a.Body["running"] != true || a.Body["runningNote"] != nil {
		t.Fatalf("re-declare with a relay running version 1: %.600s", a.Raw)
	}
}

// A waiting PUT holds no lock: another PUT and a DELETE of the waited-for
// graph answer meanwhile, and the waiting PUT then says it was deleted.
func TestDeclareWaitHoldsNoLock(t *testing.T) {
	t.Parallel()
	h := apitest.New(t, waitFor(20*time.Second))
	first := make(chan apitest.Answer, 1)
	go func() {
		first <- h.Do(http.MethodPut, h.GraphURL("slow"), h.Target("slow", 10))
	}()
	gatetest.Eventually(t, 10*time.Second, func() bool { return h.Stored(h.App, "slow") })

	h.Run("relay-1", "quick", 1)
	b := h.Expect(h.Do(http.MethodPut, h.GraphURL("quick"), h.Target("quick", 10)), http.StatusOK)
	if b.Body["running"] != true {
		t.Fatalf("second declare: %.600s", b.Raw)
	}
	select {
	case a := <-first:
		t.Fatalf("the first PUT answered before its wait ended or its graph went: %.600s", a.Raw)
	default:
	}
	h.Expect(h.Do(http.MethodDelete, h.GraphURL("slow"), nil), http.StatusOK)
	var a apitest.Answer
	select {
	case a = <-first:
	case <-time.After(15 * time.Second):
		t.Fatalf("the waiting PUT did not notice its graph was deleted")
	}
	h.Expect(a, http.StatusOK)
	if a.Body["running"] != false || !strings.Contains(a.Str("runningNote"), "was deleted while this declare waited") {
		t.Fatalf("first declare: %.600s", a.Raw)
	}
}

// Sync waits once, after every document, and says which targets run.
func TestSyncWaitsOnce(t *testing.T) {
	t.Parallel()
	const wait = 500 * time.Millisecond
	h := apitest.New(t, waitFor(wait))
	named := func(name string) map[string]any { d := h.Target(name, 10); d["graph"] = name; return d }
	relay := relayLater(h, "relay-1", "one", 1, 100*time.Millisecond, "")
	start := time.Now()
	a := h.Expect(h.Do(http.MethodPut, "/v1/apps/"+h.App+"/targets", []any{named("one"), named("two")}), http.StatusOK)
	if took := time.Since(start); took < wait {
		t.Fatalf("answered after %v, before the %v wait ended", took, wait)
	}
	if err := <-relay; err != nil {
		t.Fatal(err)
	}
	running, _ := a.Body["running"].(map[string]any)
	notes, _ := a.Body["runningNotes"].(map[string]any)
	if a.Body["ok"] != true || running["one"] != true || running["two"] != false || len(notes) != 1 {
		t.Fatalf("sync answer: %.800s", a.Raw)
	}
	if note, _ := notes["two"].(string); !strings.Contains(note, "version 1 of '"+h.App+"/two'") {
		t.Fatalf("runningNotes: %v", notes)
	}
}
