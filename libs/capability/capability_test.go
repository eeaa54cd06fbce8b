package capability

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queen-mq/gate/libs/gatetest"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/queen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }

func probe(t *testing.T, opts ...miniqueen.Option) Report {
	t.Helper()
	mq := miniqueen.RunT(t, opts...)
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	return Probe(ctx, c, Options{Namespace: "gate", Owner: "test"})
}

// The probe finds what each broker has: everything on miniqueen, and on a
// miniqueen switched to an older broker's behaviour exactly what it lacks,
// named with the fix.
func TestProbeFindsWhatEachBrokerLacks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    []miniqueen.Option
		missing []Need // required needs missing
		riders  bool
		fix     []string // words the problem sentence must carry
	}{
		{name: "miniqueen has everything", riders: true},
		{name: "no kv store (Queen 0.15.1, 1.0.4 without QUEEN_KV_ENABLED)", opts: []miniqueen.Option{miniqueen.WithoutKV()},
			missing: []Need{KV}, fix: []string{"QUEEN_KV_ENABLED=true", "no_such_route"}},
		{name: "no depth route", opts: []miniqueen.Option{miniqueen.WithoutDepth()}, riders: true,
			missing: []Need{Depth}, fix: []string{"1.0.4", "depth"}},
		{name: "a lease released by counting acks", opts: []miniqueen.Option{miniqueen.WithLeaseReleasedByAckCount()}, riders: true,
			missing: []Need{Ack}, fix: []string{"stayed leased", "one ack per message"}},
		{name: "Queen 0.15.1: all three", opts: []miniqueen.Option{miniqueen.WithoutKV(), miniqueen.WithoutDepth(), miniqueen.WithLeaseReleasedByAckCount()},
			missing: []Need{KV, Depth, Ack}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := probe(t, tc.opts...)
			if r.Err != nil {
				t.Fatalf("the probe did not finish: %v", r.Err)
			}
			if len(r.Checks) != len(Needs) {
				t.Fatalf("checks %+v, want every need decided", r.Checks)
			}
			var missing []Need
			for _, c := range r.Missing() {
				missing = append(missing, c.Need)
			}
			if strings.Join(needs(missing), ",") != strings.Join(needs(tc.missing), ",") {
				t.Fatalf("missing %v, want %v (checks %+v)", missing, tc.missing, r.Checks)
			}
			if got, _ := r.Has(Riders); got != tc.riders {
				t.Fatalf("riders present %v, want %v", got, tc.riders)
			}
			if r.OK() != (len(tc.missing) == 0) {
				t.Fatalf("OK() = %v with %v missing", r.OK(), tc.missing)
			}
			p := r.Problem()
			if len(tc.missing) == 0 && p != "" {
				t.Fatalf("Problem() = %q with nothing missing", p)
			}
			for _, w := range tc.fix {
				if !strings.Contains(p, w) {
					t.Errorf("the problem %q does not say %q", p, w)
				}
			}
			if len(tc.missing) > 0 && (!strings.Contains(p, r.URL) || !strings.Contains(p, miniqueen.DefaultVersion)) {
				t.Errorf("the problem %q does not name the broker and its version", p)
			}
		})
	}
}

func needs(ns []Need) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = string(n)
	}
	return out
}

// A broker that does not answer leaves every need unknown: the probe says
// it could not finish, never that something is missing.
func TestAnUnreachableBrokerIsUnknownNotMissing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := queen.New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	r := Probe(t.Context(), c, Options{Namespace: "gate", Owner: "test"})
	if r.Err == nil || len(r.Checks) != 0 || len(r.Missing()) != 0 || r.OK() {
		t.Fatalf("report %+v, want the probe unfinished with nothing decided", r)
	}
}

// A probe run twice on one broker (a restart, a reconnect) finds the same:
// its scratch partition and keys are its own each time.
func TestAProbeRunsAgainOnTheSameBroker(t *testing.T) {
	t.Parallel()
	mq := miniqueen.RunT(t)
	c, err := queen.New(mq.URL())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := Probe(t.Context(), c, Options{Namespace: "gate", Owner: "same"})
		if !r.OK() {
			t.Fatalf("probe %d: %+v", i, r)
		}
	}
}
