package gateapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/queen-mq/gate/libs/wire"
)

// The client sends a write's preconditions and dry run as gate-api reads
// them, the document's bytes as they are, and hands a refusal's whole body
// back (a 412's etag and who changed it).
func TestWritesCarryPreconditionsAndRefusalsTheirBody(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI()+" if-match="+r.Header.Get("If-Match")+" if-none-match="+r.Header.Get("If-None-Match"))
		switch {
		case r.URL.Query().Get("dryRun") == "true":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true,"dryRun":true,"etag":"\"n\"","storedEtag":"\"s\"","diff":{"changed":true}}`))
		case r.Header.Get("If-Match") == `"s"`:
			w.Header().Set("ETag", `"n"`)
			_, _ = w.Write([]byte(`{"ok":true,"version":2}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = w.Write([]byte(`{"error":"'a/g' is stored …","code":"precondition-failed","etag":"\"s\"","changedBy":"ann@example.com","changedAt":5}`))
		}
	}))
	defer srv.Close()
	c := New(srv.URL, nil)
	ctx := context.Background()
	d, err := c.DryRun(ctx, "a", "g", []byte(`{"version":2}`), Write{})
	if err != nil || d.StoredETag == nil || *d.StoredETag != `"s"` || !d.Diff.Changed {
		t.Fatalf("dry run: %+v %v", d, err)
	}
	p, err := c.Put(ctx, "a", "g", []byte(`{"version":2}`), Write{IfMatch: *d.StoredETag})
	if err != nil || p.ETag != `"n"` {
		t.Fatalf("put: %+v %v, want the ETag header's tag", p, err)
	}
	_, err = c.Put(ctx, "a", "t", []byte(`{}`), Write{IfNoneMatch: "*", Target: true})
	body, ok := RefusalOf(err)
	var se *StatusError
	if !ok || !errors.As(err, &se) || se.Status != 412 || body.Code != wire.CodePreconditionFailed || body.ETag != `"s"` || body.ChangedBy != "ann@example.com" {
		t.Fatalf("412: %v %+v", err, body)
	}
	want := []string{
		`PUT /v1/apps/a/graphs/g?dryRun=true if-match= if-none-match=`,
		`PUT /v1/apps/a/graphs/g if-match="s" if-none-match=`,
		`PUT /v1/apps/a/targets/t if-match= if-none-match=*`,
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("requests %q, want %q", got, want)
		}
	}
}
