package shadowlimits_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
	"github.com/queen-mq/gate/libs/history"
	"github.com/queen-mq/gate/libs/store"
	"github.com/queen-mq/gate/libs/wire"
)

func callsDoc(h *apitest.Harness) map[string]any {
	return map[string]any{
		"version": 1,
		"nodes": map[string]any{
			"call": map[string]any{"ingress": true, "budgets": []any{map[string]any{"id": "call-1s", "count": 100, "timeMs": 1000}},
				"egress": h.App + ".calls.out"},
		},
		"paths": []any{map[string]any{"name": "main", "nodes": []any{"call"}}},
	}
}

func declare(t *testing.T, h *apitest.Harness) string {
	t.Helper()
	h.Expect(h.Do("PUT", h.GraphURL("calls"), callsDoc(h)), 200)
	return h.GraphURL("calls") + "/shadow"
}

const half = `{"nodes":{"call":{"budgets":[{"id":"call-1s","count":50,"timeMs":1000}]}}}`

// Without PostgreSQL nothing could evaluate a candidate: PUT answers 503
// no-history naming PG_HOST and stores nothing; GET still says none is set
// (the console asks on every detail page), and a candidate set while the
// database was there is 503 too.
func TestShadowWithoutHistory(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	url := declare(t, h)
	a := h.Expect(h.Do("PUT", url, half), 503)
	if a.Str("code") != string(wire.CodeNoHistory) || !strings.Contains(a.Str("error"), "PG_HOST") {
		t.Fatalf("PUT: %s, want no-history naming PG_HOST", a.Raw)
	}
	if _, found, err := h.Store.GetShadow(context.Background(), h.App, "calls"); err != nil || found {
		t.Fatalf("a candidate was stored without history (found %v, %v)", found, err)
	}
	if got := apitest.DecodeAs[wire.Shadow](t, h.Expect(h.Do("GET", url, nil), 200)); got.Set || len(got.Nodes) != 0 {
		t.Fatalf("GET without a candidate: %+v", got)
	}
	if err := h.Store.PutShadow(context.Background(), store.Shadow{Application: h.App, Graph: "calls", Since: 1, SetBy: "api", Candidate: json.RawMessage(half)}); err != nil {
		t.Fatal(err)
	}
	a = h.Expect(h.Do("GET", url, nil), 503)
	if a.Str("code") != string(wire.CodeNoHistory) || !strings.Contains(a.Str("error"), "PG_HOST") {
		t.Fatalf("GET of a set candidate: %s, want no-history naming PG_HOST", a.Raw)
	}
}

// Candidates that do not compile are refused 422 naming the document
// field; malformed ones 422 shadow-invalid naming the candidate's field.
func TestShadowRefusals(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	h.WithHistory(t)
	url := declare(t, h)
	a := h.Expect(h.Do("PUT", url, `{"nodes":{"call":{"budgets":[{"id":"call-1s","count":0,"timeMs":1000}]}}}`), 422)
	var e wire.Error
	if err := json.Unmarshal(a.Raw, &e); err != nil {
		t.Fatal(err)
	}
	at := ""
	for _, p := range e.Problems {
		at += p.At + " "
	}
	if e.Code != wire.CodeDeclareRefused || !strings.Contains(at, "/nodes/call/budgets/0/count") {
		t.Fatalf("a budget of count 0: %s, want declare-refused at /nodes/call/budgets/0/count", a.Raw)
	}
	h.Expect(h.Do("PUT", url, `{"nodes":{"call":{"budgets":[{"id":"x","count":10,"timeMs":50}]}}}`), 422)
	for body, field := range map[string]string{
		`{"nodes":{}}`:                            "nodes",
		`{"nodes":{"nope":{"budgets":[]}}}`:       "nodes.nope",
		`{"nodes":{"call":{"budgets":[]},"x":1}}`: "nodes.x",
		`{"nodes":{"call":{"watch":{}}}}`:         "nodes.call.watch",
		`{"paths":[]}`:                            "paths",
	} {
		a := h.Expect(h.Do("PUT", url, body), 422)
		if a.Str("code") != string(wire.CodeShadowInvalid) || a.Str("field") != field {
			t.Errorf("%s: %s, want shadow-invalid naming %s", body, a.Raw, field)
		}
	}
	h.Expect(h.Do("PUT", url, `{"nodes":`), 400)
	h.Expect(h.Do("PUT", url, strings.Repeat(" ", 70<<10)+`{}`), 413)
	h.Expect(h.Do("GET", h.GraphURL("nope")+"/shadow", nil), 404)
	if got := apitest.DecodeAs[wire.Shadow](t, h.Expect(h.Do("GET", url, nil), 200)); got.Set {
		t.Fatalf("GET before any PUT: %+v", got)
	}
	if a := h.Expect(h.Do("GET", url+"?minutes=x", nil), 422); a.Str("field") != "minutes" {
		t.Fatalf("minutes=x: %s", a.Raw)
	}
}

// PUT stores the candidate (and answers it, not evaluated yet); GET
// answers its per-minute results with the "if enforced" totals; DELETE
// removes it.
func TestShadowRoundTrip(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	url := declare(t, h)
	put := apitest.DecodeAs[wire.Shadow](t, h.Expect(h.Do("PUT", url, half), 200))
	if !put.Set || len(put.Nodes) != 1 || put.Nodes[0].Node != "call" || !strings.Contains(string(put.Nodes[0].Budgets), `"count":50`) ||
		!put.Current || put.Recording != "forwarded" || put.EvaluatedThrough != nil || !strings.Contains(put.Nodes[0].Sentence, "not evaluated yet") {
		t.Fatalf("PUT answered %+v", put)
	}
	sh, found, err := h.Store.GetShadow(context.Background(), h.App, "calls")
	if err != nil || !found || sh.Since != put.Since {
		t.Fatalf("stored %+v, %v, %v", sh, found, err)
	}
	m := put.Since - put.Since%60000
	if err := db.WriteShadow(context.Background(), h.App, "calls", history.ShadowState{Since: put.Since, Through: m + 60000, State: []byte(`{}`)},
		[]history.ShadowMinute{{Node: "call", Minute: m, Arrived: 100, Admitted: 100, Delayed: 50, DelayP50Ms: 1000, DelayMaxMs: 1000}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	got := apitest.DecodeAs[wire.Shadow](t, h.Expect(h.Do("GET", url+"?minutes=5", nil), 200))
	if got.EvaluatedThrough == nil || *got.EvaluatedThrough != m+60000 || len(got.Nodes) != 1 || len(got.Nodes[0].PerMinute) != 1 {
		t.Fatalf("GET answered %s", mustJSON(got))
	}
	n := got.Nodes[0]
	if n.IfEnforced.Arrived != 100 || n.IfEnforced.Delayed != 50 || n.IfEnforced.DelayMaxMs != 1000 ||
		n.Sentence != "if enforced: 50 of 100 items delayed in the last minute, up to 1 s; no backlog" {
		t.Fatalf("node %s", mustJSON(n))
	}
	d := apitest.DecodeAs[wire.ShadowDeleted](t, h.Expect(h.Do("DELETE", url, nil), 200))
	if !d.Deleted {
		t.Fatalf("DELETE answered %+v", d)
	}
	if got := apitest.DecodeAs[wire.Shadow](t, h.Expect(h.Do("GET", url, nil), 200)); got.Set {
		t.Fatalf("GET after DELETE: %+v", got)
	}
	if d := apitest.DecodeAs[wire.ShadowDeleted](t, h.Expect(h.Do("DELETE", url, nil), 200)); d.Deleted {
		t.Fatal("a second DELETE says it deleted something")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A scoped candidate's figures: the items judged without their values
// make the sentence and a note say "approximate", and a scoped budget
// whose field none of the items carried is named with its field; a
// scopeBy that is no payload path is refused at PUT naming the field.
func TestShadowKeyedFigures(t *testing.T) {
	t.Parallel()
	h := apitest.New(t)
	db := h.WithHistory(t)
	url := declare(t, h)
	a := h.Expect(h.Do("PUT", url, `{"nodes":{"call":{"budgets":[{"id":"call-1s","count":100,"timeMs":1000},{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"account"}]}}}`), 422)
	if !strings.Contains(string(a.Raw), "/nodes/call/budgets/1/scopeBy") {
		t.Fatalf("a scopeBy that is no payload path: %s, want a refusal at /nodes/call/budgets/1/scopeBy", a.Raw)
	}
	cand := `{"nodes":{"call":{"budgets":[{"id":"call-1s","count":100,"timeMs":1000},{"id":"per-account","count":5,"timeMs":1000,"scopeBy":"payload.acount"}]}}}`
	put := apitest.DecodeAs[wire.Shadow](t, h.Expect(h.Do("PUT", url, cand), 200))
	if len(put.Unsupported) != 0 {
		t.Fatalf("a scoped candidate is listed as unsupported: %+v", put.Unsupported)
	}
	m := put.Since - put.Since%60000
	if err := db.WriteShadow(context.Background(), h.App, "calls", history.ShadowState{Since: put.Since, Through: m + 60000, State: []byte(`{}`)},
		[]history.ShadowMinute{{Node: "call", Minute: m, Arrived: 100, Admitted: 100, Delayed: 10, DelayP50Ms: 0, DelayMaxMs: 2000, Approximate: 40,
			Missing: map[string]int64{"per-account": 60}}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	got := apitest.DecodeAs[wire.Shadow](t, h.Expect(h.Do("GET", url+"?minutes=5", nil), 200))
	n := got.Nodes[0]
	if n.IfEnforced.Approximate != 40 || n.PerMinute[0].Approximate != 40 ||
		n.Sentence != "if enforced: 10 of 100 items delayed in the last minute, up to 2 s; no backlog (approximate: 40 items judged without their scope value or op)" {
		t.Fatalf("node %s", mustJSON(n))
	}
	if len(n.Notes) != 2 || !strings.Contains(n.Notes[0], "approximate: 40 of 100 items") || !strings.Contains(n.Notes[0], "GATE_SHADOW_KEYS_PER_SECOND") ||
		!strings.Contains(n.Notes[1], "budget 'per-account' scopes by 'payload.acount', but none of the 60 items recorded at call carried a value there") {
		t.Fatalf("notes %q", n.Notes)
	}
}
