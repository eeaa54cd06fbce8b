package apply_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/queen-mq/gate/gate-api/apply"
	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/gate-api/server"
	"github.com/queen-mq/gate/libs/miniqueen"
	"github.com/queen-mq/gate/libs/wire"
)

func TestMain(m *testing.M) { apitest.VerifyTestMain(m) }

// write puts doc (with its application and graph named in it, as a file
// kept in git does) in a file of dir.
func write(t *testing.T, dir, name string, h *apitest.Harness, doc map[string]any) string {
	t.Helper()
	doc["application"], doc["graph"] = h.App, strings.TrimSuffix(name, ".json")
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs diff or apply against url and returns the exit code and output.
func run(t *testing.T, cmd, url string, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"--server", url}, args...)
	f := apply.RunApply
	if cmd == "diff" {
		f = apply.RunDiff
	}
	code := f(context.Background(), all, strings.NewReader(""), &out, &errOut)
	return code, out.String() + errOut.String()
}

func stored(t *testing.T, h *apitest.Harness, graph string) string {
	t.Helper()
	d, found, err := h.Store.Get(context.Background(), h.App, graph)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return ""
	}
	return string(d.Body)
}

// diff prints, per file, what PUT-ing it would change — the old and new
// numbers, the queue provisioned and the one left unused, a new graph as a
// create, a stored one as unchanged — and stores nothing; --exit-code
// exits 5 when a file would change.
func TestDiffPrintsWhatWouldChange(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	dir := t.TempDir()
	h.Expect(h.Do(http.MethodPut, h.GraphURL("payments"), h.Target("payments", 5)), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("same"), h.Target("same", 7)), http.StatusOK)
	next := h.Target("payments", 100)
	next["version"] = 2
	next["nodes"].(map[string]any)["limit"].(map[string]any)["egress"] = h.App + ".payments.v2"
	changed := write(t, dir, "payments.json", h, next)
	fresh := write(t, dir, "fresh.json", h, h.Target("fresh", 3))
	// The stored document, as the file holds it (application and graph
	// named): nothing changes.
	same := write(t, dir, "same.json", h, h.Target("same", 7))
	before := stored(t, h, "payments")

	code, out := run(t, "diff", h.URL, changed, fresh, same)
	if code != apply.ExitOK {
		t.Fatalf("diff exit %d, want 0:\n%s", code, out)
	}
	for _, want := range []string{
		changed + " → " + h.App + "/payments: would change",
		"version 1 → 2",
		"budget global: 5 per 1 s → 100 per 1 s",
		"egress: " + h.App + ".payments.out → " + h.App + ".payments.v2",
		"queue " + h.App + ".payments.v2: provisioned",
		"queue " + h.App + ".payments.out: left unused",
		fresh + " → " + h.App + "/fresh: would change",
		"new graph at version 1: nothing was stored under this name",
		same + " → " + h.App + "/same: unchanged",
		"gate-api diff: 3 file(s): 2 would change, 1 unchanged",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q:\n%s", want, out)
		}
	}
	if stored(t, h, "payments") != before || stored(t, h, "fresh") != "" || h.QueueExists(h.App+".payments.v2") {
		t.Fatal("diff stored or provisioned something")
	}
	if code, out := run(t, "diff", h.URL, "--exit-code", changed); code != apply.ExitChanges {
		t.Fatalf("diff --exit-code of a change: %d, want 5:\n%s", code, out)
	}
	if code, out := run(t, "diff", h.URL, "--exit-code", same); code != apply.ExitOK {
		t.Fatalf("diff --exit-code of an unchanged file: %d, want 0:\n%s", code, out)
	}
}

// apply dry-runs, then PUTs each changed file with If-Match on what its
// dry run compared against (If-None-Match: * for a new graph); applying
// the same files again changes nothing and records nothing.
func TestApplyStoresTheReviewedChange(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	dir := t.TempDir()
	h.Expect(h.Do(http.MethodPut, h.GraphURL("payments"), h.Target("payments", 5)), http.StatusOK)
	next := h.Target("payments", 100)
	next["version"] = 2
	changed := write(t, dir, "payments.json", h, next)
	fresh := write(t, dir, "fresh.json", h, h.Target("fresh", 3))
	code, out := run(t, "apply", h.URL, changed, fresh)
	if code != apply.ExitOK {
		t.Fatalf("apply exit %d:\n%s", code, out)
	}
	for _, want := range []string{"applied: version 2 stored as \"", "history revision 2", "budget global: 5 per 1 s → 100 per 1 s", "/fresh: applied: version 1", "gate-api apply: 2 file(s): 2 applied"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stored(t, h, "payments"), `"count":100`) || stored(t, h, "fresh") == "" {
		t.Fatalf("after apply: payments %s, fresh %q", stored(t, h, "payments"), stored(t, h, "fresh"))
	}
	code, out = run(t, "apply", h.URL, "--json", changed, fresh)
	if code != apply.ExitOK {
		t.Fatalf("apply again: %d\n%s", code, out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		var r apply.Report
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("--json line %q: %v", sc.Text(), err)
		}
		if r.Outcome != apply.OutcomeUnchanged || r.StoredETag == nil || r.Revision != nil {
			t.Errorf("applying a stored file again: %+v, want unchanged and nothing recorded", r)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d JSON lines, want one per file:\n%s", n, out)
	}
	page := apitest.DecodeAs[wire.GraphVersionPage](t, h.Expect(h.Do(http.MethodGet, h.GraphURL("payments")+"/versions", nil), http.StatusOK))
	if page.Total != 2 || page.Items[0].ChangedBy != "api" {
		t.Fatalf("history after apply, apply again: %+v, want 2 revisions", page)
	}
}

// One refused file in the dry run: nothing is applied, exit 1, the rule
// named.
func TestApplyAppliesNothingWhenAFileIsRefused(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	dir := t.TempDir()
	good := write(t, dir, "good.json", h, h.Target("good", 5))
	bad := h.Target("bad", 5)
	bad["nodes"].(map[string]any)["limit"].(map[string]any)["budgets"] = []any{map[string]any{"id": "global", "count": 0, "timeMs": 1000}}
	badFile := write(t, dir, "bad.json", h, bad)
	noName := filepath.Join(dir, "noname.json")
	if err := os.WriteFile(noName, []byte(`{"version":1,"nodes":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := run(t, "apply", h.URL, good, badFile)
	if code != apply.ExitRefused || !strings.Contains(out, "REFUSED (422 declare-refused [budget-count])") || !strings.Contains(out, "nothing was applied") {
		t.Fatalf("apply with a refused file: %d\n%s", code, out)
	}
	if h.Stored(h.App, "good") {
		t.Fatal("apply stored a file although another was refused")
	}
	code, out = run(t, "diff", h.URL, noName)
	if code != apply.ExitRefused || !strings.Contains(out, `names no graph: add its "graph" field`) {
		t.Fatalf("a file without a graph name: %d\n%s", code, out)
	}
}

// A change made by someone else between apply's dry run and its PUT is a
// conflict (exit 3) naming who made it: the reviewed diff is never applied
// over it.
func TestApplyConflictsWithAChangeMadeMeanwhile(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	dir := t.TempDir()
	h.Expect(h.Do(http.MethodPut, h.GraphURL("payments"), h.Target("payments", 5)), http.StatusOK)
	mine := h.Target("payments", 100)
	mine["version"] = 2
	file := write(t, dir, "payments.json", h, mine)
	// In front of gate-api: just before apply's PUT arrives, someone in
	// the console stores version 3.
	inner := h.Srv.Handler()
	var raced atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.RawQuery == "" && raced.CompareAndSwap(false, true) {
			theirs := h.Target("payments", 9)
			theirs["version"] = 3
			b, _ := json.Marshal(theirs)
			req := httptest.NewRequest(http.MethodPut, h.GraphURL("payments"), bytes.NewReader(b)).WithContext(server.WithActor(context.Background(), "ops@example.com"))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Errorf("the concurrent console PUT: %d %s", rec.Code, rec.Body)
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	code, out := run(t, "apply", front.URL, file)
	if code != apply.ExitConflict || !strings.Contains(out, "CONFLICT (412 precondition-failed)") || !strings.Contains(out, "changed by ops@example.com at ") {
		t.Fatalf("apply over a change made meanwhile: %d\n%s", code, out)
	}
	if !strings.Contains(stored(t, h, "payments"), `"count":9`) {
		t.Fatalf("the conflicting apply overwrote the console's change: %s", stored(t, h, "payments"))
	}
}

// gate-api unreachable, or failing, is exit 4; a usage error is exit 2
// and sends nothing.
func TestApplyExitCodes(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	dir := t.TempDir()
	file := write(t, dir, "g.json", h, h.Target("g", 5))
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	if code, out := run(t, "apply", deadURL, file); code != apply.ExitUnavailable || !strings.Contains(out, "UNAVAILABLE") {
		t.Fatalf("apply against a closed port: %d\n%s", code, out)
	}
	h.Broker.RequireMini(t, "failing the kv route").SetError(miniqueen.RouteKV, http.StatusServiceUnavailable)
	code, out := run(t, "diff", h.URL, file)
	h.Mini.ClearError(miniqueen.RouteKV)
	if code != apply.ExitUnavailable || !strings.Contains(out, "502") {
		t.Fatalf("diff while the broker fails: %d\n%s", code, out)
	}
	usage := [][]string{
		{"diff", file},
		{"apply", "--server", "ftp://x", file},
		{"apply", "--server", "http://u:p@x", file},
		{"apply", "--server", h.URL},
		{"apply", "--server", h.URL, "--name", "g", file, file},
		{"apply", "--server", h.URL, "--exit-code", file},
		{"diff", "--server", h.URL, "--timeout", "-1s", file},
		{"diff", "--server", h.URL, "--bogus", file},
	}
	for _, args := range usage {
		var out bytes.Buffer
		f := apply.RunApply
		if args[0] == "diff" {
			f = apply.RunDiff
		}
		if code := f(context.Background(), args[1:], strings.NewReader(""), &out, &out); code != apply.ExitUsage || !strings.Contains(out.String(), "usage: gate-api "+args[0]) {
			t.Errorf("%q: exit %d, want 2 with the usage:\n%s", args, code, out.String())
		}
	}
	if h.Stored(h.App, "g") {
		t.Fatal("a usage error sent the document")
	}
}
