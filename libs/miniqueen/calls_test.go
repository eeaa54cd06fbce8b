package miniqueen

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestCallsCountRequestsByRouteAndPopWait(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	w.call("POST", "/api/v1/configure", `{"queue":"q","options":{}}`, 200)
	w.push(item("q", "p", 1, ""))
	w.call("GET", "/api/v1/pop/queue/q?batch=1", "", 200)
	w.call("GET", "/api/v1/pop/queue/q?wait=false", "", http.StatusNoContent)
	w.call("GET", "/api/v1/pop/queue/q?wait=true&timeout=1", "", http.StatusNoContent)
	w.call("GET", "/api/v1/kv/ns/a", "", 200)
	w.s.SetError(RouteKV, http.StatusServiceUnavailable)
	w.call("GET", "/api/v1/kv/ns/a", "", http.StatusServiceUnavailable)
	w.s.ClearError(RouteKV)

	want := []CallCount{
		{"GET /api/v1/kv/{ns}/{key...}", 2},
		{"GET /api/v1/pop/queue/{queue} wait=false", 2},
		{"GET /api/v1/pop/queue/{queue} wait=true", 1},
		{"POST /api/v1/configure", 1},
		{"POST /api/v1/push", 1},
	}
	if got := w.s.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Calls() = %v, want %v", got, want)
	}
	_, body, _ := w.do("GET", "/metrics/prometheus", "")
	if line := `miniqueen_requests_total{route="GET /api/v1/pop/queue/{queue} wait=true"} 1`; !strings.Contains(string(body), line+"\n") {
		t.Fatalf("/metrics/prometheus lacks %q:\n%s", line, body)
	}
}
