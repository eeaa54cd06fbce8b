package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/queen"
	"github.com/queen-mq/gate/libs/wire"
)

// Every key a handler passes to with() is a field of wire.Error (with()
// panics otherwise): the keys are read from this package's source.
func TestErrorKeysAreWireFields(t *testing.T) {
	samples := map[string]any{
		"field": "f", "rule": "r", "rules": []string{"r"}, "problems": []wire.Problem{{Rule: "r"}},
		"applications": []string{"a"}, "paths": []string{"p"}, "nodes": []string{"n"}, "node": "n",
		"budget": "b", "queue": "q", "status": "unhealthy", "queen": wire.QueenState{},
		"limit": int64(1), "maxAttempts": uint32(3), "retryAfterSeconds": int64(2),
		"room": 3, "bytes": 300, "broker": "http://127.0.0.1:6632", "timeoutMs": int64(10000),
		"inflightBytes": int64(1 << 20), "second": int64(1764590400000),
	}
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`(?m)(?:^\s*|\.)with\("([A-Za-z]+)"`)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			seen++
			v, ok := samples[m[1]]
			if !ok {
				t.Errorf("%s: with(%q) has no sample here; add the field to wire.Error and to apiError.with", f, m[1])
				continue
			}
			fail(400, "x").with(m[1], v)
		}
	}
	for k, v := range samples {
		fail(400, "x").with(k, v)
	}
	if seen < 10 {
		t.Fatalf("found only %d with() calls: the scan is broken", seen)
	}
}

// A refusal built from a broker call that timed out is the broker's 504,
// whichever deadline fired first: the flag wrap converts on is set from
// the error itself, through any wrapping, and only for a timeout.
func TestRefusalFromABrokerTimeoutIsMarked(t *testing.T) {
	timeout := fmt.Errorf("budget: spending 1 counters: %w", &queen.TimeoutError{Method: "POST", Route: "/api/v1/kv", After: 300 * time.Millisecond, Err: context.DeadlineExceeded})
	if e := fail(http.StatusBadGateway, "spending the window failed: %v", timeout); !e.brokerTimedOut {
		t.Errorf("a refusal built from %v is not marked as a broker timeout", timeout)
	}
	if e := fail(http.StatusBadGateway, "spending the window failed: %v", errors.New("connection refused")); e.brokerTimedOut {
		t.Error("a refusal built from a plain error is marked as a broker timeout")
	}
}
