package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"the product description's document", []string{"testdata/airbnb.json"}, ExitAccepted},
		{"a v1 target", []string{"testdata/v1-target.json"}, ExitAccepted},
		{"a v1 graph", []string{"testdata/v1-graph.json"}, ExitAccepted},
		{"a refused document", []string{"testdata/refused.json"}, ExitRefused},
		{"a mistyped document", []string{"testdata/mistyped.json"}, ExitRefused},
		{"a missing file", []string{"testdata/nope.json"}, ExitRefused},
		{"one refused among accepted", []string{"testdata/airbnb.json", "testdata/refused.json", "--json"}, ExitRefused},
		{"no files", nil, ExitUsage},
		{"unknown flag", []string{"--yaml", "testdata/airbnb.json"}, ExitUsage},
		{"flag without value", []string{"testdata/airbnb.json", "--app"}, ExitUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if code, out, errOut := run(t, tc.args...); code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
		})
	}
}

func TestTextOutput(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "testdata/airbnb.json")
	if code != ExitAccepted {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"testdata/airbnb.json: accepted (channel/airbnb version 3)",
		"warning [window-head-of-line] /nodes/photos/budgets/1:",
		"not evaluated without a broker and the other graphs: ingress-owner, version-bump, version-order, ingress-queue, ingress-retention, single-partition, egress-owner, queue-cross-graph, shared-conflict-graph",
		"ip.ip-10s 1500/10000ms = 10 sub-windows of 150 per 1s, key b:channel:shared:egress-ip",
		`ceilings {"photos":75,"prices":150}`,
		"photos hop 1 ip share 0.5: gate.channel.airbnb.ip.in -> channel.airbnb.out (group gate.channel.airbnb.photos.ip, batch 75, workers 1)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "testdata/refused.json", "testdata/mistyped.json")
	if code != ExitRefused {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"testdata/refused.json: REFUSED",
		"error   [budget-count] /nodes/in/budgets/0/count: budget \"global\" of node \"in\" has count 0",
		"testdata/mistyped.json: REFUSED",
		`error   [parse] /nodes/in/budgets/0/count: expected a whole number, got "100"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "queues (namespace") {
		t.Errorf("a refused file printed a plan:\n%s", out)
	}
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "--json", "testdata/airbnb.json", "testdata/refused.json", "testdata/v1-target.json")
	if code != ExitRefused {
		t.Fatalf("exit %d", code)
	}
	var reports []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line is not JSON: %v\n%s", err, sc.Text())
		}
		reports = append(reports, r)
	}
	if len(reports) != 3 {
		t.Fatalf("%d lines, want one per file", len(reports))
	}
	for _, r := range reports {
		for _, k := range []string{"file", "accepted", "errors", "warnings", "migration", "unchecked", "plan"} {
			if _, ok := r[k]; !ok {
				t.Errorf("%v lacks %q", r["file"], k)
			}
		}
	}
	airbnb, refused, v1 := reports[0], reports[1], reports[2]
	if airbnb["accepted"] != true || airbnb["plan"] == nil || len(airbnb["errors"].([]any)) != 0 {
		t.Errorf("airbnb %v", airbnb)
	}
	ceil := airbnb["plan"].(map[string]any)["resolved"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["budgets"].([]any)[0].(map[string]any)["ceilings"].(map[string]any)
	if ceil["photos"] != 75.0 || ceil["prices"] != 150.0 {
		t.Errorf("ip ceilings %v", ceil)
	}
	if refused["accepted"] != false || refused["plan"] != nil {
		t.Errorf("refused %v", refused)
	}
	errs := refused["errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["rule"] != "budget-count" || errs[0].(map[string]any)["numbers"].(map[string]any)["count"] != 0.0 {
		t.Errorf("refused errors %v", errs)
	}
	if v1["accepted"] != true || len(v1["migration"].([]any)) == 0 || v1["plan"].(map[string]any)["migrated"] != true {
		t.Errorf("v1 %v", v1)
	}
}

func TestFlagsPinIdentity(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "--json", "--app=team-b", "--name", "airbnb-2", "testdata/airbnb.json")
	if code != ExitAccepted {
		t.Fatalf("exit %d: %s", code, out)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Plan.Application != "team-b" || r.Plan.Graph != "airbnb-2" || r.Plan.Resolved.Namespace != "gate.team-b" {
		t.Errorf("identity %s/%s", r.Plan.Application, r.Plan.Graph)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	o, err := ParseArgs([]string{"a.json", "--json", "--target", "--app", "x", "--", "--weird.json"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.JSON || !o.Target || o.App != "x" || len(o.Files) != 2 || o.Files[1] != "--weird.json" {
		t.Errorf("%+v", o)
	}
}

// check prints a budget's limits per key, and refuses keys on an unscoped
// budget naming the pointer.
func TestLimitsPerKeyAreChecked(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "../../examples/tiers.json")
	if code != ExitAccepted || !strings.Contains(out, `2 limits per key (a runtime limit wins for the same value): "acme-enterprise"=600, "trial-7"=6`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	doc, err := os.ReadFile("../../examples/tiers.json")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(doc), `"confidence": "assumed" },`, `"confidence": "assumed", "keys": {"a": 5} },`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, bad)
	if code != ExitRefused || !strings.Contains(out, "error   [budget-keys] /nodes/call/budgets/0/keys:") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
