package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
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
func (h *harness) relayLater(replica, graphName string, version uint32, startup time.Duration, failure string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			d, found, err := h.store.Get(ctx, h.app, graphName)
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
		g := store.GraphStatus{App: h.app, Graph: graphName, Version: int64(version), Running: failure == "", Error: failure}
		done <- h.store.PutStatus(ctx, store.RelayStatus{Replica: replica, At: time.Now().UnixMilli(), Graphs: []store.GraphStatus{g}}, time.Minute)
	}()
	return done
}

// A PUT answers once a relay reports running the stored version — not an
// older one — so a push right after it is accepted.
func TestDeclareWaitsForRelay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, waitFor(10*time.Second))
	// A replica still runs version 1: it does not satisfy a wait for 2.
	h.run("relay-old", "shop", 1)
	relay := h.relayLater("relay-new", "shop", 2, 300*time.Millisecond, "")
	doc := h.shop()
	doc["version"] = 2
	a := h.expect(h.do(http.MethodPut, h.graphURL("shop"), doc), http.StatusOK)
	if err := <-relay; err != nil {
		t.Fatal(err)
	}
	if a.body["running"] != true || a.body["runningNote"] != nil || a.num("version") != 2 || a.body["resolved"] == nil {
		t.Fatalf("declare answer: %.600s", a.raw)
	}
	h.expect(h.do(http.MethodPost, h.graphURL("shop")+"/nodes/entry/push", map[string]any{"payload": map[string]any{}}), http.StatusOK)
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
		{"no relay", "", []string{"no gate-relay replica reported running version 1", "GATE_DECLARE_WAIT_MS (1000 ms)", "answer 503", "the document is stored"}},
		{"relay failed to start", "provisioning refused", []string{"GATE_DECLARE_WAIT_MS (1000 ms)", "a replica failed to start it: relay-1: provisioning refused", "answer 503"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, waitFor(wait))
			var relay <-chan error
			if c.failure != "" {
				relay = h.relayLater("relay-1", "t", 1, 0, c.failure)
			}
			start := time.Now()
			a := h.expect(h.do(http.MethodPut, h.graphURL("t"), h.target("t", 10)), http.StatusOK)
			if took := time.Since(start); took < wait {
				t.Fatalf("answered after %v, before the %v wait ended", took, wait)
			}
			if relay != nil {
				if err := <-relay; err != nil {
					t.Fatal(err)
				}
			}
			note := a.str("runningNote")
			if a.body["ok"] != true || a.body["running"] != false {
				t.Fatalf("declare answer: %.600s", a.raw)
			}
			for _, w := range c.want {
				if !strings.Contains(note, w) {
					t.Fatalf("runningNote %q lacks %q", note, w)
				}
			}
			if !h.stored(h.app, "t") {
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
	h := newHarness(t, waitFor(cfg.DeclareWait))
	start := time.Now()
	a := h.expect(h.do(http.MethodPut, h.graphURL("t"), h.target("t", 10)), http.StatusOK)
	// The default wait is 5 s; answering well inside it shows none happened.
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("answered after %v with waiting off", took)
	}
	if a.body["running"] != false || !strings.Contains(a.str("runningNote"), "waiting is off: GATE_DECLARE_WAIT_MS=0") || !h.stored(h.app, "t") {
		t.Fatalf("declare answer: %.600s", a.raw)
	}
	h.run("relay-1", "t", 1)
	a = h.expect(h.do(http.MethodPut, h.graphURL("t"), h.target("t", 20)), http.StatusOK)
	if a.body["running"] != true || a.body["runningNote"] != nil {
		t.Fatalf("re-declare with a relay running version 1: %.600s", a.raw)
	}
}

// A waiting PUT holds no lock: another PUT and a DELETE of the waited-for
// graph answer meanwhile, and the waiting PUT then says it was deleted.
func TestDeclareWaitHoldsNoLock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, waitFor(20*time.Second))
	first := make(chan answer, 1)
	go func() {
		first <- h.do(http.MethodPut, h.graphURL("slow"), h.target("slow", 10))
	}()
	gatetest.Eventually(t, 10*time.Second, func() bool { return h.stored(h.app, "slow") })

	h.run("relay-1", "quick", 1)
	b := h.expect(h.do(http.MethodPut, h.graphURL("quick"), h.target("quick", 10)), http.StatusOK)
	if b.body["running"] != true {
		t.Fatalf("second declare: %.600s", b.raw)
	}
	select {
	case a := <-first:
		t.Fatalf("the first PUT answered before its wait ended or its graph went: %.600s", a.raw)
	default:
	}
	h.expect(h.do(http.MethodDelete, h.graphURL("slow"), nil), http.StatusOK)
	var a answer
	select {
	case a = <-first:
	case <-time.After(15 * time.Second):
		t.Fatalf("the waiting PUT did not notice its graph was deleted")
	}
	h.expect(a, http.StatusOK)
	if a.body["running"] != false || !strings.Contains(a.str("runningNote"), "was deleted while this declare waited") {
		t.Fatalf("first declare: %.600s", a.raw)
	}
}

// Sync waits once, after every document, and says which targets run.
func TestSyncWaitsOnce(t *testing.T) {
	t.Parallel()
	const wait = 500 * time.Millisecond
	h := newHarness(t, waitFor(wait))
	named := func(name string) map[string]any { d := h.target(name, 10); d["graph"] = name; return d }
	relay := h.relayLater("relay-1", "one", 1, 100*time.Millisecond, "")
	start := time.Now()
	a := h.expect(h.do(http.MethodPut, "/v1/apps/"+h.app+"/targets", []any{named("one"), named("two")}), http.StatusOK)
	if took := time.Since(start); took < wait {
		t.Fatalf("answered after %v, before the %v wait ended", took, wait)
	}
	if err := <-relay; err != nil {
		t.Fatal(err)
	}
	running, _ := a.body["running"].(map[string]any)
	notes, _ := a.body["runningNotes"].(map[string]any)
	if a.body["ok"] != true || running["one"] != true || running["two"] != false || len(notes) != 1 {
		t.Fatalf("sync answer: %.800s", a.raw)
	}
	if note, _ := notes["two"].(string); !strings.Contains(note, "version 1 of '"+h.app+"/two'") {
		t.Fatalf("runningNotes: %v", notes)
	}
}
