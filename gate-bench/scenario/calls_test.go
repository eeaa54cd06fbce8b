package scenario

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

const relayPage = `# HELP gate_relay_broker_calls_total Broker calls.
# TYPE gate_relay_broker_calls_total counter
gate_relay_broker_calls_total{route="kv"} 3
gate_relay_broker_calls_total{route="kv_incr"} 2
gate_relay_broker_calls_total{route="pop"} 10
gate_relay_broker_calls_total{route="push"} 1
gate_relay_broker_calls_total{route="transaction"} 9
gate_relay_broker_calls_total{route="other"} 4
gate_api_push_broker_calls_total 12
gate_api_push_broker_items_total 1.5e+06
`

func servePage(t *testing.T, page string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(page)) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestSnapReadsTheRelaysCallsByRouteAndCountsIncrInsideKV(t *testing.T) {
	url := servePage(t, relayPage)
	r := &relayCalls{hc: http.DefaultClient, url: url + "/metrics"}
	s, err := r.snap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// kv_incr is a kind of kv call, so the total leaves it out.
	want := Snapshot{Total: 3 + 10 + 1 + 9 + 4, KV: 3, Incr: 2, Txn: 9, Pop: 10, Push: 1}
	if s != want {
		t.Fatalf("snap %+v, want %+v", s, want)
	}
	d, err := snapDoor(context.Background(), http.DefaultClient, url)
	if err != nil || d != (doorCalls{Calls: 12, Items: 1_500_000}) {
		t.Fatalf("snapDoor %+v %v", d, err)
	}
}

func TestAPageWithoutTheCountersIsAnErrorNotZeros(t *testing.T) {
	url := servePage(t, "# nothing here\ngo_goroutines 7\n")
	if _, err := (&relayCalls{hc: http.DefaultClient, url: url}).snap(context.Background()); err == nil {
		t.Fatal("a page without gate_relay_broker_calls_total read as zero calls")
	}
	if _, err := snapDoor(context.Background(), http.DefaultClient, url); err == nil {
		t.Fatal("a page without the door's counters read as zero calls")
	}
}

func TestDoorSplitReadsTheWindowsBucketsNotTheWholeHistory(t *testing.T) {
	before := map[string]float64{
		`gate_api_push_duration_seconds_bucket{le="0.005"}`: 1000,
		`gate_api_push_duration_seconds_bucket{le="0.02"}`:  1000,
		`gate_api_push_duration_seconds_bucket{le="+Inf"}`:  1000,
	}
	// 100 pushes in the window: 90 under 5 ms, 9 under 20 ms, one above.
	after := map[string]float64{
		`gate_api_push_duration_seconds_bucket{le="0.005"}`:    1090,
		`gate_api_push_duration_seconds_bucket{le="0.02"}`:     1099,
		`gate_api_push_duration_seconds_bucket{le="+Inf"}`:     1100,
		`gate_api_push_broker_call_seconds_bucket{le="0.005"}`: 40,
		`gate_api_push_broker_call_seconds_bucket{le="0.02"}`:  50,
		`gate_api_push_broker_call_seconds_bucket{le="+Inf"}`:  50,
	}
	if ms, n, ok := histBound(before, after, "gate_api_push_duration_seconds", 0.99); !ok || ms != 20 || n != 100 {
		t.Errorf("p99 of the window: %v ms over %v (%v), want ≤ 20 ms over 100", ms, n, ok)
	}
	if ms, _, ok := histBound(before, after, "gate_api_push_duration_seconds", 0.999); !ok || !math.IsInf(ms, 1) {
		t.Errorf("p99.9 of the window: %v ms (%v), want +Inf (the one push above 20 ms)", ms, ok)
	}
	if _, _, ok := histBound(before, before, "gate_api_push_duration_seconds", 0.5); ok {
		t.Error("a window with no pushes read as a quantile")
	}
	got := doorSplit(before, after)
	want := "gate-api's histograms: 100 pushes p50 ≤ 5 ms, p99 ≤ 20 ms; its 50 broker calls (2.0 pushes each) p50 ≤ 5 ms, p99 ≤ 20 ms"
	if got != want {
		t.Errorf("doorSplit:\n got %s\nwant %s", got, want)
	}
}
