package scenario

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// relayMetrics reads go_goroutines and the resident set as they are, and
// sums gate_relay_stage_forwarded_total over its labelled series; comments,
// other series and unparsable values are skipped.
func TestRelayMetricsSumsTheForwardsOverStages(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 1234
process_resident_memory_bytes 1.5e+08
gate_relay_stage_forwarded_total{app="a",graph="g1",hop="0",node="in",path="main"} 40
gate_relay_stage_forwarded_total{app="a",graph="g1",hop="1",node="out",path="main"} 38
gate_relay_stage_forwarded_total{app="a",graph="g2",hop="0",node="in",path="main"} 2
gate_relay_stage_popped_total{app="a",graph="g1",hop="0",node="in",path="main"} 999
gate_relay_stage_forwarded_total{app="a",graph="g3",hop="0",node="in",path="main"} NaNish
`))
	}))
	defer srv.Close()
	m := relayMetrics(context.Background(), srv.URL)
	if m["go_goroutines"] != 1234 || m["process_resident_memory_bytes"] != 1.5e8 || m["gate_relay_stage_forwarded_total"] != 80 {
		t.Fatalf("relayMetrics = %v, want 1234 goroutines, 1.5e8 bytes, 80 forwards", m)
	}
	if _, ok := m["gate_relay_stage_popped_total"]; ok {
		t.Fatalf("a series the fleet rows do not use was read: %v", m)
	}
	if got := relayMetrics(context.Background(), srv.URL+"/nothing"); len(got) != 0 {
		// The path is appended: /nothing/metrics answers 404 text.
		t.Fatalf("a relay without /metrics gave %v", got)
	}
}
