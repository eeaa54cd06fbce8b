package recorder

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsScrape: the series the alert rules read are exported with the
// values the drain reported, beside the Go runtime collector.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.drainFailed(1)
	m.drainFailed(2)
	m.drained(Drained{Rows: 3, Samples: 5, Rollups: 2, Traces: 1}, 1700000000)
	m.drainFailed(1)
	m.watchLost("a", "g", "n", 42)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	body := string(b)
	for _, want := range []string{
		`gate_recorder_drains_total{outcome="error"} 3`,
		`gate_recorder_drains_total{outcome="ok"} 1`,
		`gate_recorder_rows_written_total{kind="samples"} 5`,
		`gate_recorder_last_drain_success_timestamp_seconds 1.7e+09`,
		`gate_recorder_drain_failures_consecutive 1`,
		`gate_recorder_watch_lost_items{app="a",graph="g",node="n"} 42`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
