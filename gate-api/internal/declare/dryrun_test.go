package declare_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/wire"
)

// kvState is every kv row of the harness's namespace with its version, and
// the change signal: a dry run must leave both as they were.
func kvState(t *testing.T, h *apitest.Harness) string {
	t.Helper()
	mini := h.Broker.RequireMini(t, "reading every kv row")
	var b strings.Builder
	for _, k := range mini.KVKeys(h.NS) {
		if strings.HasPrefix(k, "relay:") {
			continue
		}
		row, _ := mini.KV(h.NS, k)
		b.WriteString(k + "@" + strconv.FormatInt(row.Version, 10) + "=" + string(row.Value) + "\n")
	}
	rev, err := h.Store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("rev=" + strconv.FormatInt(rev, 10))
	return b.String()
}

// A dry run compiles and checks what a PUT would — the broker's facts and
// the other stored graphs included — and answers the plan, the warnings and
// the diff against the stored document; it writes no kv row, provisions no
// queue and records no annotation or history revision. Applying it with
// If-Match: its storedEtag stores exactly that change.
func TestDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	live := h.Target("payments", 5)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("payments"), live), http.StatusOK)
	events := func() int {
		ev, err := db.ConfigEvents(t.Context(), h.App, "payments", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(ev)
	}
	revisions := func() int64 {
		_, n, err := db.GraphVersions(t.Context(), h.App, "payments", 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	beforeKV, beforeEvents, beforeRevs := kvState(t, h), events(), revisions()
	stored := storedETag(t, h, "payments")

	next := h.Target("payments", 100)
	next["version"] = 2
	limit := next["nodes"].(map[string]any)["limit"].(map[string]any)
	limit["egress"] = h.App + ".payments.new"
	limit["budgets"] = []any{map[string]any{"id": "global", "count": 10, "timeMs": 500}}
	r := h.Expect(h.Do(http.MethodPut, h.GraphURL("payments")+"?dryRun=true", next), http.StatusOK)
	dry := apitest.DecodeAs[wire.DryRun](t, r)
	if !dry.DryRun || !dry.OK || dry.Version != 2 || dry.StoredETag == nil || *dry.StoredETag != stored || dry.ETag == stored || r.Header.Get("ETag") != "" {
		t.Fatalf("dry run answer: %.600s (ETag header %q)", r.Raw, r.Header.Get("ETag"))
	}
	if !slices.ContainsFunc(dry.Warnings, func(w string) bool { return strings.HasPrefix(w, "[window-sub-second]") }) {
		t.Errorf("warnings %v, want window-sub-second (10 per 500 ms is enforced as 10 per 1 s)", dry.Warnings)
	}
	d := dry.Diff
	if !d.Changed || *d.FromVersion != 1 || *d.ToVersion != 2 || len(d.Nodes) != 1 {
		t.Fatalf("diff %+v", d)
	}
	b := d.Nodes[0].Budgets
	if len(b) != 1 || b[0].From.Count != 5 || b[0].To.Count != 10 || b[0].To.TimeMs != 500 || b[0].To.WindowSubSeconds != 1 {
		t.Fatalf("budgets %+v, want global 5 per 1 s → 10 per 500 ms (enforced per 1 s)", b)
	}
	var added, unused []string
	for _, q := range d.Queues {
		switch q.Change {
		case wire.ChangeAdded:
			added = append(added, q.Queue)
		case wire.ChangeRemoved:
			unused = append(unused, q.Queue)
		}
	}
	if !slices.Equal(added, []string{h.App + ".payments.new"}) || !slices.Equal(unused, []string{h.App + ".payments.out"}) {
		t.Fatalf("queues provisioned %v and left unused %v, want the new egress and the old one", added, unused)
	}
	if after := kvState(t, h); after != beforeKV {
		t.Fatalf("the dry run wrote kv:\nbefore %s\nafter  %s", beforeKV, after)
	}
	if h.QueueExists(h.App + ".payments.new") {
		t.Fatal("the dry run provisioned the new egress queue")
	}
	if events() != beforeEvents || revisions() != beforeRevs {
		t.Fatalf("the dry run recorded an annotation (%d → %d) or a revision (%d → %d)", beforeEvents, events(), beforeRevs, revisions())
	}
	// A dry run of a graph nothing stores: created, nothing provisioned.
	fresh := h.Expect(h.Do(http.MethodPut, h.GraphURL("fresh")+"?dryRun=true", h.Target("fresh", 3)), http.StatusOK)
	if fd := apitest.DecodeAs[wire.DryRun](t, fresh); !fd.Diff.Created || fd.StoredETag != nil || h.Stored(h.App, "fresh") || h.QueueExists(h.Ingress("fresh", "limit")) {
		t.Fatalf("dry run of a new graph: %.400s; stored %v", fresh.Raw, h.Stored(h.App, "fresh"))
	}
	// Applying the reviewed change with If-Match stores exactly it.
	put := h.Expect(h.Do(http.MethodPut, h.GraphURL("payments"), next, "If-Match", *dry.StoredETag), http.StatusOK)
	if put.Header.Get("ETag") != dry.ETag || put.Str("etag") != dry.ETag {
		t.Fatalf("the PUT stored %s, the dry run said %s", put.Header.Get("ETag"), dry.ETag)
	}
	stored2 := apitest.DecodeAs[wire.Declared](t, put)
	if stored2.Revision == nil || !stored2.Diff.Changed || len(stored2.Diff.Nodes) != 1 {
		t.Fatalf("the PUT's revision %v and diff %+v", stored2.Revision, stored2.Diff)
	}
}

// A dry run refuses what a PUT refuses, with the same status and rule: a
// bad document (422), another graph's ingress queue (409 ingress-owner,
// checked against the stored graphs), a lower version (409
// version-order), and the preconditions (412).
func TestDryRunRefusesWhatAPUTRefuses(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	owner := h.Target("owner", 5)
	owner["nodes"].(map[string]any)["limit"].(map[string]any)["ingress"] = map[string]any{"queue": h.App + ".shared.in"}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("owner"), owner), http.StatusOK)
	thief := h.Target("thief", 5)
	thief["nodes"].(map[string]any)["limit"].(map[string]any)["ingress"] = map[string]any{"queue": h.App + ".shared.in"}
	bad := h.Target("bad", 5)
	bad["nodes"].(map[string]any)["limit"].(map[string]any)["budgets"] = []any{map[string]any{"id": "global", "count": 0, "timeMs": 1000}}
	older := h.Target("owner", 5)
	older["version"] = 0
	cases := []struct {
		name, graph string
		doc         map[string]any
		headers     []string
		status      int
		rule        string
	}{
		{"a budget of 0", "bad", bad, nil, http.StatusUnprocessableEntity, "budget-count"},
		{"another graph's ingress", "thief", thief, nil, http.StatusConflict, "ingress-owner"},
		{"a lower version", "owner", older, nil, http.StatusConflict, "version-order"},
		{"create over an existing graph", "owner", owner, []string{"If-None-Match", "*"}, http.StatusPreconditionFailed, ""},
	}
	for _, c := range cases {
		put := h.Do(http.MethodPut, h.GraphURL(c.graph), c.doc, c.headers...)
		dry := h.Do(http.MethodPut, h.GraphURL(c.graph)+"?dryRun=true", c.doc, c.headers...)
		if put.Status != c.status || dry.Status != c.status || put.Str("code") != dry.Str("code") || dry.Str("rule") != c.rule {
			t.Errorf("%s: PUT %d %s, dry run %d %s rule %q; want both %d with rule %q", c.name, put.Status, put.Str("code"), dry.Status, dry.Str("code"), dry.Str("rule"), c.status, c.rule)
		}
	}
	// A missing application-owned ingress is the broker's fact: the dry run
	// asks the broker as the PUT does and warns the same way.
	named := h.Target("named", 5)
	named["nodes"].(map[string]any)["limit"].(map[string]any)["ingress"] = map[string]any{"queue": h.App + ".missing.in"}
	r := h.Expect(h.Do(http.MethodPut, h.GraphURL("named")+"?dryRun=true", named), http.StatusOK)
	if !strings.Contains(string(r.Raw), "[ingress-queue]") {
		t.Errorf("the dry run of a missing application queue does not warn ingress-queue: %.400s", r.Raw)
	}
}

// dryRun takes true or false, once, and the declare routes take no other
// parameter: a misspelt dry run is refused, never stored.
func TestDryRunQueryIsStrict(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	for _, q := range []string{"?dryRun=yes", "?dryRun=", "?dryRun=TRUE", "?dryRun=true&dryRun=true", "?dryrun=true", "?dry_run=true", "?dryRun=true&force=1"} {
		r := h.Do(http.MethodPut, h.GraphURL("g")+q, h.Target("g", 5))
		if r.Status != http.StatusUnprocessableEntity || r.Str("code") != "invalid-query" || r.Str("field") == "" {
			t.Errorf("PUT %s: %d %.200s, want 422 invalid-query naming the parameter", q, r.Status, r.Raw)
		}
	}
	if h.Stored(h.App, "g") {
		t.Fatal("a refused query stored the document")
	}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("g")+"?dryRun=false", h.Target("g", 5)), http.StatusOK)
	if !h.Stored(h.App, "g") {
		t.Fatal("dryRun=false did not store")
	}
	// The sync has no dry run: refused, never stored.
	sync := "/v1/apps/" + h.App + "/targets"
	if r := h.Do(http.MethodPut, sync+"?dryRun=true", []any{h.Target("s", 5)}); r.Status != http.StatusUnprocessableEntity || h.Stored(h.App, "s") {
		t.Fatalf("sync ?dryRun=true: %d %.200s; stored %v", r.Status, r.Raw, h.Stored(h.App, "s"))
	}
}

// A hostile document is refused by a dry run exactly as by a PUT, by the
// same bounds: 30,000 paths (worker-total), a body over 2 MiB (413), JSON
// nested past the parser's depth (400); a small dry run beside the 30,000
// paths is answered, as a small PUT is.
func TestHostileDryRunIsBoundedLikeAPUT(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	doc := h.Target("huge", 10)
	var paths []any
	for i := range 30_000 {
		paths = append(paths, map[string]any{"name": "p" + strconv.Itoa(i), "priority": i % 7, "share": 1, "nodes": []any{"limit"}})
	}
	doc["paths"] = paths
	big, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan apitest.Answer, 1)
	go func() { done <- h.Do(http.MethodPut, h.GraphURL("huge")+"?dryRun=true", big) }()
	h.Expect(h.Do(http.MethodPut, h.GraphURL("small")+"?dryRun=true", h.Target("small", 10)), http.StatusOK)
	if r := <-done; r.Status != http.StatusUnprocessableEntity || r.Str("rule") != "worker-total" {
		t.Fatalf("30,000 paths: %d rule %q, want 422 worker-total", r.Status, r.Str("rule"))
	}
	over := `{"version":1,"pad":"` + strings.Repeat("p", 2<<20) + `"}`
	h.Expect(h.Do(http.MethodPut, h.GraphURL("over")+"?dryRun=true", over), http.StatusRequestEntityTooLarge)
	deep := strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000)
	if r := h.Do(http.MethodPut, h.GraphURL("deep")+"?dryRun=true", deep); r.Status != http.StatusBadRequest && r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("JSON nested 100,000 deep: %d %.200s, want 400 or 422 as a PUT answers", r.Status, r.Raw)
	}
	if put, dry := h.Do(http.MethodPut, h.GraphURL("deep"), deep), h.Do(http.MethodPut, h.GraphURL("deep")+"?dryRun=true", deep); put.Status != dry.Status || put.Str("code") != dry.Str("code") {
		t.Fatalf("deep JSON: PUT %d %s, dry run %d %s; want the same", put.Status, put.Str("code"), dry.Status, dry.Str("code"))
	}
	for _, g := range []string{"huge", "small", "over", "deep"} {
		if h.Stored(h.App, g) {
			t.Fatalf("a dry run stored %s", g)
		}
	}
}
