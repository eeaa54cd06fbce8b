package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-recorder/recorder"
	"github.com/queen-mq/gate/gate-relay/observe"
	"github.com/queen-mq/gate/gate-relay/relay"
	"github.com/queen-mq/gate/gate-relay/stage"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// world is one test's broker, store, database and clock.
type world struct {
	t      *testing.T
	b      *gatetest.Broker
	client *queen.Client
	store  *store.Store
	app    string
	// clk is virtual time: it moves only when the test advances it; the
	// handovers and recorders on it are driven pass by pass (Flush,
	// Tick), never started, so no ticker of theirs waits on it.
	clk *clock.Virtual
	pg  *gatetest.Postgres
	db  *history.DB
	// forwarded counts items committed per stage "path/node".
	mu        sync.Mutex
	forwarded map[string]int64
}

// t0 is a minute boundary well in the past of no real clock: virtual.
var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func newWorld(t *testing.T) *world {
	t.Helper()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, b: b, client: c, store: store.New(c, b.Namespace()), app: b.Prefix, clk: clock.NewVirtual(t0), forwarded: map[string]int64{}}
	w.pg = gatetest.NewPostgres(t)
	w.db, err = history.OpenURL(t.Context(), w.pg.URL, w.pg.Schema, history.Options{Clock: w.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.db.Close)
	return w
}

func (w *world) count(ev stage.Settled) {
	w.mu.Lock()
	w.forwarded[ev.Path+"/"+ev.Node] += int64(ev.Items)
	w.mu.Unlock()
}

func (w *world) fwd(stage string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.forwarded[stage]
}

// replica is one in-process relay with its history handover.
type replica struct {
	relay *relay.Relay
	hand  *observe.Handover
}

// startReplica runs a relay (replica id) whose settles feed its own
// handover on the virtual clock.
func (w *world) startReplica(id string) *replica {
	w.t.Helper()
	rep := &replica{}
	rep.hand = observe.New(observe.Config{Client: w.client, Namespace: w.b.Namespace(), Replica: id, Clock: w.clk, Logger: quiet,
		Source: observe.SourceFunc(func() []observe.Runtime { return rep.relay.Runtimes() })})
	r, err := relay.New(relay.Config{
		Client: w.client, Store: w.store, Replica: id, Lease: 2 * time.Second, PollTimeout: 2 * time.Second, MaxPark: 5 * time.Second,
		RetryLimit: 3, Reconcile: 5 * time.Second, SignalPoll: 100 * time.Millisecond, Logger: quiet,
		Observer: func(ev stage.Settled) { rep.hand.Observe(ev); w.count(ev) },
	})
	if err != nil {
		w.t.Fatal(err)
	}
	rep.relay = r
	rep.hand.SetDenials(r.Denials())
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		cancel()
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		cancel()
		select {
		case <-r.Stopped():
		case <-time.After(10 * time.Second):
			w.t.Errorf("relay %s did not stop", id)
		}
	})
	return rep
}

// waitRunning waits until every replica runs graph (version).
func (w *world) waitRunning(graph string, reps ...*replica) {
	w.t.Helper()
	gatetest.Eventually(w.t, 20*time.Second, func() bool {
		for _, r := range reps {
			ok := false
			for _, rt := range r.relay.Runtimes() {
				if rt.Graph == graph {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		return true
	})
	// The first flush mints the recorders.
	for _, r := range reps {
		if err := r.hand.Flush(w.t.Context()); err != nil {
			w.t.Fatal(err)
		}
	}
}

// push puts n items on queue, each with payload units.
func (w *world) push(queue string, n int, units int64, seq *int64) {
	w.t.Helper()
	if n == 0 {
		return
	}
	items := make([]queen.PushItem, n)
	for i := range items {
		*seq++
		body, _ := json.Marshal(map[string]any{"units": units, "i": *seq})
		items[i] = queen.PushItem{Queue: queue, Partition: fmt.Sprintf("p%d", *seq%4), Payload: body}
	}
	if _, err := w.client.Push(w.t.Context(), items); err != nil {
		w.t.Fatal(err)
	}
}

func newRecorder(t *testing.T, w *world) *recorder.Recorder {
	t.Helper()
	r, err := recorder.New(recorder.Config{Client: w.client, Namespace: w.b.Namespace(), DB: w.db, Clock: w.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dump renders the history rows that a replay could change.
func dump(t *testing.T, db *history.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT recorder, path, second, items, cost FROM watch_samples ORDER BY 1, 2, 3",
		"SELECT recorder, through, lost FROM watch_recorders ORDER BY 1",
		"SELECT target, lane, minute, admitted, denied, cost_est FROM rollups ORDER BY 1, 2, 3",
		"SELECT ref, at FROM traces ORDER BY 1",
	} {
		rows, err := db.Pool().Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			v, _ := rows.Values()
			fmt.Fprintln(&b, v...)
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

func newRecorderOn(t *testing.T, w *world, db *history.DB) *recorder.Recorder {
	t.Helper()
	r, err := recorder.New(recorder.Config{Client: w.client, Namespace: w.b.Namespace(), DB: db, Clock: w.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
