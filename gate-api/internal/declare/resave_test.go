package declare_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/internal/declare"
	"github.com/queen-mq/gate/gate-api/server"
	libdeclare "github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/graph"
	"github.com/queen-mq/gate/libs/migrate"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/store"
)

const (
	// v1Graph is a v1 GraphSpec: two entries meeting at one shared node.
	v1Graph = `{"application": "x", "name": "air", "version": 3,
  "nodes": {
    "prices": {"entry": true, "cost": {"field": "rooms", "default": 1, "max": 5},
      "budgets": [{"id": "prices-1s", "cap": 100, "periodSeconds": 1, "alignment": "calendar", "confidence": "inferred"}]},
    "photos": {"entry": true, "cost": {"field": "photos", "default": 1, "max": 1},
      "budgets": [{"id": "per-day", "cap": 1000, "periodSeconds": 86400, "alignment": "rolling", "confidence": "assumed"}]},
    "ip": {"cost": {"field": "rooms", "default": 1, "max": 1},
      "budgets": [{"id": "egress-ip", "cap": 1500, "periodSeconds": 10, "alignment": "rolling", "store": "kv", "confidence": "inferred"}]}
  },
  "edges": [{"from": "prices", "to": "ip", "priority": 0}, {"from": "photos", "to": "ip", "priority": 1}],
  "consume": ["ip"],
  "breach": [{"when": {"status": 429}, "retryTo": "origin-entry", "maxAttempts": 4}]}`
	// v1Target is a v1 TargetSpec, the shape of a legacy "spec:" row.
	v1Target = `{"application": "x", "name": "x.mailer", "version": 2,
  "budgets": [
    {"id": "per-second", "cap": 20, "periodSeconds": 1, "alignment": "calendar", "confidence": "documented", "source": "https://smtp.example/limits", "asOf": "2026-09-01"},
    {"id": "per-day", "cap": 10000, "periodSeconds": 86400, "alignment": "rolling", "confidence": "inferred"}],
  "cost": {"field": "recipients", "default": 1, "max": 5},
  "lanes": [{"name": "main", "cap": "ceiling", "default": true}]}`
	// v1Refused maps, but its node name can never name a queue.
	v1Refused = `{"application": "x", "name": "bad", "version": 1,
  "nodes": {"Bad_Node": {"entry": true, "cost": {"field": "n", "default": 1, "max": 1},
    "budgets": [{"id": "g", "cap": 10, "periodSeconds": 1, "alignment": "calendar", "confidence": "assumed"}]}},
  "edges": [], "consume": ["Bad_Node"]}`
)

// relayPlan compiles a stored row the way a relay reads it: a "spec:" row
// as a target, a "graph:" row as a graph, v1 bodies mapped.
func relayPlan(t *testing.T, app, name string, body []byte, legacy bool) []byte {
	t.Helper()
	res, err := libdeclare.Compile(libdeclare.Input{App: app, Name: name, Body: body, Target: legacy})
	if err != nil {
		t.Fatalf("compiling %s/%s: %v", app, name, err)
	}
	if res.Plan == nil {
		t.Fatalf("%s/%s is refused: %s", app, name, res.ErrorText())
	}
	b, err := json.Marshal(res.Plan)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawRow reads one kv row; found is false when it does not exist.
func rawRow(t *testing.T, c *queen.Client, ns, key string) (body []byte, found bool) {
	t.Helper()
	res, err := c.KV(context.Background(), queen.KVGet(ns, key))
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("reading %s: %v", key, err)
	}
	return res.Results[0].Value, res.Results[0].Found
}

func putRaw(t *testing.T, c *queen.Client, ns, key, body string) {
	t.Helper()
	res, err := c.KV(context.Background(), queen.KVPut(ns, key, json.RawMessage(body), queen.PutOpts{Forever: true}))
	if err != nil || res.Err() != nil {
		t.Fatalf("writing %s: %v %v", key, err, res.Err())
	}
}

// startServer starts a gate-api on b and returns its log.
func startServer(t *testing.T, b *gatetest.Broker) *apitest.LogBuffer {
	t.Helper()
	cfg := config.Default()
	cfg.QueenURL, cfg.KVNamespace, cfg.Refresh = b.URL, b.Namespace(), 200*time.Millisecond
	log := &apitest.LogBuffer{}
	s, err := server.New(cfg, slog.New(slog.NewJSONHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return log
}

// At start, gate-api re-saves stored v1 documents in v2 shape: a v1
// GraphSpec row is rewritten in place, a legacy spec: row moves to graph:,
// and each compiles to the plan the relay compiled before. Documents that
// do not compile, and v1 targets shadowed by a stored graph, stay as they
// are.
func TestBootResavesV1Documents(t *testing.T) {
	t.Parallel()
	b := gatetest.NewBroker(t)
	t.Cleanup(apitest.SharedIdleClose)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	ns, app := b.Namespace(), "a"+apitest.RandomHex(5)
	st := store.New(c, ns)
	shadowing := `{"application": "x", "graph": "both", "version": 1, "nodes": {"in": {"ingress": true, "budgets": [{"count": 5, "timeMs": 1000}], "egress": "x.out"}}, "paths": [{"name": "main", "nodes": ["in"]}]}`
	putRaw(t, c, ns, plan.DocumentKey(app, "air"), v1Graph)
	putRaw(t, c, ns, plan.LegacyTargetKey(app, "mailer"), v1Target)
	putRaw(t, c, ns, plan.DocumentKey(app, "bad"), v1Refused)
	putRaw(t, c, ns, plan.DocumentKey(app, "both"), shadowing)
	putRaw(t, c, ns, plan.LegacyTargetKey(app, "both"), v1Target)
	wantAir := relayPlan(t, app, "air", []byte(v1Graph), false)
	wantMailer := relayPlan(t, app, "mailer", []byte(v1Target), true)
	beforeBoth, _ := rawRow(t, c, ns, plan.DocumentKey(app, "both"))

	log := startServer(t, b)
	for _, key := range []string{plan.DocumentKey(app, "air"), plan.LegacyTargetKey(app, "mailer")} {
		if !strings.Contains(log.String(), `"from":"`+key+`"`) {
			t.Errorf("the log does not say %s was re-saved:\n%s", key, log.String())
		}
	}

	checkV2 := func(name string, want []byte) {
		t.Helper()
		body, found := rawRow(t, c, ns, plan.DocumentKey(app, name))
		if !found {
			t.Fatalf("graph:%s:%s is missing after start", app, name)
		}
		if migrate.IsV1(body) {
			t.Fatalf("graph:%s:%s is still v1: %s", app, name, body)
		}
		if _, err := graph.Parse(body); err != nil {
			t.Fatalf("graph:%s:%s is not a v2 document: %v\n%s", app, name, err, body)
		}
		if got := relayPlan(t, app, name, body, false); string(got) != string(want) {
			t.Errorf("%s: the re-saved document compiles to another plan:\n got %s\nwant %s", name, got, want)
		}
	}
	checkV2("air", wantAir)
	checkV2("mailer", wantMailer)
	if _, found := rawRow(t, c, ns, plan.LegacyTargetKey(app, "mailer")); found {
		t.Errorf("the legacy spec row of mailer survived its move to graph:")
	}
	if body, _ := rawRow(t, c, ns, plan.DocumentKey(app, "bad")); !declare.SameJSON(body, []byte(v1Refused)) {
		t.Errorf("a v1 document that does not compile was rewritten: %s", body)
	}
	if body, _ := rawRow(t, c, ns, plan.DocumentKey(app, "both")); string(body) != string(beforeBoth) {
		t.Errorf("the stored graph shadowing a v1 target was rewritten: %s", body)
	}
	if _, found := rawRow(t, c, ns, plan.LegacyTargetKey(app, "both")); !found {
		t.Errorf("a v1 target shadowed by a stored graph was deleted")
	}

	// A second start finds nothing to do and changes nothing.
	before, err := st.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, b)
	after, err := st.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Documents) != len(after.Documents) {
		t.Fatalf("a second start changed the store: %d documents, then %d", len(before.Documents), len(after.Documents))
	}
	for i := range before.Documents {
		if before.Documents[i].Key != after.Documents[i].Key || string(before.Documents[i].Body) != string(after.Documents[i].Body) {
			t.Errorf("a second start rewrote %s", before.Documents[i].Key)
		}
	}
}

// A re-save never overwrites a row that changed after it was listed: the
// write is conditional on the version read.
func TestResaveSkipsAChangedRow(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	ctx := context.Background()
	putRaw(t, h.Client, h.NS, plan.LegacyTargetKey(h.App, "mailer"), v1Target)
	listing, err := h.Store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := listing.Find(h.App, "mailer")
	if !ok || !d.Legacy {
		t.Fatalf("the legacy row is not listed: %+v", listing)
	}
	// Someone declares a v2 graph of the same name after the listing.
	doc := h.Target("mailer", 10)
	doc["version"] = 3
	h.Expect(h.Do("PUT", h.GraphURL("mailer"), doc), 200)
	stored, _ := rawRow(t, h.Client, h.NS, plan.DocumentKey(h.App, "mailer"))
	if err := declare.ResaveOne(ctx, h.Plane(), d); !errors.Is(err, declare.ErrChanged) {
		t.Fatalf("the re-save of a legacy row shadowed after the listing: %v, want %v", err, declare.ErrChanged)
	}
	if body, _ := rawRow(t, h.Client, h.NS, plan.DocumentKey(h.App, "mailer")); string(body) != string(stored) {
		t.Errorf("the re-save overwrote a v2 graph written after the listing: %s", body)
	}
	if _, found := rawRow(t, h.Client, h.NS, plan.LegacyTargetKey(h.App, "mailer")); !found {
		t.Errorf("the legacy row was deleted although its graph: put did not happen")
	}
	// A v1 graph row rewritten after the listing is not replaced either.
	putRaw(t, h.Client, h.NS, plan.DocumentKey(h.App, "air"), v1Graph)
	listing, err = h.Store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, _ = listing.Find(h.App, "air")
	changed := strings.Replace(v1Graph, `"version": 3`, `"version": 4`, 1)
	putRaw(t, h.Client, h.NS, plan.DocumentKey(h.App, "air"), changed)
	if err := declare.ResaveOne(ctx, h.Plane(), d); !errors.Is(err, declare.ErrChanged) {
		t.Fatalf("the re-save of a row that changed after the listing: %v, want %v", err, declare.ErrChanged)
	}
	if body, _ := rawRow(t, h.Client, h.NS, plan.DocumentKey(h.App, "air")); !declare.SameJSON(body, []byte(changed)) {
		t.Errorf("the re-save overwrote a row that changed after the listing: %s", body)
	}
}
