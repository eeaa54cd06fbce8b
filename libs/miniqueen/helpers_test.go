package miniqueen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wire is a raw-HTTP test client: every call goes over loopback with
// net/http and plain JSON, never through libs/queen.
type wire struct {
	t   testing.TB
	s   *Server
	url string
	hc  *http.Client
}

func newWire(t testing.TB, opts ...Option) *wire {
	t.Helper()
	s := RunT(t, opts...)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &wire{t: t, s: s, url: s.URL(), hc: &http.Client{Transport: tr, Timeout: 40 * time.Second}}
}

// do sends a request and returns status, body and headers.
func (w *wire) do(method, path, body string) (int, []byte, http.Header) {
	w.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.url+path, rd)
	if err != nil {
		w.t.Fatalf("building %s %s: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp.StatusCode, b, resp.Header
}

// call sends a request, checks the status and decodes the body (numbers as
// json.Number).
func (w *wire) call(method, path, body string, want int) any {
	w.t.Helper()
	status, b, _ := w.do(method, path, body)
	if status != want {
		w.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, b)
	}
	if len(b) == 0 {
		return nil
	}
	return decode(w.t, b)
}

func decode(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// at walks a decoded JSON value by keys and indexes: at(v, "results", 0, "value").
func at(t testing.TB, v any, path ...any) any {
	t.Helper()
	cur := v
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", path, cur)
			}
			x, ok := m[k]
			if !ok {
				t.Fatalf("at %v: key %q missing in %v", path, k, cur)
			}
			cur = x
		case int:
			a, ok := cur.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: %v has no index %d", path, cur, k)
			}
			cur = a[k]
		}
	}
	return cur
}

func has(v any, key string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[key]
	return ok
}

func num(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		t.Fatalf("%v is not an integer: %v", n, err)
	}
	return i
}

func str(t testing.TB, v any) string {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v (%T) is not a string", v, v)
	}
	return s
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// push sends items (queue, partition, payload, txn) and returns the decoded
// 201 body.
func (w *wire) push(items ...map[string]any) []any {
	w.t.Helper()
	v := w.call("POST", "/api/v1/push", mustJSON(map[string]any{"items": items}), http.StatusCreated)
	return v.([]any)
}

func item(queue, partition string, payload any, txn string) map[string]any {
	m := map[string]any{"queue": queue, "payload": payload}
	if partition != "" {
		m["partition"] = partition
	}
	if txn != "" {
		m["transactionId"] = txn
	}
	return m
}

// popped is a decoded pop answer.
type popped struct {
	status   int
	leaseID  string
	messages []map[string]any
	body     any
}

func (w *wire) pop(queue, query string) popped {
	w.t.Helper()
	status, b, _ := w.do("GET", "/api/v1/pop/queue/"+queue+"?"+query, "")
	p := popped{status: status}
	switch status {
	case http.StatusNoContent:
		if len(b) != 0 {
			w.t.Fatalf("204 pop carried a body: %s", b)
		}
		return p
	case http.StatusOK:
	default:
		w.t.Fatalf("pop %s?%s: status %d body %s", queue, query, status, b)
	}
	p.body = decode(w.t, b)
	p.leaseID = str(w.t, at(w.t, p.body, "leaseId"))
	for _, m := range at(w.t, p.body, "messages").([]any) {
		p.messages = append(p.messages, m.(map[string]any))
	}
	return p
}

// ackOf builds an ack for a popped message.
func ackOf(m map[string]any, status string) map[string]any {
	a := map[string]any{
		"transactionId": m["transactionId"], "partitionId": m["partitionId"],
		"leaseId": m["leaseId"], "consumerGroup": m["consumerGroup"],
	}
	if status != "" {
		a["status"] = status
	}
	return a
}

func (w *wire) ack(a map[string]any) map[string]any {
	w.t.Helper()
	v := w.call("POST", "/api/v1/ack", mustJSON(a), http.StatusOK)
	return at(w.t, v, 0).(map[string]any)
}

func (w *wire) kv(ops ...map[string]any) any {
	w.t.Helper()
	return w.call("POST", "/api/v1/kv", mustJSON(map[string]any{"operations": ops}), http.StatusOK)
}

func (w *wire) txn(body map[string]any) any {
	w.t.Helper()
	return w.call("POST", "/api/v1/transaction", mustJSON(body), http.StatusOK)
}

// eventually polls fn until it is true or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, fn func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("not true within %v: %s", timeout, fmt.Sprintf(what, args...))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func payloads(t testing.TB, msgs []map[string]any) []int64 {
	t.Helper()
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = num(t, at(t, m, "data", "n"))
	}
	return out
}

var t0 = time.Date(2026, 8, 21, 8, 0, 0, 0, time.UTC)
