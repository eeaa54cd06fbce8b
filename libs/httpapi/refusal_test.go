package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// Every detail setter fills the wire.Error field of its name, and between
// them they reach every field of wire.Error: a refusal can say whatever
// the body can carry, and nothing can set a field that does not exist.
func TestRefusalSettersFillTheirWireFields(t *testing.T) {
	e := Refuse(http.StatusConflict, wire.CodeAmbiguousGraph, "graph %q is declared by %d applications", "g", 2).
		Field("f").Rule("r").Rules([]string{"r"}, []wire.Problem{{Rule: "r", Message: "m", At: "/x"}}).
		Applications([]string{"a", "b"}).Paths([]string{"p"}).Nodes([]string{"n"}).Node("n").Budget("b").Queue("q").
		Limit(1).MaxAttempts(3).RetryAfterSeconds(2).Room(3).Bytes(300).Broker("http://127.0.0.1:6632", 10000).
		Second(1764590400000).InflightBytes(1<<20).Unhealthy(wire.QueenState{URL: "u"}).StoredVersion(4, []string{"relay-1"}).
		Current(`"3f2a"`, "ops@example.com", new(int64(1764590400001))).RetryAfter(7)
	w := httptest.NewRecorder()
	WriteRefusal(w, e)
	if w.Code != http.StatusConflict || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Retry-After") != "7" {
		t.Fatalf("written %d %v", w.Code, w.Header())
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"error": `graph "g" is declared by 2 applications`, "code": "ambiguous-graph", "field": "f", "rule": "r",
		"node": "n", "budget": "b", "queue": "q", "limit": 1.0, "maxAttempts": 3.0, "retryAfterSeconds": 2.0,
		"room": 3.0, "bytes": 300.0, "broker": "http://127.0.0.1:6632", "timeoutMs": 10000.0, "second": 1764590400000.0,
		"inflightBytes": float64(1 << 20), "status": "unhealthy", "storedVersion": 4.0,
		"etag": `"3f2a"`, "changedBy": "ops@example.com", "changedAt": 1764590400001.0,
	}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("%s = %v, want %v", k, body[k], v)
		}
	}
	var fields []string
	for i := range reflect.TypeFor[wire.Error]().NumField() {
		name, _, _ := strings.Cut(reflect.TypeFor[wire.Error]().Field(i).Tag.Get("json"), ",")
		if _, ok := body[name]; !ok {
			fields = append(fields, name)
		}
	}
	sort.Strings(fields)
	if len(fields) != 0 {
		t.Fatalf("no setter reaches the wire.Error fields %v", fields)
	}
	if e.Status() != http.StatusConflict || e.Code() != wire.CodeAmbiguousGraph || e.Message() != want["error"] || !strings.Contains(e.Error(), "HTTP 409") {
		t.Fatalf("accessors: %d %q %q %q", e.Status(), e.Code(), e.Message(), e.Error())
	}
}

// A refusal built from a broker call that timed out is the broker's 504,
// whichever deadline fired first: the mark the Router converts on is set
// from the error itself, through any wrapping, and only for a timeout.
func TestRefusalFromABrokerTimeoutIsMarked(t *testing.T) {
	timeout := fmt.Errorf("budget: spending 1 counters: %w", &queen.TimeoutError{Method: "POST", Route: "/api/v1/kv", After: 300 * time.Millisecond, Err: context.DeadlineExceeded})
	if e := Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "spending the window failed: %v", timeout); !e.brokerTimedOut {
		t.Errorf("a refusal built from %v is not marked as a broker timeout", timeout)
	}
	if e := Refuse(http.StatusBadGateway, wire.CodeBrokerFailed, "spending the window failed: %v", errors.New("connection refused")); e.brokerTimedOut {
		t.Error("a refusal built from a plain error is marked as a broker timeout")
	}
}

// A value that cannot be encoded is a 500 whose body is still a refusal
// with its code.
func TestWriteJSONOfAnUnencodableValueIsARefusal(t *testing.T) {
	w := httptest.NewRecorder()
	WriteJSON(w, http.StatusOK, map[string]any{"f": func() {}})
	var body wire.Error
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusInternalServerError || body.Code != wire.CodeInternalError || body.Error == "" {
		t.Fatalf("%d %s (%v)", w.Code, w.Body, err)
	}
}

// DecodeStrict knows the fields of nested objects and of array elements,
// and names a refused one by its path, array indexes included; a raw
// payload's fields are anyone's.
func TestDecodeStrictChecksNestedFields(t *testing.T) {
	type item struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type body struct {
		Items   []item          `json:"items"`
		Inner   *item           `json:"inner"`
		Payload json.RawMessage `json:"payload"`
	}
	cases := []struct {
		in, code, field string
	}{
		{`{"items":[{"role":"a","content":"b"}],"inner":{"role":"x"},"payload":{"anything":{"goes":1}}}`, "", ""},
		{`{"items":[{"role":"a"},{"role":"b","extra":1}]}`, "unknown-field", "items[1].extra"},
		{`{"items":[{"Role":"a"}]}`, "unknown-field", "items[0].Role"},
		{`{"inner":{"role":"a","nope":true}}`, "unknown-field", "inner.nope"},
		{`{"items":[{"role":"a","role":"b"}]}`, "duplicate-field", "items[0].role"},
		{`{"Items":[]}`, "unknown-field", "Items"},
	}
	for _, c := range cases {
		var b body
		bad := DecodeStrict([]byte(c.in), &b, "the body")
		switch {
		case c.code == "" && bad != nil:
			t.Errorf("%s: refused: %v", c.in, bad)
		case c.code != "" && (bad == nil || string(bad.Code()) != c.code || bad.Body().Field != c.field):
			t.Errorf("%s: %v, want %s naming %s", c.in, bad, c.code, c.field)
		}
	}
}
