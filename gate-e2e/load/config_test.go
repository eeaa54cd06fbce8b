package load

import (
	"errors"
	"strings"
	"testing"
)

func TestParseReadsThePositionalsLikeTheReference(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want Config
	}{
		{"load 50 3000 20 is graph load", []string{"load", "50", "3000", "20"}, nil,
			Config{Scenario: ScenarioLoad, Graph: "load", Rate: 50, Total: 3000, Seconds: 20, WindowS: 10, Batch: 200}},
		{"all six", []string{"g1", "20", "200", "12", "5", "50"}, nil,
			Config{Scenario: ScenarioLoad, Graph: "g1", Rate: 20, Total: 200, Seconds: 12, WindowS: 5, Batch: 50}},
		{"a scenario then numbers", []string{"backoff", "100", "2000"}, nil,
			Config{Scenario: ScenarioBackoff, Graph: "backoff", Rate: 100, Total: 2000, Seconds: 20, WindowS: 10, Batch: 200}},
		{"chaos samples until drained", []string{"chaos", "100", "1000"}, nil,
			Config{Scenario: ScenarioChaos, Graph: "chaos", Rate: 100, Total: 1000, Seconds: 56, WindowS: 10, Batch: 200}},
		{"flags anywhere", []string{"--embedded", "replicas", "--json"}, map[string]string{"GATE_URL": "http://x:1"},
			Config{Scenario: ScenarioReplicas, Graph: "replicas", Rate: 50, Total: 3000, Seconds: 20, WindowS: 10, Batch: 200, Embedded: true, JSON: true, GateURL: "http://x:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tc.args, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if got.Scenario != w.Scenario || got.Graph != w.Graph || got.Rate != w.Rate || got.Total != w.Total ||
				got.Seconds != w.Seconds || got.WindowS != w.WindowS || got.Batch != w.Batch || got.Embedded != w.Embedded || got.JSON != w.JSON {
				t.Fatalf("Parse(%v) = %+v, want %+v", tc.args, got, w)
			}
			if w.GateURL != "" && got.GateURL != w.GateURL {
				t.Fatalf("GateURL = %q, want %q", got.GateURL, w.GateURL)
			}
			if got.App != "default" && tc.env["GATE_APP"] == "" {
				t.Fatalf("App = %q, want default", got.App)
			}
		})
	}
}

func TestParseRefusesBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"load", "0"},
		{"load", "50", "x"},
		{"--frobnicate"},
		{"load", "1", "2", "3", "4", "5", "6"},
	} {
		if _, err := Parse(args, func(string) string { return "" }); !errors.Is(err, ErrUsage) {
			t.Errorf("Parse(%v) = %v, want a usage error", args, err)
		}
	}
	if _, err := Parse(nil, func(k string) string {
		if k == "GATE_E2E_KILLS" {
			return "-1"
		}
		return ""
	}); !errors.Is(err, ErrUsage) {
		t.Errorf("a negative GATE_E2E_KILLS was accepted: %v", err)
	}
}

func TestDocumentDeclaresTheCeilingAndShares(t *testing.T) {
	t.Parallel()
	d := Document("default", "load", 50, 10, 200)
	ip := d["nodes"].(map[string]any)[NodeIP].(map[string]any)
	b := ip["budgets"].([]any)[0].(map[string]any)
	if b["count"] != 500 || b["timeMs"] != 10000 || b["subWindows"] != 10 {
		t.Fatalf("binding budget = %v, want 500 per 10000 ms in 10", b)
	}
	paths := d["paths"].([]any)
	if paths[0].(map[string]any)["share"] != 1.0 || paths[1].(map[string]any)["share"] != 0.5 {
		t.Fatalf("paths = %v, want shares 1.0 and 0.5", paths)
	}
}

func TestParseListsTheRelaysToReadTheAdmissionPathOf(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GATE_E2E_RELAYS" {
				return v
			}
			return ""
		}
	}
	cfg, err := Parse([]string{"load"}, env(" http://127.0.0.1:8790, ,http://10.0.0.2:8790 "))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.RelayURLs) != 2 || cfg.RelayURLs[0] != "http://127.0.0.1:8790" || cfg.RelayURLs[1] != "http://10.0.0.2:8790" {
		t.Fatalf("RelayURLs = %q, want the two URLs trimmed, the empty entry dropped", cfg.RelayURLs)
	}
	if _, err := Parse([]string{"load"}, env("127.0.0.1:8790")); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "GATE_E2E_RELAYS") {
		t.Fatalf("a relay entry without a scheme: %v, want a usage error naming GATE_E2E_RELAYS", err)
	}
}
