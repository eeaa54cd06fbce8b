package ops

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/queen-mq/gate/libs/store"
)

// The per-graph families: one series per graph (running) and per stage
// (every counter, holding, each denial), so at 10,000 graphs a replica
// exports some 200,000 series. Built as client_golang metrics they cost a
// label-pair slice, a metric and a protobuf message each on every scrape
// (half of an idle relay's sampled heap at 6,600 graphs was a scrape in
// flight), so they are written straight from the snapshot to the answer in
// the text exposition format, family after family, instead; the
// registry's own families (runtime, process, the relay's few gauges) are
// encoded first by expfmt. Names and help are minted here once.
var (
	familyRunning = family{"gate_relay_graph_running", "gauge", "1 when the graph's stages run on this replica."}
	familyHolding = family{"gate_relay_stage_holding", "gauge", "Claims the stage holds now: leased and renewed while their window does not open, their partition waiting while the stage's workers pop others."}
	familyDenials = family{"gate_relay_denials_total", "counter", "Windows a budget refused at the stage, by budget and reason: ceiling (the sub-window is full), share (the path's share of it is spent), backoff (a backoff spent the counter until its Retry-After)."}
	// familyCounters has one family per stageCounters entry, in its order.
	familyCounters = func() []family {
		fs := make([]family, len(stageCounters))
		for i, c := range stageCounters {
			fs[i] = family{"gate_relay_stage_" + c.name + "_total", "counter", "Stage counter " + c.name + " on this replica (lifetime of the graph runtime)."}
		}
		return fs
	}()
)

// family is one metric family's name, type and help line.
type family struct{ name, kind, help string }

// seriesWriter writes samples in the text exposition format (version
// 0.0.4) with one scratch buffer for the whole answer.
type seriesWriter struct {
	w   *bufio.Writer
	buf []byte
}

// head writes the family's HELP and TYPE lines.
func (s *seriesWriter) head(f family) {
	s.buf = append(s.buf[:0], "# HELP "...)
	s.buf = append(s.buf, f.name...)
	s.buf = append(s.buf, ' ')
	s.buf = appendEscaped(s.buf, f.help, false)
	s.buf = append(s.buf, "\n# TYPE "...)
	s.buf = append(s.buf, f.name...)
	s.buf = append(s.buf, ' ')
	s.buf = append(s.buf, f.kind...)
	s.buf = append(s.buf, '\n')
	_, _ = s.w.Write(s.buf)
}

// sample writes name{k1="v1",…} value; labels alternate names and values,
// names in the order the registry's encoder sorts them (alphabetical).
func (s *seriesWriter) sample(name string, value int64, labels ...string) {
	s.buf = append(s.buf[:0], name...)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			s.buf = append(s.buf, '{')
		} else {
			s.buf = append(s.buf, ',')
		}
		s.buf = append(s.buf, labels[i]...)
		s.buf = append(s.buf, `="`...)
		s.buf = appendEscaped(s.buf, labels[i+1], true)
		s.buf = append(s.buf, '"')
	}
	if len(labels) > 0 {
		s.buf = append(s.buf, '}')
	}
	s.buf = append(s.buf, ' ')
	s.buf = strconv.AppendInt(s.buf, value, 10)
	s.buf = append(s.buf, '\n')
	_, _ = s.w.Write(s.buf)
}

// appendEscaped appends v escaped as the text format asks: a backslash
// and a line feed always, a double quote inside a label value.
func appendEscaped(b []byte, v string, quote bool) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// writeGraphSeries writes every per-graph family of st, each family's
// samples together (the format asks it); a family with no sample is left
// out, as the registry's encoder does.
func writeGraphSeries(s *seriesWriter, st store.RelayStatus) {
	if len(st.Graphs) > 0 {
		s.head(familyRunning)
		for _, g := range st.Graphs {
			v := int64(0)
			if g.Running {
				v = 1
			}
			s.sample(familyRunning.name, v, "app", g.App, "graph", g.Graph, "version", strconv.FormatInt(g.Version, 10))
		}
	}
	stages, denials := 0, 0
	for _, g := range st.Graphs {
		stages += len(g.Stages)
		for _, sg := range g.Stages {
			denials += len(sg.Denials)
		}
	}
	if stages == 0 {
		return
	}
	for i, f := range familyCounters {
		s.head(f)
		of := stageCounters[i].of
		for _, g := range st.Graphs {
			for j := range g.Stages {
				sg := &g.Stages[j]
				s.sample(f.name, of(&sg.Counters), "app", g.App, "graph", g.Graph, "node", sg.Node, "path", sg.Path)
			}
		}
	}
	s.head(familyHolding)
	for _, g := range st.Graphs {
		for _, sg := range g.Stages {
			s.sample(familyHolding.name, int64(sg.Holding), "app", g.App, "graph", g.Graph, "node", sg.Node, "path", sg.Path)
		}
	}
	if denials == 0 {
		return
	}
	s.head(familyDenials)
	for _, g := range st.Graphs {
		for _, sg := range g.Stages {
			for _, d := range sg.Denials {
				s.sample(familyDenials.name, d.Count, "app", g.App, "budget", d.Budget, "graph", g.Graph, "node", sg.Node, "path", sg.Path, "reason", d.Reason)
			}
		}
	}
}

// metricsHandler answers /metrics: the registry's families, then the
// per-graph families from src's snapshot, in the text format (gzipped
// when the scraper accepts it, as promhttp does).
func metricsHandler(reg *prometheus.Registry, src Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mfs, err := reg.Gather()
		if err != nil {
			http.Error(w, "gathering the relay's metrics failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(format))
		var out io.Writer = w
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		bw := bufio.NewWriterSize(out, 64<<10)
		enc := expfmt.NewEncoder(bw, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return // the scraper left; nothing more to say to it
			}
		}
		writeGraphSeries(&seriesWriter{w: bw, buf: make([]byte, 0, 256)}, src.Snapshot())
		_ = bw.Flush()
	})
}

// acceptsGzip reports whether an Accept-Encoding header lists gzip with a
// weight above zero.
func acceptsGzip(h string) bool {
	for part := range strings.SplitSeq(h, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !ok {
			return true
		}
		w, err := strconv.ParseFloat(q, 64)
		return err == nil && w > 0
	}
	return false
}
