package live_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/clock"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

// declareTargets declares one-node graphs names under the harness's
// application and returns them.
func declareTargets(t *testing.T, h *apitest.Harness, names ...string) []string {
	t.Helper()
	for _, n := range names {
		h.Expect(h.Do(http.MethodPut, h.GraphURL(n), h.Target(n, 10)), http.StatusOK)
	}
	return names
}

// walk follows a list route's pages from the first, each of limit rows,
// and returns every row's "app/name" in the order served and the pages'
// sizes; every page must report the same matched and total, and name its
// next page in both the body and the Link header.
func walk[P any](t *testing.T, h *apitest.Harness, path string, limit int, rows func(P) ([]string, *string, int, int)) (all []string, sizes []int, matched, total int) {
	t.Helper()
	u, err := url.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	query := u.Query()
	query.Set("limit", strconv.Itoa(limit))
	for range 1000 {
		u.RawQuery = query.Encode()
		url := u.String()
		a := h.Expect(h.Do(http.MethodGet, url, nil), http.StatusOK)
		got, next, m, tot := rows(apitest.DecodeAs[P](t, a))
		if len(sizes) > 0 && (m != matched || tot != total) {
			t.Fatalf("%s: matched/total %d/%d, the first page said %d/%d", url, m, tot, matched, total)
		}
		matched, total = m, tot
		all = append(all, got...)
		sizes = append(sizes, len(got))
		link := a.Header.Get("Link")
		if next == nil {
			if link != "" {
				t.Fatalf("%s: the last page has a Link header %q", url, link)
			}
			return
		}
		if !strings.Contains(link, "cursor="+*next) || !strings.HasSuffix(link, `>; rel="next"`) {
			t.Fatalf("%s: Link %q does not name the next page's cursor %q", url, link, *next)
		}
		query.Set("cursor", *next)
	}
	t.Fatalf("%s: more than 1000 pages", path)
	return
}

func targetRows(p wire.TargetPage) ([]string, *string, int, int) {
	var out []string
	for _, r := range p.Items {
		out = append(out, r.Application+"/"+r.Name)
	}
	return out, p.Next, p.Matched, p.Total
}

func graphRows(p wire.GraphPage) ([]string, *string, int, int) {
	var out []string
	for _, r := range p.Items {
		out = append(out, r.Application+"/"+r.Name)
	}
	return out, p.Next, p.Matched, p.Total
}

func appRows(p wire.AppPage) ([]string, *string, int, int) {
	var out []string
	for _, r := range p.Items {
		out = append(out, r.Application)
	}
	return out, p.Next, p.Matched, p.Total
}

// The console's lists page on the server: every graph is served once, in
// (application, name) order, through pages of the asked size chained by
// their cursors; q searches "application/name", app keeps one
// application, state keeps the targets in that state, and matched says
// how many match over every page.
func TestConsoleListsPageAndSearchOnTheServer(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	names := declareTargets(t, h, "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta")
	want := []string{}
	for _, n := range names {
		want = append(want, h.App+"/"+n)
	}
	slices.Sort(want)

	for _, limit := range []int{1, 3, 7, 50} {
		got, sizes, matched, total := walk(t, h, "/api/targets", limit, targetRows)
		if !slices.Equal(got, want) || matched != 7 || total != 7 {
			t.Errorf("targets by %d: %v (matched %d, total %d), want %v", limit, got, matched, total, want)
		}
		if wantPages := (7 + limit - 1) / limit; len(sizes) != wantPages {
			t.Errorf("targets by %d: %d pages %v, want %d", limit, len(sizes), sizes, wantPages)
		}
		if got, _, _, _ := walk(t, h, "/api/graphs", limit, graphRows); !slices.Equal(got, want) {
			t.Errorf("graphs by %d: %v, want %v", limit, got, want)
		}
	}
	// Without limit, a page holds 50.
	if p := apitest.DecodeAs[wire.TargetPage](t, h.Expect(h.Do(http.MethodGet, "/api/targets", nil), http.StatusOK)); len(p.Items) != 7 || p.Next != nil {
		t.Errorf("default page: %d rows, next %v", len(p.Items), apitest.Deref(p.Next))
	}

	// A graph declared behind the cursor neither repeats nor shifts the
	// pages after it; one declared ahead of it is served.
	first := apitest.DecodeAs[wire.TargetPage](t, h.Expect(h.Do(http.MethodGet, "/api/targets?limit=3", nil), http.StatusOK))
	declareTargets(t, h, "aardvark", "zulu")
	rest, _, _, _ := walk(t, h, "/api/targets?cursor="+*first.Next, 3, targetRows)
	expect := slices.Sorted(slices.Values(append(slices.Clone(want), h.App+"/zulu")))
	if got, _, _, _ := targetRows(first); !slices.Equal(append(got, rest...), expect) {
		t.Errorf("pages across two declares: %v then %v, want %v: aardvark is behind the cursor, zulu ahead of it", got, rest, expect)
	}

	// Search: a substring of the name, of "app/name", case-insensitive.
	cases := []struct {
		query string
		want  []string
	}{
		{"q=eta", []string{"beta", "eta", "zeta"}},
		{"q=ETA", []string{"beta", "eta", "zeta"}},
		{"q=" + url.QueryEscape(h.App+"/z"), []string{"zeta", "zulu"}},
		{"q=" + url.QueryEscape(h.App[2:]), []string{"aardvark", "alpha", "beta", "delta", "epsilon", "eta", "gamma", "zeta", "zulu"}},
		{"q=nothing-like-it", nil},
		{"app=" + h.App + "&q=lt", []string{"delta"}},
		{"app=nobody", nil},
	}
	for _, c := range cases {
		got, _, matched, total := walk(t, h, "/api/targets?"+c.query, 2, targetRows)
		var w []string
		for _, n := range c.want {
			w = append(w, h.App+"/"+n)
		}
		if !slices.Equal(got, w) || matched != len(w) || total != 9 {
			t.Errorf("targets?%s: %v (matched %d of %d), want %v of 9", c.query, got, matched, total, w)
		}
		if got, _, _, _ := walk(t, h, "/api/graphs?"+c.query, 2, graphRows); !slices.Equal(got, w) {
			t.Errorf("graphs?%s: %v, want %v", c.query, got, w)
		}
	}

	// State: a relay runs alpha (pacing: items waited) and beta (flowing);
	// the rest are stopped.
	h.Run("r1", "alpha", 1, store.StageStatus{Path: "main", Node: "limit", Hop: 0, Counters: store.Counters{Admitted: 5, Deferred: 2}})
	h.Run("r2", "beta", 1, store.StageStatus{Path: "main", Node: "limit", Hop: 0, Counters: store.Counters{Admitted: 5}})
	for state, w := range map[string][]string{
		"pacing":  {"alpha"},
		"flowing": {"beta"},
		"stopped": {"aardvark", "delta", "epsilon", "eta", "gamma", "zeta", "zulu"},
	} {
		got, _, _, _ := walk(t, h, "/api/targets?state="+state, 2, targetRows)
		var ws []string
		for _, n := range w {
			ws = append(ws, h.App+"/"+n)
		}
		if !slices.Equal(got, ws) {
			t.Errorf("targets?state=%s: %v, want %v", state, got, ws)
		}
	}
}

// /api/apps pages over applications and searches their names.
func TestAppsListPages(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	apps := []string{h.App + "-c", h.App + "-a", h.App + "-b", h.App + "-d"}
	for i, app := range apps {
		for j := range i + 1 {
			h.Expect(h.Do(http.MethodPut, "/v1/apps/"+app+"/graphs/g"+strconv.Itoa(j), h.Target("g", 10)), http.StatusOK)
		}
	}
	got, sizes, matched, total := walk(t, h, "/api/apps", 3, appRows)
	want := slices.Sorted(slices.Values(apps))
	if !slices.Equal(got, want) || !slices.Equal(sizes, []int{3, 1}) || matched != 4 || total != 4 {
		t.Fatalf("apps by 3: %v in pages %v (matched %d, total %d), want %v in 3+1", got, sizes, matched, total, want)
	}
	p := apitest.DecodeAs[wire.AppPage](t, h.Expect(h.Do(http.MethodGet, "/api/apps?q="+url.QueryEscape(h.App+"-b"), nil), http.StatusOK))
	if len(p.Items) != 1 || p.Items[0].Application != h.App+"-b" || p.Items[0].Targets != 3 || p.Matched != 1 || p.Total != 4 {
		t.Fatalf("apps?q=-b: %+v, want the one application with its 3 graphs", p)
	}
}

// Malformed, oversized and hostile paging parameters are refused with a
// 4xx naming the parameter, on every list route that reads them.
func TestConsoleListsRefuseBadParameters(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	declareTargets(t, h, "one")
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name, query, field string
		status             int
		routes             []string
	}{
		{"limit 0", "limit=0", "limit", 422, nil},
		{"limit over 200", "limit=201", "limit", 422, nil},
		{"limit negative", "limit=-5", "limit", 422, nil},
		{"limit not a number", "limit=ten", "limit", 422, nil},
		{"limit huge", "limit=99999999999999999999999", "limit", 422, nil},
		{"limit twice", "limit=1&limit=2", "limit", 422, nil},
		{"cursor not base64", "cursor=%21%21%21", "cursor", 400, nil},
		{"cursor without a graph", "cursor=" + b64("app-only"), "cursor", 400, []string{"/api/targets", "/api/graphs"}},
		{"cursor with a bad name", "cursor=" + b64("App/G"), "cursor", 400, nil},
		{"cursor with a control character", "cursor=" + b64("a/b\x00"), "cursor", 400, nil},
		{"cursor oversized", "cursor=" + strings.Repeat("A", 300), "cursor", 422, nil},
		{"cursor twice", "cursor=" + b64("a/b") + "&cursor=" + b64("a/c"), "cursor", 422, nil},
		{"q oversized", "q=" + strings.Repeat("x", 200), "q", 422, nil},
		{"q with a control character", "q=a%01b", "q", 422, nil},
		{"q not UTF-8", "q=%ff%fe", "q", 422, nil},
		{"q twice", "q=a&q=b", "q", 422, nil},
		{"app breaking the name rule", "app=Bad_App", "app", 422, []string{"/api/targets", "/api/graphs"}},
		{"app oversized", "app=" + strings.Repeat("a", 100), "app", 422, []string{"/api/targets", "/api/graphs"}},
		{"state unknown", "state=sleeping", "state", 422, []string{"/api/targets"}},
	}
	for _, c := range cases {
		routes := c.routes
		if routes == nil {
			routes = []string{"/api/targets", "/api/graphs", "/api/apps"}
		}
		for _, r := range routes {
			a := h.Do(http.MethodGet, r+"?"+c.query, nil)
			if a.Status != c.status || a.Str("field") != c.field || a.Str("code") != string(wire.CodeInvalidQuery) {
				t.Errorf("%s %s: %d field %q code %q, want %d field %q code %s: %s", r, c.name, a.Status, a.Str("field"), a.Str("code"), c.status, c.field, wire.CodeInvalidQuery, a.Raw)
			}
			if !strings.Contains(h.ErrorBody(a), c.field) {
				t.Errorf("%s %s: the sentence does not name %s: %s", r, c.name, c.field, a.Raw)
			}
		}
	}
}

// The overview's fleet figures are computed off the request path: every
// request within figures_max_age_ms shares one computation (a relay's new
// counters show once the figures are that old), a declare shows at once,
// and the answer says when the figures were computed and how old they may
// be.
func TestOverviewFleetFiguresAreSharedUntilTheyAgeOrTheGraphsChange(t *testing.T) {
	t.Parallel()
	start := time.Now().Truncate(time.Millisecond)
	clk := clock.NewVirtual(start)
	h := apitest.NewWith(t, apitest.Setup{Clock: clk})
	overview := func() wire.Overview {
		t.Helper()
		return apitest.DecodeAs[wire.Overview](t, h.Expect(h.Do(http.MethodGet, "/api/overview", nil), http.StatusOK))
	}
	declareTargets(t, h, "one")
	ov := overview()
	if ov.Graphs != 1 || ov.AdmittedTotal != 0 || ov.FiguresAt != start.UnixMilli() || ov.FiguresMaxAgeMs != 5000 {
		t.Fatalf("first overview: %+v, want 1 graph, nothing admitted, computed at %d, max age 5000", ov, start.UnixMilli())
	}
	// A relay publishes counters: the shared figures do not re-read them
	// per request.
	h.Run("r1", "one", 1, store.StageStatus{Path: "main", Node: "limit", Hop: 0, Counters: store.Counters{Admitted: 12, Deferred: 1}})
	clk.Advance(4 * time.Second)
	if ov := overview(); ov.AdmittedTotal != 0 || ov.FiguresAt != start.UnixMilli() {
		t.Fatalf("overview 4 s later: %+v, want the figures computed at %d (admitted 0) served again", ov, start.UnixMilli())
	}
	clk.Advance(time.Second)
	if ov := overview(); ov.AdmittedTotal != 12 || ov.DeniedTotal != 1 || ov.FiguresAt != start.Add(5*time.Second).UnixMilli() {
		t.Fatalf("overview 5 s later: %+v, want figures recomputed then with admitted 12, denied 1", ov)
	}
	// A declare changes the graphs: the next overview counts it at once.
	declareTargets(t, h, "two")
	if ov := overview(); ov.Graphs != 2 {
		t.Fatalf("overview right after a declare: %d graphs, want 2", ov.Graphs)
	}
}

// The lists say what a graph is doing besides its numbers: Watch (and when
// it ends, then ready for review) and the nodes a backoff holds, so a
// held or watching graph is seen without opening it.
func TestListsShowWatchReadyForReviewAndBackoff(t *testing.T) {
	t.Parallel()
	clk := clock.NewVirtual(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	h := apitest.NewWith(t, apitest.Setup{Clock: clk})
	h.WithHistory(t)
	watching := h.Target("w", 10)
	watching["watch"] = map[string]any{"durationSeconds": 120}
	h.Expect(h.Do(http.MethodPut, h.GraphURL("w"), watching), http.StatusOK)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("e"), h.Target("e", 10)), http.StatusOK)
	h.Expect(h.Do(http.MethodPost, h.GraphURL("e")+"/nodes/limit/backoff", map[string]any{"retryAfterSeconds": 30}), http.StatusOK)
	start := clk.Now().UnixMilli()

	rows := func() (map[string]wire.TargetRow, map[string]wire.GraphRow) {
		t.Helper()
		tp := apitest.DecodeAs[wire.TargetPage](t, h.Expect(h.Do(http.MethodGet, "/api/targets", nil), http.StatusOK))
		gp := apitest.DecodeAs[wire.GraphPage](t, h.Expect(h.Do(http.MethodGet, "/api/graphs", nil), http.StatusOK))
		tr, gr := map[string]wire.TargetRow{}, map[string]wire.GraphRow{}
		for _, r := range tp.Items {
			tr[r.Name] = r
		}
		for _, r := range gp.Items {
			gr[r.Name] = r
		}
		return tr, gr
	}
	// The overview counts each, and ?state= lists exactly those graphs.
	overview := func(watching, ready, held int) {
		t.Helper()
		ov := apitest.DecodeAs[wire.Overview](t, h.Expect(h.Do(http.MethodGet, "/api/overview", nil), http.StatusOK))
		if ov.Watching != watching || ov.ReadyForReview != ready || ov.Held == nil || *ov.Held != held {
			t.Fatalf("overview: watching %d, ready for review %d, held %v; want %d, %d, %d", ov.Watching, ov.ReadyForReview, ov.Held, watching, ready, held)
		}
	}
	listed := func(state string, want ...string) {
		t.Helper()
		tp := apitest.DecodeAs[wire.TargetPage](t, h.Expect(h.Do(http.MethodGet, "/api/targets?state="+state, nil), http.StatusOK))
		var got []string
		for _, r := range tp.Items {
			got = append(got, r.Name)
		}
		if !slices.Equal(got, want) || tp.Matched != len(want) {
			t.Fatalf("/api/targets?state=%s: %v (matched %d), want %v", state, got, tp.Matched, want)
		}
	}
	overview(1, 0, 1)
	listed("watch", "w")
	listed("ready")
	listed("held", "e")

	tr, gr := rows()
	if r := tr["w"]; r.Mode != "watch" || r.ReadyForReview || r.WatchEndsAt == nil || *r.WatchEndsAt != start+120000 || !r.BrokerRead {
		t.Fatalf("a watching target's row: %+v", r)
	}
	if r := tr["e"]; r.Mode != "enforce" || r.WatchEndsAt != nil || !slices.Equal(r.Held, []string{"limit"}) || !r.BrokerRead {
		t.Fatalf("a held target's row: %+v", r)
	}
	if r := gr["e"]; !slices.Equal(r.Held, []string{"limit"}) || r.Mode != "enforce" || !r.BrokerRead {
		t.Fatalf("a held graph's row: %+v", r)
	}
	if r := gr["w"]; r.Mode != "watch" || r.ReadyForReview {
		t.Fatalf("a watching graph's row: %+v", r)
	}

	clk.Advance(121 * time.Second)
	tr, gr = rows()
	if r := tr["w"]; !r.ReadyForReview || r.Mode != "watch" {
		t.Fatalf("after its Watch period the target is ready for review: %+v", r)
	}
	if r := gr["w"]; !r.ReadyForReview {
		t.Fatalf("after its Watch period the graph is ready for review: %+v", r)
	}
	if r := tr["e"]; len(r.Held) != 0 || r.Held == nil {
		t.Fatalf("a backoff whose 30 s are over holds nothing: %+v", r)
	}
	overview(0, 1, 0)
	listed("watch")
	listed("ready", "w")
	listed("held")
}
