package deploy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	apiconfig "github.com/queen-mq/gate/gate-api/config"
	"github.com/queen-mq/gate/gate-api/server"
	recorderconfig "github.com/queen-mq/gate/gate-recorder/config"
	"github.com/queen-mq/gate/gate-recorder/recorder"
	"github.com/queen-mq/gate/gate-relay/ops"
	"github.com/queen-mq/gate/libs/knob"
	"github.com/queen-mq/gate/libs/store"
)

// TestOperationsGuideListsEveryKnob: every variable a binary's loader
// reads has a row in docs/operations.md.
func TestOperationsGuideListsEveryKnob(t *testing.T) {
	guide := readRoot(t, "docs/operations.md")
	for bin, set := range knobsRead(t) {
		for k := range set {
			if !strings.Contains(guide, "| `"+k+"` |") {
				t.Errorf("%s reads %s, which docs/operations.md has no row for", bin, k)
			}
		}
	}
}

type relaySource struct{}

func (relaySource) Snapshot() store.RelayStatus {
	return store.RelayStatus{Replica: "r", Graphs: []store.GraphStatus{{App: "a", Graph: "g", Version: 1, Running: true,
		Stages: []store.StageStatus{{Path: "p", Node: "n"}}}}}
}
func (relaySource) BrokerHealth(context.Context) error { return errors.New("no broker in this test") }

func scrapeNames(t *testing.T, h http.Handler, paths ...string) map[string]bool {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, p := range paths {
		if res, err := srv.Client().Get(srv.URL + p); err == nil {
			res.Body.Close()
		}
	}
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// exported is every metric name the Gate binaries export: scraped from
// their real handlers (series that exist once something happened are
// added from the names their sources register).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names := scrapeNames(t, ops.Handler(relaySource{}))
	for k := range scrapeNames(t, recorder.NewMetrics().Handler()) {
		names[k] = true
	}
	cfg, err := apiconfig.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range scrapeNames(t, srv.Handler(), "/health") {
		names[k] = true
	}
	for _, dir := range []string{"gate-api/server", "gate-api/internal/*", "gate-recorder/recorder", "gate-relay/ops"} {
		files, _ := filepath.Glob(filepath.Join("..", dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, _ := os.ReadFile(f)
			for _, m := range regexp.MustCompile(`Name:\s+"(gate_[a-z0-9_]+)"`).FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
		}
	}
	for _, want := range []string{"go_goroutines", "gate_relay_stage_wedged_total", "gate_relay_broker_up", "gate_api_declares_total", "gate_recorder_watch_lost_items"} {
		if !names[want] {
			t.Fatalf("the exported set lacks %s (found %d names)", want, len(names))
		}
	}
	return names
}

// TestOperationsGuideListsEveryMetric: every gate_ metric has a row.
func TestOperationsGuideListsEveryMetric(t *testing.T) {
	guide := readRoot(t, "docs/operations.md")
	for n := range exported(t) {
		if strings.HasPrefix(n, "gate_") && !strings.Contains(guide, "| `"+n+"` |") {
			t.Errorf("%s is exported but docs/operations.md has no row for it", n)
		}
	}
}

type rules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// promFuncs are the PromQL words the rules use that are not metrics.
var promFuncs = map[string]bool{"increase": true, "rate": true, "absent": true, "sum": true, "max": true, "min": true,
	"by": true, "time": true, "delta": true, "job": true, "status": true, "app": true, "graph": true, "node": true, "instance": true}

// TestAlertRules: docs/alerts.yaml parses as Prometheus rule groups, has
// the alerts the guide promises, each with a severity and a runbook that
// is a heading of the guide, and every metric an expression names is one
// a Gate binary exports (or Prometheus's own up).
func TestAlertRules(t *testing.T) {
	var r rules
	if err := yaml.Unmarshal([]byte(readRoot(t, "docs/alerts.yaml")), &r); err != nil {
		t.Fatalf("docs/alerts.yaml: %v", err)
	}
	names := exported(t)
	names["up"] = true
	guide := readRoot(t, "docs/operations.md")
	seen := map[string]bool{}
	ident := regexp.MustCompile(`[a-zA-Z_][a-zA-Z0-9_]*`)
	for _, g := range r.Groups {
		for _, a := range g.Rules {
			seen[a.Alert] = true
			if a.Expr == "" || a.Labels["severity"] == "" {
				t.Errorf("%s: expr %q, severity %q", a.Alert, a.Expr, a.Labels["severity"])
			}
			// Strip label matchers' values and durations before reading names.
			expr := regexp.MustCompile(`"[^"]*"|\[[^\]]*\]|\b[0-9.]+\b`).ReplaceAllString(a.Expr, " ")
			metrics := 0
			for _, w := range ident.FindAllString(expr, -1) {
				if promFuncs[w] {
					continue
				}
				if !names[w] {
					t.Errorf("%s: %s names %s, which no Gate binary exports", a.Alert, a.Expr, w)
					continue
				}
				metrics++
			}
			if metrics == 0 {
				t.Errorf("%s: %s names no metric", a.Alert, a.Expr)
			}
			rb := a.Annotations["runbook"]
			anchor, ok := strings.CutPrefix(rb, "docs/operations.md#")
			if !ok || !strings.Contains(guide, "\n### "+strings.ReplaceAll(anchorTitle(anchor, guide), "\n", "")) {
				t.Errorf("%s: runbook %q is not a heading of docs/operations.md", a.Alert, rb)
			}
		}
	}
	for _, want := range []string{"GateStageWedged", "GateRelayAbsent", "GateAdmissionRefusalsSustained", "GateRecorderLag", "GateLostSamples", "GateBrokerUnreachable"} {
		if !seen[want] {
			t.Errorf("docs/alerts.yaml has no %s", want)
		}
	}
}

// anchorTitle finds the "### " heading of guide whose GitHub anchor is a.
func anchorTitle(a, guide string) string {
	for _, line := range strings.Split(guide, "\n") {
		title, ok := strings.CutPrefix(line, "### ")
		if !ok {
			continue
		}
		slug := strings.ToLower(title)
		slug = regexp.MustCompile(`[^a-z0-9 -]`).ReplaceAllString(slug, "")
		if strings.ReplaceAll(slug, " ", "-") == a {
			return title
		}
	}
	return "\x00no heading for #" + a
}

// TestOperationsGuideDefaultsAndRanges: the row of each integer knob
// defined in libs/knob (and gate-recorder's) states its default and its
// clamp as the code defines them.
func TestOperationsGuideDefaultsAndRanges(t *testing.T) {
	guide := readRoot(t, "docs/operations.md")
	rows := map[string]string{}
	for _, line := range strings.Split(guide, "\n") {
		if m := regexp.MustCompile("^\\| `([A-Z_]+)` \\| ([^|]*) \\| ([^|]*) \\|").FindStringSubmatch(line); m != nil {
			rows[m[1]] = strings.TrimSpace(m[2]) + " | " + strings.TrimSpace(m[3])
		}
	}
	pow := func(n int) string {
		if n == knob.MaxLaneCapacity {
			return "2^30"
		}
		return strconv.Itoa(n)
	}
	for _, k := range []knob.Int{knob.StageBatch, knob.StageConcurrency, knob.LaneCapacity, knob.LeaseSeconds, knob.RetryLimit,
		knob.ReconcileSeconds, knob.StageLingerMs, knob.PollTimeoutSeconds, knob.MaxParkMs, knob.InteriorSeedSkewSeconds,
		knob.SignalPollMs, knob.StatusSeconds, knob.BrokerTimeout, knob.PushBatch, knob.PGPort, recorderconfig.FlushMs} {
		row, ok := rows[k.Name]
		if !ok {
			t.Errorf("no row for %s", k.Name)
			continue
		}
		def, rng, _ := strings.Cut(row, " | ")
		if !strings.HasPrefix(def, strconv.Itoa(k.Default)) {
			t.Errorf("%s: the guide says default %q, the code %d", k.Name, def, k.Default)
		}
		if want := pow(k.Min) + ".." + pow(k.Max); rng != want {
			t.Errorf("%s: the guide says range %q, the code %s", k.Name, rng, want)
		}
	}
	for _, k := range []knob.Text{knob.QueenURL, knob.KVNamespace, knob.LogLevel, knob.PublicBind, knob.PublicURL, knob.OIDCIssuer,
		knob.PGUser, knob.PGDatabase, knob.HistorySchema, recorderconfig.Bind} {
		if def, _, _ := strings.Cut(rows[k.Name], " | "); def != "`"+k.Default+"`" {
			t.Errorf("%s: the guide says default %q, the code %q", k.Name, def, k.Default)
		}
	}
}
