package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// wire is one exchange of a wire test: the request the client must send and
// the answer the fake broker gives.
type wire struct {
	// method and path are the expected request line; path is compared
	// escaped, exactly as sent. An empty method expects NO request.
	method string
	path   string
	// query is the expected query string (compared as decoded values;
	// "" = no query at all).
	query string
	// body is the expected JSON body ("" = no body).
	body string
	// status, header and answer are the fake broker's reply.
	status int
	header map[string]string
	answer string
}

// seen records what the fake broker received.
type seen struct {
	mu       sync.Mutex
	n        int
	method   string
	path     string
	rawQuery string
	body     []byte
	header   http.Header
}

// broker starts a fake broker answering every request with w's reply and
// returns a client for it plus the recorder.
func broker(t *testing.T, w wire, opts ...Option) (*Client, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p, q, _ := strings.Cut(r.RequestURI, "?")
		s.mu.Lock()
		s.n++
		s.method, s.path, s.rawQuery, s.body, s.header = r.Method, p, q, b, r.Header.Clone()
		s.mu.Unlock()
		for k, v := range w.header {
			rw.Header().Set(k, v)
		}
		status := w.status
		if status == 0 {
			status = http.StatusOK
		}
		if w.answer != "" {
			rw.Header().Set("Content-Type", "application/json")
		}
		rw.WriteHeader(status)
		_, _ = io.WriteString(rw, w.answer)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, opts...)
	if err != nil {
		t.Fatalf("New(%q): %v", srv.URL, err)
	}
	return c, s
}

// check asserts that the recorded request is exactly the expected one.
func (w wire) check(t *testing.T, s *seen) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.method == "" {
		if s.n != 0 {
			t.Fatalf("client sent %d request(s) (%s %s), want none", s.n, s.method, s.path)
		}
		return
	}
	if s.n != 1 {
		t.Fatalf("client sent %d requests, want 1", s.n)
	}
	if s.method != w.method || s.path != w.path {
		t.Errorf("request line = %s %s, want %s %s", s.method, s.path, w.method, w.path)
	}
	gotQ, err := url.ParseQuery(s.rawQuery)
	if err != nil {
		t.Fatalf("query %q: %v", s.rawQuery, err)
	}
	wantQ, err := url.ParseQuery(w.query)
	if err != nil {
		t.Fatalf("bad expected query %q: %v", w.query, err)
	}
	if len(gotQ) != 0 || len(wantQ) != 0 {
		if !reflect.DeepEqual(gotQ, wantQ) {
			t.Errorf("query = %v, want %v", gotQ, wantQ)
		}
	}
	if w.body == "" {
		if len(s.body) != 0 {
			t.Errorf("body = %s, want none", s.body)
		}
	} else {
		jsonEqual(t, "body", s.body, []byte(w.body))
		if ct := s.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q, want application/json", ct)
		}
	}
	if a := s.header.Get("Accept"); a != "application/json" {
		t.Errorf("Accept = %q, want application/json", a)
	}
}

// decodeJSON decodes with UseNumber so 64-bit integers compare exactly.
func decodeJSON(t *testing.T, what string, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s is not JSON (%v): %s", what, err, b)
	}
	if d.More() {
		t.Fatalf("%s has trailing data: %s", what, b)
	}
	return v
}

// jsonEqual asserts two JSON documents are equal after decoding.
func jsonEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	g, w := decodeJSON(t, what, got), decodeJSON(t, "expected "+what, want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs\n got: %s\nwant: %s", what, compact(got), compact(want))
	}
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// wireCase is one row of a wire table: the exchange and the call that must
// produce it (run asserts the decoded result).
type wireCase struct {
	name string
	wire wire
	run  func(t *testing.T, ctx context.Context, c *Client)
}

// runWire runs a wire table, each row against its own fake broker.
func runWire(t *testing.T, cases []wireCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, s := broker(t, tc.wire)
			tc.run(t, t.Context(), c)
			tc.wire.check(t, s)
		})
	}
}

// mustErr asserts err is a *Error with the given status and returns it.
func mustErr(t *testing.T, err error, status int) *Error {
	t.Helper()
	var e *Error
	if !asErr(err, &e) {
		t.Fatalf("err = %v (%T), want *queen.Error with status %d", err, err, status)
	}
	if e.Status != status {
		t.Fatalf("status = %d, want %d (err %v)", e.Status, status, err)
	}
	return e
}

func asErr(err error, target **Error) bool {
	for err != nil {
		if e, ok := err.(*Error); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
