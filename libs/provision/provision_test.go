package provision

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/queen-mq/gate/libs/declare"
	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/plan"
	"github.com/queen-mq/gate/libs/queen"
)

// airbnbDoc is the product description's airbnb graph under application
// app: a Gate-owned ingress (prices), an application-owned ingress
// (photos), an interior node (ip) and an egress queue.
func airbnbDoc(app string) []byte {
	return []byte(strings.ReplaceAll(`{
  "application": "APP", "graph": "airbnb", "version": 3,
  "nodes": {
    "prices": { "ingress": true, "cost": { "path": "payload.rooms", "default": 1, "max": 50 },
                "budgets": [ { "id": "prices-1s", "count": 100, "timeMs": 1000 } ] },
    "photos": { "ingress": { "queue": "APP.airbnb.photos.in" },
                "budgets": [ { "id": "photos-1m", "count": 300, "timeMs": 60000, "subWindows": 60 } ] },
    "ip": { "budgets": [ { "id": "ip-10s", "count": 1500, "timeMs": 10000, "subWindows": 10, "sharedKey": "egress-ip" } ],
            "egress": { "queue": "APP.airbnb.out", "group": "APP-workers" } }
  },
  "paths": [
    { "name": "prices", "share": 1.0, "nodes": ["prices", "ip"] },
    { "name": "photos", "share": 0.5, "nodes": ["photos", "ip"] }
  ]
}`, "APP", app))
}

type fixture struct {
	client *queen.Client
	broker *gatetest.Broker
	app    string
	plan   *plan.Plan
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	b := gatetest.NewBroker(t)
	c, err := queen.New(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	app := "p" + b.Prefix[len(b.Prefix)-8:]
	res, err := declare.Compile(declare.Input{Body: airbnbDoc(app)})
	if err != nil || res.Plan == nil {
		t.Fatalf("compiling the airbnb graph: %v %v", err, res)
	}
	return fixture{client: c, broker: b, app: app, plan: res.Plan}
}

// detail reads a queue's namespace and options back through the queue
// detail route; found is false when the broker does not know the queue.
func (f fixture) detail(t *testing.T, name string) (namespace string, options map[string]any, found bool) {
	t.Helper()
	qi, err := f.client.Queue(context.Background(), name)
	if queen.IsNotFound(err) {
		return "", nil, false
	}
	if err != nil {
		t.Fatalf("reading queue %s: %v", name, err)
	}
	var d struct {
		Queue struct {
			Namespace string         `json:"namespace"`
			Config    map[string]any `json:"config"`
		} `json:"queue"`
	}
	if err := json.Unmarshal(qi.Raw, &d); err != nil {
		t.Fatalf("queue %s detail: %v", name, err)
	}
	return d.Queue.Namespace, d.Queue.Config, true
}

// appQueue configures an application's own queue with distinctive options
// that provisioning must not change.
func (f fixture) appQueue(t *testing.T, name string) map[string]any {
	t.Helper()
	o := queen.DefaultQueueOptions()
	o.LeaseTime = queen.Int(77)
	o.RetryLimit = queen.Int(9)
	o.RetentionEnabled = queen.Bool(false)
	if _, err := f.client.Configure(context.Background(), queen.ConfigureRequest{Queue: name, Options: o}); err != nil {
		t.Fatalf("configuring the application's queue %s: %v", name, err)
	}
	_, opts, _ := f.detail(t, name)
	if opts["leaseTime"] != float64(77) || opts["retryLimit"] != float64(9) {
		t.Fatalf("the application's queue %s did not take its options: %v", name, opts)
	}
	return opts
}

func sameOptions(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// After provisioning the airbnb graph, the Gate-owned queues carry Gate's
// retention policy, lease and retry limit; the application-owned ingress
// keeps exactly its options (or stays absent); an existing egress keeps
// exactly its options and a missing one is created. Provisioning twice is
// the same as once.
func TestQueuesAirbnb(t *testing.T) {
	t.Parallel()
	for _, existing := range []bool{false, true} {
		name := "egress and application ingress absent"
		if existing {
			name = "egress and application ingress configured by their owner"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ingress, egressQ := f.app+".airbnb.photos.in", f.app+".airbnb.out"
			var before map[string]map[string]any
			if existing {
				before = map[string]map[string]any{ingress: f.appQueue(t, ingress), egressQ: f.appQueue(t, egressQ)}
			}
			opts := Options{LeaseSeconds: 25, RetryLimit: 4}
			for range 2 {
				if err := Queues(context.Background(), f.client, f.plan, opts); err != nil {
					t.Fatalf("Queues: %v", err)
				}
			}

			owned := []string{plan.IngressQueue(f.app, "airbnb", "prices"), plan.InteriorQueue(f.app, "airbnb", "ip")}
			for _, q := range f.plan.Queues {
				if q.OwnedByGate && q.Name != owned[0] && q.Name != owned[1] {
					owned = append(owned, q.Name)
				}
			}
			for _, q := range owned {
				ns, c, found := f.detail(t, q)
				if !found {
					t.Fatalf("Gate-owned queue %s was not provisioned", q)
				}
				if ns != plan.Namespace(f.app) || c["retentionEnabled"] != true || c["completedRetentionSeconds"] != float64(2592000) ||
					c["retentionSeconds"] != float64(0) || c["maxWaitTimeSeconds"] != float64(0) || c["leaseTime"] != float64(25) || c["retryLimit"] != float64(4) {
					t.Fatalf("Gate-owned queue %s: namespace %q options %v", q, ns, c)
				}
			}

			_, c, found := f.detail(t, ingress)
			switch {
			case !existing && found:
				t.Fatalf("the application-owned ingress %s was created: %v", ingress, c)
			case existing && !sameOptions(c, before[ingress]):
				t.Fatalf("the application-owned ingress %s was reconfigured: %v, was %v", ingress, c, before[ingress])
			}
			_, c, found = f.detail(t, egressQ)
			switch {
			case !found:
				t.Fatalf("the egress queue %s was not created", egressQ)
			case existing && !sameOptions(c, before[egressQ]):
				t.Fatalf("the existing egress queue %s was reconfigured: %v, was %v", egressQ, c, before[egressQ])
			case !existing && c["retentionEnabled"] == true:
				t.Fatalf("the created egress queue %s got Gate's retention policy: %v", egressQ, c)
			}
		})
	}
}

// A broker refusing to configure a Gate-owned queue fails provisioning with
// an error naming the queue.
func TestQueuesConfigureRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	mini := f.broker.RequireMini(t, "fault injection")
	mini.SetError("configure", http.StatusInternalServerError)
	err := Queues(context.Background(), f.client, f.plan, Options{LeaseSeconds: 10, RetryLimit: 3})
	if err == nil || !strings.Contains(err.Error(), plan.IngressQueue(f.app, "airbnb", "prices")) {
		t.Fatalf("error %v, want one naming the first Gate-owned queue", err)
	}
}

func TestOwnedQueueOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in                Options
		lease, retryLimit int64
	}{
		{Options{LeaseSeconds: 10, RetryLimit: 3}, 10, 3},
		{Options{LeaseSeconds: 3600, RetryLimit: 0}, 3600, 0},
		{Options{}, 1, 0},
		{Options{LeaseSeconds: -5, RetryLimit: -1}, 1, 0},
	}
	for _, c := range cases {
		o := OwnedQueueOptions(c.in)
		if o.LeaseTime != queen.Int(c.lease) || o.RetryLimit != queen.Int(c.retryLimit) || o.RetentionEnabled != queen.Bool(true) ||
			o.CompletedRetentionSeconds != queen.Int(2592000) || o.RetentionSeconds != queen.Int(0) || o.MaxWaitTimeSeconds != queen.Int(0) {
			t.Fatalf("OwnedQueueOptions(%+v) = %+v", c.in, o)
		}
		if !o.DeadLetterQueue.Set || !o.RetryDelay.Set {
			t.Fatalf("the complete option set must be sent (a configure replaces every option): %+v", o)
		}
	}
}

// A configure the broker refuses stops provisioning with an *Error naming
// that queue and the Gate-owned queues configured before it.
func TestAFailedConfigureNamesItsQueueAndWhatWasConfigured(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	target, err := url.Parse(f.broker.URL)
	if err != nil {
		t.Fatal(err)
	}
	var configures atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/configure") && configures.Add(1) == 2 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"configure refused"}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	c, err := queen.New(front.URL)
	if err != nil {
		t.Fatal(err)
	}
	var owned []string
	for _, q := range f.plan.Queues {
		if q.OwnedByGate {
			owned = append(owned, q.Name)
		}
	}
	if len(owned) < 2 {
		t.Fatalf("the fixture has %d Gate-owned queues, want 2 or more", len(owned))
	}
	err = Queues(context.Background(), c, f.plan, Options{LeaseSeconds: 10})
	var pe *Error
	if !errors.As(err, &pe) || pe.Queue != owned[1] || len(pe.Configured) != 1 || pe.Configured[0] != owned[0] || !strings.Contains(err.Error(), owned[1]) {
		t.Fatalf("provisioning with the second configure refused: %#v (%v); want an *Error naming %s after %s", pe, err, owned[1], owned[0])
	}
}
