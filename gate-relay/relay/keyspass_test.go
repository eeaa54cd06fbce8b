package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

// listingCounter counts the store's listings of "graph:" as they go over
// the wire: whole ones (the documents' bodies) and keys-only ones.
type listingCounter struct {
	next            http.RoundTripper
	whole, keysOnly atomic.Int64
}

func (c *listingCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		if bytes.Contains(body, []byte(`"op":"getPrefix"`)) && bytes.Contains(body, []byte(`"prefix":"graph:"`)) {
			if bytes.Contains(body, []byte(`"keysOnly":true`)) {
				c.keysOnly.Add(1)
			} else {
				c.whole.Add(1)
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return c.next.RoundTrip(req)
}

// Between two whole re-reads, each reconcile period lists only the stored
// keys: a document created, rewritten or deleted straight in kv (no change
// row, no revision) runs, is swapped or stops at the next period, not
// before; and over forty idle periods every document is read whole only at
// the start and every twentieth period (the safety net), not every period.
func TestAnIdlePeriodListsKeysAndFindsChangesBehindTheChangeLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	counter := &listingCounter{next: queen.NewTransport()}
	sc, err := queen.New(e.b.URL, queen.WithHTTPClient(&http.Client{Transport: counter}))
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(sc, e.store.Namespace())
	doc := func(version int) string {
		return fmt.Sprintf(`{"version":%d,"nodes":{"n":{"ingress":true,"budgets":[{"count":10,"timeMs":1000}],"egress":%q}},
			"paths":[{"name":"main","nodes":["n"]}]}`, version, e.egressQueue())
	}
	e.declare("kept", doc(1))
	e.declare("dropped", doc(1))
	v := clock.NewVirtual(time.Now().Truncate(time.Second))
	const period = 15 * time.Second
	r, err := relay.New(relay.Config{
		Client: e.client, Store: st, Replica: "keys", Lease: 2 * time.Second, PollTimeout: 2 * time.Second,
		Reconcile: period, SignalPoll: time.Hour, Clock: v, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	version := func(graph string) int64 {
		s := r.Snapshot()
		if g, ok := s.Graph(e.app, graph); ok && g.Running {
			return g.Version
		}
		return 0
	}
	gatetest.Eventually(t, 10*time.Second, func() bool { return version("kept") == 1 && version("dropped") == 1 })
	if w, k := counter.whole.Load(), counter.keysOnly.Load(); w != 1 || k != 0 {
		t.Fatalf("after the start: %d whole and %d keys-only listings, want 1 and 0", w, k)
	}

	// Behind the change log: straight kv writes, no change row, no revision.
	ns := e.store.Namespace()
	if _, err := e.client.KV(t.Context(),
		queen.KVPut(ns, plan.DocumentKey(e.app, "hidden"), json.RawMessage(doc(1)), queen.PutOpts{Forever: true}),
		queen.KVPut(ns, plan.DocumentKey(e.app, "kept"), json.RawMessage(doc(2)), queen.PutOpts{Forever: true}),
		queen.KVDelete(ns, plan.DocumentKey(e.app, "dropped"), queen.DeleteOpts{}),
	); err != nil {
		t.Fatal(err)
	}
	consistently(t, 300*time.Millisecond, func() bool {
		return version("hidden") == 0 && version("kept") == 1 && version("dropped") == 1
	})
	v.Advance(period)
	gatetest.Eventually(t, 10*time.Second, func() bool {
		return version("hidden") == 1 && version("kept") == 2 && version("dropped") == 0
	})
	if w, k := counter.whole.Load(), counter.keysOnly.Load(); w != 1 || k != 1 {
		t.Fatalf("after one period: %d whole and %d keys-only listings, want 1 and 1 (the changes were found by the keys)", w, k)
	}

	// Idle periods 2 to 40: keys only, but every document read whole at
	// the 20th and the 40th.
	for p := int64(2); p <= 40; p++ {
		v.Advance(period)
		wantWhole, wantKeys := 1+p/20, p-p/20
		gatetest.Eventually(t, 10*time.Second, func() bool {
			return counter.whole.Load() == wantWhole && counter.keysOnly.Load() == wantKeys
		})
	}
	consistently(t, 300*time.Millisecond, func() bool { return counter.whole.Load() == 3 && counter.keysOnly.Load() == 38 })
	if version("hidden") != 1 || version("kept") != 2 || version("dropped") != 0 {
		t.Fatalf("after 40 idle periods: hidden v%d, kept v%d, dropped v%d; want 1, 2 and stopped", version("hidden"), version("kept"), version("dropped"))
	}
}
