package ops

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/queen-mq/gate/libs/store"
)

// fleetStatus is n graphs of two stages each, every counter of every
// stage a different value, and one denial per graph.
func fleetStatus(n int) store.RelayStatus {
	st := store.RelayStatus{Replica: "r"}
	for i := range n {
		g := store.GraphStatus{App: "app", Graph: fmt.Sprintf("g%d", i), Version: int64(i + 1), Running: i%3 != 0}
		for j, node := range []string{"in", "out"} {
			base := int64(i*1000 + j*100)
			g.Stages = append(g.Stages, store.StageStatus{Path: "main", Node: node, Holding: i + j,
				Counters: store.Counters{Popped: base + 1, Admitted: base + 2, Deferred: base + 3, Parked: base + 4, Released: base + 5,
					Forwarded: base + 6, Commits: base + 7, Duplicates: base + 8, Foreign: base + 9, Deadlettered: base + 10,
					Leaked: base + 11, Wedged: base + 12, CostAdmitted: base + 13, Ambiguous: base + 14, Held: base + 15}})
		}
		g.Stages[1].Denials = []store.DenialCount{{Budget: "b0", Reason: "ceiling", Count: int64(i + 5)}}
		st.Graphs = append(st.Graphs, g)
	}
	return st
}

// scrape reads /metrics as Prometheus would (gzip accepted) and parses it
// with the format's own parser.
func scrape(t *testing.T, src Source) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(Handler(src))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body io.Reader = res.Body
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("/metrics Content-Type %q, want the text format 0.0.4", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(body)
	if err != nil {
		t.Fatalf("/metrics does not parse as the text format: %v", err)
	}
	return mfs
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// Every stage counter, holding, denial and running flag of the snapshot is
// on /metrics once, with its labels, as Prometheus's own parser reads it;
// label values with quotes, backslashes and line feeds come back as they
// were; the registry's families (runtime, broker calls) are there too.
func TestMetricsCarryEveryGraphSeriesAsTheParserReadsIt(t *testing.T) {
	t.Parallel()
	st := fleetStatus(7)
	st.Graphs[2].App = `we"ird\app` + "\nline"
	st.Graphs[4].Stages[0].Path = `p"\`
	mfs := scrape(t, fixed{st})
	if mfs["go_goroutines"] == nil {
		t.Fatal("/metrics lacks the Go runtime's go_goroutines")
	}
	type key struct{ app, graph, path, node string }
	for i, c := range stageCounters {
		name := "gate_relay_stage_" + c.name + "_total"
		mf := mfs[name]
		if mf == nil || mf.GetType() != dto.MetricType_COUNTER {
			t.Fatalf("%s missing or not a counter: %v", name, mf)
		}
		got := map[key]float64{}
		for _, m := range mf.GetMetric() {
			l := labelsOf(m)
			got[key{l["app"], l["graph"], l["path"], l["node"]}] = m.GetCounter().GetValue()
		}
		want := 0
		for _, g := range st.Graphs {
			for _, sg := range g.Stages {
				want++
				k := key{g.App, g.Graph, sg.Path, sg.Node}
				if v, ok := got[k]; !ok || v != float64(c.of(&sg.Counters)) {
					t.Errorf("%s%v = %v (present %v), want %d", name, k, v, ok, c.of(&sg.Counters))
				}
			}
		}
		if len(mf.GetMetric()) != want {
			t.Errorf("%s has %d series, want %d (one per stage)", name, len(mf.GetMetric()), want)
		}
		_ = i
	}
	hold, den, run := mfs["gate_relay_stage_holding"], mfs["gate_relay_denials_total"], mfs["gate_relay_graph_running"]
	if hold == nil || den == nil || run == nil {
		t.Fatalf("/metrics lacks holding (%v), denials (%v) or running (%v)", hold != nil, den != nil, run != nil)
	}
	if len(hold.GetMetric()) != 14 || len(den.GetMetric()) != 7 || len(run.GetMetric()) != 7 {
		t.Fatalf("series: %d holding, %d denials, %d running; want 14, 7, 7", len(hold.GetMetric()), len(den.GetMetric()), len(run.GetMetric()))
	}
	for _, m := range den.GetMetric() {
		l := labelsOf(m)
		var g store.GraphStatus
		for _, c := range st.Graphs {
			if c.Graph == l["graph"] {
				g = c
			}
		}
		d := g.Stages[1].Denials[0]
		if l["app"] != g.App || l["node"] != "out" || l["budget"] != d.Budget || l["reason"] != d.Reason || m.GetCounter().GetValue() != float64(d.Count) {
			t.Errorf("denial series %v = %v, want %s/out %s %s %d", l, m.GetCounter().GetValue(), g.App, d.Budget, d.Reason, d.Count)
		}
	}
	for _, m := range run.GetMetric() {
		l := labelsOf(m)
		for i, g := range st.Graphs {
			if g.Graph != l["graph"] {
				continue
			}
			want := 0.0
			if g.Running {
				want = 1
			}
			if l["app"] != g.App || l["version"] != fmt.Sprint(i+1) || m.GetGauge().GetValue() != want {
				t.Errorf("running series %v = %v, want app %q version %d value %v", l, m.GetGauge().GetValue(), g.App, i+1, want)
			}
		}
	}
}

// A relay that runs nothing exports no per-graph family, not an empty one.
func TestMetricsWithoutGraphsHaveNoGraphFamilies(t *testing.T) {
	t.Parallel()
	mfs := scrape(t, fixed{store.RelayStatus{Replica: "r"}})
	for name := range mfs {
		if strings.HasPrefix(name, "gate_relay_stage_") || name == "gate_relay_graph_running" || name == "gate_relay_denials_total" {
			t.Errorf("a relay with no graph exports %s", name)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]bool{
		"": false, "gzip": true, "deflate, gzip": true, "gzip;q=0": false, "GZIP; q=0.5": true, "br, identity": false, "gzip;q=nope": false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}

// BenchmarkMetricsScrape is one /metrics scrape of a replica running
// graphs two-stage graphs (allocations and time per scrape).
func BenchmarkMetricsScrape(b *testing.B) {
	for _, n := range []int{1, 100, 6600} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := Handler(fixed{fleetStatus(n)})
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(discard{}, req)
			}
		})
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
